"""The ``process`` executor: worker processes with real deadlines.

One :class:`ProcessPool` per router, started on first use, reused by every batch, stopped by
:meth:`ProcessPool.close` (``Router.close()``). A dispatcher thread owns the workers. It hands
each idle worker a *task*: some calls of one *job* (a route group), as many as carry about
``chunk_seconds`` of work (:mod:`~rewardrouter.execute.tasks`), so cheap calls do not pay a
hand-off each. Before every call a worker writes which call it is on, and since when, into a few
shared bytes; the dispatcher sleeps until the earliest deadline, reads them, and:

- a call past its deadline: the worker is killed (``SIGKILL``: code spinning inside C cannot
  ignore it) and replaced; that call is ``timeout``, and its task's other unfinished calls go
  back to the queue, so one overrun does not cost its neighbours their results;
- a worker that dies (``os._exit``, a segfault, the OOM killer): the call it was on is
  ``error``, the rest of its task goes back to the queue, and a new worker takes its place;
- a worker with nothing left to do takes back half of the not yet started calls of the busiest
  task, so a call that hangs holds up only itself and a batch ends on every worker at once.

Workers come from a :mod:`~rewardrouter.execute.process.launch` launcher: forked from a warm template
(on Linux), so a replacement is ready in milliseconds, without cold caches. Samples cross as
plain snapshots (:mod:`~rewardrouter.execute.wire`). Workers are daemonic: a reward function
may run subprocesses but not multiprocessing children of its own.

>>> from rewardrouter.compile.resolve import resolve_builtin
>>> from rewardrouter.execute.executor import Call
>>> from rewardrouter.sample import Sample
>>> samples = [Sample(response="Paris", label="paris"), Sample(response="Rome", label="paris")]
>>> pool = ProcessPool(1, chunk_seconds=0.05, start_method="auto", warm_calls=8, modules=[])
>>> call = Call(resolve_builtin("exact_match", {}), None, timeout=60.0, key="exact_match")
>>> future = pool.submit(call, samples)
>>> [outcome.value for outcome in future.result()]
[1.0, 0.0]
>>> pool.close()
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from multiprocessing.connection import Pipe, wait
from typing import Any, cast

from rewardrouter.execute.executor import Setup, closed
from rewardrouter.execute.process.launch import Launched, StartMethod, launcher_for
from rewardrouter.execute.process.settings import ProcessSettings
from rewardrouter.execute.process.worker import LIMIT, READY, read_progress
from rewardrouter.execute.tasks import (
    LOAD_GRACE,
    ChunkSizer,
    Job,
    LostCalls,
    PoolBroken,
    PoolExecutor,
    Task,
    TaskPool,
)
from rewardrouter.outcome import Outcome, describe_exception, setup_failed
from rewardrouter.supervise.boot import exit_cause

#: Seconds a new worker may take to import its modules and report ready.
BOOT_SECONDS = 120.0
#: Workers in a row that die before becoming ready, after which the pool gives up.
BOOT_FAILURES = 3

LOST = LostCalls("worker process", "worker")


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@dataclass(eq=False)
class _Worker:
    launched: Launched
    born: float
    ready: bool = False
    task: Task | None = None


class ProcessPool(TaskPool):
    """Worker processes that run plain reward functions under real deadlines."""

    def __init__(
        self,
        workers: int,
        *,
        chunk_seconds: float,
        start_method: StartMethod,
        warm_calls: int,
        modules: Sequence[str],
    ) -> None:
        super().__init__()
        self.size = workers
        self._launcher = launcher_for(
            start_method, modules, chunk_seconds, workers, warm_calls=warm_calls
        )
        self._sizer = ChunkSizer(chunk_seconds)
        self._lock = threading.Lock()
        self._incoming: list[Job] = []
        self._closing = False
        self._broken: str | None = None
        self._woken = False
        self._wake_r, self._wake_w = Pipe(duplex=False)
        # Owned by the dispatcher thread once it runs:
        self._jobs: list[Job] = []
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
        return [w.launched.pid for w in list(self._workers)]

    def _enqueue(self, job: Job) -> None:
        with self._lock:
            if self._closing:
                if self._broken is None:
                    raise closed()
                job.fail(self._broken)
                return
            self._incoming.append(job)
        self._wake()

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
            # Started here, not by the caller: starting the first worker process can take a
            # second, which the caller's event loop should not spend blocked.
            for _ in range(self.size):
                self._start_worker()
            while self._accept():
                self._dispatch()
                self._wait()
        except PoolBroken as exc:
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
                job.fail(reason)
            self._jobs.clear()
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
        self._workers.append(_Worker(self._launcher.start(), time.monotonic()))

    def _dispatch(self) -> None:
        for worker in list(self._workers):
            while worker in self._workers and worker.ready and worker.task is None:
                picked = self._next_chunk()
                if picked is None and self._steal():
                    picked = self._next_chunk()
                if picked is None:
                    return
                self._send(worker, *picked)

    def _next_chunk(self) -> tuple[Job, list[int]] | None:
        self._jobs = [j for j in self._jobs if not j.future.cancelled()]
        for job in self._jobs:
            remaining = job.remaining()
            if remaining:
                size = self._sizer.size(job.key, remaining, len(self._workers))
                return job, job.take(size)
        return None

    def _steal(self) -> bool:
        """Take back half of the not yet started calls of the busiest task, for an idle worker.

        Only from a task that has started a call: a worker that has not is still receiving or
        unpickling the task, and taking its calls back would only send them again (a sample of
        50 MB went back and forth between two idle workers, never started, its deadline never
        begun). The worker skips calls at or past its task's new ``limit``; should it have
        started one already (a race), that call runs twice and the first outcome is kept.
        """
        best: tuple[int, _Worker, int] | None = None
        for worker in self._workers:
            task = worker.task
            running = self._progress(worker)
            if task is None or running is None:
                continue
            first_unstarted = max(task.reported, running[0] + 1)
            spare = task.limit - first_unstarted
            if spare > 0 and (best is None or spare > best[0]):
                best = (spare, worker, first_unstarted)
        if best is None:
            return False
        spare, worker, first_unstarted = best
        task = cast(Task, worker.task)
        limit = first_unstarted + spare // 2
        worker.launched.progress[LIMIT] = float(limit)
        task.job.retry.extendleft(reversed(task.indices[limit : task.limit]))
        task.limit = limit
        return True

    def _send(self, worker: _Worker, job: Job, indices: list[int]) -> None:
        payload, indices = job.payload(indices)
        if not indices:  # none of them could be pickled: each has its error outcome
            self._settle(job)
            return
        task = Task(next(self._ids), job, indices, time.monotonic())
        worker.launched.progress[LIMIT] = float(len(indices))
        try:
            worker.launched.conn.send((task.id, job.id, job.blob, payload, len(indices)))
        except OSError:  # the worker died while idle: the task never reached it
            job.retry.extendleft(reversed(indices))
            self._replace(worker, None, None)
            return
        worker.task = task

    def _wait(self) -> None:
        now = time.monotonic()
        looks = [t for w in self._workers if (t := self._next_look(w, now)) is not None]
        timeout = max(0.0, min(looks) - now) if looks else None
        owners: dict[Any, _Worker] = {w.launched.conn: w for w in self._workers}
        launcher_side = self._launcher.waitables()
        for ready in wait([self._wake_r, *launcher_side, *owners], timeout):
            if ready is self._wake_r:
                # Drained under the lock that _wake sends under: a byte drained outside it
                # could be a later wake's, leaving _woken set with the pipe empty, so that the
                # next wake (close() among them) sent nothing and this wait never returned.
                with self._lock:
                    self._woken = False
                    while self._wake_r.poll():
                        self._wake_r.recv_bytes()
            elif ready in launcher_side:
                self._launcher.service(ready)
            elif owners[ready] in self._workers:
                self._receive(owners[ready])
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
        conn = worker.launched.conn
        try:
            while conn.poll():
                self._handle(worker, conn.recv())
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
        task.report(first, outcomes)
        for offset, outcome in enumerate(outcomes):
            if outcome.status == "ok" and not job.group:
                self._launcher.warm(
                    job.key, job.blob, partial(job.item, task.indices[first + offset])
                )
        self._sizer.observe(job.key, seconds, len(outcomes))
        if done:
            # Calls the worker skipped because of a new limit it read before it was taken back.
            job.retry.extend(task.unfinished())
            worker.task = None
        self._settle(job)

    def _settle(self, job: Job) -> None:
        if job.finish() and job in self._jobs:
            self._jobs.remove(job)

    # -- deadlines and deaths -------------------------------------------------------------------

    def _progress(self, worker: _Worker) -> tuple[int, float] | None:
        task = worker.task
        return None if task is None else read_progress(worker.launched.progress, task.id)

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
        self._launcher.kill(worker.launched)
        self._launcher.reap(worker.launched, 5.0)
        timeout = task.job.timeout
        running = self._progress(worker)  # frozen now
        guilty = running is not None and now >= running[1] + timeout
        self._replace(worker, LOST.overran(timeout) if guilty else None, LOST.not_started(timeout))

    def _died(self, worker: _Worker) -> None:
        cause = exit_cause(self._launcher.reap(worker.launched, 1.0))
        if not worker.ready:
            self._replace(worker, None, None)
            self._boot_failed(f"worker processes exit while starting ({cause})")
            return
        self._replace(
            worker,
            LOST.died(cause),
            setup_failed(f"the worker process died ({cause}) while loading this call"),
        )

    def _boot_failed(self, reason: str) -> None:
        self._boot_failures += 1
        if self._boot_failures >= BOOT_FAILURES:
            raise PoolBroken(f"{reason}, {BOOT_FAILURES} times in a row; see the errors above")

    def _replace(self, worker: _Worker, running: Outcome | None, unstarted: Outcome | None) -> None:
        """Retire ``worker``, start a new worker, and settle the old worker's task.

        The task's running call gets ``running`` (None: it runs again), its calls that had not
        started yet get ``unstarted`` when no call of the task had started (None: they run
        again), and every other unfinished call runs again on another worker.
        """
        self._workers.remove(worker)
        self._launcher.kill(worker.launched)
        self._launcher.reap(worker.launched, 5.0)
        state = self._progress(worker)  # read before the record is released for a new worker
        self._launcher.release(worker.launched)
        with self._lock:
            closing = self._closing
        if not closing:
            self._start_worker()
        task = worker.task
        if task is None:
            return
        job = task.job
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

    def _stop_workers(self) -> None:
        for worker in self._workers:
            try:
                if worker.ready and worker.task is None:
                    worker.launched.conn.send(None)
                else:
                    self._launcher.kill(worker.launched)
            except OSError:
                pass
        stop_by = time.monotonic() + 2.0
        for worker in self._workers:
            if self._launcher.reap(worker.launched, max(0.0, stop_by - time.monotonic())) is None:
                self._launcher.kill(worker.launched)
                self._launcher.reap(worker.launched, 5.0)
            self._launcher.release(worker.launched)
        self._workers.clear()
        self._launcher.close()


class ProcessExecutor(PoolExecutor):
    """``executor: process``: a :class:`ProcessPool` sized by ``executors.process``."""

    where = "a worker process"
    settings_model = ProcessSettings

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        settings = setup.settings_as(ProcessSettings)
        self.pool: ProcessPool = ProcessPool(
            settings.workers or available_cpus(),
            chunk_seconds=settings.chunk_seconds,
            start_method=settings.start_method,
            warm_calls=settings.warm_calls,
            modules=setup.modules,
        )

    @property
    def pids(self) -> list[int]:
        """Process ids of the current workers."""
        return self.pool.pids
