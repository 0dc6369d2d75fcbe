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
from typing import Any

from rewardrouter.execute.calls import call_each
from rewardrouter.execute.outcome import Outcome, describe_exception
from rewardrouter.execute.snapshot import restore

READY = "ready"

#: Layout of a worker's shared progress array.
TASK, POSITION, STARTED, LIMIT = 0, 1, 2, 3


class _Reporter:
    """The :class:`~rewardrouter.execute.calls.Tracker` of one task: progress and results."""

    def __init__(self, conn: Connection, task_id: int, progress: Any, flush_seconds: float) -> None:
        self.conn = conn
        self.task_id = float(task_id)
        self.progress = progress
        self.flush_seconds = flush_seconds
        self.buffer: list[Outcome] = []
        self.first = 0
        self.since = time.monotonic()

    def start(self, position: int) -> bool:
        progress = self.progress
        progress[STARTED] = time.monotonic()  # written before the position: see ProcessPool
        progress[POSITION] = float(position)
        progress[TASK] = self.task_id
        return bool(position < progress[LIMIT])

    def done(self, position: int, outcome: Outcome) -> None:
        self.buffer.append(outcome)
        if time.monotonic() - self.since >= self.flush_seconds:
            self.flush(False)

    def flush(self, done: bool) -> None:
        now = time.monotonic()
        message = (int(self.task_id), self.first, self.buffer, now - self.since, done)
        try:
            self.conn.send(message)
        except Exception:  # a value that cannot be pickled: found and replaced below
            self.buffer = [_sendable(o) for o in self.buffer]
            self.conn.send((int(self.task_id), self.first, self.buffer, now - self.since, done))
        self.first += len(self.buffer)
        self.buffer = []
        self.since = now


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
    job_id: int | None = None
    call: Callable[[Any], Any] = restore
    timeout = 0.0
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
            if job != job_id:
                job_id = None
                call, timeout = load_job(blob)
                job_id = job
            items = pickle.loads(items_blob)
        except Exception as exc:
            cause = describe_exception(exc)
            reporter.buffer = [
                Outcome(None, "error", f"the worker could not load the call: {cause}")
            ]
            reporter.buffer *= count
        else:
            call_each(call, items, timeout, reporter)
        reporter.flush(True)
