"""A reward model served over HTTP: vLLM's pooling APIs and SGLang's reward endpoint.

Requests and replies, per ``api`` (inputs batched ``batch_size`` to a request)::

    vllm_classify  POST /classify  {"model", "input": [text, ...], "use_activation": false}
                                   or {"model", "messages": [...], "use_activation": false}
                   reply           {"data": [{"index", "label", "probs": [logit, ...],
                                              "num_classes"}, ...]}
    vllm_score     POST /score     {"model", "text_1": [prompt, ...], "text_2": [response, ...],
                                    "use_activation": false}
                   reply           {"data": [{"index", "object": "score", "score"}, ...]}
    vllm_pooling   POST /pooling   {"model", "input": [text, ...]} or {"model", "messages"}
                   reply           {"data": [{"index", "object": "pooling",
                                              "data": [x, ...] or [[x, ...], ...]}, ...]}
    sglang         POST /classify  {"text": [text, ...]}
                   reply           [{"embedding": [score, ...], "meta_info": {...}}, ...]

``use_activation: false`` asks vLLM for the head's raw output (a reward model's logit), which
``normalize`` then maps. The score is output ``label_index`` (for per-token pooling output, of
the last token's row); without ``label_index``, a reply of several outputs is not read (which
one is the reward is the term's to say). Without a local ``tokenizer``, a chat conversation is sent alone as
``messages`` and the server applies the model's chat template (vLLM only).

Every request goes through :class:`~rewardrouter.remote.client.JsonEndpoint`: the router's
connection pool, retries with jittered backoff (never after a 4xx), the deadline, the
concurrency cap, the reply size cap, and the credential scrubbed from every message. A reply
that cannot be read as one score per input (a wrong count, another shape, an oversized body) or
a 400, 413 or 422 (vLLM refuses a whole batch for one input over its context length) fails the
request's inputs only after the request is split in halves and each half sent again, down to
one input: so one hostile input fails alone and its neighbours are scored (a 413 for one input
alone is that sample's own status, whatever ``on_error``). An input that no JSON can carry (a
lone surrogate) is never sent: it fails alone, as its own status. A request of several
inputs that gets no reply within ``timeout`` is not sent again whole: each of its inputs is sent
alone at once, so an input the server hangs on times out alone and its neighbours are scored
(each request's ``deadline``, and the term's call deadline, count from when it has its slot).
Another 4xx (401, 403, 404) fails the request's inputs at once. A score that is not a finite
number fails its input alone.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from rewardrouter.outcome import SampleFault
from rewardrouter.remote.errors import RemoteError, RemoteInvalid, RemoteRejected, RemoteTimeout
from rewardrouter.rewards.model_input import ResponseGuard
from rewardrouter.rewards.reward_model.conversation import (
    Unusable,
    conversation,
    pair,
    plain_text,
    written,
)
from rewardrouter.rewards.reward_model.scores import ScoreCache, Scored, read_number, score_samples
from rewardrouter.rewards.reward_model.settings import RewardModelSettings

if TYPE_CHECKING:  # the client (and aiohttp) loads when a reward model is built
    from rewardrouter.remote.client import JsonEndpoint

#: The 4xx replies that an input can cause (bad request, too large, unprocessable): a batch
#: refused so is split to find the input. Others (401, 403, 404) refuse every request alike.
_INPUT_REFUSED = frozenset({400, 413, 422})


def _about_an_input(exc: RemoteInvalid | RemoteRejected | SampleFault) -> bool:
    """Whether one input of the request may have caused ``exc`` (so halves may be scored)."""
    return not isinstance(exc, RemoteRejected) or exc.status in _INPUT_REFUSED


class ServedRewardModel:
    """``await model(args, samples)``: one ``{"score", "raw"}`` (or failure) per sample.

    ``renderer``: a tokenizer's chat template (:class:`~.tokenized.ChatRenderer`) that turns
    conversations into text here, or ``None``.
    """

    #: The router hands it each response as a validated conversation (rewardrouter.trajectory);
    #: a plain-text response comes as one assistant message.
    reads_conversation: ClassVar[bool] = True

    __slots__ = ("_cache", "endpoint", "guard", "name", "renderer", "settings")

    def __init__(
        self, settings: RewardModelSettings, endpoint: JsonEndpoint, renderer: Any = None
    ) -> None:
        self.settings = settings
        self.endpoint = endpoint
        self.renderer = renderer
        self.name = endpoint.name
        self._cache = ScoreCache(settings.cache_size)
        #: What a response may be when the server renders it (a renderer holds its own guard,
        #: with its tokenizer's special tokens as the markers).
        self.guard = ResponseGuard.of(settings.max_response_chars, settings.refuse_special_tokens)

    def __repr__(self) -> str:
        return f"ServedRewardModel({self.name!r})"

    def fits(self, seconds: float) -> tuple[str, str] | None:
        """Whether a request's ``deadline`` fits in the term's timeout ``seconds`` (checked
        when the router compiles: :class:`~rewardrouter.rewards.registry.Budgeted`)."""
        return self.endpoint.fits(seconds)

    @property
    def sends_messages(self) -> bool:
        """Whether each conversation goes alone as ``messages`` (the server renders it)."""
        s = self.settings
        return (
            s.api in ("vllm_classify", "vllm_pooling")
            and self.renderer is None
            and s.template != "plain"
        )

    def model_input(self, sample: Any) -> Any:
        """What is sent for ``sample``: a text, a pair, or ``{"messages": [...]}``.

        Raises :class:`~rewardrouter.rewards.model_input.RefusedResponse` (the sample is
        ``invalid``, nothing is sent) for a response over ``max_response_chars`` or one that
        writes a template marker, and :class:`~.conversation.Unusable` for one that cannot be
        read as chat messages."""
        if self.renderer is not None:
            return self.renderer.render(sample)
        self.guard.check(written(sample))
        s = self.settings
        if s.api == "vllm_score":
            return pair(sample)
        if self.sends_messages:
            return {"messages": conversation(sample)}
        return plain_text(sample, s.separator)

    async def __call__(self, args: Any, samples: Sequence[Any]) -> list[Any]:
        return await score_samples(
            samples, self.model_input, self._cache, self._score, self.settings.normalize
        )

    # -- requests --------------------------------------------------------------------------

    async def _score(self, inputs: list[Any]) -> list[Scored]:
        size = 1 if self.sends_messages else self.settings.batch_size
        chunks = [inputs[i : i + size] for i in range(0, len(inputs), size)]
        replies = await asyncio.gather(*(self._chunk(c) for c in chunks))
        return [score for reply in replies for score in reply]

    async def _chunk(self, chunk: list[Any]) -> list[Scored]:
        """The scores of one request's inputs; a request whose failure may be one input's is
        split to find it (see the module doc)."""
        try:
            # A batch that times out is not sent again whole: its inputs go alone instead.
            single = len(chunk) == 1
            reply = await self.endpoint.post_json(
                self._body(chunk), retry_timeouts=single, one_sample=single
            )
            return self._read(reply, len(chunk))
        except RemoteTimeout as exc:
            if len(chunk) == 1:
                return [exc]
            # Which input does the server hang on? Each alone, at once.
            alone = await asyncio.gather(*(self._chunk([item]) for item in chunk))
            return [score for one in alone for score in one]
        except (RemoteInvalid, RemoteRejected, SampleFault) as exc:
            if len(chunk) == 1 or not _about_an_input(exc):
                return [exc] * len(chunk)
            half = len(chunk) // 2  # which input spoiled the request? send halves to find out
            first, second = await asyncio.gather(
                self._chunk(chunk[:half]), self._chunk(chunk[half:])
            )
            return first + second
        except RemoteError as exc:  # unavailable: retried already, fail the request
            return [exc] * len(chunk)

    def _body(self, chunk: list[Any]) -> dict[str, Any]:
        s = self.settings
        body: dict[str, Any]
        if s.api == "sglang":
            return {**s.extra_body, "text": chunk}
        body = {"model": s.model}
        if s.api in ("vllm_classify", "vllm_score"):
            body["use_activation"] = False
        body.update(s.extra_body)
        if s.api == "vllm_score":
            body["text_1"] = [p for p, _ in chunk]
            body["text_2"] = [r for _, r in chunk]
        elif self.sends_messages:
            body["messages"] = chunk[0]["messages"]
        else:
            body["input"] = chunk
        return body

    # -- replies ---------------------------------------------------------------------------

    def _read(self, reply: Any, count: int) -> list[Scored]:
        """One raw score or :class:`Unusable` per input; :class:`RemoteInvalid` when the reply
        is not one entry per input."""
        if self.settings.api == "sglang":
            entries = [reply] if isinstance(reply, dict) and count == 1 else reply
            if not isinstance(entries, list):
                raise self._shape(reply, f"a JSON list of {count} results")
        else:
            data = reply.get("data") if isinstance(reply, dict) else None
            if not isinstance(data, list):
                raise self._shape(reply, f'an object whose "data" lists {count} results')
            entries = self._in_order(data, count)
        if len(entries) != count:
            raise RemoteInvalid(f"the reply has {len(entries)} results for {count} inputs")
        out: list[Scored] = []
        for entry in entries:
            try:
                out.append(self._score_of(entry))
            except Unusable as exc:  # it may quote the reply, which may echo the credential
                out.append(Unusable(self.endpoint.scrub(str(exc))))
        return out

    @staticmethod
    def _in_order(data: list[Any], count: int) -> list[Any]:
        """vLLM's ``data`` sorted by each entry's ``index`` (which must be 0..count-1)."""
        indices = [e.get("index") if isinstance(e, dict) else None for e in data]
        if len(data) != count or sorted(map(str, indices)) != sorted(map(str, range(count))):
            raise RemoteInvalid(
                f"the reply's data has {len(data)} results, indexed "
                f"{json.dumps(indices[:8])[:80]}; expected {count}, indexed 0 to {count - 1}"
            )
        ordered: list[Any] = [None] * count
        for index, entry in zip(indices, data, strict=True):
            ordered[int(index)] = entry  # type: ignore[arg-type]
        return ordered

    def _score_of(self, entry: Any) -> float:
        api, chosen = self.settings.api, self.settings.label_index
        k = chosen or 0
        field = {"vllm_classify": "probs", "vllm_score": "score", "vllm_pooling": "data"}.get(
            api, "embedding"
        )
        if not isinstance(entry, dict) or field not in entry:
            raise Unusable(f"a result has no {field!r}: {self._quote(entry)}")
        value = entry[field]
        if api == "vllm_score":
            return read_number(value, "the score")
        if isinstance(value, list) and value and isinstance(value[-1], list):
            value = value[-1]  # per-token output: the last token's row scores the sequence
        if not isinstance(value, list) or len(value) <= k:
            raise Unusable(
                f"{field!r} is {self._quote(value)}; expected a list with output {k} "
                "(`label_index`)"
            )
        if chosen is None and len(value) > 1:
            raise Unusable(
                f"{field!r} holds {len(value)} outputs, and the term does not say which one is "
                "the reward; set `label_index` to its position (the model card tells which)"
            )
        return read_number(value[k], f"{field}[{k}]")

    def _quote(self, value: Any) -> str:
        return repr(self.endpoint.scrub(json.dumps(value, default=str))[:80])

    def _shape(self, reply: Any, expected: str) -> RemoteInvalid:
        return RemoteInvalid(
            f"the reply is {type(reply).__name__} {self._quote(reply)}; expected {expected} "
            f"(is `api: {self.settings.api}` the server's API?)"
        )
