"""Check group advantages on a CUDA device: exact zeros, agreement with the CPU, throughput.

1. Constant groups of sizes 2..1024, values such as 0.3 and 7.3, input float32/float64 and
   output float32/float64/bfloat16: every advantage must be exactly 0.0 on the GPU.
2. A shuffled batch with uneven groups and invalid samples: the GPU result must match the CPU
   result (float64 output) to 1e-12 relative, for every estimator.
3. 100M float32 rewards with int64 group ids in shuffled groups of 16, tensors already on the
   GPU: time per call and effective GB/s (rewards + ids read, advantages written), against the
   card's device-to-device copy bandwidth.

Exits 0 with a message when no CUDA device is present; exits 1 when a check fails.
Run: ``python benchmarks/gpu_check.py [--n 100000000]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

import torch

from rewardrouter.advantage import group_advantages
from rewardrouter.config.stages import (
    AdvantageStage,
    GRPOStage,
    ReinforcePPBaselineStage,
    RLOOStage,
)

ESTIMATORS: list[AdvantageStage] = [
    GRPOStage(),
    GRPOStage(std="batch"),
    GRPOStage(std="none"),
    RLOOStage(),
    ReinforcePPBaselineStage(),
]


def check_exact_zeros(device: torch.device) -> int:
    """Count constant groups whose advantages are not all exactly 0 on ``device``."""
    failures = 0
    for size in (2, 3, 16, 100, 1000, 1024):
        for value in (0.3, 7.3, 0.1, -123.456, 1e-310):
            for in_dtype in (torch.float32, torch.float64):
                rewards = torch.full((size,), value, dtype=in_dtype, device=device)
                ids = torch.zeros(size, dtype=torch.long, device=device)
                for stage in ESTIMATORS:
                    for out_dtype in ("float32", "float64", "bfloat16"):
                        adv = group_advantages(
                            rewards, ids, stage.model_copy(update={"dtype": out_dtype})
                        )
                        if not bool((adv == 0).all()):
                            failures += 1
                            print(f"  FAIL {stage.kind} size={size} value={value} {out_dtype}")
    return failures


def check_against_cpu(device: torch.device, n: int = 1_000_000) -> float:
    """Largest absolute difference between GPU and CPU results over every estimator
    (advantages are of order 1; the check allows 1e-12 relative plus 1e-12 absolute)."""
    gen = torch.Generator().manual_seed(0)
    rewards = torch.rand(n, generator=gen, dtype=torch.float64)
    ids = torch.randint(0, n // 12, (n,), generator=gen)
    valid = torch.rand(n, generator=gen) > 0.05
    worst = 0.0
    for stage in ESTIMATORS:
        on_cpu = stage.model_copy(update={"dtype": "float64", "device": "cpu"})
        on_gpu = stage.model_copy(update={"dtype": "float64", "device": "auto"})
        cpu = group_advantages(rewards, ids, on_cpu, valid=valid)
        gpu = group_advantages(rewards.to(device), ids.to(device), on_gpu, valid=valid.to(device))
        assert gpu.device.type == "cuda", "a CUDA input must stay on the GPU"
        if not torch.allclose(gpu.cpu(), cpu, rtol=1e-12, atol=1e-12):
            print(f"  FAIL {stage.kind}: GPU and CPU disagree")
            worst = float("inf")
        worst = max(worst, (gpu.cpu() - cpu).abs().max().item())
    return worst


def timed(fn: Callable[[], object], repeat: int = 5) -> float:
    """Fastest of ``repeat`` synchronized runs after a warm-up, in seconds."""
    fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def throughput(device: torch.device, n: int) -> tuple[float, float, float]:
    """(seconds per call, effective GB/s, device copy GB/s) for ``n`` rewards."""
    rewards = torch.randint(0, 2, (n,), device=device).to(torch.float32)
    ids = torch.randperm(n, device=device) // 16
    stage = GRPOStage(dtype="float32")
    seconds = timed(lambda: group_advantages(rewards, ids, stage))
    moved = n * (4 + 8 + 4)  # read rewards (f32) and ids (i64), write advantages (f32)
    src = torch.empty(n * 4, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    copy = timed(lambda: dst.copy_(src))
    return seconds, moved / seconds / 1e9, 2 * src.numel() / copy / 1e9


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000_000, help="rewards for the timing")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device visible to torch: nothing to check (run this on a GPU machine)")
        return 0
    device = torch.device("cuda")
    print(f"device: {torch.cuda.get_device_name(device)}, torch {torch.__version__}")
    failures = check_exact_zeros(device)
    print(f"exact zeros for constant groups: {'ok' if not failures else f'{failures} FAILED'}")
    worst = check_against_cpu(device)
    agree = worst < float("inf")
    print(
        f"GPU vs CPU, every estimator: max abs difference {worst:.1e} ({'ok' if agree else 'FAILED'})"
    )
    seconds, rate, copy = throughput(device, args.n)
    print(
        f"{args.n:,} rewards: {seconds * 1e3:.1f} ms per call, {rate:.0f} GB/s effective; "
        f"device copy {copy:.0f} GB/s ({rate / copy:.0%} of copy bandwidth)"
    )
    return 0 if not failures and agree else 1


if __name__ == "__main__":
    sys.exit(main())
