"""Run one route group: every call of one function with one set of kwargs.

Single-mode functions run concurrently: async ones on at most ``cap`` worker coroutines (no task
per sample), sync ones on the router's thread pool in chunks, so the event loop never blocks and
cheap functions do not pay a thread hop per sample. A group-mode function is called once with
exactly the group's samples. Function failures become :class:`Outcome` values; nothing here
raises for a reward that failed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import Any

from rewardrouter.compile.functions import RewardFn
from rewardrouter.execute.outcome import Outcome, failed


def _call_sync_chunk(
    fn: Callable[..., Any], args: Any, samples: Sequence[Any], kwargs: dict[str, Any]
) -> list[Outcome]:
    out: list[Outcome] = []
    for sample in samples:
        try:
            out.append(Outcome(fn(args, sample, **kwargs)))
        except Exception as exc:
            out.append(failed(exc))
    return out


async def _single_async(
    fn: Callable[..., Any], args: Any, samples: Sequence[Any], kwargs: dict[str, Any], cap: int
) -> list[Outcome]:
    results: list[Outcome] = [Outcome(None)] * len(samples)
    indices = iter(range(len(samples)))

    async def worker() -> None:
        for i in indices:  # a shared iterator: each index is taken by exactly one worker
            try:
                results[i] = Outcome(await fn(args, samples[i], **kwargs))
            except Exception as exc:
                results[i] = failed(exc)

    workers = min(cap, len(samples))
    if workers == 1:
        await worker()
    else:
        await asyncio.gather(*(worker() for _ in range(workers)))
    return results


async def _single_sync(
    fn: Callable[..., Any],
    args: Any,
    samples: Sequence[Any],
    kwargs: dict[str, Any],
    cap: int,
    pool: Executor,
) -> list[Outcome]:
    # About four chunks per worker thread: enough to balance uneven call times, few enough that
    # cheap functions are not dominated by hand-offs.
    chunks = min(len(samples), cap * 4)
    size = -(-len(samples) // chunks)
    loop = asyncio.get_running_loop()
    futures = [
        loop.run_in_executor(pool, _call_sync_chunk, fn, args, samples[i : i + size], kwargs)
        for i in range(0, len(samples), size)
    ]
    return [outcome for part in await asyncio.gather(*futures) for outcome in part]


def _group_outcomes(value: Any, count: int) -> list[Outcome]:
    if not isinstance(value, list | tuple):
        message = f"group call returned {type(value).__name__}; expected a list of {count} rewards"
        return [Outcome(value, "invalid", message)] * count
    if len(value) != count:
        message = f"group call returned {len(value)} rewards for {count} samples"
        return [Outcome(value, "invalid", message)] * count
    # An exception in a sample's slot fails that sample alone (e.g. one failed batch request).
    return [failed(v) if isinstance(v, Exception) else Outcome(v) for v in value]


async def run_calls(
    fn: RewardFn,
    args: Any,
    samples: Sequence[Any],
    kwargs: dict[str, Any],
    *,
    cap: int,
    pool: Executor,
) -> list[Outcome]:
    """One :class:`Outcome` per sample, in order."""
    if not samples:
        return []
    if fn.mode == "group":
        try:
            if fn.is_async:
                value = await fn.fn(args, list(samples), **kwargs)
            else:
                loop = asyncio.get_running_loop()
                value = await loop.run_in_executor(
                    pool, lambda: fn.fn(args, list(samples), **kwargs)
                )
        except Exception as exc:
            return [failed(exc)] * len(samples)
        return _group_outcomes(value, len(samples))
    if fn.is_async:
        return await _single_async(fn.fn, args, samples, kwargs, cap)
    return await _single_sync(fn.fn, args, samples, kwargs, cap, pool)
