"""The raw outcome of one reward call, before the value is read and policies apply.

Every executor reports what happened to a call as an :class:`Outcome`; :func:`combine` is the one
place where a term's ``on_error`` policy turns a failed outcome into a reward.
"""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple, overload

from rewardrouter.execute.values import InvalidReturn

CallStatus = Literal["ok", "error", "timeout", "invalid"]

#: Exceptions that steer the program rather than report a failed reward call: never caught.
CONTROL_FLOW = (KeyboardInterrupt, GeneratorExit, asyncio.CancelledError)


class Undecided:
    """What a reward callable's quick path returns for a sample it cannot decide.

    A callable with ``has_quick`` true offers ``quick(args, sample, **kwargs)``: a bounded path
    (no deadline needed) that returns the reward, or :data:`UNDECIDED` when only the full call
    can tell. Executors that ship functions to other processes run it first in the router's
    process (:meth:`~rewardrouter.execute.registry.Executors.run`).
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNDECIDED"


UNDECIDED = Undecided()


class Outcome(NamedTuple):
    value: Any
    status: CallStatus = "ok"
    error: str | None = None


def describe_exception(exc: BaseException) -> str:
    """``"ValueError: bad input (my_rewards.py:12)"``: the cause and where it was raised."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" ({frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


def failed(exc: BaseException) -> Outcome:
    """A call that raised: ``timeout`` for a ``TimeoutError``, ``invalid`` for an
    :class:`InvalidReturn` (e.g. a remote reply that is not JSON), else ``error``."""
    status: CallStatus = "error"
    if isinstance(exc, TimeoutError):
        status = "timeout"
    elif isinstance(exc, InvalidReturn):
        status = "invalid"
    return Outcome(None, status, describe_exception(exc))


def timed_out(timeout: float, what: str = "") -> Outcome:
    """A call that passed its deadline; ``what`` says what became of the code still running."""
    return Outcome(None, "timeout", f"no result within {timeout:g} s{what}")


class FloatReturns(Sequence[Outcome]):
    """The outcomes of a group call that returned only plain floats, kept as the list itself.

    A group of 100,000 samples then costs no per-sample objects; the router reads ``values``
    directly, anything else reads ordinary :class:`Outcome` s.
    """

    __slots__ = ("values",)

    def __init__(self, values: list[float]) -> None:
        self.values = values

    def __len__(self) -> int:
        return len(self.values)

    @overload
    def __getitem__(self, index: int) -> Outcome: ...

    @overload
    def __getitem__(self, index: slice) -> list[Outcome]: ...

    def __getitem__(self, index: int | slice) -> Outcome | list[Outcome]:
        if isinstance(index, slice):
            return [Outcome(v) for v in self.values[index]]
        return Outcome(self.values[index])


def group_outcomes(outcome: Outcome, count: int) -> Sequence[Outcome]:
    """Spread the outcome of one group-mode call over its ``count`` samples.

    A failed call fails every sample; a return that is not a list (or tuple) of ``count`` rewards
    is ``invalid`` for every sample; an exception in one sample's slot (e.g. one failed request
    of a batch) fails that sample alone.
    """
    if outcome.status != "ok":
        return [outcome] * count
    value = outcome.value
    if not isinstance(value, list | tuple):
        message = f"group call returned {type(value).__name__}; expected a list of {count} rewards"
        return [Outcome(value, "invalid", message)] * count
    if len(value) != count:
        message = f"group call returned {len(value)} rewards for {count} samples"
        return [Outcome(value, "invalid", message)] * count
    return returned(value)


def returned(values: Sequence[Any]) -> Sequence[Outcome]:
    """One outcome per value that calls returned: a list of plain floats is kept as it is
    (:class:`FloatReturns`); an exception in a slot fails that slot alone."""
    if type(values) is list and all(type(v) is float for v in values):
        return FloatReturns(values)
    return [failed(v) if isinstance(v, Exception) else Outcome(v) for v in values]
