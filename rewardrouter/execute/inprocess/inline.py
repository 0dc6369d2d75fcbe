"""The ``inline`` executor: calls on the event loop's own thread.

Async functions run on at most ``cap`` worker coroutines (no task per sample), each call under an
asyncio deadline: at the deadline the coroutine is cancelled and the call is ``timeout``. An async
function must let cancellation through; one that blocks the loop (a long computation without an
``await``) cannot be interrupted by anything on that loop — give it ``executor: process``.

A plain function may run inline too (the cheapest path for trivial graders): it is called directly
and its deadline is checked when it returns, so an overrun is recorded as ``timeout`` but nothing
bounds a call that never returns. That is why ``auto`` puts no plain function here but the light
built-ins, whose time is linear in their input.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from rewardrouter.execute.calls import Collector, call_each
from rewardrouter.execute.deadline import CallDeadline, reset_deadline, set_deadline
from rewardrouter.execute.executor import Call, Executor, in_process
from rewardrouter.outcome import CONTROL_FLOW, Outcome, failed, timed_out
from rewardrouter.sample import SampleLike


async def bounded(call: Callable[[Any], Awaitable[Any]], item: Any, timeout: float) -> Outcome:
    """The outcome of awaiting ``call(item)`` for at most ``timeout`` seconds (counted again
    from where the call restarts it, see :mod:`~rewardrouter.execute.deadline`)."""
    try:
        if sys.version_info >= (3, 11):
            async with asyncio.timeout(timeout) as deadline:
                token = set_deadline(CallDeadline(timeout, deadline))
                try:
                    return Outcome(await call(item))
                except TimeoutError as exc:
                    if deadline.expired():
                        raise
                    return failed(exc)  # raised by the function itself, not our deadline
                finally:
                    reset_deadline(token)
        else:  # pragma: no cover - Python 3.10
            return Outcome(await asyncio.wait_for(call(item), timeout))
    except asyncio.TimeoutError:
        return timed_out(timeout, "; the coroutine was cancelled")
    except CONTROL_FLOW:
        raise
    except BaseException as exc:
        return failed(exc)


async def run_inline(
    call: Callable[[Any], Any],
    items: Sequence[Any],
    *,
    is_async: bool,
    timeout: float,
    cap: int,
) -> list[Outcome]:
    """One :class:`Outcome` per item, in order: ``call(item)``, awaited when ``is_async``."""
    if not is_async:
        collector = Collector()
        call_each(call, items, timeout, collector)
        return collector.outcomes
    results: list[Outcome] = [Outcome(None)] * len(items)
    indices = iter(range(len(items)))

    async def worker() -> None:
        for i in indices:  # a shared iterator: each index is taken by exactly one worker
            results[i] = await bounded(call, items[i], timeout)

    workers = min(cap, len(items))
    if workers == 1:
        await worker()
    else:
        await asyncio.gather(*(worker() for _ in range(workers)))
    return results


class InlineExecutor(Executor):
    """``executor: inline``: on the event loop (async functions on ``max_concurrency`` worker
    coroutines; plain ones called directly, their deadline checked when they return)."""

    runs_async = True
    where = "the event loop"

    async def run(self, call: Call, samples: Sequence[SampleLike]) -> Sequence[Outcome]:
        fn, items = in_process(call, samples)
        cap = self.setup.config.max_concurrency
        return await run_inline(
            fn, items, is_async=call.callee.is_async, timeout=call.timeout, cap=cap
        )
