"""Bookkeeping of the process and Ray executors: jobs (one route group's calls), the tasks that
carry some of those calls to a worker, and how many calls a task carries.

Every call of a job ends with exactly one recorded :class:`Outcome`, whatever happens to the
tasks that carry it: the first outcome recorded wins, and a call whose task was lost (its worker
was killed or died) goes back to the job's ``retry`` queue unless it was the culprit.

Task sizes: sending a task to a worker costs a fixed hand-off (pickling, a pipe round trip) on
top of the calls. For a grader that takes 20 ms the hand-off is noise; for one that takes 20 µs
it is most of the time. :class:`ChunkSizer` learns each function's time per call from the
results and sizes tasks to carry about ``target`` seconds of work, but never more than a fair
share of what is left, so the last samples of a batch still spread over every worker.

>>> sizer = ChunkSizer(target=0.05)
>>> sizer.size("fn", remaining=1000, workers=4)   # nothing known yet: one call, to measure
1
>>> sizer.observe("fn", seconds=0.001, calls=10)  # 100 µs per call
>>> sizer.size("fn", remaining=1000, workers=4)
250
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import pickle
from collections import deque
from collections.abc import Hashable, Sequence
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from typing import Any, cast

from rewardrouter.execute.executor import Call, Executor
from rewardrouter.execute.wire import portable_args, snapshot
from rewardrouter.outcome import Outcome, describe_exception, setup_failed, timed_out
from rewardrouter.sample import SampleLike

#: Seconds a worker may spend loading a task (unpickling its function and samples) before the
#: first call starts, when that is longer than the call's own timeout.
LOAD_GRACE = 30.0


@dataclass(eq=False)
class Job:
    """The calls of one route group: one per sample, or one for a whole group-mode call."""

    id: int
    future: Future[list[Outcome]]
    blob: bytes  # pickled (fn, args, kwargs, group, timeout)
    samples: Sequence[SampleLike]
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
                self.record(index, setup_failed(message))
            else:
                kept.append(index)
        return pickle.dumps([self.item(i) for i in kept], pickle.HIGHEST_PROTOCOL), kept

    def record(self, index: int, outcome: Outcome) -> None:
        if self.outcomes[index] is None:
            self.outcomes[index] = outcome
            self.missing -= 1

    def fail(self, reason: str) -> None:
        """End the job: every call without an outcome is an ``error`` saying ``reason``."""
        for index in range(len(self.outcomes)):
            self.record(index, setup_failed(reason))
        self.finish()

    def finish(self) -> bool:
        """Hand the outcomes to the caller once every call has one; True if the job is over."""
        if self.missing:
            return False
        # InvalidStateError: the caller cancelled the job and wants no results.
        with contextlib.suppress(InvalidStateError):
            self.future.set_result(cast("list[Outcome]", self.outcomes))  # all filled in
        return True


def open_job(job_id: int, call: Call, samples: Sequence[SampleLike]) -> Job:
    """The job of running ``call`` on ``samples`` (one call each, or one group call).

    Its future is done at once when nothing is left to send: no samples, or a function (or
    ``kwargs``) that cannot be pickled, which makes every call ``error``.
    """
    group, timeout = call.group, call.timeout
    count = 1 if group else len(samples)
    job = Job(job_id, Future(), b"", samples, group, timeout, call.key, [None] * count, count)
    if not count:
        job.future.set_result([])
        return job
    try:
        blob = (call.callee.fn, portable_args(call.args), dict(call.kwargs), group, timeout)
        job.blob = pickle.dumps(blob, pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        message = f"the call cannot be sent to a worker process: {describe_exception(exc)}"
        job.future.set_result([setup_failed(message)] * count)
    return job


class PoolBroken(Exception):
    """The pool cannot go on (its workers keep dying at start-up); the message says why."""


@dataclass(frozen=True)
class LostCalls:
    """The outcomes of calls lost with their worker, in words that name it: a ``worker``
    (``worker process``, ``Ray actor``) replaced by a new ``replacement`` (``worker``, ``actor``)."""

    worker: str
    replacement: str

    def overran(self, timeout: float) -> Outcome:
        """The call that passed its deadline: its worker was killed."""
        return timed_out(timeout, f"; its {self.worker} was killed and replaced")

    def not_started(self, timeout: float) -> Outcome:
        """A call whose worker was still loading the task at the deadline (the setup's fault:
        the call itself never ran)."""
        return Outcome(
            None,
            "timeout",
            f"a {self.worker} did not start this call within {max(timeout, LOAD_GRACE):g} s "
            f"(loading the function and samples); it was killed and replaced",
            setup_fault="infrastructure",
        )

    def died(self, cause: str) -> Outcome:
        """The call its worker was on when it died."""
        return Outcome(
            None,
            "error",
            f"the {self.worker} died ({cause}) during this call; a new {self.replacement} "
            f"replaced it",
        )


class TaskPool:
    """Workers in other processes that run jobs in tasks: what the process and Ray pools share.

    :meth:`submit` turns a route group's calls into a :class:`Job`; a subclass's
    :meth:`_enqueue` hands it to the pool's own thread.
    """

    def __init__(self) -> None:
        self._ids = itertools.count(1)

    def submit(self, call: Call, samples: Sequence[SampleLike]) -> Future[list[Outcome]]:
        """Run ``call`` on ``samples``: a future of one :class:`Outcome` per sample, or of a
        single one for a group call. Raises :class:`~rewardrouter.errors.RewardRouterError`
        once the pool is closed."""
        job = open_job(next(self._ids), call, samples)
        if not job.future.done():
            self._enqueue(job)
        return job.future

    def _enqueue(self, job: Job) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Stop the workers; calls not yet run end as errors. Idempotent."""
        raise NotImplementedError


class PoolExecutor(Executor):
    """An executor whose calls run as tasks of a :class:`TaskPool` (made by ``__init__``)."""

    ships_functions = True
    pool: TaskPool

    async def run(self, call: Call, samples: Sequence[SampleLike]) -> Sequence[Outcome]:
        return await asyncio.wrap_future(self.pool.submit(call, samples))

    def close(self) -> None:
        self.pool.close()


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

    def report(self, first: int, outcomes: Sequence[Outcome]) -> None:
        """The worker sent the outcomes of this task's calls ``first, first + 1, ...``."""
        job = self.job
        for offset, outcome in enumerate(outcomes):
            job.record(self.indices[first + offset], outcome)
        self.reported = first + len(outcomes)

    def unfinished(self) -> list[int]:
        """Calls of this task, still the worker's, without an outcome."""
        outcomes = self.job.outcomes
        return [i for i in self.indices[self.reported : self.limit] if outcomes[i] is None]


class ChunkSizer:
    """Task sizes from a moving average of seconds per call, per function."""

    def __init__(self, target: float) -> None:
        self.target = target
        self._per_call: dict[Hashable, float] = {}

    def observe(self, key: Hashable, seconds: float, calls: int) -> None:
        """``calls`` calls of ``key`` took ``seconds`` together."""
        if calls <= 0:
            return
        sample = seconds / calls
        known = self._per_call.get(key)
        self._per_call[key] = sample if known is None else 0.5 * known + 0.5 * sample

    def size(self, key: Hashable, remaining: int, workers: int) -> int:
        """Calls to put in the next task of ``key``, with ``remaining`` calls left to hand out."""
        per_call = self._per_call.get(key)
        if per_call is None:
            return 1
        fair = -(-remaining // max(workers, 1))
        return max(1, min(fair, int(self.target / max(per_call, 1e-9))))
