"""Ray scaling: math grading on 1 and 2 Ray actors, against the process executor.

Every run goes through the router with the built-in ``math`` grader on 2,000 unique symbolic
answers (the generator of ``benchmarks/execution.py``: sets, equations, roots, trigonometric
identities, so math-verify does real work); only the term's ``executor`` and the number of
workers change. Each run grades answers of its own, so no run profits from caches warmed by
another, and every router is warmed up first: pool start-up (worker processes, or Ray actors) is
paid once per router and reported on its own.

    python benchmarks/ray_scaling.py [--samples 2000] [--workers 1 2] [--repeats 1]
                                     [--address auto | host:port]

Without ``--address`` it starts a local Ray instance with as many CPUs as the largest pool;
with one, it joins that cluster (actors are then placed by Ray, possibly on other machines).
Run it as a script: worker processes import its ``__main__`` module.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

import ray
from execution import FRESH, SYMBOLIC, best, symbolic, table

from rewardrouter import Router, compile_router
from rewardrouter.execute.process.pool import available_cpus


def scaling_router(executor: str, workers: int, timeout: float) -> Router:
    """One ``math`` route on ``executor`` with ``workers`` worker processes or Ray actors."""
    term = {"kind": "math", "executor": executor, "on_error": "skip"}
    return compile_router(
        {
            "default_route": "math",
            "timeout": timeout,
            "process_pool": {"workers": workers},
            "ray": {"actors": workers},
            "routes": {"math": {"rewards": {"correct": term}}},
        }
    )


def run(executor: str, workers: int, opts: argparse.Namespace) -> tuple[float, float]:
    """Wall seconds of the best run over fresh batches, and the pool's start-up seconds."""
    with scaling_router(executor, workers, opts.timeout) as scorer:
        start = time.perf_counter()
        scorer.score_sync(symbolic(next(FRESH), 4 * workers * len(SYMBOLIC))[0])
        startup = time.perf_counter() - start
        batches = [symbolic(next(FRESH), opts.samples) for _ in range(opts.repeats)]
        return best(scorer, batches), startup


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per call")
    parser.add_argument("--repeats", type=int, default=1, help="runs per row; the best counts")
    parser.add_argument("--address", default=None, help="a Ray cluster to join")
    opts = parser.parse_args(argv)
    if opts.address is None:
        ray.init(num_cpus=max(opts.workers), include_dashboard=False, log_to_driver=False)
    else:
        ray.init(address=opts.address, log_to_driver=False)
    cpus = ray.cluster_resources().get("CPU", 0)
    print(
        f"{available_cpus()} CPUs here, Ray cluster of {cpus:g} CPUs, {opts.samples:,} answers, "
        f"best of {opts.repeats}"
    )
    times: dict[tuple[str, int], float] = {}
    startups: list[str] = []
    try:
        for workers in opts.workers:
            for executor in ("process", "ray"):
                times[executor, workers], startup = run(executor, workers, opts)
                startups.append(f"{executor} x{workers}: {startup:.2f} s")
    finally:
        ray.shutdown()
    n, one = opts.samples, min(opts.workers)
    rows = [
        (
            f"{'process pool' if executor == 'process' else 'Ray actors'}",
            str(workers),
            f"{t:.2f}",
            f"{n / t:.0f}",
            f"{times['process', workers] / t:.2f}x",
            f"{times[executor, one] / t:.2f}x",
        )
        for (executor, workers), t in sorted(times.items(), key=lambda item: item[0][::-1])
    ]
    table(
        f"{n:,} unique symbolic answers, `math` grader",
        ("executor", "workers", "wall s", "samples/s", "vs process", f"vs {one} worker"),
        rows,
    )
    print(f"\nstart-up and warm-up (once per router, not included): {', '.join(startups)}")


if __name__ == "__main__":
    main()
