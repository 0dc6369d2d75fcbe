"""Extreme reward magnitudes: rewards whose squares (or sums) overflow float64 still give their
group's advantages, a constant group of them exactly 0, and an advantage that its output dtype
cannot hold is an error that says so — never a silent 0 or an infinity.

The expected values are computed independently in exact rational arithmetic (``fractions``).
"""

from __future__ import annotations

from decimal import Decimal, localcontext
from fractions import Fraction

import pytest
import torch

from rewardrouter.advantage import group_advantages
from rewardrouter.config.stages import (
    AdvantageStage,
    GRPOStage,
    NoAdvantageStage,
    ReinforcePPBaselineStage,
    RLOOStage,
)

BIG = [1e200, 3e200, 2e200, 7e200]  # squares overflow float64 (beyond about 1.3e154)
TINY_GROUP = [0.25, 0.75]  # a second group of ordinary rewards in the same batch


def _exact(rewards: list[float], groups: list[int], stage: AdvantageStage) -> list[float]:
    """Advantages from exact rationals: the definition of each estimator, no float in between."""
    values = [Fraction(r) for r in rewards]
    members: dict[int, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)
    centered = [Fraction(0)] * len(values)
    for idx in members.values():
        mean = sum(values[i] for i in idx) / len(idx)
        for i in idx:
            centered[i] = values[i] - mean

    def std(deviations: list[Fraction]) -> float:
        """The unbiased std of values with these deviations from their mean."""
        squares = sum(d * d for d in deviations) / (len(deviations) - 1)
        with localcontext() as context:  # the square root to 50 digits; only then a float
            context.prec = 50
            return float((Decimal(squares.numerator) / Decimal(squares.denominator)).sqrt())

    grand_mean = sum(values) / len(values)
    batch_std = std([v - grand_mean for v in values])  # grpo `std: batch`: of the raw rewards
    centered_std = std(centered)  # reinforce_pp: of the group-centered rewards

    out = []
    for i, g in enumerate(groups):
        idx = members[g]
        if isinstance(stage, RLOOStage):
            n = len(idx)
            out.append(float(centered[i] * n / (n - 1)))
        elif isinstance(stage, ReinforcePPBaselineStage):
            out.append(float(centered[i]) / (centered_std + stage.eps))
        elif isinstance(stage, GRPOStage) and stage.std == "none":
            out.append(float(centered[i]))
        elif isinstance(stage, GRPOStage):
            scope = std([centered[j] for j in idx]) if stage.std == "group" else batch_std
            out.append(float(centered[i]) / (scope + stage.eps))
    return out


@pytest.mark.parametrize(
    "stage",
    [
        pytest.param(GRPOStage(device="cpu"), id="grpo_group_std"),
        pytest.param(GRPOStage(device="cpu", std="batch"), id="grpo_batch_std"),
        pytest.param(GRPOStage(device="cpu", std="none", dtype="float64"), id="dr_grpo"),
        pytest.param(RLOOStage(device="cpu", dtype="float64"), id="rloo"),
        pytest.param(ReinforcePPBaselineStage(device="cpu"), id="reinforce_pp_baseline"),
    ],
)
def test_rewards_whose_squares_overflow_get_their_advantages(stage: AdvantageStage) -> None:
    rewards = BIG + TINY_GROUP
    groups = [0, 0, 0, 0, 1, 1]
    got = group_advantages(torch.tensor(rewards, dtype=torch.float64), torch.tensor(groups), stage)
    expected = _exact(rewards, groups, stage)
    assert got[:4].abs().min() > 0  # before: all 0, the std having overflowed to inf
    assert got.tolist() == pytest.approx(expected, rel=1e-6, abs=1e-12)


@pytest.mark.parametrize("value", [1e200, 1e308, -1.7e308])
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_a_constant_group_of_huge_rewards_gets_exactly_zero(value: float, dtype: str) -> None:
    # Its sum overflows float64 (before: a ValueError); the other group is ordinary.
    rewards = torch.tensor([value] * 4 + TINY_GROUP, dtype=torch.float64)
    groups = torch.tensor([0, 0, 0, 0, 1, 1])
    got = group_advantages(rewards, groups, GRPOStage(device="cpu", dtype=dtype))  # type: ignore[arg-type]
    assert got[:4].tolist() == [0.0] * 4
    assert got[4:].float().tolist() == pytest.approx([-0.7071, 0.7071], abs=1e-2)


@pytest.mark.parametrize(
    "stage",
    [
        pytest.param(GRPOStage(device="cpu", std="none", dtype="float32"), id="dr_grpo_float32"),
        pytest.param(GRPOStage(device="cpu", std="none", dtype="bfloat16"), id="dr_grpo_bf16"),
        pytest.param(RLOOStage(device="cpu", dtype="float32"), id="rloo_float32"),
        pytest.param(NoAdvantageStage(device="cpu", dtype="float32"), id="none_float32"),
    ],
)
def test_an_advantage_beyond_the_output_dtype_is_an_error_not_infinity(
    stage: AdvantageStage,
) -> None:
    rewards = torch.tensor([1e39, -1e39, 0.5, 0.25], dtype=torch.float64)
    with pytest.raises(ValueError, match=r"advantage of sample 0 is beyond the range of") as info:
        group_advantages(rewards, torch.tensor([0, 0, 1, 1]), stage)
    assert "set `dtype: float64`" in str(info.value)
