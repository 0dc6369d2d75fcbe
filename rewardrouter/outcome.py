"""What a reward call gave: its raw :class:`Outcome`, and the number its return stands for.

This is the vocabulary that graders, executors and the router share. Every executor reports what
happened to a call as an :class:`Outcome`; :func:`to_value` reads the training value out of what
a reward function returned (an unusable return is :class:`InvalidReturn`); a grader with a
bounded quick path (:class:`QuickPath`) answers :data:`UNDECIDED` where only the full call can
tell. The router's ``combine`` is the one place where a term's ``on_error`` policy turns a failed
outcome into a reward.
"""

from __future__ import annotations

import asyncio
import math
import traceback
from collections.abc import Sequence
from numbers import Real
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol, overload, runtime_checkable

from rewardrouter.errors import did_you_mean, message_of, short_repr

if TYPE_CHECKING:
    from rewardrouter.sample import SampleLike

CallStatus = Literal["ok", "error", "timeout", "invalid"]
#: What a failure that is the setup's lies in (see :class:`Outcome`).
SetupFault = Literal["data", "infrastructure"]

#: Exceptions that steer the program rather than report a failed reward call: never caught.
CONTROL_FLOW = (KeyboardInterrupt, GeneratorExit, asyncio.CancelledError)


class Undecided:
    """What a reward callable's quick path returns for a sample it cannot decide (see
    :class:`QuickPath`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNDECIDED"


UNDECIDED = Undecided()


@runtime_checkable
class QuickPath(Protocol):
    """A reward callable that may also offer a bounded quick path.

    When ``has_quick`` is true, ``quick(args, sample, **kwargs)`` takes the arguments of the
    callable itself and returns the reward, or :data:`UNDECIDED` when only the full call can
    tell; it is bounded by construction, so it needs no deadline. Executors that ship functions
    to other processes run it first in the router's process
    (:meth:`~rewardrouter.execute.registry.Executors.run`) and send only the undecided samples.
    Built-in graders registered with a ``quick`` path (``math``, ``dapo``, ``deepscaler``) are
    called through :class:`~rewardrouter.rewards.registry.BuiltinReward`, which is one.
    """

    @property
    def has_quick(self) -> bool: ...

    def quick(self, args: Any, sample: SampleLike, **kwargs: Any) -> Any: ...


class InfrastructureFault(Exception):
    """Base of the failures of what a call runs on (a sandbox that cannot start, a server that
    cannot be reached, NLTK data that is not installed): not the response's doing, so the
    term's ``on_error`` decides, ``raise`` included."""


class DataFault(ValueError):
    """Base of the failures of a sample's data other than its response (a label no grader can
    read): a fault of the dataset, so the term's ``on_error`` decides, ``raise`` included."""


class SampleFault(Exception):
    """Base of the failures that the sample itself caused where the function could not tell
    (a response no JSON can carry, a request that its response made too large for the server):
    that sample's status, counted, whatever the term's ``on_error``."""


class Outcome(NamedTuple):
    """What one call gave one sample: its return ``value``, or a failed ``status`` and ``error``.

    Who is to blame for a failure decides whether it may stop the batch:

    - ``sample_fault``: the failure lies in the sample's own data (a malformed conversation,
      which the policy wrote; a :class:`SampleFault`), not in the function, its config or the
      infrastructure;
    - ``setup_fault``: the failure lies in the dataset (``"data"``: a :class:`DataFault`) or
      in the configuration or infrastructure (``"infrastructure"``: an
      :class:`InfrastructureFault`, worker processes that cannot start);
    - neither: the function itself failed (it raised, overran its deadline or returned
      something unusable). For a built-in kind, whose every input but the response is checked
      or set by the config, that is the response's doing too.

    ``combine`` records a failure that is the sample's as that sample's status and never raises
    for it, whatever the term's ``on_error``, so that one sample cannot stop the batch.
    """

    value: Any
    status: CallStatus = "ok"
    error: str | None = None
    sample_fault: bool = False
    setup_fault: SetupFault | None = None


class InvalidReturn(Exception):
    """A return value the router cannot use; the message says what was found and expected,
    ``hint`` (when known) what to change."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


def to_value(raw: Any, key: str | None) -> float | None:
    """The float that ``raw`` stands for; ``None`` means "not applicable".

    A number (bool included) is used as it is; a dict gives its ``key`` entry. NaN, ±inf, a
    number beyond float range (``10**400``), strings and other types, a dict without ``key``
    or a dict when no key is configured are :class:`InvalidReturn`.
    """
    if type(raw) is float and raw - raw == 0.0:  # a finite float: the common case, at once
        return raw
    if raw is None:
        return None
    if isinstance(raw, dict):
        if key is None:
            raise InvalidReturn(
                f"returned a dict with keys {sorted(map(str, raw))}; set `key:` on the term "
                f"to name the training value"
            )
        if key not in raw:
            keys = sorted(map(str, raw))
            close = did_you_mean(key, keys)
            raise InvalidReturn(
                f"returned a dict without key {key!r} (keys: {keys})",
                f"{close + ' ' if close else ''}set the term's `key:` to the entry that is the "
                f"training value",
            )
        entry = raw[key]
        if isinstance(entry, dict):
            raise InvalidReturn(
                f"entry {key!r} of the returned dict is a dict: {short_repr(entry)}"
            )
        return to_value(entry, None)
    if isinstance(raw, Real) or (hasattr(raw, "__float__") and not isinstance(raw, str | bytes)):
        try:
            value = float(raw)
        except OverflowError:  # an int (or Fraction, Decimal) beyond float range, e.g. 10**400
            raise InvalidReturn(
                f"returned {short_repr(raw)}, beyond the range of a float; rewards must be finite"
            ) from None
        except (TypeError, ValueError):
            raise InvalidReturn(f"returned {short_repr(raw)}, which is not a number") from None
        if not math.isfinite(value):
            raise InvalidReturn(f"returned {value}; rewards must be finite")
        return value
    raise InvalidReturn(
        f"returned {type(raw).__name__} {short_repr(raw)}; expected a number, a dict or None"
    )


#: The most characters of an exception's message that an outcome keeps: a message may quote
#: the response (a megabyte of it), and every failed sample's message travels in the result.
MESSAGE_CHARS = 2000


def describe_exception(exc: BaseException) -> str:
    """``"ValueError: bad input (my_rewards.py:12)"``: the cause and where it was raised (not
    for a fault of the setup's or the sample's, whose message says all there is: where
    rewardrouter raised it would only change with its code). A message over
    :data:`MESSAGE_CHARS` is cut there and says how long it was; one that cannot be shown
    (its ``__str__`` raises) is named so."""
    message = message_of(exc, MESSAGE_CHARS)
    if isinstance(exc, InfrastructureFault | DataFault | SampleFault):
        return f"{type(exc).__name__}: {message}"
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" ({frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {message}{where}"


def failed(exc: BaseException) -> Outcome:
    """A call that raised: ``timeout`` for a ``TimeoutError``, ``invalid`` for an
    :class:`InvalidReturn` (e.g. a remote reply that is not JSON), else ``error``; a
    :class:`InfrastructureFault` or :class:`DataFault` is the setup's fault, a
    :class:`SampleFault` the sample's."""
    status: CallStatus = "error"
    if isinstance(exc, TimeoutError):
        status = "timeout"
    elif isinstance(exc, InvalidReturn):
        status = "invalid"
    setup: SetupFault | None = None
    if isinstance(exc, DataFault):
        setup = "data"
    elif isinstance(exc, InfrastructureFault):
        setup = "infrastructure"
    sample = isinstance(exc, SampleFault)
    return Outcome(None, status, describe_exception(exc), sample_fault=sample, setup_fault=setup)


def setup_failed(message: str) -> Outcome:
    """A call that could not run for a reason of the setup's (worker processes that cannot start
    or load the call, a closed router): an ``error`` the term's ``on_error`` decides."""
    return Outcome(None, "error", message, setup_fault="infrastructure")


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
