"""CPU benchmark of GRPO group advantages: rewardrouter vs the two common ways.

Batches of 1M and 10M float32 rewards in prompt groups of 16, shuffled, with 5% of the groups
of another size (2..30), timed tensor-in, tensor-out:

* **ours**: :func:`rewardrouter.advantage.group_advantages`, grouping by ``group_index``;
* **(a) python loop**: a per-sample Python loop that collects each group's scores in a dict,
  takes mean and std per group, then writes each advantage back (how verl's default GRPO
  estimator does it). At 10M it is extrapolated from the 1M measurement (said in the table);
* **(b) reshape**: ``reshape(-1, 16)`` mean/std in float32 (how slime does it). It needs
  uniform, position-ordered groups, so it is timed on a uniform batch of the same size; on the
  shuffled, uneven batch it would be wrong, not slow. The ``ours on (b)`` column times
  rewardrouter on that same uniform batch (with its group ids), which separates the cost of
  the exact float64 computation from the cost of shuffled groups (random memory access).

Both sides run with the same number of torch CPU threads in each row: by default one thread,
then torch's default (every core); ``--threads 1 4`` picks others. (a) is pure Python, so it is
measured once and compared against every row.

Run: ``python benchmarks/advantages.py [--sizes 1000000 10000000] [--threads 1 N]``.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from collections.abc import Callable
from functools import partial

import torch
from torch import Tensor

from rewardrouter.advantage import group_advantages
from rewardrouter.config.stages import GRPOStage

GROUP = 16
EPS = 1e-6
STAGE = GRPOStage(device="cpu", dtype="float32", eps=EPS)


def make_batch(n: int, seed: int = 0) -> tuple[Tensor, Tensor]:
    """About ``n`` float32 rewards in shuffled groups of 16, 5% of the groups uneven."""
    gen = torch.Generator().manual_seed(seed)
    groups = n // GROUP
    sizes = torch.full((groups,), GROUP)
    uneven = torch.randperm(groups, generator=gen)[: groups // 20]
    sizes[uneven] = torch.randint(2, 31, (uneven.numel(),), generator=gen)
    ids = torch.repeat_interleave(torch.arange(groups), sizes)
    # Mostly 0/1 correctness rewards, some fractional partial credit.
    rewards = torch.randint(0, 2, (ids.numel(),), generator=gen).to(torch.float32)
    partial = torch.rand(ids.numel(), generator=gen) < 0.1
    rewards[partial] = 0.3
    order = torch.randperm(ids.numel(), generator=gen)
    return rewards[order], ids[order]


def python_loop(rewards: Tensor, index: list[int]) -> Tensor:
    """(a): per-sample loop over a dict of group scores, verl's default GRPO style."""
    scores = rewards.clone()
    by_group: dict[int, list[Tensor]] = defaultdict(list)
    for i in range(len(scores)):
        by_group[index[i]].append(scores[i])
    mean: dict[int, Tensor] = {}
    std: dict[int, Tensor] = {}
    for group, members in by_group.items():
        values = torch.stack(members)
        mean[group] = values.mean()
        std[group] = values.std() if len(members) > 1 else torch.tensor(1.0)
    for i in range(len(scores)):
        scores[i] = (scores[i] - mean[index[i]]) / (std[index[i]] + EPS)
    return scores


def reshape_uniform(rewards: Tensor) -> Tensor:
    """(b): ``reshape(-1, n)`` in float32, slime's default normalization (uniform groups only)."""
    grouped = rewards.reshape(-1, GROUP)
    centered = grouped - grouped.mean(dim=-1, keepdim=True)
    return (centered / (centered.std(dim=-1, keepdim=True) + EPS)).flatten()


def best_of(fn: Callable[[], object], repeat: int) -> float:
    """Fastest of ``repeat`` runs after one warm-up, in seconds."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def check_agreement(rewards: Tensor, ids: Tensor) -> float:
    """Largest absolute difference between ours and (a) outside constant groups (where (a)
    leaves its float32 residue and ours is exactly 0)."""
    ours = group_advantages(rewards, ids, STAGE)
    loop = python_loop(rewards, ids.tolist())
    slots = int(ids.max()) + 1
    lo = torch.full((slots,), torch.inf).scatter_reduce(0, ids, rewards, "amin")
    hi = torch.full((slots,), -torch.inf).scatter_reduce(0, ids, rewards, "amax")
    signal = (lo != hi)[ids]
    return float((ours - loop)[signal].abs().max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument(
        "--threads",
        type=int,
        nargs="+",
        default=sorted({1, torch.get_num_threads()}),
        help="torch CPU thread counts, one table row per size and count (default: 1 and all)",
    )
    parser.add_argument("--loop-size", type=int, default=1_000_000, help="largest (a) run")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, groups of {GROUP}")
    print(f"max |ours - (a)| on uneven groups: {check_agreement(*make_batch(50_000)):.2e}")
    print()
    header = (
        f"{'rewards':>11} {'threads':>7} {'ours':>10} {'ours on (b)':>12} {'(a) loop':>12} "
        f"{'(b) reshape':>12} {'vs (a)':>9} {'ours/(b)':>9}"
    )
    print(header)
    print("-" * len(header))
    loop_rate: float | None = None
    extrapolated = False
    for n in args.sizes:
        rewards, ids = make_batch(n)
        uniform = rewards[: rewards.numel() // GROUP * GROUP].contiguous()
        uniform_ids = torch.arange(uniform.numel()) // GROUP
        repeat = 5 if n <= 2_000_000 else 3
        loop: float | None = None
        if n <= args.loop_size:
            index = ids.tolist()
            start = time.perf_counter()
            python_loop(rewards, index)
            loop = time.perf_counter() - start
            loop_rate = loop / rewards.numel()
        elif loop_rate is not None:
            loop = loop_rate * rewards.numel()  # extrapolated: see the footnote
            extrapolated = True
        for threads in args.threads:
            torch.set_num_threads(threads)
            ours = best_of(partial(group_advantages, rewards, ids, STAGE), repeat)
            ordered = best_of(partial(group_advantages, uniform, uniform_ids, STAGE), repeat)
            reshape = best_of(partial(reshape_uniform, uniform), repeat)
            loop_cell, speedup_cell = "n/a", "n/a"
            if loop is not None:
                mark = "*" if n > args.loop_size else ""
                loop_cell, speedup_cell = f"{loop * 1e3:.0f}ms{mark}", f"{loop / ours:.0f}x"
            print(
                f"{rewards.numel():>11,} {threads:>7} {ours * 1e3:>8.1f}ms "
                f"{ordered * 1e3:>10.1f}ms {loop_cell:>12} {reshape * 1e3:>10.1f}ms "
                f"{speedup_cell:>9} {ours / reshape:>8.2f}x"
            )
    if extrapolated:
        print(f"* extrapolated linearly from the {args.loop_size:,}-reward measurement")
    print("targets: >= 100x faster than (a); within 2x of (b) (which cannot group by index)")


if __name__ == "__main__":
    main()
