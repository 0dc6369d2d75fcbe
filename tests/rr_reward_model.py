"""Reward models for the ``reward_model`` tests: a tiny Hugging Face model saved to a folder, and
servers that answer in vLLM's and SGLang's reply shapes.

The tiny model is a one-layer Llama with a one-output classification head and random weights,
and a byte-level BPE tokenizer trained in memory with a ChatML chat template: nothing is
downloaded. The servers' shapes are the field names of vLLM's pooling protocol
(``ClassificationResponse.data[i].probs``, ``ScoreResponse.data[i].score``,
``PoolingResponse.data[i].data``, each entry with its ``index``) and of SGLang's ``/classify``
(a list of ``{"embedding": [...], "meta_info": {...}}``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from rr_remote import Reply, Seen
from rr_tiny_llama import bpe_tokenizer, tiny_llama

#: ChatML, as Qwen's reward models write it.
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
)

WORDS = [
    "The capital of France is Paris.",
    "What is the capital of France?",
    "Two plus two is four, and the answer is 4.",
    "I am not sure; maybe Rome or Berlin.",
]


#: ``tiny_reward_model(config_pad=...)``'s default: the config's pad id is the tokenizer's.
SAME_PAD = "same"


def tiny_reward_model(
    folder: Path,
    *,
    zero_head: bool = False,
    chat: bool = True,
    head: Literal["score", "causal"] = "score",
    labels: Sequence[str] = (),
    config_pad: int | Literal["same"] | None = SAME_PAD,
) -> Path:
    """Save a tiny sequence-classification model and its tokenizer to ``folder``.

    ``zero_head``: the score head's weights are zero, so every input scores exactly 0.
    ``chat``: the tokenizer has the ChatML template (and its two special tokens).
    ``head="causal"``: a causal language model instead (a policy checkpoint: no score head).
    ``labels``: the head's outputs by name (``id2label``), one output when empty.
    ``config_pad``: the ``pad_token_id`` the model's config says (the tokenizer's pad is
    ``<pad>``, id 0): another id, or None.
    """
    import torch
    from transformers import AutoModelForSequenceClassification

    tokenizer = bpe_tokenizer(
        WORDS * 4,
        vocab_size=320,
        special_tokens=["<pad>", "<eos>", "<|im_start|>", "<|im_end|>"],
        pad="<pad>",
        eos="<eos>",
        additional_special_tokens=["<|im_start|>", "<|im_end|>"],
    )
    if chat:
        tokenizer.chat_template = CHATML
    model = tiny_llama(tokenizer, head=head, max_positions=256)
    if labels:
        model.config.id2label = dict(enumerate(labels))
        model.config.label2id = {name: i for i, name in enumerate(labels)}
        torch.manual_seed(0)
        model = AutoModelForSequenceClassification.from_config(model.config)
    if zero_head:
        with torch.no_grad():
            model.score.weight.zero_()
    if config_pad != SAME_PAD:
        model.config.pad_token_id = config_pad
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


# -- served APIs -----------------------------------------------------------------------------

ScoreOf = Callable[[str], Any]


def texts_of(api: str, body: Any) -> list[str]:
    """The texts a request asks scores for (a pair is ``prompt|response``, a conversation its
    contents joined by ``|``)."""
    if api == "vllm_score":
        return [f"{a}|{b}" for a, b in zip(body["text_1"], body["text_2"], strict=True)]
    if api == "sglang":
        return list(body["text"])
    if "messages" in body:
        return ["|".join(m["content"] for m in body["messages"])]
    return list(body["input"])


def reply(api: str, scores: list[Any]) -> Any:
    """The server's reply holding ``scores``, in ``api``'s shape."""
    if api == "sglang":
        return [{"embedding": [s], "meta_info": {"id": f"r{i}"}} for i, s in enumerate(scores)]
    if api == "vllm_score":
        data: list[Any] = [
            {"index": i, "object": "score", "score": s} for i, s in enumerate(scores)
        ]
    elif api == "vllm_pooling":
        data = [{"index": i, "object": "pooling", "data": [s]} for i, s in enumerate(scores)]
    else:
        data = [
            {"index": i, "label": "LABEL_0", "probs": [s], "num_classes": 1}
            for i, s in enumerate(scores)
        ]
    return {"id": "x-1", "object": "list", "created": 0, "model": "rm", "data": data}


def model_server(api: str, score_of: ScoreOf) -> Callable[[Seen, int], Reply]:
    """A script for :class:`rr_remote.ScriptedServer`: ``score_of(text)`` per input."""

    def script(seen: Seen, attempt: int) -> Reply:
        return Reply(reply(api, [score_of(t) for t in texts_of(api, seen.body)]))

    return script
