"""Dispatch overhead: the router against per-sample ``asyncio.gather`` (slime's batched path).

100,000 samples over 4 routes with trivial reward functions. The baseline is what a hand-written
``custom_rm`` does today: one coroutine per sample, an if/elif on the dataset, all gathered. The
router routes by metadata, groups by function, and calls single-mode functions on a few worker
coroutines and group-mode functions once per route group.

    python benchmarks/dispatch.py [--samples N] [--repeats R]

Targets: group-mode routes >= 10x faster than per-sample gathering; single-mode no slower.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any

from rewardrouter import Sample, compile_router

ROUTES = ("alpha", "beta", "gamma", "delta")


async def single_len(args: Any, sample: Any) -> float:
    return float(len(sample.response))


async def single_eq(args: Any, sample: Any) -> float:
    return float(sample.response == sample.label)


async def group_len(args: Any, samples: Sequence[Any]) -> list[float]:
    return [float(len(s.response)) for s in samples]


async def group_eq(args: Any, samples: Sequence[Any]) -> list[float]:
    return [float(s.response == s.label) for s in samples]


def make_samples(n: int) -> list[Sample]:
    return [
        Sample(
            response=f"answer {i % 97}",
            label=f"answer {i % 89}",
            metadata={"dataset": ROUTES[(i * 7) % 4]},
        )
        for i in range(n)
    ]


async def baseline(samples: Sequence[Sample]) -> list[float]:
    """The hand-written way: one coroutine per sample, dispatch by if/elif, gather them all."""

    async def custom_rm(args: Any, sample: Sample) -> float:
        dataset = sample.metadata["dataset"]
        if dataset in ("alpha", "gamma"):
            return await single_len(args, sample)
        return await single_eq(args, sample)

    return await asyncio.gather(*(custom_rm(None, s) for s in samples))


def router_config(mode: str) -> dict[str, Any]:
    fns = {"single": ("single_len", "single_eq"), "group": ("group_len", "group_eq")}[mode]
    return {
        "allowed_modules": [],
        "routes": {
            name: {"rewards": {"r": {"path": f"__main__.{fns[i % 2]}"}}}
            for i, name in enumerate(ROUTES)
        },
    }


def best_of(repeats: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    opts = parser.parse_args()
    samples = make_samples(opts.samples)
    base_t, expected = best_of(opts.repeats, lambda: asyncio.run(baseline(samples)))
    rows = []
    for mode in ("single", "group"):
        with compile_router(router_config(mode)) as router:
            t, results = best_of(opts.repeats, lambda: router.score_sync(samples))
        assert [r.reward for r in results] == expected, "router and baseline disagree"
        rows.append((mode, t))
    per = 1e6 / opts.samples
    print(
        f"{opts.samples:,} samples over {len(ROUTES)} routes, best of {opts.repeats} "
        f"(the minimum: the least disturbed run on a shared machine)\n"
    )
    print(
        f"| {'routes':<12} | {'router µs/sample':>16} | {'gather µs/sample':>16} | {'speed-up':>8} |"
    )
    print(f"|{'-' * 14}|{'-' * 18}|{'-' * 18}|{'-' * 10}|")
    for mode, t in rows:
        print(
            f"| {mode + '-mode':<12} | {t * per:>16.2f} | {base_t * per:>16.2f} | "
            f"{base_t / t:>7.1f}x |"
        )


if __name__ == "__main__":
    main()
