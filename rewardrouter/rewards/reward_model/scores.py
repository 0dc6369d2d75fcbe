"""From raw scores to rewards: one score per distinct input, and the term's normalization.

Both back ends (a served model, a local one) score lists of *inputs* (a text, a conversation,
a pair), each identified by the SHA-256 digest of its JSON (so a kept score costs 32 bytes of
key, whatever the response's length). :class:`ScoreCache` sends each distinct input once: a
GRPO group often holds the same response several times, and concurrent route groups may ask for
the same input at once (the second waits for the first). Raw scores are kept, most recent
first, up to ``cache_size``; a failure is not kept. An input that UTF-8 cannot carry (a lone
surrogate in the response) is never sent: it is that sample's own failure
(:class:`~rewardrouter.remote.errors.Unsendable`), and its neighbours are scored.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from rewardrouter.remote.errors import Unsendable
from rewardrouter.rewards.model_input import RefusedResponse
from rewardrouter.rewards.reward_model.conversation import Unusable
from rewardrouter.rewards.reward_model.settings import Affine

#: What a back end returns per input: the raw score, or why that input has none.
Scored = float | Exception

Compute = Callable[[list[Any]], Awaitable[list[Scored]]]


def input_key(item: Any) -> bytes:
    """The digest that identifies an input; :class:`Unsendable` for one that UTF-8 cannot
    carry (a lone surrogate), which no server or tokenizer can read."""
    text = json.dumps(item, sort_keys=True, ensure_ascii=False)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise Unsendable(
            f"the model input holds a lone UTF-16 surrogate (U+{ord(text[exc.start]):04X}), "
            "which is not Unicode text: nothing was sent for this sample"
        ) from None
    return hashlib.sha256(data).digest()


def read_number(value: Any, what: str) -> float:
    """``value`` as a finite float; :class:`Unusable` (quoting at most 40 characters) else."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        shown = json.dumps(value, default=str)[:40] if value is not None else "null"
        raise Unusable(f"{what} is {type(value).__name__} {shown}, not a number")
    try:
        number = float(value)
    except OverflowError:
        raise Unusable(f"{what} is an integer beyond the range of a float") from None
    if not math.isfinite(number):
        raise Unusable(f"{what} is {number}; a score must be finite")
    return number


def reward(raw: float, normalize: str | Affine) -> dict[str, float]:
    """The term's value for ``raw``: ``{"score": normalized, "raw": raw}``."""
    if normalize == "sigmoid":
        # Written for both signs so that exp never overflows.
        score = 1.0 / (1.0 + math.exp(-raw)) if raw >= 0 else math.exp(raw) / (1.0 + math.exp(raw))
    elif isinstance(normalize, Affine):
        score = normalize.scale * raw + normalize.shift
        if not math.isfinite(score):
            raise Unusable(
                f"the raw score {raw:g} times {normalize.scale:g} plus {normalize.shift:g} is "
                "beyond the range of a float"
            )
    else:
        score = raw
    return {"score": score, "raw": raw}


async def score_samples(
    samples: Sequence[Any],
    model_input: Callable[[Any], Any],
    cache: ScoreCache,
    compute: Compute,
    normalize: str | Affine,
) -> list[Any]:
    """One reward (``{"score", "raw"}``) or failure per sample, in order: ``model_input`` makes
    each sample's input (an :class:`Unusable` or a
    :class:`~rewardrouter.rewards.model_input.RefusedResponse` fails that sample alone), ``cache`` scores each
    distinct input once through ``compute``, and :func:`reward` normalizes each raw score."""
    inputs: list[Any] = []
    out: list[Any] = []
    for sample in samples:
        try:
            inputs.append(model_input(sample))
            out.append(None)
        except (Unusable, RefusedResponse) as exc:
            out.append(exc)
    raws = iter(await cache.scores(inputs, compute))
    for i, entry in enumerate(out):
        if entry is not None:
            continue
        raw = next(raws)
        try:
            out[i] = raw if isinstance(raw, Exception) else reward(raw, normalize)
        except Unusable as exc:
            out[i] = exc
    return out


class ScoreCache:
    """Each distinct input scored once per router (see the module doc)."""

    __slots__ = ("_done", "_pending", "size")

    def __init__(self, size: int) -> None:
        self.size = size
        self._done: OrderedDict[bytes, float] = OrderedDict()
        self._pending: dict[tuple[asyncio.AbstractEventLoop, bytes], asyncio.Future[float]] = {}

    async def scores(self, inputs: Sequence[Any], compute: Compute) -> list[Scored]:
        """One raw score (or failure) per input, in order; ``compute`` gets each distinct input
        that is neither kept nor being scored, once."""
        loop = asyncio.get_running_loop()
        keys: list[bytes | int] = []
        found: dict[bytes | int, Scored] = {}
        waits: dict[bytes, asyncio.Future[float]] = {}
        todo: dict[bytes, Any] = {}
        for i, item in enumerate(inputs):
            try:
                key = input_key(item)
            except Unsendable as exc:  # that input's own failure, under its position
                keys.append(i)
                found[i] = exc
                continue
            keys.append(key)
            if key in found or key in waits or key in todo:
                continue
            if key in self._done:
                self._done.move_to_end(key)
                found[key] = self._done[key]
            elif (loop, key) in self._pending:
                waits[key] = self._pending[(loop, key)]
            else:
                todo[key] = item
        if todo:
            await self._compute(loop, todo, compute, found)
        for key, future in waits.items():
            try:
                found[key] = await asyncio.shield(future)
            except Exception as exc:  # the first asker's failure is this input's failure
                found[key] = exc
        return [found[key] for key in keys]

    async def _compute(
        self,
        loop: asyncio.AbstractEventLoop,
        todo: dict[bytes, Any],
        compute: Compute,
        found: dict[bytes | int, Scored],
    ) -> None:
        futures = {key: loop.create_future() for key in todo}
        for key, future in futures.items():
            self._pending[(loop, key)] = future
        try:
            results = await compute(list(todo.values()))
            for key, result in zip(todo, results, strict=True):
                found[key] = result
                if isinstance(result, Exception):
                    futures[key].set_exception(result)
                    futures[key].exception()  # retrieved: waiters re-raise it, nobody else must
                else:
                    futures[key].set_result(result)
                    self._keep(key, result)
        except BaseException as exc:
            for future in futures.values():
                if not future.done():
                    future.set_exception(exc)
                    future.exception()
            raise
        finally:
            for key in futures:
                del self._pending[(loop, key)]

    def _keep(self, key: bytes, score: float) -> None:
        if not self.size:
            return
        self._done[key] = score
        while len(self._done) > self.size:
            self._done.popitem(last=False)
