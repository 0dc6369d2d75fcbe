"""Compiled routes: reward terms bound to resolved functions."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rewardrouter.compile.resolve import RewardFn
from rewardrouter.config.models import DEFAULT_TIMEOUT, OnError, Reads
from rewardrouter.config.stages import ShapingStage

#: What makes two term calls one route group: function, mode, kwargs, executor, timeout and
#: what the function reads of a conversation.
CallKey = tuple[str, str, str, str, float, str]


def match_key(dataset: str) -> str:
    """The form in which dataset strings are compared: case and surrounding whitespace do not
    count (``" GSM8K "`` is ``gsm8k``), so a dataset column spelled another way still reaches its
    route instead of ``default_route``.

    >>> match_key("  OpenAI/GSM8K\\n")
    'openai/gsm8k'
    """
    return dataset.strip().casefold()


def _canonical(kwargs: Mapping[str, Any]) -> str:
    return json.dumps(kwargs, sort_keys=True, default=repr)


@dataclass(frozen=True)
class BoundTerm:
    """One reward term of a route with its function resolved.

    ``call_key`` identifies the call: samples whose terms share it form one route group, even
    across routes, because they would be scored by the same function with the same kwargs, on
    the same executor under the same deadline, reading the same part of a conversation
    (``reads``). ``executor`` is resolved (never ``auto``: a name
    in :data:`~rewardrouter.execute.registry.EXECUTORS`) and ``timeout`` is in seconds, per call
    (per whole call in group mode).
    """

    route: str
    name: str
    fn: RewardFn
    kwargs: Mapping[str, Any]
    weight: float = 1.0
    key: str | None = None
    eval_key: str | None = None
    on_error: OnError = "raise"
    where: str = ""
    executor: str = "thread"
    timeout: float = DEFAULT_TIMEOUT
    reads: Reads = "final_answer"
    call_key: CallKey = field(init=False)

    def __post_init__(self) -> None:
        bound = self.fn.binding if self.fn.binding is not None else _canonical(self.kwargs)
        key = (self.fn.name, self.fn.mode, bound, self.executor, self.timeout, self.reads)
        object.__setattr__(self, "call_key", key)

    def key_for(self, evaluation: bool) -> str | None:
        """The dict entry that is the training (or evaluation) value."""
        if evaluation and self.eval_key is not None:
            return self.eval_key
        return self.key


@dataclass(frozen=True)
class CompiledRoute:
    """A route ready to score: its terms and its own shaping stages."""

    name: str
    terms: tuple[BoundTerm, ...]
    shaping: tuple[ShapingStage, ...] = ()
    match: tuple[str, ...] = ()
