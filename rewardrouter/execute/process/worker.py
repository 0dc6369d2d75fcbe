"""The main loop of a worker process of the ``process`` executor.

Protocol, over one duplex pipe per worker (the parent side is
:class:`~rewardrouter.execute.process.pool.ProcessPool`; the messages are
:mod:`~rewardrouter.execute.wire`'s, shared with the Ray actors):

- the worker imports the modules it was given, then sends :data:`READY`;
- the parent sends a task ``(task_id, job_id, job_blob, items_blob, count)``;
- the worker answers with :class:`~rewardrouter.execute.wire.OutcomeBatch` messages
  ``(task_id, first, outcomes, seconds, done)``, flushed every ``flush_seconds`` and at the end
  of the task;
- ``None`` from the parent, or a closed pipe, stops the worker.

Before each call the worker writes ``[task_id, position, start time]`` into its shared
``progress`` array: how the parent sees, without a message, which call overran its deadline.
The fourth entry, ``limit``, is the parent's: the worker starts no call at a position at or
past it, which lets the parent take back the calls of a task that have not started yet (to give
them to an idle worker) without a message to a worker that may be stuck.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any, TypeVar

from rewardrouter.execute.calls import call_each
from rewardrouter.execute.process.shared import SharedDoubles
from rewardrouter.execute.wire import JobCache, OutcomeBatch, unloadable
from rewardrouter.introspect import import_quietly
from rewardrouter.outcome import Outcome
from rewardrouter.supervise.boot import die_with_parent

READY = "ready"

R = TypeVar("R")

#: Layout of a worker's shared progress array.
TASK, POSITION, STARTED, LIMIT = 0, 1, 2, 3


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


def read_progress(progress: Any, task_id: int) -> tuple[int, float] | None:
    """The position of the running call of task ``task_id`` and when it started; None while
    no call of the task has started. Read in the reverse order of :class:`_Reporter`'s writes,
    so a read that races with a write can only see a later start, never an earlier one."""
    if int(progress[TASK]) != task_id:
        return None
    position = int(progress[POSITION])
    return position, float(progress[STARTED])


def serve(conn: Connection, progress: Any, modules: Sequence[str], flush_seconds: float) -> None:
    """Run tasks from ``conn`` until told to stop. The main loop of every worker process."""
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    import_quietly(modules)
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


def serve_fresh(conn_fd: int, progress_fd: int, modules: list[str], flush_seconds: float) -> None:
    """The entry point of a worker started as a fresh interpreter
    (:class:`~rewardrouter.execute.process.launch.FreshLauncher`): the leader of its own process
    group, so that killing the group also kills what its reward functions started."""
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    progress = SharedDoubles(4, progress_fd).view(0, 4)
    serve(Connection(conn_fd), progress, modules, flush_seconds)
