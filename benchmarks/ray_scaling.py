"""Ray scaling: math grading on 1 and 2 Ray actors, against the process executor; and a node
lost mid-batch on a two-node cluster.

Every run goes through the router with the built-in ``math`` grader on 2,000 unique symbolic
answers (the generator of ``benchmarks/execution.py``: sets, equations, roots, trigonometric
identities, so math-verify does real work); only the term's ``executor`` and the number of
workers change. Each run grades answers of its own, so no run profits from caches warmed by
another, and every router is warmed up first: pool start-up (worker processes, or Ray actors) is
paid once per router and reported on its own.

Node loss: a cluster of two ``ray start`` nodes on this machine (a head and a node that joins
it, 1 CPU each; ``tests/rr_cluster.py``), one actor on each. Throughput on a batch before, on a
batch during which the joined node is killed (every process of it at once), on a batch after
(one node left; the lost actor's replacement waits for CPUs), and on a batch once a new node
has joined and the replacement serves there. Every sample must come back ``ok``.

    python benchmarks/ray_scaling.py [--samples 2000] [--workers 1 2] [--repeats 1]
                                     [--address auto | host:port]
                                     [--loss-samples 600] [--no-node-loss]

Without ``--address`` it starts a local Ray instance with as many CPUs as the largest pool;
with one, it joins that cluster (actors are then placed by Ray, possibly on other machines) and
skips the node-loss table, which needs nodes it may kill. Run it as a script: worker processes
import its ``__main__`` module.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ray
from execution import FRESH, SYMBOLIC, best, check, symbolic, table

from rewardrouter import Router, compile_router
from rewardrouter.execute.process.pool import available_cpus

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from rr_cluster import LocalCluster  # the tests' cluster of `ray start` nodes


def scaling_router(
    executor: str, workers: int, timeout: float, address: str | None = "auto"
) -> Router:
    """One ``math`` route on ``executor`` with ``workers`` worker processes or Ray actors."""
    term = {"kind": "math", "executor": executor, "on_error": "skip"}
    return compile_router(
        {
            "default_route": "math",
            "timeout": timeout,
            "executors": {
                "process": {"workers": workers},
                "ray": {"address": address, "actors": workers},
            },
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


def timed(scorer: Router, count: int, during: Any = None) -> tuple[float, int]:
    """Wall seconds of a fresh batch of ``count`` answers, checked (every one ``ok``), and how
    many came back otherwise. ``during(seconds)``, if given, runs while the batch does."""
    samples, expected = symbolic(next(FRESH), count)
    box: dict[str, Any] = {}

    def score() -> None:
        box["results"] = scorer.score_sync(samples)

    start = time.perf_counter()
    batch = threading.Thread(target=score)
    batch.start()
    if during is not None:
        during()
    batch.join()
    seconds = time.perf_counter() - start
    results = box["results"]
    failed = sum(r.status != "ok" for r in results)
    if not failed:
        check(results, expected)
    return seconds, failed


def node_loss(opts: argparse.Namespace) -> None:
    """Throughput before, during and after losing one of two nodes, and once a node rejoins."""
    cluster = LocalCluster.for_this_machine()
    rows: list[tuple[str, ...]] = []
    try:
        cluster.start(cpus=1, head=True)
        lost = cluster.start(cpus=1)
        cluster.join(log_to_driver=False)
        with scaling_router("ray", 2, opts.timeout) as scorer:
            pool = scorer.executors["ray"].pool
            scorer.score_sync(symbolic(next(FRESH), 8 * len(SYMBOLIC))[0])  # warm-up
            n = opts.loss_samples
            before, failed = timed(scorer, n)

            def kill() -> None:  # a third of the way through the batch
                time.sleep(before / 3)
                lost.kill()

            phases = [("before: 2 nodes", before, failed, 2)]
            during, failed = timed(scorer, n, kill)
            phases.append(("during: a node killed mid-batch", during, failed, 1))
            seconds, failed = timed(scorer, n)
            phases.append(("after: 1 node, 1 actor waiting for CPUs", seconds, failed, 1))
            joining = time.perf_counter()
            cluster.start(cpus=1)
            while pool.placement.ready < 2:
                time.sleep(0.1)
            back = time.perf_counter() - joining
            seconds, failed = timed(scorer, n)
            phases.append(("a node joined: 2 actors again", seconds, failed, 2))
            rows = [
                (phase, str(actors), f"{t:.2f}", f"{n / t:.0f}", f"{before / t:.2f}x", str(bad))
                for phase, t, bad, actors in phases
            ]
    finally:
        ray.shutdown()
        cluster.stop()
    table(
        f"Node loss: {n:,} unique symbolic answers per batch, 2 Ray actors on 2 nodes of 1 CPU",
        ("batch", "actors at the end", "wall s", "samples/s", "vs before", "not ok"),
        rows,
    )
    print(f"\nthe waiting actor served on the new node {back:.1f} s after `ray start` began")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per call")
    parser.add_argument("--repeats", type=int, default=1, help="runs per row; the best counts")
    parser.add_argument("--address", default=None, help="a Ray cluster to join")
    parser.add_argument("--loss-samples", type=int, default=600, help="per node-loss batch")
    parser.add_argument("--no-node-loss", action="store_true", help="skip the node-loss table")
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
    if opts.address is None and not opts.no_node_loss:
        node_loss(opts)


if __name__ == "__main__":
    main()
