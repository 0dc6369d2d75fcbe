"""The settings of a ``reward_model`` term, read from the term's ``kwargs`` at compile time.

Example (a Bradley-Terry reward model served by vLLM, its logit squashed into 0..1)::

    preference:
      kind: reward_model
      key: score                      # the term returns {score, raw}; train on `score`
      on_error: {value: 0.0}
      kwargs:
        api: vllm_classify            # POST {url}/classify {"model", "input": [...]}
        url: http://127.0.0.1:8000
        model: Skywork/Skywork-Reward-V2-Qwen3-0.6B
        normalize: sigmoid            # none | sigmoid | {scale: s, shift: b}
        auth_env: RM_API_KEY

The same model in a worker process of this trainer, on its GPU when it has one::

    preference:
      kind: reward_model
      key: score
      kwargs:
        api: local
        model: /models/Skywork-Reward-V2-Qwen3-0.6B   # a directory: config, weights, tokenizer
        max_batch_tokens: 16384
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from rewardrouter.remote.settings import EndpointSettings
from rewardrouter.rewards.model_input import max_response_chars_field

Api = Literal["vllm_classify", "vllm_score", "vllm_pooling", "sglang", "local"]

#: The path each served API answers on, appended to a ``url`` that names no path.
API_PATHS: dict[str, str] = {
    "vllm_classify": "/classify",
    "vllm_score": "/score",
    "vllm_pooling": "/pooling",
    "sglang": "/classify",
}


class Affine(BaseModel):
    """``reward = scale * raw + shift``."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    scale: float = Field(description="Factor applied to the model's raw score.")
    shift: float = Field(default=0.0, description="Added after scaling.")


class RewardModelSettings(EndpointSettings):
    """A sequence-classification reward model: served over HTTP (vLLM, SGLang) or loaded here
    from a Hugging Face directory, and how its score becomes the reward."""

    api: Api = Field(
        description="vllm_classify: vLLM's /classify; vllm_score: vLLM's /score (prompt and "
        "response as a pair); vllm_pooling: vLLM's /pooling; sglang: SGLang's /classify (a "
        "reward model served with --is-embedding); local: a Hugging Face "
        "AutoModelForSequenceClassification in a worker process (GPU when present)."
    )
    url: str | None = Field(  # type: ignore[assignment]
        default=None,
        description="The server's base URL (the API's path is appended) or the endpoint's full "
        "URL; not with api: local.",
    )
    model: str = Field(
        description="Served APIs: the `model` sent in each request. local: the directory that "
        "holds the model's config, weights and tokenizer."
    )
    tokenizer: str | None = Field(
        default=None,
        description="Served APIs: a local tokenizer directory whose chat template renders each "
        "conversation here, sent as text in batches (needs the `reward-model` extra). Without "
        "it, vllm_classify and vllm_pooling send one conversation per request (`messages`, "
        "rendered by the server); sglang needs it for `template: chat`.",
    )
    template: Literal["auto", "chat", "plain"] = Field(
        default="auto",
        description="chat: prompt and response as chat messages through the tokenizer's chat "
        "template; plain: prompt + separator + response as one text; auto: chat (a tokenizer "
        "without a chat template is refused when the router compiles: set plain to score "
        "plain text; served APIs without `tokenizer`: rendered by the server; sglang without "
        "`tokenizer`: plain). vllm_score always sends the pair (text_1, text_2).",
    )
    separator: str = Field(default="\n", description="template plain: between prompt and response.")
    normalize: Literal["none", "sigmoid"] | Affine = Field(
        default="none",
        description="The reward from the raw score: none (the score itself), sigmoid "
        "(1 / (1 + exp(-raw))), or an affine map {scale, shift}. The raw score is kept as the "
        "term's `raw` entry.",
    )
    label_index: int | None = Field(
        default=None,
        ge=0,
        description="Which output of the head is the reward, by position (0: the first). Not "
        "needed for a head with one output; a head with several and neither this nor `label` "
        "is refused (local: when the router compiles; served: each reply).",
    )
    label: str | None = Field(
        default=None,
        description="local: which output of the head is the reward, by the name the model's "
        "config.json `id2label` gives it (e.g. positive); or set `label_index`.",
    )
    refuse_special_tokens: bool = Field(
        default=True,
        description="A response that writes one of the template's markers is `invalid`, never "
        "rendered or sent: such text would end the assistant's turn and let the policy write "
        "the rest of the conversation. The markers are the tokenizer's special tokens when one "
        "is here (`tokenizer`, api: local), else those of the common chat templates (ChatML "
        "and `<|...|>`, DeepSeek's full-width `<\uff5c...\uff5c>`, Mistral's `[INST]`, "
        "`[SYSTEM_PROMPT]`, `[TOOL_CALLS]`..., Llama 2's `<<SYS>>`, Gemma's `<start_of_turn>`).",
    )
    max_response_chars: int = max_response_chars_field()
    batch_size: int = Field(
        default=64, ge=1, description="Served APIs: at most this many inputs per request."
    )
    max_batch_tokens: int = Field(
        default=16_384,
        ge=1,
        description="local: token budget of one forward pass (padded length times rows).",
    )
    max_tokens: int | None = Field(
        default=None,
        ge=1,
        description="local: longest input in tokens (a longer one is `invalid`, never "
        "truncated); default: the model's max_position_embeddings.",
    )
    device: Literal["auto", "cpu", "cuda"] = Field(
        default="auto", description="local: auto is cuda when torch sees a GPU, else cpu."
    )
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        default="auto", description="local: auto is bfloat16 on a GPU, float32 on the CPU."
    )
    threads: int | None = Field(
        default=None, ge=1, description="local: torch CPU threads of the worker."
    )
    load_timeout: float = Field(
        default=600.0, gt=0, description="local: seconds the worker may take to load the model."
    )
    extra_body: dict[str, Any] = Field(
        default_factory=dict,
        description="Served APIs: more request fields (truncate_prompt_tokens, priority).",
    )
    cache_size: int = Field(
        default=100_000,
        ge=0,
        description="Raw scores kept per router, so an identical input is scored once (0: none).",
    )

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str | None) -> str | None:  # type: ignore[override]
        if url is None:
            return None
        return EndpointSettings._http_url(url)

    @model_validator(mode="after")
    def _one_authorization(self) -> RewardModelSettings:
        if self.url is not None:  # api: local sends no requests
            EndpointSettings._one_authorization(self)  # type: ignore[operator]
        return self

    @model_validator(mode="after")
    def _api_needs(self) -> RewardModelSettings:
        if self.label is not None and self.label_index is not None:
            raise ValueError(
                f"`label` ({self.label!r}) and `label_index` ({self.label_index}) both say which "
                "output is the reward; keep one"
            )
        if self.label is not None and self.api != "local":
            raise ValueError(
                f"`label` names an output by the local model's id2label; api {self.api!r} reads "
                "the server's outputs by position: set `label_index` instead"
            )
        if self.api == "local":
            if self.url is not None:
                raise ValueError(
                    "`url` is for a served model; api: local loads `model` from a directory "
                    "here: remove `url`, or set `api` to the server's API"
                )
            if self.tokenizer is not None:
                raise ValueError(
                    "api: local reads the tokenizer from the model's directory; remove `tokenizer`"
                )
            return self
        if self.url is None:
            raise ValueError(
                f"api {self.api!r} needs `url`, the server's address "
                "(e.g. http://127.0.0.1:8000); or set `api: local` to load the model here"
            )
        if self.api == "vllm_score" and (self.tokenizer is not None or self.template != "auto"):
            raise ValueError(
                "api vllm_score sends the prompt and the response as a pair (text_1, text_2) "
                "and the server formats them; remove `tokenizer` and `template`, or use "
                "vllm_classify"
            )
        if self.api == "sglang" and self.template == "chat" and self.tokenizer is None:
            raise ValueError(
                "SGLang's /classify takes text only, so `template: chat` needs `tokenizer`, a "
                "local tokenizer directory whose chat template renders each conversation"
            )
        return self

    @property
    def endpoint_url(self) -> str:
        """The URL requests go to: ``url``, with the API's path when ``url`` names none."""
        from yarl import URL

        assert self.url is not None
        parsed = URL(self.url)
        if parsed.path not in ("", "/"):
            return self.url
        return str(parsed.with_path(API_PATHS[self.api]).with_query(parsed.query))
