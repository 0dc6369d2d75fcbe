"""The ``ray`` executor: a pool of Ray actors with the deadlines of the process executor.

One :class:`RayPool` per router, started on first use, reused by every batch, stopped by
:meth:`RayPool.close` (``Router.close()``), which kills its actors. The pool connects to Ray as
:mod:`~rewardrouter.execute.ray.connect` says and starts ``ray.actors`` actors
(:class:`~rewardrouter.execute.ray.actor.RewardActor`), placed by Ray. It shares the process
executor's pieces: jobs, tasks and task sizes (:mod:`~rewardrouter.execute.tasks`), and the
wire protocol (:mod:`~rewardrouter.execute.wire`: sample snapshots, job loading, outcome
batches), with the same call loop on the actor as in a worker process.

A thread of the pool runs an event loop; on it each actor has a coroutine that hands its actor
one task at a time (some calls of one route group, about ``chunk_seconds`` of work) and reads
the task's outcome messages as the actor streams them:

- deadlines: the actor sends a message when a task's calls start, then after the first call
  that ends ``flush_seconds`` or more after its previous message, so the call it is on started
  before the last message arrived plus ``flush_seconds``. A task that sends nothing more by
  then plus the timeout has a call that overran: its actor is killed (``ray.kill``) and
  replaced;
- deaths (``os._exit``, a segfault, the OOM killer, ``ray.kill`` from outside): the actor is
  replaced, and no call is lost;
- which call was it? Outcomes since the last message die with the actor, so when a lost task
  had several unfinished calls, each of them runs again *alone*; a call that overruns or dies
  alone gets its verdict: ``timeout`` (the actor was killed) or ``error`` (it died). Every
  other call gets its own result, as with the process executor, at the price of a second
  deadline's wait for the call at fault.

Through Ray Client (``ray://``), which cannot stream, each task carries one call and its
outcome comes back whole, at most ``CLIENT_SLACK`` seconds after the call's deadline.

Starting Ray takes seconds, so this example is not run here (``tests/execute`` runs the pool on
a real local Ray instance; the process pool's docstring runs the same calls)::

    >>> pool = RayPool(RayConfig(address=None, actors=1), modules=[])      # doctest: +SKIP
    >>> future = pool.submit(call, samples)                                # doctest: +SKIP
    >>> [outcome.value for outcome in future.result()]                     # doctest: +SKIP
    [1.0, 0.0]
    >>> pool.close()                                                       # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import pickle
import threading
import time
from collections import deque
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardrouter.config.models import RayConfig
from rewardrouter.errors import Problem, RewardRouterError
from rewardrouter.execute.executor import Callee, Setup, closed
from rewardrouter.execute.outcome import Outcome, describe_exception
from rewardrouter.execute.ray.actor import RewardActor
from rewardrouter.execute.ray.connect import INSTALL, Lease, connect
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
from rewardrouter.execute.wire import Message

#: Seconds a new actor may take to be placed by Ray, start and import its modules.
PLACE_SECONDS = 300.0
#: Actors in a row that fail to start, after which the pool gives up.
PLACE_FAILURES = 3
#: Seconds that closing a pool waits for Ray to report its killed actors dead.
KILL_SECONDS = 10.0
#: Seconds beyond a call's deadline that a reply through Ray Client may take.
CLIENT_SLACK = 2.0


LOST = LostCalls("Ray actor", "actor")


@dataclass(eq=False)
class _Alone:
    """Calls of one job that must run one per task, and those that already did."""

    queue: deque[int] = field(default_factory=deque)
    ran: set[int] = field(default_factory=set)


@dataclass(eq=False)
class _Loss:
    """A task whose actor was lost: it overran a deadline, or it died of ``cause``.
    ``started``: the task's calls had started (its first message arrived)."""

    task: Task
    started: bool
    overran: bool
    cause: str = ""


class RayPool(TaskPool):
    """Ray actors that run plain reward functions under real deadlines.

    ``streaming``: whether actors stream outcomes (chunked tasks) or reply whole (one call per
    task); None: stream unless connected through Ray Client, which cannot.
    """

    def __init__(
        self, settings: RayConfig, modules: Sequence[str], *, streaming: bool | None = None
    ) -> None:
        super().__init__()
        self._settings = settings
        self._modules = tuple(modules)
        self._flush_seconds = settings.chunk_seconds
        self._sizer = ChunkSizer(settings.chunk_seconds)
        self._lock = threading.Lock()
        self._closed = False  # close() was called
        self._stopped = False  # the pool's thread is ending: it takes no more jobs
        self._loop = asyncio.new_event_loop()
        # Owned by the loop's thread:
        self._jobs: list[Job] = []
        self._alone: dict[Job, _Alone] = {}
        self._actors: list[Any] = []
        self._failure: BaseException | None = None  # set when the pool cannot start or go on
        self._placement_failures = 0
        self._lease: Lease | None = None
        self._ray: Any = None
        self._actor_class: Any = None
        self._streaming = streaming
        self._whole = False  # outcomes come whole, one call per task
        self._slots = 0
        self._more = asyncio.Event()
        self._stop = asyncio.Event()
        self._thread = threading.Thread(target=self._run, name="rewardrouter-ray", daemon=True)
        self._thread.start()

    # -- the public side ----------------------------------------------------------------------

    @property
    def handles(self) -> list[Any]:
        """Ray handles of the current actors (for inspection and tests)."""
        return list(self._actors)

    @property
    def lease(self) -> Lease | None:
        """This pool's use of the Ray connection (None until connected)."""
        return self._lease

    def _enqueue(self, job: Job) -> None:
        """If the pool cannot connect to Ray, the job's future raises :class:`RewardRouterError`."""
        with self._lock:
            if self._closed:
                raise closed()
            if self._stopped:  # the pool failed: its failure is every call's
                self._fail(job)
            else:
                self._loop.call_soon_threadsafe(self._accept, job)

    def close(self) -> None:
        """Kill every actor, fail the calls not yet run, and release the Ray connection (Ray is
        shut down only if a router started it). Idempotent."""
        with self._lock:
            if not self._closed and not self._stopped:
                self._loop.call_soon_threadsafe(self._stop.set)
            self._closed = True
        if threading.current_thread() is not self._thread:
            self._thread.join()

    # -- the pool's thread --------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._loop.run_until_complete(self._main())
        finally:
            self._loop.close()

    async def _main(self) -> None:
        waiting: list[asyncio.Task[Any]] = []  # the actors' coroutines, and the wait for close
        try:
            # Connected here, not by the caller: starting Ray takes seconds, which the caller's
            # event loop should not spend blocked.
            self._lease = connect(self._settings)
            self._ray = self._lease.ray
            self._whole = self._lease.client if self._streaming is None else not self._streaming
            self._actor_class = self._ray.remote(RewardActor)
            self._slots = self._settings.actors or self._free_actors()
            stop = asyncio.create_task(self._stop.wait())
            waiting = [stop, *(asyncio.create_task(self._serve()) for _ in range(self._slots))]
            done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if task is not stop:
                    task.result()  # an actor's coroutine ends only by raising
        except BaseException as exc:  # PoolBroken, a failed connection, or a bug: never a hang
            self._failure = exc
        finally:
            for task in waiting:
                task.cancel()
            await asyncio.gather(*waiting, return_exceptions=True)
            await self._kill_all()
            with self._lock:
                self._stopped = True
            await asyncio.sleep(0)  # let the jobs submitted until now arrive, to be failed
            for job in self._jobs:
                self._fail(job)
            self._jobs.clear()
            self._alone.clear()
            if self._lease is not None:
                self._lease.release()

    def _free_actors(self) -> int:
        free = float(self._ray.available_resources().get("CPU", 0.0))
        return max(1, int(free // self._settings.cpus_per_actor))

    def _accept(self, job: Job) -> None:
        if self._stopped:
            self._fail(job)
            return
        self._jobs.append(job)
        self._more.set()

    def _fail(self, job: Job) -> None:
        """End ``job`` because the pool stopped: an exception if it never connected, else an
        ``error`` outcome for each call without one."""
        failure = self._failure
        if isinstance(failure, RewardRouterError):
            with contextlib.suppress(Exception):
                job.future.set_exception(failure)
            return
        if failure is None:
            reason = "the router was closed before this call ran"
        elif isinstance(failure, PoolBroken):
            reason = str(failure)
        else:
            reason = f"the Ray actor pool failed: {describe_exception(failure)}"
        job.fail(reason)

    def _settle(self, job: Job) -> None:
        if job.finish() and job in self._jobs:
            self._jobs.remove(job)
            self._alone.pop(job, None)

    # -- one actor ----------------------------------------------------------------------------

    async def _serve(self) -> None:
        """One actor's life and its replacements': take a task, run it, until the pool stops."""
        actor = await self._ready(self._spawn())
        while True:
            job, indices = await self._next_task()
            loss = await self._run_task(actor, job, indices)
            if loss is not None:
                self._kill(actor)
                actor = self._spawn()  # under way before the caller hears of the loss
                self._lost(loss)
                actor = await self._ready(actor)

    def _spawn(self) -> Any:
        """A new actor, which Ray starts placing now."""
        settings = self._settings
        options: dict[str, Any] = {"num_cpus": settings.cpus_per_actor, "max_restarts": 0}
        if settings.runtime_env is not None:
            options["runtime_env"] = settings.runtime_env
        actor = self._actor_class.options(**options).remote(self._modules, self._flush_seconds)
        self._actors.append(actor)
        return actor

    async def _ready(self, actor: Any) -> Any:
        """``actor`` once it is placed and ready; if it dies starting, a new one."""
        while True:
            try:
                await asyncio.wait_for(_awaitable(actor.ready.remote()), PLACE_SECONDS)
            except asyncio.TimeoutError:
                self._kill(actor)  # waiting longer or asking again would not find the CPUs
                raise PoolBroken(
                    f"a Ray actor of the reward pool was not placed and ready within "
                    f"{PLACE_SECONDS:g} s; the cluster may lack "
                    f"{self._settings.cpus_per_actor:g} free CPUs for it (set `ray.actors` and "
                    f"`ray.cpus_per_actor` to what it can spare)"
                ) from None
            except self._ray.exceptions.RayError as exc:
                self._kill(actor)
                self._placement_failures += 1
                if self._placement_failures >= PLACE_FAILURES:
                    raise PoolBroken(
                        f"Ray actors of the reward pool died while starting, {PLACE_FAILURES} "
                        f"times in a row ({_cause(exc)})"
                    ) from exc
                actor = self._spawn()
            else:
                self._placement_failures = 0
                return actor

    def _kill(self, actor: Any) -> None:
        if actor in self._actors:
            self._actors.remove(actor)
        with contextlib.suppress(Exception):
            self._ray.kill(actor, no_restart=True)

    async def _kill_all(self) -> None:
        """Kill every actor and wait (up to ``KILL_SECONDS``) until Ray reports them dead, so
        that their CPUs are free when :meth:`close` returns."""
        actors, ray = list(self._actors), self._ray
        if ray is None or not ray.is_initialized():
            self._actors.clear()
            return
        for actor in actors:
            self._kill(actor)

        async def gone(actor: Any) -> None:
            # ray.kill returns before the actor is dead: a call may still get through.
            with contextlib.suppress(ray.exceptions.RayError):
                while True:
                    await _awaitable(actor.ready.remote())
                    await asyncio.sleep(0.05)

        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.gather(*map(gone, actors)), KILL_SECONDS)

    async def _next_task(self) -> tuple[Job, list[int]]:
        """The next calls to run: a call that must run alone, else a chunk of a job."""
        while True:
            for job in [j for j in self._jobs if j.future.cancelled()]:
                self._jobs.remove(job)
                self._alone.pop(job, None)
            for job in self._jobs:
                alone = self._alone.get(job)
                if alone is not None and alone.queue:
                    index = alone.queue.popleft()
                    alone.ran.add(index)
                    return job, [index]
                remaining = job.remaining()
                if remaining:
                    size = 1 if self._whole else self._sizer.size(job.key, remaining, self._slots)
                    return job, job.take(size)
            self._more.clear()
            await self._more.wait()

    async def _run_task(self, actor: Any, job: Job, indices: list[int]) -> _Loss | None:
        """Run some calls of ``job`` on ``actor``; how the actor was lost doing it, if it was."""
        payload, indices = job.payload(indices)
        if not indices:  # none of them could be pickled: each has its error outcome
            self._settle(job)
            return None
        task = Task(next(self._ids), job, indices, time.monotonic())
        async with contextlib.aclosing(self._messages(actor, task, payload)) as messages:
            started = False
            last = task.sent
            while True:
                if self._whole:
                    deadline = task.sent + job.timeout + CLIENT_SLACK
                elif started:
                    deadline = last + self._flush_seconds + job.timeout
                else:
                    deadline = task.sent + max(job.timeout, LOAD_GRACE)
                try:
                    message = await asyncio.wait_for(
                        anext(messages), max(0.0, deadline - time.monotonic())
                    )
                except asyncio.TimeoutError:
                    # A whole reply has no start message; its deadline allows for loading.
                    return _Loss(task, started or self._whole, overran=True)
                except (StopAsyncIteration, self._ray.exceptions.RayError) as exc:
                    return _Loss(task, started, overran=False, cause=_cause(exc))
                last, started = time.monotonic(), True
                _, first, outcomes, seconds, done = message
                task.report(first, outcomes)
                self._sizer.observe(job.key, seconds, len(outcomes))
                if done:
                    self._settle(job)
                    return None

    async def _messages(
        self, actor: Any, task: Task, payload: bytes
    ) -> AsyncGenerator[Message, None]:
        """The outcome messages of ``task`` as ``actor`` sends them."""
        job = task.job
        args = (task.id, job.id, job.blob, payload, len(task.indices))
        if self._whole:
            for blob in await _awaitable(actor.run_whole.remote(*args)):
                yield pickle.loads(blob)
            return
        async for ref in actor.run.options(num_returns="streaming").remote(*args):
            yield pickle.loads(await ref)

    def _lost(self, loss: _Loss) -> None:
        """Settle the calls of a task whose actor overran or died (see the module docstring)."""
        task, started = loss.task, loss.started
        job = task.job
        rest = task.unfinished()
        alone = self._alone.setdefault(job, _Alone())
        if loss.overran and not started:
            verdict: Outcome | None = LOST.not_started(job.timeout)
        elif len(rest) == 1 and (started or rest[0] in alone.ran):
            verdict = LOST.overran(job.timeout) if loss.overran else LOST.died(loss.cause)
        else:
            verdict = None
        if verdict is None:
            alone.queue.extend(rest)
            self._more.set()
        else:
            for index in rest:
                job.record(index, verdict)
        self._settle(job)


def _awaitable(ref: Any) -> asyncio.Future[Any]:
    """A Ray object ref (Ray Client's too) as an asyncio future of this thread's loop."""
    return asyncio.wrap_future(ref.future())


def _cause(exc: BaseException) -> str:
    """The first line of a Ray error, which says what became of the actor."""
    if isinstance(exc, StopAsyncIteration):
        return "its task ended without a result"
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


class RayExecutor(PoolExecutor):
    """``executor: ray``: a :class:`RayPool` of actors as ``ray`` says."""

    where = "a Ray actor"

    @classmethod
    def check(cls, name: str, callee: Callee, path: str) -> list[Problem]:
        problems = super().check(name, callee, path)
        if importlib.util.find_spec("ray") is None:
            hint = f"{INSTALL} (or use `executor: process` on one machine)"
            problems.insert(
                0, Problem(path, f"executor {name!r} needs Ray, which is not installed", hint)
            )
        return problems

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.pool: RayPool = RayPool(setup.config.ray, setup.modules)
