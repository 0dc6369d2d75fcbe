"""One realistic GRPO step through the slime hooks, cold and warm, against a per-sample baseline.

A step is 512 prompts x 16 responses (``benchmarks/answer_mix.py``): 60% math (a third numeric,
a third structured: ordered pairs, sets, intervals, polynomials, matrices; a third text, units,
percentages), 20% multiple choice, 20% short QA; about half of the answers wrong. It is scored
the way slime scores it with ``--group-rm``: ``batched_custom_rm(args, samples)`` (routes
``math``, ``gpqa``, ``f1``, with the executors they get by default: ``math`` in worker
processes), each reward stored on its sample, then ``post_process_rewards(args, samples)``
(GRPO advantages by ``group_index``).

Each side runs in fresh processes, as slime's rollout process would run it: torch is imported
before anything is timed (the trainer has imported it long before its first reward), and the
rollout batch exists before the step starts. Then, timed apart:

- **import**: the hook's module (``rewardrouter.integrations.slime``), which slime imports at
  its first reward call; once per process;
- **load**: the router config read and compiled; once per process;
- **first hook call**: one sample (it would start worker processes if the exact checks left
  the sample to math-verify; they do not);
- **cold step**: the first step of the process: every cache of the graders empty (labels,
  parsed answers, verdicts), no worker process started. It counts from the hook call to the
  post-processed advantages, garbage collection included (shown apart: the objects the
  trainer and the step allocated decide when CPython collects);
- **warm step**: a second step of new prompts, made after the first (the first step's answers
  cached but not reused: other prompts).

The one-off costs (import, load) are not part of a step; "first step" adds them to the cold
step.

**Fresh process → first step** is timed in other processes, which import nothing before: from
the start of a new Python process (the parent's clock when it launches it) to the end of the
first step's advantages, interpreter start-up and every import included (torch too, where the
step imports it), less the time the benchmark spends generating the batch, which a trainer
already has. It is what a command-line run, a fresh rollout worker or a restarted trainer pays
before its first rewards. It is run twice: with the ``grpo`` stage above, whose advantages NumPy
computes alone with the bits torch's path gives (``rewardrouter/advantage/host.py``), so torch is
never imported, and with ``grpo`` at ``std: batch``, whose batch std torch computes, so the
advantage stage imports torch.
The baseline's fresh process imports torch and math-verify the same way, inside the span.
CPU time is that of the process (all its threads), start-up included.

The baseline grades one sample at a time, with no router: plain math-verify for math
(``verify(parse(label), parse(response))``, as math-verify's README calls it), the same
``gpqa`` and ``f1`` graders for the rest, then slime's default normalization (rewards reshaped to
``(-1, 16)``, centred, divided by std + 1e-6); its imports (math-verify, the graders) are done
before timing.

    python benchmarks/step.py                # about three minutes on 2 cores
    python benchmarks/step.py --repeat 1 --prompts 128
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from argparse import Namespace
from pathlib import Path

import answer_mix

ROUTER_YAML = """\
route_by: [dataset]
allowed_modules: [rewardrouter]
routes:
  math:
    match: [math]
    rewards:
      correct: {kind: math}
  gpqa:
    match: [gpqa]
    rewards:
      correct: {kind: gpqa}
  squad:
    match: [squad]
    rewards:
      correct: {kind: f1}
post_process:
  - {kind: grpo, std: group, eps: 1.0e-6, device: cpu}
"""
#: The estimator of the second fresh-process run: a batch std, which imports torch.
BATCH_STD = ("std: group", "std: batch")
GROUP = 16
TARGET = 0.25  # seconds for a cold step on 2 cores
FRESH_TARGET = 1.5  # seconds from a fresh process to the end of its first step


def _args(config: Path) -> Namespace:
    """slime's ``args`` after ``--custom-config-path`` set ``rewardrouter_config`` on it."""
    return Namespace(
        rewardrouter_config=str(config),
        reward_key=None,
        eval_reward_key=None,
        group_rm=True,
        n_samples_per_prompt=GROUP,
        custom_rm_path="rewardrouter.integrations.slime.batched_custom_rm",
    )


class _Collections:
    """Seconds CPython spends in garbage collection while it is on (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._started = 0.0
        gc.callbacks.append(self._record)

    def _record(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._started


def _ours(config: Path, prompts: int, seed: int) -> dict[str, float]:
    """In this process: import the hooks, load the router, then a cold step and a warm one
    (seconds)."""
    args = _args(config)
    first = answer_mix.step_batch(prompts, GROUP, seed)
    collections = _Collections()

    start = time.perf_counter()
    from rewardrouter.integrations.slime import batched_custom_rm, post_process_rewards

    timings: dict[str, float] = {"import": time.perf_counter() - start}
    start = time.perf_counter()
    from rewardrouter.integrations._router_cache import shared_router
    from rewardrouter.integrations._source import config_source

    shared_router(config_source(args, "args"))
    timings["load"] = time.perf_counter() - start

    # the first hook call, on one math sample of another prompt (it starts worker processes only
    # when the exact checks leave the sample to math-verify)
    probe = answer_mix.step_batch(1, 1, seed + 2)
    probe[0].metadata = {"dataset": "math"}
    start = time.perf_counter()
    asyncio.run(batched_custom_rm(args, probe))
    timings["workers"] = time.perf_counter() - start
    for name in ("cold", "warm"):
        # the next rollout's batch is generated after this step, as a trainer makes it
        batch = first if name == "cold" else answer_mix.step_batch(prompts, GROUP, seed + 1)
        collected = collections.seconds
        start, cpu = time.perf_counter(), time.process_time()
        rewards = asyncio.run(batched_custom_rm(args, batch))
        scored = time.perf_counter()
        for sample, reward in zip(batch, rewards, strict=True):
            sample.reward = reward
        raw, advantages = post_process_rewards(args, batch)
        end = time.perf_counter()
        timings[f"{name}_score"] = scored - start
        timings[name] = end - start
        timings[f"{name}_cpu"] = time.process_time() - cpu
        timings[f"{name}_gc"] = collections.seconds - collected
        assert len(advantages) == len(batch)
        right = sum(
            (r == 1.0) == s.correct
            for r, s in zip(raw, batch, strict=True)
            if s.metadata["dataset"] != "squad"
        )
        timings[f"{name}_agree"] = right / sum(s.metadata["dataset"] != "squad" for s in batch)
    timings["graders"] = _graders_alone(answer_mix.step_batch(prompts, GROUP, seed + 3))
    return timings


def _graders_alone(batch: list[answer_mix.Sample]) -> float:
    """Seconds the built-in graders take on ``batch`` called directly, caches cleared first:
    the grading part of a cold step, without the router and the hooks."""
    from rewardrouter.rewards import BUILTINS
    from rewardrouter.rewards.math.equivalence import clear_caches

    kinds = {"math": "math", "gpqa": "gpqa", "squad": "f1"}
    clear_caches()
    start = time.perf_counter()
    for sample in batch:
        BUILTINS[kinds[sample.metadata["dataset"]]].grade(
            sample.response, sample.label, sample.metadata
        )
    return time.perf_counter() - start


def _baseline_step(batch: list[answer_mix.Sample]) -> list[float]:
    """The per-sample baseline's step on ``batch``: its rewards (it imports what it uses)."""
    import torch
    from math_verify import parse, verify

    from rewardrouter.rewards.choice import gpqa
    from rewardrouter.rewards.f1 import f1

    rewards: list[float] = []
    for sample in batch:
        dataset = sample.metadata["dataset"]
        if dataset == "math":
            ok = verify(parse(f"${sample.label}$"), parse(sample.response))
            rewards.append(float(ok))
        elif dataset == "gpqa":
            rewards.append(gpqa(sample.response, sample.label, sample.metadata) or 0.0)
        else:
            rewards.append(f1(sample.response, sample.label, sample.metadata) or 0.0)
    grouped = torch.tensor(rewards, dtype=torch.float32).reshape(-1, GROUP)
    mean = grouped.mean(dim=-1, keepdim=True)
    std = grouped.std(dim=-1, keepdim=True)
    advantages = ((grouped - mean) / (std + 1e-6)).flatten().tolist()
    assert len(advantages) == len(batch)
    return rewards


def _baseline(prompts: int, seed: int) -> dict[str, float]:
    """In this process: the per-sample baseline on a cold step and a warm one (seconds)."""
    for module in (
        "torch",
        "math_verify",
        "rewardrouter.rewards.choice",
        "rewardrouter.rewards.f1",
    ):
        importlib.import_module(module)  # the baseline's imports, before timing: a one-off cost

    timings: dict[str, float] = {}
    for name, offset in (("cold", 0), ("warm", 1)):
        batch = answer_mix.step_batch(prompts, GROUP, seed + offset)
        start, cpu = time.perf_counter(), time.process_time()
        rewards = _baseline_step(batch)
        timings[name] = time.perf_counter() - start
        timings[f"{name}_cpu"] = time.process_time() - cpu
        right = sum(
            (r == 1.0) == s.correct
            for r, s in zip(rewards, batch, strict=True)
            if s.metadata["dataset"] != "squad"
        )
        timings[f"{name}_agree"] = right / sum(s.metadata["dataset"] != "squad" for s in batch)
    return timings


def _first_step(side: str, config: Path, prompts: int, seed: int) -> dict[str, float]:
    """In this fresh process, which has imported nothing of the step's: make the batch, then
    run the first step. The clock and the CPU time at its end, and what making the batch took
    (for the parent to subtract)."""
    start, cpu = time.perf_counter(), time.process_time()
    batch = answer_mix.step_batch(prompts, GROUP, seed)
    made, made_cpu = time.perf_counter() - start, time.process_time() - cpu
    if side == "baseline":
        _baseline_step(batch)
    else:
        args = _args(config)
        from rewardrouter.integrations.slime import batched_custom_rm, post_process_rewards

        rewards = asyncio.run(batched_custom_rm(args, batch))
        for sample, reward in zip(batch, rewards, strict=True):
            sample.reward = reward
        assert len(post_process_rewards(args, batch)[1]) == len(batch)
    return {
        "end": time.perf_counter(),
        "cpu": time.process_time() - made_cpu,
        "batch": made,
        "torch": float("torch" in sys.modules),
    }


def _child(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("side", choices=["ours", "baseline"])
    parser.add_argument("--config", type=Path)
    parser.add_argument("--prompts", type=int)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--fresh", action="store_true")
    args = parser.parse_args(argv)
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    if args.fresh:
        print(json.dumps(_first_step(args.side, args.config, args.prompts, args.seed)))
        return 0
    import torch  # noqa: F401  (the trainer's, imported long before its first reward)

    if args.side == "ours":
        result = _ours(args.config, args.prompts, args.seed)
    else:
        result = _baseline(args.prompts, args.seed)
    print(json.dumps(result))
    return 0


def _fresh_process(
    side: str, config: Path, prompts: int, seed: int, *, first_step: bool = False
) -> dict[str, float]:
    """One child process's timings; with ``first_step``, its "fresh process → first step" wall
    time (from launching it) and CPU time, the batch's making left out."""
    command = [sys.executable, __file__, "--child", side, "--config", str(config),
               "--prompts", str(prompts), "--seed", str(seed)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    launched = time.perf_counter()  # CLOCK_MONOTONIC: the child's clock reads the same
    done = subprocess.run(
        command + ["--fresh"] * first_step, capture_output=True, text=True, env=env, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{side} step failed:\n{done.stderr[-3000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    if first_step:
        result["wall"] = result["end"] - launched - result["batch"]
    return result


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        return _child(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=512)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3, help="fresh processes per side")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as folder:
        config, batch_std = Path(folder) / "router.yaml", Path(folder) / "router_batch_std.yaml"
        config.write_text(ROUTER_YAML)
        batch_std.write_text(ROUTER_YAML.replace(*BATCH_STD))
        ours, base = [], []
        first: dict[str, list[dict[str, float]]] = {"grpo": [], "batch_std": [], "baseline": []}
        for i in range(args.repeat):  # side by side: one process of each in turn
            seed = args.seed + 10 * i
            ours.append(_fresh_process("ours", config, args.prompts, seed))
            base.append(_fresh_process("baseline", config, args.prompts, seed))
            for name, side, path in (
                ("grpo", "ours", config),
                ("batch_std", "ours", batch_std),
                ("baseline", "baseline", config),
            ):
                first[name].append(_fresh_process(side, path, args.prompts, seed, first_step=True))

    samples = args.prompts * GROUP
    cores = len(os.sched_getaffinity(0))
    print(f"one step: {args.prompts} prompts x {GROUP} responses = {samples:,} samples "
          f"(60% math, 20% multiple choice, 20% short QA); {cores} cores; "
          f"{args.repeat} fresh processes per side, best and median\n")  # fmt: skip
    print(f"{'':<34}{'best s':>9}{'median s':>10}{'CPU s':>9}")

    def row(name: str, values: list[float], cpu: list[float] | None = None) -> None:
        used = f"{statistics.median(cpu):>9.3f}" if cpu else ""
        print(f"{name:<34}{min(values):>9.3f}{statistics.median(values):>10.3f}{used}")

    row("import of the hooks (torch loaded)", [r["import"] for r in ours])
    row("router load (compile)", [r["load"] for r in ours])
    row("first hook call, one sample", [r["workers"] for r in ours])
    row("cold step: slime hooks", [r["cold"] for r in ours], [r["cold_cpu"] for r in ours])
    row("  of which scoring", [r["cold_score"] for r in ours])
    row("  of which garbage collection", [r["cold_gc"] for r in ours])
    row("first step: import + load + cold", [r["import"] + r["load"] + r["cold"] for r in ours])
    row("warm step: slime hooks", [r["warm"] for r in ours], [r["warm_cpu"] for r in ours])
    row("  of which garbage collection", [r["warm_gc"] for r in ours])
    row("  the graders alone, cold caches", [r["graders"] for r in ours])
    row("cold step: per-sample baseline", [r["cold"] for r in base], [r["cold_cpu"] for r in base])
    row("warm step: per-sample baseline", [r["warm"] for r in base], [r["warm_cpu"] for r in base])
    print("fresh process -> first step (start-up and every import included):")
    for name, label in (
        ("grpo", "  slime hooks, grpo"),
        ("batch_std", "  slime hooks, batch std"),
        ("baseline", "  per-sample baseline"),
    ):
        runs = first[name]
        torch_note = " (torch)" if all(r["torch"] for r in runs) else " (no torch)"
        row(label + torch_note, [r["wall"] for r in runs], [r["cpu"] for r in runs])
    print(f"(CPU s: the median process CPU time of the step, threads and the main thread; "
          f"load average during the run {os.getloadavg()[0]:.1f} on {cores} cores)")  # fmt: skip
    cold = min(r["cold"] for r in base) / min(r["cold"] for r in ours)
    warm = min(r["warm"] for r in base) / min(r["warm"] for r in ours)
    print(f"\nspeed-up (best against best): cold {cold:.1f}x, warm {warm:.1f}x")
    best, median = min(r["cold"] for r in ours), statistics.median(r["cold"] for r in ours)
    print(f"target: a cold step <= {TARGET} s; best {best:.3f} s, median {median:.3f} s: "
          f"{'met' if best <= TARGET else 'NOT met'} (best), "
          f"{'met' if median <= TARGET else 'NOT met'} (median)")  # fmt: skip
    agree_ours = statistics.mean(r["cold_agree"] for r in ours)
    agree_base = statistics.mean(r["cold_agree"] for r in base)
    for name, label in (("grpo", "grpo"), ("batch_std", "grpo std: batch")):
        fresh = statistics.median(r["wall"] for r in first[name])
        used = statistics.median(r["cpu"] for r in first[name])
        print(f"target: fresh process -> first step <= {FRESH_TARGET} s, {label}: median "
              f"{fresh:.3f} s wall, {used:.3f} s CPU: "
              f"{'met' if fresh <= FRESH_TARGET else 'NOT met'} (wall), "
              f"{'met' if used <= FRESH_TARGET else 'NOT met'} (CPU)")  # fmt: skip
    print(f"math and multiple-choice rewards matching how the answer was generated: "
          f"slime hooks {agree_ours:.1%}, baseline {agree_base:.1%}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
