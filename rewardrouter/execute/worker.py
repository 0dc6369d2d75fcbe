"""The main loop of a worker process of the ``process`` executor.

Protocol, over one duplex pipe per worker (the parent side is
:class:`~rewardrouter.execute.processes.ProcessPool`):

- the worker imports the modules it was given, then sends :data:`READY`;
- the parent sends ``(task_id, job_id, job_blob, items_blob, count)``: ``job_blob`` pickles
  ``(fn, args, kwargs, group, timeout)`` (kept while the job id stays the same), ``items_blob``
  the ``count`` items — sample snapshots, or one list of them for a group-mode call;
- the worker answers ``(task_id, first, outcomes, seconds, done)``: outcomes of items
  ``first, first + 1, ...``, the seconds they took, and whether the task is complete. Results
  are flushed every ``flush_seconds`` and at the end of the task;
- ``None`` from the parent, or a closed pipe, stops the worker.

Before each call the worker writes ``[task_id, position, start time]`` into its shared
``progress`` array: how the parent sees, without a message, which call overran its deadline.
The fourth entry, ``limit``, is the parent's: the worker starts no call at a position at or
past it, which lets the parent take back the calls of a task that have not started yet (to give
them to an idle worker) without a message to a worker that may be stuck.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import pickle
import signal
import sys
import time
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any, TypeVar

from rewardrouter.execute.calls import call_each
from rewardrouter.execute.outcome import Outcome, describe_exception
from rewardrouter.execute.snapshot import restore

READY = "ready"

R = TypeVar("R")

#: Layout of a worker's shared progress array.
TASK, POSITION, STARTED, LIMIT = 0, 1, 2, 3


Message = tuple[int, int, list[Outcome], float, bool]


class OutcomeBatch:
    """The outcomes of one task on their way back to the pool, sent in batches.

    A batch is due once ``flush_seconds`` have passed since the last one, and at the end of the
    task. Each message is ``(task_id, first, outcomes, seconds, done)``: the outcomes of calls
    ``first, first + 1, ...``, the seconds they took, and whether the task is complete. Shared
    by the worker processes (sent over a pipe) and the Ray actors (yielded to a stream).
    """

    def __init__(self, task_id: int, flush_seconds: float) -> None:
        self.task_id = task_id
        self.flush_seconds = flush_seconds
        self.buffer: list[Outcome] = []
        self.first = 0
        self.since = time.monotonic()

    def add(self, outcome: Outcome) -> bool:
        """Keep ``outcome``; True when a batch is due."""
        self.buffer.append(outcome)
        return time.monotonic() - self.since >= self.flush_seconds

    def flush(self, send: Callable[[Message], R], done: bool) -> R:
        """``send`` the kept outcomes as one message, and start a new batch.

        A value that cannot be pickled becomes an ``invalid`` outcome that says so.
        """
        now = time.monotonic()
        outcomes = self.buffer
        try:
            sent = send((self.task_id, self.first, outcomes, now - self.since, done))
        except Exception:  # a value that cannot be pickled: found and replaced
            outcomes = [_sendable(o) for o in outcomes]
            sent = send((self.task_id, self.first, outcomes, now - self.since, done))
        self.first += len(outcomes)
        self.buffer = []
        self.since = now
        return sent


class _Reporter(OutcomeBatch):
    """The :class:`~rewardrouter.execute.calls.Tracker` of one task: progress and results."""

    def __init__(self, conn: Connection, task_id: int, progress: Any, flush_seconds: float) -> None:
        super().__init__(task_id, flush_seconds)
        self.conn = conn
        self.progress = progress

    def start(self, position: int) -> bool:
        progress = self.progress
        progress[STARTED] = time.monotonic()  # written before the position: see ProcessPool
        progress[POSITION] = float(position)
        progress[TASK] = float(self.task_id)
        return bool(position < progress[LIMIT])

    def done(self, position: int, outcome: Outcome) -> None:
        if self.add(outcome):
            self.flush(self.conn.send, False)


def _sendable(outcome: Outcome) -> Outcome:
    try:
        pickle.dumps(outcome)
    except Exception as exc:
        kind = type(outcome.value).__name__
        return Outcome(None, "invalid", f"returned a {kind}, which cannot leave the worker ({exc})")
    return outcome


def load_job(blob: bytes) -> tuple[Callable[[Any], Any], float]:
    """The per-item call of a job, and its timeout."""
    fn, args, kwargs, group, timeout = pickle.loads(blob)
    if group:
        return (lambda items: fn(args, [restore(v) for v in items], **kwargs)), timeout
    return (lambda values: fn(args, restore(values), **kwargs)), timeout


class JobCache:
    """The job a worker ran last: a job's calls arrive in several tasks, loaded once."""

    def __init__(self) -> None:
        self._id: int | None = None
        self._call: Callable[[Any], Any] = restore
        self._timeout = 0.0

    def load(
        self, job_id: int, blob: bytes, items_blob: bytes
    ) -> tuple[Callable[[Any], Any], float, list[Any]]:
        """The per-item call of job ``job_id`` (``blob``, unpickled when the job is new), its
        timeout, and the task's items. Raises whatever unpickling raises."""
        if job_id != self._id:
            self._id = None
            self._call, self._timeout = load_job(blob)
            self._id = job_id
        return self._call, self._timeout, pickle.loads(items_blob)


def unloadable(exc: BaseException, count: int) -> list[Outcome]:
    """The outcomes of a task whose function or samples could not be loaded."""
    cause = describe_exception(exc)
    return [Outcome(None, "error", f"the worker could not load the call: {cause}")] * count


def die_with_parent() -> None:
    """On Linux, ask the kernel to kill this process if its parent dies (even by SIGKILL)."""
    if sys.platform != "linux":
        return
    with contextlib.suppress(Exception):
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG


def read_progress(progress: Any, task_id: int) -> tuple[int, float] | None:
    """The position of the running call of task ``task_id`` and when it started; None while
    no call of the task has started. Read in the reverse order of :class:`_Reporter`'s writes,
    so a read that races with a write can only see a later start, never an earlier one."""
    if int(progress[TASK]) != task_id:
        return None
    position = int(progress[POSITION])
    return position, float(progress[STARTED])


def progress_slot(shared: Any, slot: int) -> Any:
    """Slot ``slot`` of a shared array of progress records, as a four-entry ctypes view."""
    size = ctypes.sizeof(ctypes.c_double) * 4
    return (ctypes.c_double * 4).from_buffer(shared, slot * size)


def serve(conn: Connection, progress: Any, modules: Sequence[str], flush_seconds: float) -> None:
    """Run tasks from ``conn`` until told to stop. The target of every worker process."""
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    for module in modules:
        # A module that fails here fails again in the task that needs it, which reports it.
        with contextlib.suppress(Exception):
            importlib.import_module(module)
    conn.send(READY)
    jobs = JobCache()
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        task_id, job, blob, items_blob, count = message
        reporter = _Reporter(conn, task_id, progress, flush_seconds)
        try:
            call, timeout, items = jobs.load(job, blob, items_blob)
        except Exception as exc:
            reporter.buffer = unloadable(exc, count)
        else:
            call_each(call, items, timeout, reporter)
        reporter.flush(conn.send, True)
