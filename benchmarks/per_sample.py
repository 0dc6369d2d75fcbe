"""slime's default call pattern against its batched one: the same step's rewards, both driven by
slime's own ``rm_hub``.

slime, miles and vime call the reward hook once per sample by default (no ``--group-rm``):
``async_rm(args, sample)`` for each sample as its generation ends, many in flight in one event
loop. With ``--group-rm`` they call ``batched_async_rm(args, group)`` once per prompt group. Both
are run here on one GRPO step's batch (``benchmarks/answer_mix.py``: 512 prompts x 16 answers,
60% math, 20% multiple choice, 20% short QA), through slime's own ``rm_hub`` from a checkout:

- **per sample**: ``custom_rm`` as the hook, ``async_rm`` on every sample at once, which the hook
  gathers into route-group batches (:mod:`rewardrouter.integrations._coalesce`);
- **per sample, one by one**: the same calls with the gathering switched off (each call scored
  alone), what the default path cost before it;
- **per group**: ``batched_custom_rm`` as the hook, ``batched_async_rm`` on every prompt group at
  once.

Each runs ``--rounds`` times, interleaved, each time on a batch of its own of the same mix (no
cache of another run serves it), in this one process after a warm-up (worker processes started,
imports done) that also checks that every path gives every sample of one batch the same reward.
The table gives wall and CPU seconds per step (this process and its children, the math worker
processes included), and each against per group. The two rows "no gc" run the same paths with
the garbage collector off: the gap between the per-sample and per-group paths that remains is
mostly the collector walking the coroutines and tasks of thousands of calls in flight.

    python benchmarks/per_sample.py --slime /tmp/slime [--prompts 512] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import resource
import sys
import tempfile
import time
from argparse import Namespace
from pathlib import Path
from typing import Any

import answer_mix
import step

GROUP = 16


def cpu_seconds() -> float:
    """CPU time of this process and of its waited-for children so far."""
    own, children = (
        resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _args(config: Path, hook: str, group_rm: bool) -> Namespace:
    return Namespace(
        rewardrouter_config=str(config),
        reward_key=None,
        eval_reward_key=None,
        group_rm=group_rm,
        n_samples_per_prompt=GROUP,
        custom_rm_path=f"rewardrouter.integrations.slime.{hook}",
    )


def _samples(slime_sample: Any, prompts: int, seed: int) -> list[Any]:
    return [
        slime_sample(
            prompt=s.prompt,
            response=s.response,
            label=s.label,
            metadata=dict(s.metadata),
            group_index=s.group_index,
            index=s.index,
        )
        for s in answer_mix.step_batch(prompts, GROUP, seed)
    ]


async def _per_sample(rm_hub: Any, args: Namespace, batch: list[Any]) -> list[Any]:
    return list(await asyncio.gather(*(rm_hub.async_rm(args, s) for s in batch)))


async def _per_group(rm_hub: Any, args: Namespace, batch: list[Any]) -> list[Any]:
    groups = [batch[i : i + GROUP] for i in range(0, len(batch), GROUP)]
    done = await asyncio.gather(*(rm_hub.batched_async_rm(args, g) for g in groups))
    return [reward for group in done for reward in group]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--slime", type=Path, required=True, help="a slime checkout")
    parser.add_argument("--prompts", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=3)
    opts = parser.parse_args(argv)
    rm_hub = step._import_slime(opts.slime)
    slime_sample = sys.modules["slime.utils.types"].Sample
    from rewardrouter.integrations import slime as hooks

    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "router.yaml"
        config.write_text(step.ROUTER_YAML)
        single = _args(config, "custom_rm", group_rm=False)
        grouped = _args(config, "batched_custom_rm", group_rm=True)
        largest = hooks.LARGEST

        def one_by_one(batch: list[Any]) -> list[Any]:
            hooks.LARGEST = 1  # every call its own batch: the path without gathering
            hooks._coalescers.clear()
            try:
                return asyncio.run(_per_sample(rm_hub, single, batch))
            finally:
                hooks.LARGEST = largest
                hooks._coalescers.clear()

        def collector_off(run: Any) -> Any:
            def without_gc(batch: list[Any]) -> list[Any]:
                gc.disable()
                try:
                    return run(batch)  # type: ignore[no-any-return]
                finally:
                    gc.enable()

            return without_gc

        paths = {
            "per sample": lambda batch: asyncio.run(_per_sample(rm_hub, single, batch)),
            "per sample, one by one": one_by_one,
            "per group": lambda batch: asyncio.run(_per_group(rm_hub, grouped, batch)),
        }
        paths["per sample, no gc"] = collector_off(paths["per sample"])
        paths["per group, no gc"] = collector_off(paths["per group"])
        # warm (workers, imports, the config), and the same rewards from every path
        rewards = {name: run(_samples(slime_sample, 64, 7)) for name, run in paths.items()}
        for name, got in rewards.items():
            assert got == rewards["per group"], f"{name} gave other rewards"
        totals = {name: [0.0, 0.0] for name in paths}
        for round_ in range(opts.rounds):
            for k, (name, run) in enumerate(paths.items()):
                batch = _samples(slime_sample, opts.prompts, 1000 * round_ + k)  # uncached
                cpu, begun = cpu_seconds(), time.perf_counter()
                run(batch)
                totals[name][0] += time.perf_counter() - begun
                totals[name][1] += cpu_seconds() - cpu
    load = os.getloadavg()[0]
    samples = opts.prompts * GROUP
    print(f"{samples} samples per step ({opts.prompts} prompts x {GROUP}), {opts.rounds} rounds")
    print(f"load average at the end: {load:.2f} on {os.cpu_count()} CPUs")
    base_wall, base_cpu = (t / opts.rounds for t in totals["per group"])
    print(f"{'path':<24}{'wall s':>9}{'CPU s':>9}{'wall x':>9}{'CPU x':>9}")
    for name, (wall, cpu) in totals.items():
        wall, cpu = wall / opts.rounds, cpu / opts.rounds
        print(f"{name:<24}{wall:>9.3f}{cpu:>9.3f}{wall / base_wall:>9.2f}{cpu / base_cpu:>9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
