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

The same batches, in processes of their own, go through each peer's default reward path, its
imports done before timing:

- **slime** (``--slime CHECKOUT``): ``rm_hub.batched_async_rm(args, samples)`` on slime's own
  ``Sample`` objects, no custom function, each sample's ``metadata["rm_type"]`` naming its
  grader as a mixed dataset does: ``math`` (``grade_answer_verl``: the last box, then mathd and
  sympy equivalence; ``deepscaler`` would score 0 here, as it grades only after ``</think>``),
  ``gpqa`` and ``f1``; the rewards stored on the samples, then slime's default normalization for
  ``--advantage-estimator grpo`` (``RolloutManager._post_process_rewards`` in
  ``slime/ray/rollout.py``, which imports sglang and Ray, so its arithmetic is done here as it
  does it: float32, ``reshape(-1, n_samples_per_prompt)``, centred, divided by unbiased std +
  1e-6);
- **verl** (the installed package, or ``--verl CHECKOUT``): ``default_compute_score(data_source,
  response, label)`` per sample, as its ``naive`` reward manager calls it, with the data sources
  of verl's own preprocessing: ``DigitalLearningGmbH/MATH-lighteval`` for math
  (``math_reward``: the last box, string equivalence). verl has no data source for multiple
  choice or short QA: it raises ``NotImplementedError`` for them, counted here as reward 0 and
  as not covered (a verl user writes a custom function for them). The scores are placed on the
  last response token (``token_level_rewards``, as the reward manager does), then
  ``core_algos.compute_grpo_outcome_advantage`` on torch tensors, groups by prompt (``uid``).

The baseline grades one sample at a time, with no router: plain math-verify for math
(``verify(parse(label), parse(response))``, as math-verify's README calls it), the same
``gpqa`` and ``f1`` graders for the rest, then slime's default normalization as above; its
imports (math-verify, the graders) are done before timing. It is not a peer: no framework
grades this way by default.

Agreement: how many of the cold step's rewards each peer gives equal to ours, by dataset, and
the math shapes where they differ most.

    python benchmarks/step.py --slime path/to/slime   # several minutes on 2 cores
    python benchmarks/step.py --repeat 1 --prompts 128 --slime path/to/slime
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
from collections import Counter
from pathlib import Path
from typing import Any

import answer_mix
import external_suites

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
#: ``metadata["rm_type"]`` per dataset for slime's ``rm_hub``; verl's data source per dataset.
SLIME_RM_TYPES = {"math": "math", "gpqa": "gpqa", "squad": "f1"}
VERL_SOURCES = {
    "math": "DigitalLearningGmbH/MATH-lighteval",
    "gpqa": "Idavidrein/gpqa",
    "squad": "rajpurkar/squad",
}
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


def _batch(prompts: int, seed: int, only: str | None = None) -> list[answer_mix.Sample]:
    """A step's batch, or with ``only`` the samples of that dataset in it."""
    batch = answer_mix.step_batch(prompts, GROUP, seed)
    return [s for s in batch if s.metadata["dataset"] == only] if only else batch


def _ours(config: Path, prompts: int, seed: int, only: str | None = None) -> dict[str, Any]:
    """In this process: import the hooks, load the router, then a cold step and a warm one
    (seconds)."""
    args = _args(config)
    first = _batch(prompts, seed, only)
    collections = _Collections()

    start = time.perf_counter()
    from rewardrouter.integrations.slime import batched_custom_rm, post_process_rewards

    timings: dict[str, Any] = {"import": time.perf_counter() - start}
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
        batch = first if name == "cold" else _batch(prompts, seed + 1, only)
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
        if name == "cold":
            timings["rewards"] = [float(r) for r in raw]
    timings["graders"], timings["route_us"] = _graders_alone(_batch(prompts, seed + 3, only))
    return timings


def _graders_alone(batch: list[answer_mix.Sample]) -> tuple[float, dict[str, float]]:
    """Seconds the built-in graders take on ``batch`` called directly, caches cleared first (the
    grading part of a cold step, without the router and the hooks), and each route's CPU time
    per sample in microseconds (its samples graded together, caches cleared before each)."""
    from rewardrouter.rewards import BUILTINS
    from rewardrouter.rewards.math.equivalence import clear_caches

    kinds = {"math": "math", "gpqa": "gpqa", "squad": "f1"}
    clear_caches()
    start = time.perf_counter()
    for sample in batch:
        BUILTINS[kinds[sample.metadata["dataset"]]].grade(
            sample.response, sample.label, sample.metadata
        )
    took = time.perf_counter() - start
    per_route: dict[str, float] = {}
    for dataset, kind in kinds.items():
        samples = [s for s in batch if s.metadata["dataset"] == dataset]
        if not samples:
            continue
        grade = BUILTINS[kind].grade
        clear_caches()
        begun = time.process_time()
        for sample in samples:
            grade(sample.response, sample.label, sample.metadata)
        per_route[kind] = (time.process_time() - begun) / len(samples) * 1e6
    return took, per_route


def _baseline_step(batch: list[answer_mix.Sample]) -> list[float]:
    """The per-sample baseline's step on ``batch``: its rewards (it imports what it uses)."""
    from math_verify import parse, verify

    from rewardrouter.rewards.choice.kind import gpqa
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
    assert len(_slime_normalization(rewards)) == len(batch)
    return rewards


def _slime_normalization(rewards: list[float]) -> list[float]:
    """slime's default normalization for ``--advantage-estimator grpo`` (its arithmetic, as
    ``RolloutManager._post_process_rewards`` does it): float32, one row per prompt, centred,
    divided by the unbiased std + 1e-6."""
    import torch

    grouped = torch.tensor(rewards, dtype=torch.float).reshape(-1, GROUP)
    centred = grouped - grouped.mean(dim=-1, keepdim=True)
    result: list[float] = (centred / (centred.std(dim=-1, keepdim=True) + 1e-6)).flatten().tolist()
    return result


def _import_slime(checkout: Path) -> Any:
    """slime's ``rm_hub`` and ``Sample`` from a checkout (its top packages registered without
    their ``__init__``, as ``external_suites`` registers them)."""
    external_suites._load_package("slime", checkout / "slime")
    external_suites._load_package("slime.rollout", checkout / "slime" / "rollout")
    return importlib.import_module("slime.rollout.rm_hub")


def _slime(checkout: Path, prompts: int, seed: int) -> dict[str, Any]:
    """In this process: slime's default reward path on a cold step and a warm one (seconds)."""
    rm_hub = _import_slime(checkout)
    slime_sample = importlib.import_module("slime.utils.types").Sample
    args = Namespace(
        custom_rm_path=None,
        rm_type=None,
        reward_key=None,
        n_samples_per_prompt=GROUP,
        rollout_batch_size=prompts,
        advantage_estimator="grpo",
        rewards_normalization=True,
        grpo_std_normalization=True,
    )
    timings: dict[str, Any] = {}
    for name, offset in (("cold", 0), ("warm", 1)):
        batch = [
            slime_sample(
                prompt=s.prompt,
                response=s.response,
                label=s.label,
                metadata={**s.metadata, "rm_type": SLIME_RM_TYPES[s.metadata["dataset"]]},
                group_index=s.group_index,
                index=s.index,
                response_length=s.response_length,
            )
            for s in answer_mix.step_batch(prompts, GROUP, seed + offset)
        ]
        start, cpu = time.perf_counter(), time.process_time()
        rewards = asyncio.run(rm_hub.batched_async_rm(args, batch))
        for sample, reward in zip(batch, rewards, strict=True):
            sample.reward = reward
        raw = [sample.get_reward_value(args) for sample in batch]
        assert len(_slime_normalization(raw)) == len(batch)
        timings[name] = time.perf_counter() - start
        timings[f"{name}_cpu"] = time.process_time() - cpu
        if name == "cold":
            timings["rewards"] = [float(r) for r in raw]
    return timings


def _import_verl(checkout: Path | None) -> tuple[Any, Any]:
    """verl's ``default_compute_score`` and ``compute_grpo_outcome_advantage``: from the
    installed package, or from a checkout put first on the path."""
    if checkout is not None:
        sys.path.insert(0, str(checkout))
    score = importlib.import_module("verl.utils.reward_score").default_compute_score
    grpo = importlib.import_module("verl.trainer.ppo.core_algos").compute_grpo_outcome_advantage
    return score, grpo


def _verl(
    checkout: Path | None, prompts: int, seed: int, only: str | None = None
) -> dict[str, Any]:
    """In this process: verl's default reward path on a cold step and a warm one (seconds)."""
    import numpy as np
    import torch

    score, grpo = _import_verl(checkout)
    timings: dict[str, Any] = {"source": sys.modules["verl"].__file__}
    for name, offset in (("cold", 0), ("warm", 1)):
        batch = _batch(prompts, seed + offset, only)
        # the batch's tensors as verl's trainer holds them before rewards: the response mask
        # (responses padded to the longest) and the prompt ids (``uid``)
        lengths = torch.tensor([s.response_length for s in batch])
        mask = (torch.arange(int(lengths.max())) < lengths[:, None]).float()
        uid = np.array([str(s.group_index) for s in batch], dtype=object)
        uncovered = 0
        start, cpu = time.perf_counter(), time.process_time()
        rewards: list[float] = []
        for sample in batch:
            try:
                result = score(VERL_SOURCES[sample.metadata["dataset"]], sample.response,
                               sample.label)  # fmt: skip
            except NotImplementedError:
                uncovered += 1
                result = 0.0
            rewards.append(float(result["score"] if isinstance(result, dict) else result))
        token_level = torch.zeros_like(mask)
        token_level[torch.arange(len(batch)), lengths - 1] = torch.tensor(rewards)
        advantages, _ = grpo(token_level_rewards=token_level, response_mask=mask, index=uid,
                             epsilon=1e-6, norm_adv_by_std_in_grpo=True)  # fmt: skip
        timings[name] = time.perf_counter() - start
        timings[f"{name}_cpu"] = time.process_time() - cpu
        assert advantages.shape == mask.shape
        if name == "cold":
            timings["rewards"] = rewards
            timings["uncovered"] = uncovered
    return timings


def _baseline(prompts: int, seed: int) -> dict[str, float]:
    """In this process: the per-sample baseline on a cold step and a warm one (seconds)."""
    for module in (
        "torch",
        "math_verify",
        "rewardrouter.rewards.choice.kind",
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
    parser.add_argument("side", choices=["ours", "baseline", "slime", "verl"])
    parser.add_argument("--peer", type=Path, default=None)
    parser.add_argument("--config", type=Path)
    parser.add_argument("--prompts", type=int)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--fresh", action="store_true")
    parser.add_argument("--only", help="the samples of this dataset alone")
    args = parser.parse_args(argv)
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    if args.fresh:
        print(json.dumps(_first_step(args.side, args.config, args.prompts, args.seed)))
        return 0
    import torch  # noqa: F401  (the trainer's, imported long before its first reward)

    result: dict[str, Any]
    if args.side == "ours":
        result = _ours(args.config, args.prompts, args.seed, args.only)
    elif args.side == "slime":
        result = _slime(args.peer, args.prompts, args.seed)
    elif args.side == "verl":
        result = _verl(args.peer, args.prompts, args.seed, args.only)
    else:
        result = _baseline(args.prompts, args.seed)
    print(json.dumps(result))
    return 0


def _fresh_process(
    side: str,
    config: Path,
    prompts: int,
    seed: int,
    *,
    first_step: bool = False,
    peer: Path | None = None,
    only: str | None = None,
) -> dict[str, Any]:
    """One child process's timings; with ``first_step``, its "fresh process → first step" wall
    time (from launching it) and CPU time, the batch's making left out."""
    command = [sys.executable, __file__, "--child", side, "--config", str(config),
               "--prompts", str(prompts), "--seed", str(seed)]  # fmt: skip
    if peer is not None:
        command += ["--peer", str(peer)]
    if only is not None:
        command += ["--only", only]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    launched = time.perf_counter()  # CLOCK_MONOTONIC: the child's clock reads the same
    done = subprocess.run(
        command + ["--fresh"] * first_step, capture_output=True, text=True, env=env, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{side} step failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if first_step:
        result["wall"] = result["end"] - launched - result["batch"]
    return result


Runs = list[dict[str, Any]]


def _ratios(pairs: dict[str, tuple[Runs, Runs]]) -> None:
    """How many times longer each other side took than ours (same samples): wall (best against
    best) and CPU (median against median), cold and warm."""
    print(
        f"\n{'their time / ours':<34}{'cold wall':>10}{'cold CPU':>10}{'warm wall':>10}"
        f"{'warm CPU':>10}"
    )
    for name, (ours, runs) in pairs.items():
        cells = ""
        for step in ("cold", "warm"):
            wall = min(r[step] for r in runs) / min(r[step] for r in ours)
            cpu = statistics.median(r[f"{step}_cpu"] for r in runs) / statistics.median(
                r[f"{step}_cpu"] for r in ours
            )
            cells += f"{wall:>9.2f}x{cpu:>9.2f}x"
        print(f"{name:<34}{cells}")


def _agreement(
    batch: list[answer_mix.Sample], ours: list[float], peers: dict[str, list[float]]
) -> None:
    """How many of the cold step's rewards each peer gives equal to ours, by dataset, and
    where they differ: higher or lower than ours, and the math shapes that differ most."""
    for name, theirs in peers.items():
        equal = sum(a == b for a, b in zip(ours, theirs, strict=True))
        print(f"\n{name}: {equal:,} of {len(batch):,} rewards equal to ours")
        for dataset in ("math", "gpqa", "squad"):
            rows = [
                (s, a, b)
                for s, a, b in zip(batch, ours, theirs, strict=True)
                if s.metadata["dataset"] == dataset
            ]
            differ = [(s, a, b) for s, a, b in rows if a != b]
            higher = sum(b > a for _, a, b in differ)
            line = (f"  {dataset:<6}{len(rows) - len(differ):>6,} of {len(rows):,} equal; "
                    f"{higher:,} higher than ours, {len(differ) - higher:,} lower")  # fmt: skip
            if dataset == "math" and differ:
                shapes = Counter(s.metadata["shape"] for s, _, _ in differ).most_common(6)
                line += "; by shape: " + ", ".join(f"{k} {v}" for k, v in shapes)
            print(line)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        return _child(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=512)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3, help="fresh processes per side")
    parser.add_argument("--slime", type=Path, help="a slime checkout (THUDM/slime); else no slime")
    parser.add_argument("--verl", type=Path, help="a verl checkout; else the installed verl")
    args = parser.parse_args(argv)
    peers: dict[str, Path | None] = {"verl": args.verl and args.verl.resolve()}
    if args.slime:
        peers = {"slime": args.slime.resolve(), **peers}

    with tempfile.TemporaryDirectory() as folder:
        config, batch_std = Path(folder) / "router.yaml", Path(folder) / "router_batch_std.yaml"
        config.write_text(ROUTER_YAML)
        batch_std.write_text(ROUTER_YAML.replace(*BATCH_STD))
        ours, base = [], []
        peer_runs: dict[str, Runs] = {name: [] for name in peers}
        math_alone: dict[str, Runs] = {"ours": [], "verl": []}
        first: dict[str, list[dict[str, float]]] = {"grpo": [], "batch_std": [], "baseline": []}
        for i in range(args.repeat):  # side by side: one process of each in turn
            seed = args.seed + 10 * i
            ours.append(_fresh_process("ours", config, args.prompts, seed))
            base.append(_fresh_process("baseline", config, args.prompts, seed))
            for name, path in peers.items():
                peer_runs[name].append(_fresh_process(name, config, args.prompts, seed, peer=path))
            if "verl" in peers:  # verl's coverage: the math samples alone, on both sides
                for side in ("ours", "verl"):
                    math_alone[side].append(
                        _fresh_process(
                            side, config, args.prompts, seed, peer=peers.get(side), only="math"
                        )
                    )
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
    for kind in ours[0]["route_us"]:
        used = [r["route_us"][kind] for r in ours]
        print(f"{'    ' + kind + ' route, CPU us/sample':<34}{min(used):>9.1f}"
              f"{statistics.median(used):>10.1f}")  # fmt: skip
    row("cold step: per-sample baseline", [r["cold"] for r in base], [r["cold_cpu"] for r in base])
    row("warm step: per-sample baseline", [r["warm"] for r in base], [r["warm_cpu"] for r in base])
    for name, runs in peer_runs.items():
        row(f"cold step: {name}", [r["cold"] for r in runs], [r["cold_cpu"] for r in runs])
        row(f"warm step: {name}", [r["warm"] for r in runs], [r["warm_cpu"] for r in runs])
    for name, label in (("ours", "slime hooks"), ("verl", "verl")):
        if runs := math_alone[name]:
            row(f"cold step, math alone: {label}", [r["cold"] for r in runs],
                [r["cold_cpu"] for r in runs])  # fmt: skip
            row(f"warm step, math alone: {label}", [r["warm"] for r in runs],
                [r["warm_cpu"] for r in runs])  # fmt: skip
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
    pairs = {f"{n} default path": (ours, r) for n, r in peer_runs.items()}
    if math_alone["verl"]:
        pairs["verl default path, math alone"] = (math_alone["ours"], math_alone["verl"])
    _ratios({**pairs, "math-verify loop": (ours, base)})
    if "verl" in peer_runs:
        print(f"(verl: imported from {peer_runs['verl'][0]['source']}; "
              f"{peer_runs['verl'][0]['uncovered']:,} samples without a verl data source)")  # fmt: skip
    _agreement(answer_mix.step_batch(args.prompts, GROUP, args.seed), ours[0]["rewards"],
               {name: runs[0]["rewards"] for name, runs in peer_runs.items()})  # fmt: skip
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
