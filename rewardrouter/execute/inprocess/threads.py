"""The ``thread`` executor: plain functions on a lane of daemon threads, under per-call deadlines.

A Python thread cannot be stopped, so a call that overruns its deadline is *abandoned*: the
sample is ``timeout`` at once, the thread finishes the call in the background (its result is
dropped) and then exits, and the lane starts a replacement so the overrun costs no capacity —
up to a bound: a lane of ``size`` threads holds at most ``2 * size`` threads, abandoned ones
included, so calls that never return cannot pile up OS threads without end. Beyond the bound an
abandoned thread is not replaced, and once every thread is held by an overrun, calls fail at
once (``error``, saying so) instead of waiting; an abandoned call that returns frees its place.
A thread that cannot be started (``RuntimeError: can't start new thread`` under a process or
memory limit) is not counted: the calls fail with that cause when no thread is left to run
them, and the next calls try again. The threads are daemons, so a call that never returns
cannot keep the interpreter from exiting. Use ``executor: process`` for code that may spin: a
worker process *is* killed at its deadline.

Cheap calls travel in chunks (about four per thread) so they do not pay a thread hop each; the
thread records which item of its chunk it is on, so an overrun marks that one item ``timeout``
and the rest of the chunk runs again on another thread. No signals are used (``SIGALRM`` only
works on the main thread, and would cancel a grader's own alarm).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from rewardrouter.execute.calls import call_each
from rewardrouter.execute.executor import Call, Executor, Setup, closed, in_process
from rewardrouter.outcome import Outcome, setup_failed, timed_out
from rewardrouter.sample import SampleLike

_ABANDONED = "; its thread was abandoned (threads cannot be stopped) and runs on in the background"


class _Chunk:
    """Items run one after another on one lane thread; the thread's progress, read by the runner."""

    def __init__(
        self,
        call: Callable[[Any], Any],
        items: Sequence[Any],
        indices: Sequence[int],
        timeout: float,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.call = call
        self.items = items
        self.indices = indices
        self.timeout = timeout
        self.outcomes: list[Outcome] = []
        self.position = -1  # the item being called; -1 before the first
        self.started = 0.0  # when that call began (time.monotonic)
        self.abandoned = False
        self.finished = False
        self.lock = threading.Lock()
        self.loop = loop
        self.future: asyncio.Future[None] = loop.create_future()

    # -- on the lane thread -------------------------------------------------------------------

    def start(self, position: int) -> bool:
        with self.lock:
            if self.abandoned:
                return False
            self.position, self.started = position, time.monotonic()
            return True

    def done(self, position: int, outcome: Outcome) -> None:
        with self.lock:
            self.outcomes.append(outcome)

    def run(self) -> None:
        try:
            call_each(self.call, self.items, self.timeout, self)
        finally:
            self._finish()

    def fail(self, reason: str) -> None:
        """End a chunk that no thread will run: each of its calls is an ``error``."""
        with self.lock:
            self.outcomes = [setup_failed(reason)] * len(self.items)
        self._finish()

    def _finish(self) -> None:
        with self.lock:
            self.finished = True
        # RuntimeError: the loop is closed, nobody waits for this chunk any more.
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self._resolve)

    def _resolve(self) -> None:
        if not self.future.done():
            self.future.set_result(None)

    # -- on the event loop ----------------------------------------------------------------------

    def deadline(self) -> float | None:
        """When the running call passes its deadline (None: nothing has started yet)."""
        return self.started + self.timeout if self.position >= 0 else None

    def abandon_overrun(self, now: float) -> int | None:
        """Abandon the chunk if its current call is past its deadline; that call's position."""
        with self.lock:
            position = len(self.outcomes)
            if self.finished or self.position != position or now < self.started + self.timeout:
                return None
            self.abandoned = True
        return position


class ThreadLane:
    """Daemon threads for blocking reward calls; at most ``size`` calls run at once.

    Threads start on demand. :meth:`abandon` tells the lane that one running chunk overran: its
    thread leaves once the call returns, and a replacement starts now while the lane holds fewer
    than ``2 * size`` threads, abandoned ones included (see the module docstring).
    """

    def __init__(self, size: int, name: str = "rewardrouter-thread") -> None:
        self._size = size
        self._name = name
        self._queue: queue.SimpleQueue[_Chunk | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._live = 0  # threads that serve the queue (abandoned ones are not counted)
        self._stuck = 0  # abandoned threads whose call has not returned yet
        self._backlog = 0  # chunks submitted and neither finished nor abandoned
        self._closed = False
        self._count = itertools.count(1)

    @property
    def abandoned(self) -> int:
        """Abandoned threads whose call has not returned yet."""
        return self._stuck

    def submit(self, chunk: _Chunk) -> None:
        with self._lock:
            if self._closed:
                raise closed()
            self._backlog += 1
            self._queue.put(chunk)
            self._grow()

    def abandon(self) -> None:
        with self._lock:
            self._live -= 1
            self._stuck += 1
            self._backlog -= 1
            self._grow()

    def close(self) -> None:
        """Stop the threads once their current chunk ends. Idempotent; does not wait."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            live = self._live
        for _ in range(live):
            self._queue.put(None)

    def _grow(self) -> None:  # with the lock held
        while (
            self._live < min(self._size, self._backlog)
            and self._live + self._stuck < 2 * self._size
            and not self._closed
        ):
            name = f"{self._name}-{next(self._count)}"
            try:
                threading.Thread(target=self._serve, name=name, daemon=True).start()
            except RuntimeError as exc:  # can't start new thread: a process or memory limit
                self._starve(f"no thread could be started for this call ({exc})")
                return
            self._live += 1
        if self._live + self._stuck >= 2 * self._size:
            self._starve(
                f"all {self._stuck} threads of the lane are held by calls that overran their "
                f"deadline and have not returned (threads cannot be stopped); give such a "
                f"function `executor: process`, whose workers are killed at the deadline"
            )

    def _starve(self, reason: str) -> None:  # with the lock held
        """No thread will take the queued chunks: fail them, unless a live thread still serves."""
        if self._live:
            return
        while True:
            try:
                chunk = self._queue.get_nowait()
            except queue.Empty:
                return
            if chunk is not None:
                self._backlog -= 1
                chunk.fail(reason)

    def _serve(self) -> None:
        while True:
            chunk = self._queue.get()
            if chunk is None:
                return
            chunk.run()
            with self._lock:
                if chunk.abandoned:  # abandon() has already taken this thread off the lane
                    self._stuck -= 1
                    self._grow()
                    return
                self._backlog -= 1


async def run_threaded(
    call: Callable[[Any], Any],
    items: Sequence[Any],
    *,
    timeout: float,
    lane: ThreadLane,
    cap: int,
) -> list[Outcome]:
    """One :class:`Outcome` per item, in order, each ``call(item)`` run on ``lane``."""
    loop = asyncio.get_running_loop()
    outcomes: list[Outcome] = [Outcome(None)] * len(items)
    running: dict[asyncio.Future[None], _Chunk] = {}

    def launch(indices: Sequence[int]) -> None:
        chunk = _Chunk(call, [items[i] for i in indices], indices, timeout, loop)
        running[chunk.future] = chunk
        lane.submit(chunk)

    def keep(chunk: _Chunk, outcomes_so_far: Sequence[Outcome]) -> None:
        for i, outcome in zip(chunk.indices, outcomes_so_far, strict=False):
            outcomes[i] = outcome

    # About four chunks per thread: enough to balance uneven call times, few enough that cheap
    # functions are not dominated by hand-offs.
    size = -(-len(items) // min(len(items), cap * 4))
    for start in range(0, len(items), size):
        launch(range(start, min(start + size, len(items))))
    while running:
        now = time.monotonic()
        # A chunk that has not started yet cannot pass its deadline before now + timeout.
        deadlines = [d for c in running.values() if (d := c.deadline()) is not None]
        wait = max(0.0, min([*deadlines, now + timeout]) - now)
        done, _ = await asyncio.wait(running, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
        for future in done:
            chunk = running.pop(future)
            keep(chunk, chunk.outcomes)
        now = time.monotonic()
        for future, chunk in list(running.items()):
            position = chunk.abandon_overrun(now)
            if position is None:
                continue
            del running[future]
            lane.abandon()
            keep(chunk, chunk.outcomes[:position])
            outcomes[chunk.indices[position]] = timed_out(timeout, _ABANDONED)
            if position + 1 < len(chunk.indices):
                launch(chunk.indices[position + 1 :])
    return outcomes


class ThreadExecutor(Executor):
    """``executor: thread``: plain functions on a :class:`ThreadLane` of ``max_concurrency``
    daemon threads; an overrunning call is abandoned."""

    where = "a thread"

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.lane = ThreadLane(setup.config.max_concurrency)

    async def run(self, call: Call, samples: Sequence[SampleLike]) -> Sequence[Outcome]:
        fn, items = in_process(call, samples)
        cap = self.setup.config.max_concurrency
        return await run_threaded(fn, items, timeout=call.timeout, lane=self.lane, cap=cap)

    def close(self) -> None:
        self.lane.close()
