"""Concurrent one-sample calls gathered into batches, as a dynamic batcher does.

slime, miles and vime call the reward hook once per sample (their default, without
``--group-rm``), as each sample's generation ends: hundreds of calls in flight in one event loop.
Scored one by one, each pays the whole fixed cost of a call (routing, an executor's hand-off, a
worker's round trip); scored together, that cost is paid once per batch. :class:`Coalescer`
gathers the calls that arrive close together: a batch is sent when no call has arrived for
``idle`` seconds, when its first call has waited ``longest`` seconds, or when it holds
``largest`` calls, whichever comes first (the adaptive window of Triton's dynamic batcher and
TorchServe's batch delay). Each caller gets its own item's result, or its own item's exception:
a failure that is one sample's stays that sample's.

>>> import asyncio
>>> async def double(items):
...     return [2 * x for x in items]
>>> async def main():
...     calls = Coalescer(double, idle=0.001, longest=0.01, largest=100)
...     return await asyncio.gather(*(calls(x) for x in range(5))), calls.batches
>>> asyncio.run(main())
([0, 2, 4, 6, 8], 1)
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")

#: Runs a batch: one result, or one exception for that item alone, per item, in order.
Run = Callable[[list[T]], Awaitable[Sequence["R | BaseException"]]]


class Coalescer(Generic[T, R]):
    """Calls of one event loop gathered into batches for ``run`` (see the module docstring)."""

    def __init__(self, run: Run[T, R], *, idle: float, longest: float, largest: int) -> None:
        self.run = run
        self.idle = idle
        self.longest = longest
        self.largest = largest
        self.batches = 0
        self._pending: list[tuple[T, asyncio.Future[R]]] = []
        self._first = self._last = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def __call__(self, item: T) -> R:
        """``item``'s result, once the batch it joins has run."""
        return await self.submit(item)

    def submit(self, item: T) -> asyncio.Future[R]:
        """The future of ``item``'s result (no coroutine of its own: a caller with many items in
        flight allocates one object less per item, which the garbage collector then need not
        walk)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[R] = loop.create_future()
        self._last = loop.time()
        if not self._pending:
            self._first = self._last
        self._pending.append((item, future))
        if len(self._pending) >= self.largest:
            self._send()
        elif self._timer is None:  # one timer per batch, not one per call
            self._timer = loop.call_at(self._last + self.idle, self._wake)
        return future

    def _wake(self) -> None:
        """The timer: send the batch once no call has come for ``idle`` seconds or the first
        has waited ``longest``; else look again when one of those can be true."""
        self._timer = None
        if not self._pending:
            return
        loop = asyncio.get_running_loop()
        due = min(self._last + self.idle, self._first + self.longest)
        if loop.time() >= due:
            self._send()
        else:
            self._timer = loop.call_at(due, self._wake)

    def _send(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._pending = self._pending, []
        if not batch:
            return
        self.batches += 1
        task = asyncio.get_running_loop().create_task(self._run(batch))
        self._tasks.add(task)  # held until done: the loop keeps only weak references
        task.add_done_callback(self._tasks.discard)

    async def _run(self, batch: list[tuple[T, asyncio.Future[R]]]) -> None:
        try:
            results = await self.run([item for item, _ in batch])
            if len(results) != len(batch):
                raise RuntimeError(f"a batch of {len(batch)} gave {len(results)} results")
        except BaseException as exc:  # the whole batch failed: every caller is told why
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        for (_, future), result in zip(batch, results, strict=True):
            if future.done():  # its caller was cancelled
                continue
            if isinstance(result, BaseException):
                future.set_exception(result)
            else:
                future.set_result(result)

    async def aclose(self) -> None:
        """Send what is pending and wait for every batch in flight."""
        self._send()
        while self._tasks:
            with contextlib.suppress(Exception):
                await asyncio.gather(*self._tasks)
