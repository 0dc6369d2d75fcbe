"""Bookkeeping of the process executor: jobs (one route group's calls) and the tasks that carry
some of those calls to a worker.

Every call of a job ends with exactly one recorded :class:`Outcome`, whatever happens to the
tasks that carry it: the first outcome recorded wins, and a call whose task was lost (its worker
was killed or died) goes back to the job's ``retry`` queue unless it was the culprit.
"""

from __future__ import annotations

import pickle
from collections import deque
from collections.abc import Hashable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from rewardrouter.execute.outcome import Outcome, describe_exception
from rewardrouter.execute.snapshot import snapshot


@dataclass(eq=False)
class Job:
    """The calls of one route group: one per sample, or one for a whole group-mode call."""

    id: int
    future: Future[list[Outcome]]
    blob: bytes  # pickled (fn, args, kwargs, group, timeout)
    samples: Sequence[Any]
    group: bool
    timeout: float
    key: Hashable
    outcomes: list[Outcome | None]
    missing: int
    cursor: int = 0
    retry: deque[int] = field(default_factory=deque)  # calls to run again

    def remaining(self) -> int:
        """Calls not yet handed to a worker."""
        return len(self.retry) + len(self.outcomes) - self.cursor

    def take(self, size: int) -> list[int]:
        """Up to ``size`` calls to hand out: calls to run again first, then new ones."""
        taken = [self.retry.popleft() for _ in range(min(size, len(self.retry)))]
        end = min(len(self.outcomes), self.cursor + size - len(taken))
        taken += range(self.cursor, end)
        self.cursor = end
        return taken

    def item(self, index: int) -> Any:
        """What a worker receives for call ``index``: a sample snapshot, or all of them."""
        if self.group:
            return [snapshot(s) for s in self.samples]
        return snapshot(self.samples[index])

    def payload(self, indices: list[int]) -> tuple[bytes, list[int]]:
        """The pickled items of calls ``indices``, and those calls. A call whose sample cannot
        be pickled is left out, with an ``error`` outcome saying why."""
        try:
            return pickle.dumps([self.item(i) for i in indices], pickle.HIGHEST_PROTOCOL), indices
        except Exception:
            pass
        kept = []
        for index in indices:
            try:
                pickle.dumps(self.item(index), pickle.HIGHEST_PROTOCOL)
            except Exception as exc:
                cause = describe_exception(exc)
                message = f"this sample cannot be sent to a worker process: {cause}"
                self.record(index, Outcome(None, "error", message))
            else:
                kept.append(index)
        return pickle.dumps([self.item(i) for i in kept], pickle.HIGHEST_PROTOCOL), kept

    def record(self, index: int, outcome: Outcome) -> None:
        if self.outcomes[index] is None:
            self.outcomes[index] = outcome
            self.missing -= 1


@dataclass(eq=False)
class Task:
    """Calls ``indices`` of ``job``, sent to one worker at ``sent`` (time.monotonic)."""

    id: int
    job: Job
    indices: list[int]
    sent: float
    reported: int = 0  # leading calls whose outcomes arrived
    limit: int = 0  # calls from here on were taken back (given to other workers)

    def __post_init__(self) -> None:
        self.limit = len(self.indices)

    def unfinished(self) -> list[int]:
        """Calls of this task, still the worker's, without an outcome."""
        outcomes = self.job.outcomes
        return [i for i in self.indices[self.reported : self.limit] if outcomes[i] is None]
