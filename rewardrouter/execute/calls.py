"""Call a plain reward function on a run of items, saying where it is: one loop for every executor.

The same loop runs on the event loop (``inline``), on a lane thread (``thread``), inside a
worker process (``process``) and inside a Ray actor (``ray``). Before each call it tells its
:class:`Tracker` which item it is on; that is what lets a supervisor find the one call that
overran its deadline and spare the others.
A call that returns after its deadline is a ``timeout`` too, so a deadline means the same on every
executor whether the call was stopped or merely finished late.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from rewardrouter.outcome import CONTROL_FLOW, Outcome, failed, timed_out


class Tracker(Protocol):
    """Where :func:`call_each` reports progress and outcomes."""

    def start(self, position: int) -> bool:
        """Item ``position`` is about to be called; False: stop here (the run was abandoned)."""

    def done(self, position: int, outcome: Outcome) -> None:
        """Item ``position`` gave ``outcome``."""


def each_outcome(
    call: Callable[[Any], Any],
    items: Sequence[Any],
    timeout: float,
    may_start: Callable[[int], bool] | None = None,
) -> Iterator[Outcome]:
    """The outcome of ``call(item)`` for each item in order, computed as the caller iterates.

    ``may_start(position)`` is asked before each call; False stops the run there. Exceptions
    become ``error`` outcomes; only control flow (KeyboardInterrupt, cancellation) propagates: a
    grader's ``BaseException`` (math-verify's timeout exception is one) or ``sys.exit()`` is the
    failure of that call.
    """
    for position, item in enumerate(items):
        if may_start is not None and not may_start(position):
            return
        begun = time.monotonic()
        try:
            outcome = Outcome(call(item))
        except CONTROL_FLOW:
            raise
        except BaseException as exc:
            outcome = failed(exc)
        took = time.monotonic() - begun
        if took > timeout:
            outcome = timed_out(timeout, f"; it returned after {took:.3g} s, too late to be used")
        yield outcome


def call_each(
    call: Callable[[Any], Any], items: Sequence[Any], timeout: float, tracker: Tracker
) -> None:
    """:func:`each_outcome`, telling ``tracker`` where it is and what each call gave."""
    for position, outcome in enumerate(each_outcome(call, items, timeout, tracker.start)):
        tracker.done(position, outcome)


class Collector:
    """A :class:`Tracker` that keeps every outcome: for calls nobody needs to watch."""

    __slots__ = ("outcomes",)

    def __init__(self) -> None:
        self.outcomes: list[Outcome] = []

    def start(self, position: int) -> bool:
        return True

    def done(self, position: int, outcome: Outcome) -> None:
        self.outcomes.append(outcome)
