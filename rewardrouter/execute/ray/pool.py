"""The ``ray`` executor: a pool of Ray actors with the deadlines of the process executor.

One :class:`RayPool` per router, started on first use, reused by every batch, stopped by
:meth:`RayPool.close` (``Router.close()``), which kills its actors. The pool connects to Ray as
:mod:`~rewardrouter.execute.ray.connect` says and starts ``executors.ray.actors`` actors
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
  deadline's wait for the call at fault;
- a lost node: its actors die with it, and no call was at fault, so the unfinished calls go
  back to their job as if never sent (the next free actor takes them in chunks).

Placement: an actor is asked of Ray and serves once Ray has placed and started it, however
long that takes — the others serve meanwhile. Actors that wait for CPUs (their node was lost
and no CPUs are free, or ``executors.ray.actors`` asks for more than the cluster has) are reported
through the ``rewardrouter.ray`` logger, with their count and the reason, once the count has
held ``REPORT_SECONDS``, once per count, and again when all are placed
(:attr:`RayPool.placement` has the counts too). Calls wait for an
actor only when none is placed at all, and then at most ``ray.placement_timeout`` seconds; an
actor that fails to start (a runtime env that cannot be set up) is asked again, later each
time. An actor that no node can take because the free CPUs are split across nodes (enough in
all, too few on any one) is reported as waiting, with the most free on one node. With
``ray.actors: null`` the pool starts with the actors that the cluster's free CPUs allow and,
while it has work, grows into CPUs that come free; an actor whose node leaves leaves the pool
with it (the last one excepted), instead of a replacement waiting for a place. ``ray.runtime_env`` goes to
every actor, its local paths uploaded first (:mod:`~rewardrouter.execute.ray.runtime_env`).

Through Ray Client (``ray://``), which cannot stream, each task carries one call and its
outcome comes back whole, at most ``CLIENT_SLACK`` seconds after the call's deadline.

Starting Ray takes seconds, so this example is not run here (``tests/execute`` runs the pool on
a real local Ray instance; the process pool's docstring runs the same calls)::

    >>> pool = RayPool(RaySettings(address=None, actors=1), modules=[])      # doctest: +SKIP
    >>> future = pool.submit(call, samples)                                # doctest: +SKIP
    >>> [outcome.value for outcome in future.result()]                     # doctest: +SKIP
    [1.0, 0.0]
    >>> pool.close()                                                       # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.util
import itertools
import logging
import pickle
import threading
import time
from collections import deque
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardrouter.errors import Problem, RewardRouterError
from rewardrouter.execute.executor import Callee, Setup, closed
from rewardrouter.execute.ray.actor import RewardActor
from rewardrouter.execute.ray.connect import INSTALL, Lease, connect
from rewardrouter.execute.ray.runtime_env import shipped
from rewardrouter.execute.ray.settings import RaySettings
from rewardrouter.execute.tasks import (
    LOAD_GRACE,
    ChunkSizer,
    Job,
    LostCalls,
    PoolExecutor,
    Task,
    TaskPool,
)
from rewardrouter.execute.wire import Message
from rewardrouter.outcome import Outcome, describe_exception

log = logging.getLogger("rewardrouter.ray")

#: Seconds a count of actors waiting for CPUs must hold before the pool reports it.
REPORT_SECONDS = 5.0
#: Seconds between the pool's looks at its actors' nodes and placement and, with
#: ``actors: null``, at the cluster's free CPUs; while it is idle, every ``IDLE_WATCHES`` looks.
WATCH_SECONDS = 1.0
IDLE_WATCHES = 10
#: Actor starts that fail in a row (a runtime env that cannot be set up, say) after which, with
#: no actor ready, the calls waiting for one fail with the cause.
START_FAILURES = 3
#: The longest pause between two attempts to start an actor after failed starts.
RETRY_SECONDS = 30.0
#: Seconds that closing a pool waits for Ray to report its killed actors dead.
KILL_SECONDS = 10.0
#: Seconds beyond a call's deadline that a reply through Ray Client may take.
CLIENT_SLACK = 2.0


LOST = LostCalls("Ray actor", "actor")


@dataclass(frozen=True)
class Placement:
    """The pool's actors: ``ready`` (placed, serving) and ``pending`` (waiting for Ray to place
    or start them), and, while some wait, why (as the pool last reported it)."""

    ready: int
    pending: int
    reason: str = ""


@dataclass(eq=False)
class _Actor:
    handle: Any
    node: str | None = None  # the id of its node, once it is ready
    lost: bool = False  # its node is gone


@dataclass(eq=False)
class _Waiting:
    """A job of the pool: since when it waits, the calls that must run one per task, and
    those that already did."""

    accepted: float
    alone: deque[int] = field(default_factory=deque)
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
        self, settings: RaySettings, modules: Sequence[str], *, streaming: bool | None = None
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
        self._jobs: dict[Job, _Waiting] = {}
        self._actors: list[_Actor] = []  # alive or on their way: placed, or waiting for it
        self._slots: set[asyncio.Task[None]] = set()  # one coroutine per wanted actor
        self._failure: BaseException | None = None  # set when the pool cannot start or go on
        self._start_failures = 0  # actor starts that failed in a row
        self._start_cause = ""
        self._last_ready = 0.0  # when an actor was last seen ready (time.monotonic())
        self._waiting: tuple[int, float] | None = None  # actors waiting for CPUs, and since
        self._reported: int | None = None  # the count of waiting actors last reported
        self._reason = ""  # why actors are pending, as of the last look
        self._free_seen = 0  # actors' worth of free CPUs at the last look (actors: null)
        self._lease: Lease | None = None
        self._ray: Any = None
        self._actor_class: Any = None
        self._runtime_env: dict[str, Any] | None = None
        self._streaming = streaming
        self._whole = False  # outcomes come whole, one call per task
        self._more = asyncio.Event()
        self._stop = asyncio.Event()
        self._thread = threading.Thread(target=self._run, name="rewardrouter-ray", daemon=True)
        self._thread.start()

    # -- the public side ----------------------------------------------------------------------

    @property
    def handles(self) -> list[Any]:
        """Ray handles of the current actors, placed or pending (for inspection and tests)."""
        return [actor.handle for actor in list(self._actors)]

    @property
    def placement(self) -> Placement:
        """How many actors serve and how many wait to be placed, and why they wait."""
        actors = list(self._actors)
        ready = sum(actor.node is not None and not actor.lost for actor in actors)
        pending = len(actors) - ready
        return Placement(ready, pending, self._reason if pending else "")

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
        watch: asyncio.Task[None] | None = None
        try:
            # Connected here, not by the caller: starting Ray takes seconds, which the caller's
            # event loop should not spend blocked.
            self._lease = lease = connect(self._settings)
            self._ray = lease.ray
            self._whole = lease.client if self._streaming is None else not self._streaming
            env = self._settings.runtime_env
            if env is not None and not lease.job_env:
                self._runtime_env = env if lease.client else shipped(env)
            self._actor_class = self._ray.remote(RewardActor)
            self._last_ready = time.monotonic()
            self._add_slots(self._settings.actors or self._free_actors())
            watch = asyncio.create_task(self._watch())
            watch.add_done_callback(self._crashed)
            await self._stop.wait()
        except BaseException as exc:  # a failed connection or upload, or a bug: never a hang
            self._failure = exc
        finally:
            tasks = [*self._slots, *([watch] if watch is not None else [])]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self._kill_all()
            with self._lock:
                self._stopped = True
            await asyncio.sleep(0)  # let the jobs submitted until now arrive, to be failed
            for job in self._jobs:
                self._fail(job)
            self._jobs.clear()
            if self._lease is not None:
                self._lease.release()

    def _crashed(self, task: asyncio.Task[None]) -> None:
        """A coroutine of the pool ended other than by cancellation: a bug, which stops the
        pool (every call gets it as its error) rather than leaving calls to hang."""
        if not task.cancelled() and task.exception() is not None:
            self._failure = task.exception()
            self._stop.set()

    def _free_actors(self) -> int:
        free = float(self._ray.available_resources().get("CPU", 0.0))
        return max(1, int(free // self._settings.cpus_per_actor))

    def _accept(self, job: Job) -> None:
        if self._stopped:
            self._fail(job)
            return
        self._jobs[job] = _Waiting(time.monotonic())
        if self._start_failures >= START_FAILURES and not self._ready():
            job.fail(self._cannot_start())  # no actor starts: say why now, not at each retry
            self._settle(job)
            return
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
        else:
            reason = f"the Ray actor pool failed: {describe_exception(failure)}"
        job.fail(reason)

    def _settle(self, job: Job) -> None:
        if job.finish():
            self._jobs.pop(job, None)

    # -- actors -------------------------------------------------------------------------------

    def _add_slots(self, count: int) -> None:
        for _ in range(count):
            slot = asyncio.create_task(self._serve())
            slot.add_done_callback(self._crashed)
            self._slots.add(slot)

    async def _serve(self) -> None:
        """One actor's life and its replacements': take a task, run it, until the pool stops."""
        actor = await self._ready_actor(self._spawn())
        while True:
            work = await self._next_task(actor)
            loss = None if work is None else await self._run_task(actor.handle, *work)
            if work is None or loss is not None:  # lost while idle, or doing the work
                node_lost = actor.lost or self._node_lost(actor)
                self._kill(actor)
                if node_lost and self._shrinks():
                    if loss is not None:
                        self._lost(loss, node_lost)
                    return
                replacement = self._spawn()  # under way before the caller hears of the loss
                if loss is not None:
                    self._lost(loss, node_lost)
                actor = await self._ready_actor(replacement)

    def _shrinks(self) -> bool:
        """``actors: null`` sized the pool to the CPUs there were: an actor whose node is gone
        leaves the pool (it grows again when CPUs come free) rather than waiting for a place
        that may never come, unless it was the last. Removes the calling slot when so."""
        if self._settings.actors is not None or len(self._slots) <= 1:
            return False
        slot = asyncio.current_task()
        if slot not in self._slots:
            return False
        self._slots.discard(slot)
        log.warning(
            "a node of the Ray cluster is gone: the reward pool (`ray.actors: null`) drops its "
            "actor there, %d left; it grows again as CPUs come free",
            len(self._slots),
        )
        return True

    def _spawn(self) -> _Actor:
        """A new actor, which Ray starts placing now."""
        options: dict[str, Any] = {"num_cpus": self._settings.cpus_per_actor, "max_restarts": 0}
        if self._runtime_env is not None:
            options["runtime_env"] = self._runtime_env
        handle = self._actor_class.options(**options).remote(self._modules, self._flush_seconds)
        actor = _Actor(handle)
        self._actors.append(actor)
        return actor

    async def _ready_actor(self, actor: _Actor) -> _Actor:
        """``actor`` once it is placed and ready, however long Ray takes to place it; if it
        fails to start, a new one, after a pause that grows with the failures in a row."""
        while True:
            try:
                _, actor.node = await _awaitable(actor.handle.ready.remote())
            except self._ray.exceptions.RayError as exc:
                self._kill(actor)
                self._start_failures += 1
                self._start_cause = _cause(exc)
                if self._start_failures >= START_FAILURES and not self._ready():
                    for job in list(self._jobs):
                        job.fail(self._cannot_start())
                        self._settle(job)
                await asyncio.sleep(min(RETRY_SECONDS, 2.0 ** (self._start_failures - 1)))
                actor = self._spawn()
            else:
                self._start_failures = 0
                self._last_ready = time.monotonic()
                return actor

    def _ready(self) -> int:
        return sum(actor.node is not None and not actor.lost for actor in self._actors)

    def _cannot_start(self) -> str:
        return (
            f"Ray actors of the reward pool failed to start {self._start_failures} times in a "
            f"row (the last: {self._start_cause}); the pool keeps trying, and later calls run "
            f"once one starts"
        )

    def _alive_nodes(self) -> set[str] | None:
        """The ids of the cluster's live nodes (None if Ray cannot say now)."""
        with contextlib.suppress(Exception):
            return {node["NodeID"] for node in self._ray.nodes() if node["Alive"]}
        return None

    def _node_lost(self, actor: _Actor) -> bool:
        """Whether ``actor``'s node is gone (then no call of its task was at fault)."""
        alive = self._alive_nodes()
        return alive is not None and actor.node not in alive

    def _find_lost(self) -> None:
        """Mark the ready actors whose node is gone, and wake their coroutines (idle ones wait
        for work) to replace them now, not when the next batch finds them dead."""
        alive = self._alive_nodes()
        if alive is None:
            return
        for actor in self._actors:
            if actor.node is not None and actor.node not in alive and not actor.lost:
                actor.lost = True
                self._more.set()

    def _kill(self, actor: _Actor) -> None:
        if actor in self._actors:
            self._actors.remove(actor)
        with contextlib.suppress(Exception):
            self._ray.kill(actor.handle, no_restart=True)

    async def _kill_all(self) -> None:
        """Kill every actor and wait (up to ``KILL_SECONDS``) until Ray reports them dead, so
        that their CPUs are free when :meth:`close` returns."""
        actors, ray = list(self._actors), self._ray
        if ray is None or not ray.is_initialized():
            self._actors.clear()
            return
        for actor in actors:
            self._kill(actor)

        async def gone(actor: _Actor) -> None:
            # ray.kill returns before the actor is dead: a call may still get through.
            with contextlib.suppress(ray.exceptions.RayError):
                while True:
                    await _awaitable(actor.handle.ready.remote())
                    await asyncio.sleep(0.05)

        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.gather(*map(gone, actors)), KILL_SECONDS)

    # -- placement: report, wait, grow --------------------------------------------------------

    async def _watch(self) -> None:
        """Every ``WATCH_SECONDS`` (every ``IDLE_WATCHES``-th time while idle): replace actors
        whose node is gone, report actors waiting to be placed, fail calls that waited
        ``placement_timeout`` with no actor at all, and with ``actors: null`` grow the pool
        into CPUs that have come free."""
        for look in itertools.count(1):
            await asyncio.sleep(WATCH_SECONDS)
            now = time.monotonic()
            placed = self._ready() == len(self._actors)
            if not self._jobs and self._reported is None and placed and look % IDLE_WATCHES:
                continue
            self._find_lost()
            if self._ready():
                self._last_ready = now
            if self._settings.actors is None and self._jobs:
                self._grow()
            self._report(now)  # before _expire, which gives the reason it finds
            self._expire(now)

    def _report(self, now: float) -> None:
        """Log how many actors wait for CPUs once that count has held ``REPORT_SECONDS``
        (Ray's view of free CPUs lags), once per count, and when all actors are placed."""
        pending = len(self._actors) - self._ready()
        if not pending:
            if self._reported is not None:
                log.warning("all %d Ray actors of the reward pool are placed", len(self._actors))
            self._reported = self._waiting = None
            self._reason = ""
            return
        waiting, self._reason = self._why_pending(pending)
        if waiting != (self._waiting or (0, 0.0))[0]:
            self._waiting = (waiting, now)  # a new count: reported if it holds
        if not waiting or waiting == self._reported:
            return
        assert self._waiting is not None
        if now - self._waiting[1] < REPORT_SECONDS:
            return
        self._reported = waiting
        ready = self._ready()
        serving = (
            f"serving with {ready}"
            if ready
            else f"none serves: calls wait up to {self._settings.placement_timeout:g} s "
            f"(`ray.placement_timeout`) for one"
        )
        log.warning(
            "%d of %d Ray actors of the reward pool are waiting to be placed, %s: %s",
            waiting, len(self._actors), serving, self._reason,
        )  # fmt: skip

    def _why_pending(self, pending: int) -> tuple[int, str]:
        """How many of the ``pending`` actors (not ready) must be waiting for CPUs, and why.

        Those that Ray has placed and that are still starting hold their CPUs, and so do other
        users of the cluster: of the CPUs neither free nor held by ready actors, each actor's
        worth may be one of ours starting; the rest of the pending actors cannot have a place.
        """
        if self._start_failures:
            return pending, self._cannot_start()
        need, ray = self._settings.cpus_per_actor, self._ray
        cpus = [float(n["Resources"].get("CPU", 0.0)) for n in ray.nodes() if n["Alive"]]
        largest, total = max(cpus, default=0.0), sum(cpus)
        if largest < need:
            return pending, (
                f"no node of the cluster has the {need:g} CPUs an actor reserves (the largest "
                f"has {largest:g}); lower `ray.cpus_per_actor`, or add a larger node"
            )
        free = float(ray.available_resources().get("CPU", 0.0))
        most = _largest_free(ray)
        if free >= need and (most is None or most >= need):
            return 0, "they are placed and still starting (a runtime env being set up, say)"
        if free >= need:  # enough free CPUs in all, but no node has an actor's worth
            return pending, (
                f"the cluster has {free:g} of its {total:g} CPUs free, but split across its "
                f"nodes: the most free on one node is {most:g} and an actor reserves {need:g} "
                f"on one node; they start as CPUs free up on a node or nodes join (lower "
                f"`ray.cpus_per_actor`, or set `ray.actors` to what the nodes can spare)"
            )
        held = total - free - self._ready() * need
        return max(0, pending - int(held / need + 1e-9)), (
            f"the cluster has {free:g} of its {total:g} CPUs free and each actor reserves "
            f"{need:g}; they start as CPUs free up or nodes join (set `ray.actors` to what the "
            f"cluster can spare)"
        )

    def _expire(self, now: float) -> None:
        """With no actor ready, fail the calls of the jobs that waited ``placement_timeout``."""
        if self._ready():
            return
        limit = self._settings.placement_timeout
        for job, waiting in list(self._jobs.items()):
            if now - max(waiting.accepted, self._last_ready) >= limit:
                job.fail(
                    f"no Ray actor of the reward pool was ready for {limit:g} s "
                    f"(`ray.placement_timeout`): {self._reason}"
                )
                self._settle(job)

    def _grow(self) -> None:
        """``actors: null``: add actors for the CPUs that stayed free since the last look."""
        if any(actor.node is None for actor in self._actors):
            return  # the ones asked for come first
        ray, need = self._ray, self._settings.cpus_per_actor
        free = int(float(ray.available_resources().get("CPU", 0.0)) // need)
        most = int(float(ray.cluster_resources().get("CPU", 0.0)) // need) - len(self._slots)
        # Seen free twice: Ray's view of free CPUs lags the actors it has just placed.
        room, self._free_seen = min(free, self._free_seen, most), free
        if room > 0:
            log.info(
                "CPUs came free on the Ray cluster: the reward pool grows from %d to %d actors",
                len(self._slots), len(self._slots) + room,
            )  # fmt: skip
            self._free_seen = 0
            self._add_slots(room)

    # -- tasks --------------------------------------------------------------------------------

    async def _next_task(self, actor: _Actor) -> tuple[Job, list[int]] | None:
        """The next calls for ``actor`` to run: a call that must run alone, else a chunk of a
        job; None once its node is lost."""
        while True:
            if actor.lost:
                return None
            for job in [j for j in self._jobs if j.future.cancelled()]:
                del self._jobs[job]
            for job, waiting in self._jobs.items():
                if waiting.alone:
                    index = waiting.alone.popleft()
                    waiting.ran.add(index)
                    return job, [index]
                remaining = job.remaining()
                if remaining:
                    if self._whole:
                        size = 1
                    else:
                        size = self._sizer.size(job.key, remaining, max(1, self._ready()))
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

    def _lost(self, loss: _Loss, node_lost: bool) -> None:
        """Settle the calls of a task whose actor overran or died (see the module docstring)."""
        task, started = loss.task, loss.started
        job = task.job
        rest = task.unfinished()
        waiting = self._jobs.get(job)
        if waiting is None:  # the job was failed meanwhile
            return
        if node_lost:  # no call was at fault: they run again as if never sent
            job.retry.extendleft(reversed(rest))
            self._more.set()
            return
        if loss.overran and not started:
            verdict: Outcome | None = LOST.not_started(job.timeout)
        elif len(rest) == 1 and (started or rest[0] in waiting.ran):
            verdict = LOST.overran(job.timeout) if loss.overran else LOST.died(loss.cause)
        else:
            verdict = None
        if verdict is None:
            waiting.alone.extend(rest)
            self._more.set()
        else:
            for index in rest:
                job.record(index, verdict)
        self._settle(job)


def _largest_free(ray: Any) -> float | None:
    """The most CPUs free on one live node of the cluster; None where Ray cannot say (its
    per-node view is internal to Ray, and absent through Ray Client)."""
    with contextlib.suppress(Exception):
        state: Any = importlib.import_module("ray._private.state")
        nodes: dict[str, dict[str, float]] = state.available_resources_per_node()
        return max((float(n.get("CPU", 0.0)) for n in nodes.values()), default=0.0)
    return None


def _awaitable(ref: Any) -> asyncio.Future[Any]:
    """A Ray object ref (Ray Client's too) as an asyncio future of this thread's loop."""
    return asyncio.wrap_future(ref.future())


def _cause(exc: BaseException) -> str:
    """The first line of a Ray error, which says what became of the actor (and, for a runtime
    env that could not be set up, the last: the error of the set-up itself)."""
    if isinstance(exc, StopAsyncIteration):
        return "its task ended without a result"
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    cause = f"{type(exc).__name__}: {lines[0]}"
    if len(lines) > 1 and type(exc).__name__ == "RuntimeEnvSetupError":
        cause += f" ... {lines[-1]}"
    return cause


class RayExecutor(PoolExecutor):
    """``executor: ray``: a :class:`RayPool` of actors as ``executors.ray`` says."""

    where = "a Ray actor"
    settings_model = RaySettings

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
        self.pool: RayPool = RayPool(setup.settings_as(RaySettings), setup.modules)
