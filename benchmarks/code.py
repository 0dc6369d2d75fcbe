"""Code grading throughput: programs graded per second, and what the sandbox costs.

APPS-style programs (read two integers, print a result) with ``--tests`` stdin/stdout tests
each, half right and half wrong, graded on ``--workers`` programs at once, in one run:

- naive: what a hand-written grader does (verl's ``prime_code`` works this way): one
  ``subprocess.run([python, file], input=..., timeout=...)`` per test, ``--workers`` threads;
- rewardrouter: ``kind: code`` through a compiled router (one runner per program inside
  bubblewrap, each test forked from it, a fresh user id, rlimits, the program's memory and pids
  cgroups where this process may make them, the seccomp filter);
- without kernel walls: the same sandbox without the cgroups and the seccomp filter (resident
  memory watched instead), so the ratio of the two is the cost of those walls;
- limits only: the same runner without bubblewrap and user switch (RLIMIT_* and process
  groups only), so the ratio of the two is the cost of the isolation;
- previous runner (``--previous-runner FILE``): the runner of an earlier release (its
  ``harness.py``, e.g. ``git show REV:rewardrouter/rewards/code/harness.py``), started as that
  release's local backend started it, so a change of sandbox is measured side by side.

Every grader must give every program the same reward (checked before the table is printed).

``--sleeper``: instead, a batch of ``--programs`` honest programs with 11 tests each, graded
by ``kind: code`` with ``scoring: all`` and ``limits.timeout: 2``, alone and beside one program
that sleeps in every test: the second batch takes its normal time plus about one test's
timeout (the sleeper fails its first test and stops), whatever the number of tests.
CPU is this process's and its children's (every program's processes are reaped by its runner,
so their CPU time is counted here).

    python benchmarks/code.py [--programs 40] [--tests 10] [--workers 2] [--rounds 3]
                              [--previous-runner F]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rewardrouter import Sample, compile_router
from rewardrouter.rewards.code import CodeLimits, LocalSandbox, extract_program, parse_tests
from rewardrouter.rewards.code.compare import same_output
from rewardrouter.rewards.code.local import limits_json

RIGHT = "a, b = map(int, input().split())\nprint(a + b)\n"
WRONG = "a, b = map(int, input().split())\nprint(a - b)\n"
LIMITS = {"timeout": 5.0, "memory_mb": 512, "processes": 16}


def workload(programs: int, tests: int) -> list[Sample]:
    pairs = [(i, 3 * i + 1) for i in range(tests)]
    label = json.dumps(
        {"inputs": [f"{a} {b}\n" for a, b in pairs], "outputs": [f"{a + b}\n" for a, b in pairs]}
    )
    return [
        Sample(
            response=f"```python\n{RIGHT if i % 2 == 0 else WRONG}```",
            label=label,
            metadata={"dataset": "code"},
        )
        for i in range(programs)
    ]


def naive(samples: list[Sample], workers: int) -> list[float]:
    def grade(sample: Sample) -> float:
        program = extract_program(sample.response, "python") or ""
        cases = parse_tests(sample.label)
        with tempfile.TemporaryDirectory() as where:
            path = Path(where) / "solution.py"
            path.write_text(program)
            passed = 0
            for case in cases:
                done = subprocess.run(
                    [sys.executable, str(path)],
                    input=case.run["stdin"],
                    capture_output=True,
                    text=True,
                    timeout=LIMITS["timeout"],
                    check=False,
                )
                passed += done.returncode == 0 and same_output(
                    done.stdout, case.expected, "tokens", 1e-6
                )
        return passed / len(cases)

    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(grade, samples))


def routed(samples: list[Sample], workers: int) -> list[float]:
    kwargs: dict[str, Any] = {"limits": LIMITS, "workers": workers}
    config = {"routes": {"code": {"rewards": {"tests": {"kind": "code", "kwargs": kwargs}}}}}
    with compile_router(config) as router:
        return [r.reward for r in router.score_sync(samples)]  # type: ignore[misc]


def limits_only(samples: list[Sample], workers: int) -> list[float]:
    sandbox = LocalSandbox(
        CodeLimits(**LIMITS), workers=workers, isolate=False, drop_user=False, walls=False
    )
    return direct(sandbox, samples)


def without_walls(samples: list[Sample], workers: int) -> list[float]:
    return direct(LocalSandbox(CodeLimits(**LIMITS), workers=workers, walls=False), samples)


def with_walls(samples: list[Sample], workers: int) -> list[float]:
    return direct(LocalSandbox(CodeLimits(**LIMITS), workers=workers), samples)


def direct(sandbox: LocalSandbox, samples: list[Sample]) -> list[float]:
    """Grade ``samples`` on ``sandbox`` itself, without a router."""

    async def grade(sample: Sample) -> float:
        program = extract_program(sample.response, "python") or ""
        cases = parse_tests(sample.label)
        report = await sandbox.run(program, [c.run for c in cases])
        passed = sum(
            run.status == "ok" and same_output(run.stdout, case.expected, "tokens", 1e-6)
            for case, run in zip(cases, report.cases, strict=True)
        )
        return passed / len(cases)

    async def main() -> list[float]:
        return list(await asyncio.gather(*(grade(s) for s in samples)))

    try:
        return asyncio.run(main())
    finally:
        sandbox.close()


def cpu_seconds() -> float:
    """CPU time of this process and of its children so far."""
    own, children = (
        resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def previous(runner: Path) -> Any:
    """A grader that runs ``runner`` (an earlier release's harness) as that release did: a fresh
    session and temporary directory per program, the job on stdin, the report on stdout."""
    job_limits = limits_json(CodeLimits(**LIMITS))  # that release's job took the same limits

    def grade_all(samples: list[Sample], workers: int) -> list[float]:
        def grade(sample: Sample) -> float:
            program = extract_program(sample.response, "python") or ""
            cases = parse_tests(sample.label)
            with tempfile.TemporaryDirectory() as where:
                Path(where).chmod(0o711)
                job = {
                    "program": program,
                    "cases": [c.run for c in cases],
                    "limits": job_limits,
                    "isolate": True,
                    "drop_user": True,
                    "stop_on_failure": False,
                    "workdir": where,
                }
                done = subprocess.run(
                    [sys.executable, "-I", str(runner)],
                    input=json.dumps(job).encode(),
                    capture_output=True,
                    cwd=where,
                    env={"PATH": "/usr/bin:/bin"},
                    start_new_session=True,
                    check=True,
                )
            runs = json.loads(done.stdout)["cases"]
            passed = sum(
                run["status"] == "ok" and same_output(run["stdout"], case.expected, "tokens", 1e-6)
                for case, run in zip(cases, runs, strict=True)
            )
            return passed / len(cases)

        with ThreadPoolExecutor(workers) as pool:
            return list(pool.map(grade, samples))

    return grade_all


def sleeper(programs: int, workers: int) -> None:
    """Print the time of a batch of honest programs alone and beside one sleeper."""
    eleven = {"inputs": [f"{i}\n" for i in range(11)], "outputs": [f"{2 * i}\n" for i in range(11)]}
    honest = "print(int(input()) * 2)\n"
    sleeps = "import time\ntime.sleep(60)\n"

    def rows(bodies: list[str]) -> list[Sample]:
        return [
            Sample(response=f"```python\n{b}```", label=eleven, metadata={"dataset": "code"})
            for b in bodies
        ]

    kwargs = {"scoring": "all", "limits": {**LIMITS, "timeout": 2}, "workers": workers}
    config = {"routes": {"code": {"rewards": {"t": {"kind": "code", "kwargs": kwargs}}}}}
    with compile_router(config) as router:
        router.score_sync(rows([honest] * workers))  # imports, the probe
        times = []
        for batch in ([honest] * programs, [honest] * programs + [sleeps]):
            began = time.perf_counter()
            rewards = router.score_sync(rows(batch)).rewards
            times.append(time.perf_counter() - began)
            assert rewards == [1.0] * programs + [0.0] * (len(batch) - programs), rewards
    alone, beside = times
    print(f"{programs} honest programs x 11 tests, {workers} at once, scoring: all, timeout 2 s")
    print(f"alone {alone:.2f} s; beside one sleeper {beside:.2f} s (+{beside - alone:.2f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--programs", type=int, default=40)
    parser.add_argument("--tests", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3, help="each grader this many times")
    parser.add_argument(
        "--previous-runner", type=Path, help="an earlier release's harness.py, measured too"
    )
    parser.add_argument("--sleeper", action="store_true", help="the sleeper's batch (above)")
    opts = parser.parse_args()
    if opts.sleeper:
        sleeper(opts.programs, opts.workers)
        return
    samples = workload(opts.programs, opts.tests)
    routed(samples[:2], opts.workers)  # warm: the sandbox probe, imports
    rows: dict[str, tuple[float, float]] = {}
    results = {}
    graders = [
        ("naive", naive),
        ("rewardrouter", routed),
        ("with walls", with_walls),
        ("without walls", without_walls),
        ("limits only", limits_only),
    ]
    if opts.previous_runner:
        graders.append(("previous runner", previous(opts.previous_runner)))
    for _ in range(opts.rounds):  # interleaved, so that a slow minute of the machine is shared
        for name, grade in graders:
            cpu, began = cpu_seconds(), time.perf_counter()
            results[name] = grade(samples, opts.workers)
            took, used = time.perf_counter() - began, cpu_seconds() - cpu
            wall, spent = rows.get(name, (0.0, 0.0))
            rows[name] = (wall + took, spent + used)
    expected = [1.0 if i % 2 == 0 else 0.0 for i in range(opts.programs)]
    for name, got in results.items():
        assert got == expected, f"{name} graded differently: {got}"
    programs = opts.programs * opts.rounds
    base = programs / rows["naive"][0]
    print(
        f"{opts.programs} programs x {opts.tests} tests, {opts.workers} at once, {opts.rounds} rounds"
    )
    print(f"{'grader':<16}{'seconds':>9}{'programs/s':>12}{'vs naive':>10}{'CPU ms/program':>16}")
    for name, (took, used) in rows.items():
        rate = programs / took
        print(
            f"{name:<16}{took:>9.2f}{rate:>12.1f}{rate / base:>9.2f}x{1000 * used / programs:>16.1f}"
        )
    walls, bare = rows["with walls"], rows["without walls"]
    print(
        f"the kernel walls (cgroups, seccomp) cost {walls[0] / bare[0]:.2f}x the time and "
        f"{walls[1] / bare[1]:.2f}x the CPU of the same sandbox without them"
    )
    print(
        f"isolation costs {rows['rewardrouter'][0] / rows['limits only'][0]:.2f}x the time of limits only"
    )
    if opts.previous_runner:
        print(
            f"rewardrouter runs {rows['previous runner'][0] / rows['rewardrouter'][0]:.2f}x the "
            f"programs/s of the previous runner"
        )


if __name__ == "__main__":
    main()
