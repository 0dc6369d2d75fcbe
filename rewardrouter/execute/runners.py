"""Run one route group: every call of one function with one set of kwargs, on its executor.

- ``inline`` (:mod:`~rewardrouter.execute.inprocess.inline`): on the event loop, async functions on at most
  ``cap`` worker coroutines, each call under an asyncio deadline;
- ``thread`` (:mod:`~rewardrouter.execute.inprocess.threads`): plain functions on the router's daemon
  threads, in chunks; an overrunning call is abandoned;
- ``process`` (:mod:`~rewardrouter.execute.process.pool`): the router's worker processes; an
  overrunning call's worker is killed and replaced;
- ``ray`` (:mod:`~rewardrouter.execute.ray.pool`): the router's Ray actors, with the same
  deadlines, deaths and statuses as ``process``.

A group-mode function is called once with exactly the group's samples, under one deadline for the
whole call. Failures, overruns and bad returns become :class:`Outcome` values; nothing here
raises for a reward that failed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Sequence
from functools import partial
from typing import Any

from rewardrouter.compile.resolve import RewardFn
from rewardrouter.compile.routes import Executor
from rewardrouter.execute.inprocess.inline import run_inline
from rewardrouter.execute.inprocess.threads import run_threaded
from rewardrouter.execute.outcome import Outcome, group_outcomes
from rewardrouter.execute.pools import Pools
from rewardrouter.execute.process.pool import ProcessPool
from rewardrouter.execute.ray.pool import RayPool


async def run_calls(
    fn: RewardFn,
    args: Any,
    samples: Sequence[Any],
    kwargs: dict[str, Any],
    *,
    executor: Executor,
    timeout: float,
    pools: Pools,
    key: Hashable,
) -> Sequence[Outcome]:
    """One :class:`Outcome` per sample, in order. ``key`` names the call (chunk sizes are learned
    per key)."""
    if not samples:
        return []
    group = fn.mode == "group"
    if executor in ("process", "ray"):
        pool: ProcessPool | RayPool = pools.processes() if executor == "process" else pools.actors()
        future = pool.submit(fn.fn, args, samples, kwargs, group=group, timeout=timeout, key=key)
        outcomes = await asyncio.wrap_future(future)
    else:
        call = partial(fn.fn, args, **kwargs)
        items: Sequence[Any] = [list(samples)] if group else samples
        if executor == "thread":
            outcomes = await run_threaded(
                call, items, timeout=timeout, lane=pools.threads(), cap=pools.cap
            )
        else:
            outcomes = await run_inline(
                call, items, is_async=fn.is_async, timeout=timeout, cap=pools.cap
            )
    return group_outcomes(outcomes[0], len(samples)) if group else outcomes
