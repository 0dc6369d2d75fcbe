"""Execution: serial, thread pool and worker processes on real grading work.

Every run goes through the router with the built-in ``math`` grader; only the term's
``executor`` changes. Each run scores its own unique responses, so no run profits from the
graders' caches warmed by another; every router is warmed up first (worker start-up is paid
once per router and is reported on its own).

(a) 2,000 unique responses whose answers need symbolic checking (sets, equations, variables in
    exponents and under roots, trigonometric identities: math-verify, not a number compare):
    ``inline`` (serial on the caller's thread), ``thread`` (a pool as large as the process pool),
    ``process``. Target: process >= 1.8x serial on 2 cores.
(b) the same kind of batch with 1% pathological answers (a set holding ``9^{9^{9^{9}}}``, which
    math-verify grinds on for minutes), process pool: wall time within
    clean + bad x timeout / workers + 10% of clean.
(c) 20,000 cheap samples (bare numbers): the process executor against inline, best of at least
    three runs; target: at most 10% slower (small calls travel to the workers in chunks).

    python benchmarks/execution.py [--samples 2000] [--cheap 20000] [--timeout 2]
                                   [--workers N] [--repeats R]

The default deadline, 2 s, sits well above the slowest clean call (half a second, on a busy
machine) and far below what a pathological answer takes (minutes).

Run it as a script: worker processes import its ``__main__`` module.
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import Callable, Sequence

from rewardrouter import RewardResult, Router, Sample, compile_router
from rewardrouter.execute.process.pool import available_cpus

# One symbolic kind per row: (response answer, label, whether they are equal), from an index.
SYMBOLIC: tuple[Callable[[int], tuple[str, str, bool]], ...] = (
    lambda i: (rf"2^{{x+{i}}}", rf"{2 ** (i % 16)} \cdot 2^{{x+{i - i % 16}}}", True),
    lambda i: (rf"\sqrt{{{i * i}x^2}}", rf"{i}\sqrt{{x^2}}", True),
    lambda i: (rf"\{{{i}, {i + 2}\}}", rf"\{{{i + 2}, {i}\}}", True),
    lambda i: (rf"y = {i}x + {i + 1}", rf"y = {i + 1} + {i}x", True),
    lambda i: (rf"\sin^2(x) + \cos^2(x) + {i}", rf"{i + 1}", True),
    lambda i: (rf"\{{{i}, {i + 2}\}}", rf"\{{{i + 1}, {i}\}}", False),
    lambda i: (rf"y = {i}x + {i + 1}", rf"y = {i} + {i + 1}x", False),
)
PATHOLOGICAL = r"\{{{i}, 9^{{9^{{9^{{9}}}}}}\}}"

# Start indices of batches: every batch in a run is unique, so no grader cache carries over.
FRESH = itertools.count(0, 1_000_000)


def symbolic(start: int, count: int, bad_every: int = 0) -> tuple[list[Sample], list[float]]:
    """``count`` unique samples from index ``start``; every ``bad_every``-th is pathological
    (expected reward: NaN, i.e. "must time out")."""
    samples, expected = [], []
    for i in range(start, start + count):
        if bad_every and (i - start) % bad_every == bad_every // 2:
            answer, label, equal = PATHOLOGICAL.format(i=i), rf"\{{{i}, 1\}}", False
            expected.append(float("nan"))
        else:
            answer, label, equal = SYMBOLIC[i % len(SYMBOLIC)](i)
            expected.append(float(equal))
        samples.append(Sample(response=f"So the answer is \\boxed{{{answer}}}.", label=label))
    return samples, expected


def cheap(start: int, count: int) -> tuple[list[Sample], list[float]]:
    """Bare-number answers: one in three wrong."""
    samples = [
        Sample(response=f"\\boxed{{{i}}}", label=str(i + (i % 3 == 0)))
        for i in range(start, start + count)
    ]
    return samples, [float(i % 3 != 0) for i in range(start, start + count)]


def router(executor: str, workers: int, timeout: float) -> Router:
    return compile_router(
        {
            "default_route": "math",
            "timeout": timeout,
            "max_concurrency": workers,
            "executors": {"process": {"workers": workers}},
            "routes": {
                "math": {
                    "rewards": {
                        "correct": {"kind": "math", "executor": executor, "on_error": "skip"}
                    }
                }
            },
        }
    )


Batch = tuple[list[Sample], list[float]]


def best(scorer: Router, batches: Sequence[Batch]) -> float:
    """The shortest wall time over ``batches`` (each checked): the least disturbed run."""
    times = []
    for samples, expected in batches:
        start = time.perf_counter()
        results = scorer.score_sync(samples)
        times.append(time.perf_counter() - start)
        check(results, expected)
    return min(times)


def check(results: Sequence[RewardResult], expected: Sequence[float]) -> None:
    for i, (result, want) in enumerate(zip(results, expected, strict=True)):
        if want != want:  # NaN: a pathological sample, which must have timed out
            assert result.status == "timeout", (i, result)
        else:
            assert (result.status, result.reward) == ("ok", want), (i, result)


def warmed(executor: str, workers: int, timeout: float) -> tuple[Router, float]:
    """A router whose executor has started and graded every kind of answer several times per
    worker (lazy initialization is paid here), and the time that took."""
    scorer = router(executor, workers, timeout)
    start = time.perf_counter()
    scorer.score_sync(symbolic(next(FRESH), 10 * workers * len(SYMBOLIC))[0])
    return scorer, time.perf_counter() - start


def table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """A Markdown table; the first column left-aligned, the others right-aligned."""
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        padded = [
            cell.ljust(width) if k == 0 else cell.rjust(width)
            for k, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ]
        return "| " + " | ".join(padded) + " |"

    print(f"\n{title}\n")
    print(line(header))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print(line(row))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--cheap", type=int, default=20_000)
    parser.add_argument("--timeout", type=float, default=2.0, help="seconds per call")
    parser.add_argument("--workers", type=int, default=available_cpus())
    parser.add_argument("--repeats", type=int, default=1, help="runs per row; the best counts")
    opts = parser.parse_args()
    n, workers, timeout, repeats = opts.samples, opts.workers, opts.timeout, opts.repeats
    print(
        f"{available_cpus()} CPUs, {workers} workers (threads: as many), timeout {timeout:g} s, "
        f"best of {repeats}"
    )

    # (a) symbolic checking
    times: dict[str, float] = {}
    startup = 0.0
    for executor in ("inline", "thread", "process"):
        scorer, started = warmed(executor, workers, timeout)
        with scorer:
            times[executor] = best(scorer, [symbolic(next(FRESH), n) for _ in range(repeats)])
        startup = started if executor == "process" else startup
    serial = times["inline"]
    table(
        f"(a) {n:,} unique symbolic answers, `math` grader",
        ("executor", "wall s", "ms / sample", "vs serial"),
        [
            (name, f"{t:.2f}", f"{1e3 * t / n:.2f}", f"{serial / t:.2f}x")
            for name, t in (
                ("serial (inline)", serial),
                ("thread pool", times["thread"]),
                ("process pool", times["process"]),
            )
        ],
    )
    print(f"\nprocess pool start-up and warm-up (once per router, not included): {startup:.2f} s")

    # (b) 1% pathological answers
    bad_every = 100
    scorer, _ = warmed("process", workers, timeout)
    with scorer:
        clean = best(scorer, [symbolic(next(FRESH), n) for _ in range(repeats)])
        dirty_batches = [symbolic(next(FRESH), n, bad_every) for _ in range(repeats)]
        dirty = best(scorer, dirty_batches)
    bad = sum(1 for e in dirty_batches[0][1] if e != e)
    budget = clean * 1.1 + bad * timeout / workers
    table(
        f"(b) {n:,} symbolic answers, {bad} pathological ({100 / bad_every:g}%), process pool",
        ("clean s", "with bad s", "budget s", "within"),
        [(f"{clean:.2f}", f"{dirty:.2f}", f"{budget:.2f}", "yes" if dirty <= budget else "NO")],
    )
    print(f"\nbudget = clean + {bad} x {timeout:g} s / {workers} workers + 10% of clean")

    # (c) cheap calls
    cheap_times: dict[str, float] = {}
    for executor in ("inline", "process"):
        scorer, _ = warmed(executor, workers, timeout)
        with scorer:
            scorer.score_sync(cheap(next(FRESH), 2000)[0])  # learn the cost per call
            # Sub-second runs are the most disturbed by other load: at least the best of 3.
            cheap_times[executor] = best(
                scorer, [cheap(next(FRESH), opts.cheap) for _ in range(max(3, repeats))]
            )
    inline = cheap_times["inline"]
    table(
        f"(c) {opts.cheap:,} cheap answers (bare numbers), best of {max(3, repeats)}",
        ("executor", "wall s", "µs / sample", "vs inline"),
        [
            (name, f"{t:.3f}", f"{1e6 * t / opts.cheap:.1f}", f"{t / inline:.2f}x time")
            for name, t in (("inline", inline), ("process pool", cheap_times["process"]))
        ],
    )


if __name__ == "__main__":
    main()
