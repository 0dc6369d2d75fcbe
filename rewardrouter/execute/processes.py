"""The ``process`` executor: worker processes with real deadlines.

One :class:`ProcessPool` per router, started on first use, reused by every batch, stopped by
:meth:`ProcessPool.close` (``Router.close()``). A dispatcher thread owns the workers. It hands
each idle worker a *task*: some calls of one *job* (one route group), as many as carry about
``chunk_seconds`` of work (see :mod:`~rewardrouter.execute.chunks`), so cheap calls do not pay a
hand-off each. Before every call a worker writes which call it is on, and since when, into a few
bytes of shared memory; the dispatcher sleeps until the earliest deadline, reads them, and:

- a call past its deadline: the worker is killed (``SIGKILL``, which code spinning inside C
  cannot ignore) and replaced; that call is ``timeout``, and the task's other unfinished calls
  go back to the queue, so one overrun does not cost its neighbours their results;
- a worker that dies (``os._exit``, a segfault, the OOM killer): the call it was on is
  ``error``, the rest of its task goes back to the queue, and a new worker takes its place.

Workers start with ``forkserver`` where the platform has it (a replacement forks from a server
that has already imported rewardrouter and the reward modules: milliseconds, not an interpreter
start-up), else ``spawn``; never plain ``fork``, which would copy the trainer's threads and CUDA
state. Samples cross as plain snapshots (:mod:`~rewardrouter.execute.snapshot`). Workers are
daemonic: a reward function may run subprocesses but not multiprocessing children of its own.

>>> pool = ProcessPool(2, chunk_seconds=0.05, start_method="auto", modules=["my_rewards"])
>>> future = pool.submit(my_rewards.grade, None, samples, {}, group=False, timeout=5.0, key="g")
>>> outcomes = future.result()
>>> pool.close()
"""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing as mp
import pickle
import signal
import threading
import time
from collections import deque
from collections.abc import Hashable, Sequence
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.context import BaseContext
from typing import Any, Literal, cast

from rewardrouter._errors import RewardRouterError
from rewardrouter.execute.chunks import ChunkSizer
from rewardrouter.execute.outcome import Outcome, describe_exception, timed_out
from rewardrouter.execute.snapshot import portable_args, snapshot
from rewardrouter.execute.worker import LIMIT, POSITION, READY, STARTED, TASK, serve

#: Seconds a worker may spend loading a task (unpickling its function and samples) before the
#: first call starts, when that is longer than the call's own timeout.
LOAD_GRACE = 30.0
#: Seconds a new worker may take to import its modules and report ready.
BOOT_SECONDS = 120.0
#: Workers in a row that die before becoming ready, after which the pool gives up.
BOOT_FAILURES = 3

StartMethod = Literal["auto", "forkserver", "spawn"]


def start_context(method: StartMethod, modules: Sequence[str]) -> BaseContext:
    """The multiprocessing context for ``method``; a forkserver preloads ``modules``."""
    if method == "auto":
        method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    context = mp.get_context(method)
    if method == "forkserver":
        # Only the first pool of a process starts the server; later calls change nothing.
        context.set_forkserver_preload(["__main__", serve.__module__, *modules])
    return context


def _exit_text(code: int | None) -> str:
    if code is None:
        return "exit status unknown"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


@dataclass(eq=False)
class _Job:
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
        return len(self.retry) + len(self.outcomes) - self.cursor

    def take(self, size: int) -> list[int]:
        taken = [self.retry.popleft() for _ in range(min(size, len(self.retry)))]
        end = min(len(self.outcomes), self.cursor + size - len(taken))
        taken += range(self.cursor, end)
        self.cursor = end
        return taken

    def item(self, index: int) -> Any:
        if self.group:
            return [snapshot(s) for s in self.samples]
        return snapshot(self.samples[index])

    def record(self, index: int, outcome: Outcome) -> None:
        if self.outcomes[index] is None:
            self.outcomes[index] = outcome
            self.missing -= 1


@dataclass(eq=False)
class _Task:
    id: int
    job: _Job
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


@dataclass(eq=False)
class _Worker:
    process: Any  # a multiprocessing Process of the pool's context
    conn: Connection
    progress: Any  # shared ctypes array: [task id, position, start time, limit]
    born: float
    ready: bool = False
    task: _Task | None = None


class _Broken(Exception):
    """The pool cannot go on (workers keep dying at start-up); the message says why."""


class ProcessPool:
    """Worker processes that run plain reward functions under real deadlines."""

    def __init__(
        self,
        workers: int,
        *,
        chunk_seconds: float,
        start_method: StartMethod,
        modules: Sequence[str],
    ) -> None:
        self.size = workers
        self._context = start_context(start_method, modules)
        self._modules = tuple(modules)
        self._chunk_seconds = chunk_seconds
        self._sizer = ChunkSizer(chunk_seconds)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._incoming: list[_Job] = []
        self._closing = False
        self._broken: str | None = None
        self._woken = False
        self._wake_r, self._wake_w = self._context.Pipe(duplex=False)
        # Owned by the dispatcher thread once it runs:
        self._jobs: list[_Job] = []
        self._workers: list[_Worker] = []
        self._boot_failures = 0
        self._thread = threading.Thread(
            target=self._run, name="rewardrouter-processes", daemon=True
        )
        self._thread.start()

    # -- the public side ----------------------------------------------------------------------

    @property
    def pids(self) -> list[int]:
        """Process ids of the current workers (for inspection and tests)."""
        return [w.process.pid for w in list(self._workers)]

    def submit(
        self,
        fn: Any,
        args: Any,
        samples: Sequence[Any],
        kwargs: dict[str, Any],
        *,
        group: bool,
        timeout: float,
        key: Hashable,
    ) -> Future[list[Outcome]]:
        """Run ``fn`` on ``samples`` (one call each, or one group call): a future of outcomes.

        The result has one :class:`Outcome` per sample, or a single one for a group call.
        """
        future: Future[list[Outcome]] = Future()
        count = 1 if group else len(samples)
        if not count:
            future.set_result([])
            return future
        try:
            blob = pickle.dumps(
                (fn, portable_args(args), dict(kwargs), group, timeout), pickle.HIGHEST_PROTOCOL
            )
        except Exception as exc:
            cause = describe_exception(exc)
            message = f"the call cannot be sent to a worker process: {cause}"
            future.set_result([Outcome(None, "error", message)] * count)
            return future
        job = _Job(
            next(self._ids), future, blob, samples, group, timeout, key, [None] * count, count
        )
        with self._lock:
            if self._closing:
                if self._broken is None:
                    raise RewardRouterError("this router is closed; compile a new one")
                future.set_result([Outcome(None, "error", self._broken)] * count)
                return future
            self._incoming.append(job)
        self._wake()
        return future

    def close(self) -> None:
        """Stop every worker (idle ones are asked, busy ones killed) and wait. Idempotent."""
        with self._lock:
            self._closing = True
        self._wake()
        if threading.current_thread() is not self._thread:
            self._thread.join()

    def _wake(self) -> None:
        with self._lock:
            if self._woken:
                return
            self._woken = True
            with contextlib.suppress(OSError):  # OSError: the dispatcher has stopped
                self._wake_w.send_bytes(b"!")

    # -- the dispatcher thread ------------------------------------------------------------------

    def _run(self) -> None:
        try:
            # Started here, not by the caller: the first start of a forkserver takes a second,
            # which the caller's event loop should not spend blocked.
            for _ in range(self.size):
                self._start_worker()
            while self._accept():
                self._dispatch()
                self._wait()
        except _Broken as exc:
            self._broken = str(exc)
        except BaseException as exc:  # a bug here must not leave callers waiting forever
            self._broken = f"the worker pool failed: {describe_exception(exc)}"
        finally:
            with self._lock:
                self._closing = True
                self._jobs += self._incoming
                self._incoming.clear()
            self._stop_workers()
            reason = self._broken or "the router was closed before this call ran"
            for job in self._jobs:
                for index in range(len(job.outcomes)):
                    job.record(index, Outcome(None, "error", reason))
                self._settle(job)
            self._wake_r.close()
            self._wake_w.close()

    def _accept(self) -> bool:
        with self._lock:
            if self._closing:
                return False
            self._jobs += self._incoming
            self._incoming.clear()
            return True

    def _start_worker(self) -> None:
        parent, child = self._context.Pipe()
        progress = self._context.RawArray("d", 4)
        progress[TASK] = -1.0
        process = self._context.Process(  # type: ignore[attr-defined]
            target=serve,
            args=(child, progress, self._modules, self._chunk_seconds),
            name="rewardrouter-worker",
            daemon=True,
        )
        process.start()
        child.close()
        self._workers.append(_Worker(process, parent, progress, time.monotonic()))

    def _dispatch(self) -> None:
        for worker in list(self._workers):
            while worker in self._workers and worker.ready and worker.task is None:
                picked = self._next_chunk()
                if picked is None and self._steal():
                    picked = self._next_chunk()
                if picked is None:
                    return
                self._send(worker, *picked)

    def _steal(self) -> bool:
        """Take back half of the not yet started calls of the busiest task, for an idle worker.

        So a call that hangs holds up only itself, not the rest of its task; and the end of a
        batch spreads over every worker. The worker skips calls at or past the task's new
        ``limit``; should it have started one already (a race), that call runs twice and the
        first outcome is kept.
        """
        best: tuple[int, _Worker, int] | None = None
        for worker in self._workers:
            task = worker.task
            if task is None:
                continue
            running = self._progress(worker)
            first_unstarted = max(task.reported, running[0] + 1 if running else 0)
            spare = task.limit - first_unstarted
            if spare > 0 and (best is None or spare > best[0]):
                best = (spare, worker, first_unstarted)
        if best is None:
            return False
        spare, worker, first_unstarted = best
        task = cast(_Task, worker.task)
        limit = first_unstarted + spare // 2
        worker.progress[LIMIT] = float(limit)
        task.job.retry.extendleft(reversed(task.indices[limit : task.limit]))
        task.limit = limit
        return True

    def _next_chunk(self) -> tuple[_Job, list[int]] | None:
        self._jobs = [j for j in self._jobs if not j.future.cancelled()]
        for job in self._jobs:
            remaining = job.remaining()
            if remaining:
                size = self._sizer.size(job.key, remaining, len(self._workers))
                return job, job.take(size)
        return None

    def _send(self, worker: _Worker, job: _Job, indices: list[int]) -> None:
        try:
            payload = pickle.dumps([job.item(i) for i in indices], pickle.HIGHEST_PROTOCOL)
        except Exception:
            indices = self._sendable(job, indices)
            if not indices:
                self._settle(job)
                return
            payload = pickle.dumps([job.item(i) for i in indices], pickle.HIGHEST_PROTOCOL)
        task = _Task(next(self._ids), job, indices, time.monotonic())
        worker.progress[LIMIT] = float(len(indices))
        try:
            worker.conn.send((task.id, job.id, job.blob, payload, len(indices)))
        except OSError:  # the worker died while idle: the task never reached it
            job.retry.extendleft(reversed(indices))
            self._replace(worker, None, None)
            return
        worker.task = task

    def _sendable(self, job: _Job, indices: list[int]) -> list[int]:
        """The calls among ``indices`` that pickle; the others fail here, each with its cause."""
        kept = []
        for index in indices:
            try:
                pickle.dumps(job.item(index), pickle.HIGHEST_PROTOCOL)
            except Exception as exc:
                cause = describe_exception(exc)
                message = f"this sample cannot be sent to a worker process: {cause}"
                job.record(index, Outcome(None, "error", message))
            else:
                kept.append(index)
        return kept

    def _wait(self) -> None:
        now = time.monotonic()
        looks = [t for w in self._workers if (t := self._next_look(w, now)) is not None]
        timeout = max(0.0, min(looks) - now) if looks else None
        owners: dict[Any, _Worker] = {}
        for worker in self._workers:
            owners[worker.conn] = worker
            owners[worker.process.sentinel] = worker
        for ready in wait([self._wake_r, *owners], timeout):
            if ready is self._wake_r:
                with self._lock:
                    self._woken = False
                while self._wake_r.poll():
                    self._wake_r.recv_bytes()
                continue
            worker = owners[ready]
            if worker in self._workers:
                self._receive(worker)
                if ready is not worker.conn and worker in self._workers:  # its sentinel: dead
                    self._died(worker)
        now = time.monotonic()
        for worker in list(self._workers):
            deadline = self._deadline(worker)
            if deadline is None or now < deadline:
                continue
            self._receive(worker)  # results that arrived meanwhile may have ended the task
            deadline = self._deadline(worker) if worker in self._workers else None
            if deadline is not None and now >= deadline:
                self._overran(worker, now)

    def _receive(self, worker: _Worker) -> None:
        try:
            while worker.conn.poll():
                self._handle(worker, worker.conn.recv())
        except (EOFError, OSError):
            self._died(worker)

    def _handle(self, worker: _Worker, message: Any) -> None:
        if message == READY:
            worker.ready = True
            self._boot_failures = 0
            return
        task_id, first, outcomes, seconds, done = message
        task = worker.task
        if task is None or task.id != task_id:
            return
        job = task.job
        for offset, outcome in enumerate(outcomes):
            job.record(task.indices[first + offset], outcome)
        task.reported = first + len(outcomes)
        self._sizer.observe(job.key, seconds, len(outcomes))
        if done:
            # Calls the worker skipped because of a new limit it read before it was taken back.
            job.retry.extend(task.unfinished())
            worker.task = None
        self._settle(job)

    def _settle(self, job: _Job) -> None:
        if job.missing:
            return
        if job in self._jobs:
            self._jobs.remove(job)
        # InvalidStateError: the caller cancelled the job and wants no results.
        with contextlib.suppress(InvalidStateError):
            job.future.set_result(cast("list[Outcome]", job.outcomes))  # all filled in

    # -- deadlines and deaths -------------------------------------------------------------------

    def _progress(self, worker: _Worker) -> tuple[int, float] | None:
        """The position of the running call of the worker's task and its start time, or None
        while no call of the task has started. Read in the reverse order of the worker's writes,
        so a read that races with a write can only see a later start, never an earlier one."""
        task = worker.task
        progress = worker.progress
        if task is None or int(progress[TASK]) != task.id:
            return None
        position = int(progress[POSITION])
        return position, float(progress[STARTED])

    def _deadline(self, worker: _Worker) -> float | None:
        if not worker.ready:
            return worker.born + BOOT_SECONDS
        task = worker.task
        if task is None:
            return None
        running = self._progress(worker)
        if running is None:
            return task.sent + max(task.job.timeout, LOAD_GRACE)
        return running[1] + task.job.timeout

    def _next_look(self, worker: _Worker, now: float) -> float | None:
        """When to read the worker's progress again: its deadline, or — while its task has not
        started a call — ``now + timeout``, the earliest a call starting from now could end."""
        deadline = self._deadline(worker)
        task = worker.task
        if deadline is not None and task is not None and self._progress(worker) is None:
            return min(deadline, now + task.job.timeout)
        return deadline

    def _overran(self, worker: _Worker, now: float) -> None:
        task = worker.task
        if task is None:
            self._replace(worker, None, None)  # a worker that never became ready
            self._boot_failed(f"a worker process did not start within {BOOT_SECONDS:g} s")
            return
        worker.process.kill()
        worker.process.join()
        timeout = task.job.timeout
        running = self._progress(worker)  # frozen now
        guilty = running is not None and now >= running[1] + timeout
        self._replace(
            worker,
            timed_out(timeout, "; its worker process was killed and replaced") if guilty else None,
            Outcome(
                None,
                "timeout",
                f"a worker process did not start this call within "
                f"{max(timeout, LOAD_GRACE):g} s (loading the function and samples); "
                f"it was killed and replaced",
            ),
        )

    def _died(self, worker: _Worker) -> None:
        worker.process.join(1.0)  # it is exiting; a closed pipe alone is not proof
        cause = _exit_text(worker.process.exitcode)
        if not worker.ready:
            self._replace(worker, None, None)
            self._boot_failed(f"worker processes exit while starting ({cause})")
            return
        self._replace(
            worker,
            Outcome(
                None,
                "error",
                f"the worker process died ({cause}) during this call; a new worker replaced it",
            ),
            Outcome(None, "error", f"the worker process died ({cause}) while loading this call"),
        )

    def _boot_failed(self, reason: str) -> None:
        self._boot_failures += 1
        if self._boot_failures >= BOOT_FAILURES:
            raise _Broken(f"{reason}, {BOOT_FAILURES} times in a row; see the errors above")

    def _replace(self, worker: _Worker, running: Outcome | None, unstarted: Outcome | None) -> None:
        """Retire ``worker``, start a new worker, and settle the old worker's task.

        The task's running call gets ``running`` (None: it runs again), its calls that had not
        started yet get ``unstarted`` when no call of the task had started (None: they run
        again), and every other unfinished call runs again on another worker.
        """
        self._workers.remove(worker)
        if worker.process.is_alive():
            worker.process.kill()
        worker.process.join()
        worker.conn.close()
        with self._lock:
            closing = self._closing
        if not closing:
            self._start_worker()
        task = worker.task
        if task is not None:
            job = task.job
            state = self._progress(worker)
            rest = task.unfinished()
            if state is None:
                if unstarted is None:
                    job.retry.extendleft(reversed(rest))
                else:
                    for index in rest:
                        job.record(index, unstarted)
            else:
                if running is not None:
                    job.record(task.indices[state[0]], running)
                job.retry.extend(i for i in rest if job.outcomes[i] is None)
            self._settle(job)
        worker.process.close()

    def _stop_workers(self) -> None:
        for worker in self._workers:
            try:
                if worker.ready and worker.task is None:
                    worker.conn.send(None)
                else:
                    worker.process.kill()
            except OSError:
                pass
        stop_by = time.monotonic() + 2.0
        for worker in self._workers:
            worker.process.join(max(0.0, stop_by - time.monotonic()))
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.conn.close()
            worker.process.close()
        self._workers.clear()
