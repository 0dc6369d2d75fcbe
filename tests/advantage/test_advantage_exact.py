"""Constant groups get advantage exactly 0.0: any value, group size 2..1024, any output dtype.

Also the documented policies: singleton groups, zero-std groups, rewards marked invalid.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal, localcontext

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardrouter.advantage import cpu, group_advantages, segments
from rewardrouter.advantage.moments import GroupMoments, group_moments
from rewardrouter.config.stages import (
    AdvantageStage,
    GRPOStage,
    ReinforcePPBaselineStage,
    RLOOStage,
)

ESTIMATORS = [
    pytest.param(GRPOStage(device="cpu"), id="grpo_group_std"),
    pytest.param(GRPOStage(device="cpu", std="batch"), id="grpo_batch_std"),
    pytest.param(GRPOStage(device="cpu", std="none"), id="dr_grpo"),
    pytest.param(GRPOStage(device="cpu", eps=0.0), id="grpo_no_eps"),
    pytest.param(RLOOStage(device="cpu"), id="rloo"),
    pytest.param(ReinforcePPBaselineStage(device="cpu"), id="reinforce_pp_baseline"),
]
OUT_DTYPES = ["float32", "float64", "bfloat16"]
VALUES = [
    pytest.param(0.3, id="0.3"),
    pytest.param(7.3, id="7.3"),
    pytest.param(0.1, id="0.1"),
    pytest.param(1 / 3, id="one_third"),
    pytest.param(-123.456, id="negative"),
    pytest.param(0.0, id="zero"),
    pytest.param(1e-310, id="subnormal"),
    pytest.param(3.0e38, id="near_float32_max"),
]
SIZES = [2, 3, 7, 16, 100, 1000, 1024]


def _mixed_batch(
    value: float, size: int, in_dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor]:
    """A constant group (id 7) shuffled among a group with signal (id 3) and a singleton."""
    gen = torch.Generator().manual_seed(size)
    rewards = torch.cat(
        [
            torch.full((size,), value, dtype=torch.float64),
            torch.rand(size + 1, generator=gen, dtype=torch.float64),
            torch.tensor([-value], dtype=torch.float64),
        ]
    ).to(in_dtype)
    ids = torch.tensor([7] * size + [3] * (size + 1) + [11])
    order = torch.randperm(ids.numel(), generator=gen)
    return rewards[order], ids[order]


@pytest.mark.parametrize("kernels", ["host", "torch"])
@pytest.mark.parametrize("stage", ESTIMATORS)
@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("in_dtype", [torch.float32, torch.float64], ids=["in_f32", "in_f64"])
def test_constant_group_is_exactly_zero(
    kernels: str,
    stage: AdvantageStage,
    value: float,
    in_dtype: torch.dtype,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if kernels == "torch":  # the index_add_ and take passes a GPU runs, here on the CPU
        monkeypatch.setattr(segments, "_uses_host_kernels", lambda device: False)
    for size in SIZES:
        rewards, ids = _mixed_batch(value, size, in_dtype)
        for out_dtype in OUT_DTYPES:
            adv = group_advantages(rewards, ids, stage.model_copy(update={"dtype": out_dtype}))
            constant = adv[ids == 7]
            assert (constant == 0).all(), (size, out_dtype, constant.abs().max().item())
            assert adv.dtype == getattr(torch, out_dtype)


@settings(max_examples=60, deadline=None)
@given(
    value=st.floats(-1e300, 1e300, allow_nan=False),
    size=st.integers(2, 1024),
    narrow=st.booleans(),
)
def test_any_constant_value_any_size_is_exactly_zero(value: float, size: int, narrow: bool) -> None:
    rewards = torch.full((size,), value, dtype=torch.float64)
    if narrow:
        rewards = rewards.to(torch.float32).nan_to_num(posinf=3e38, neginf=-3e38)
    adv = group_advantages(rewards, torch.zeros(size, dtype=torch.long), GRPOStage(device="cpu"))
    assert (adv == 0).all()


def test_sixteen_rewards_of_0_3_in_float32_get_exactly_zero() -> None:
    rewards = torch.full((16,), 0.3, dtype=torch.float32)
    adv = group_advantages(rewards, torch.zeros(16, dtype=torch.long), GRPOStage(device="cpu"))
    assert adv.dtype == torch.float32
    assert adv.tolist() == [0.0] * 16


@pytest.mark.parametrize(
    ("value", "residue"),
    [
        pytest.param(0.3, 0.0298, id="0.3_gives_0.03"),
        pytest.param(7.3, 0.4768, id="7.3_gives_0.48"),
    ],
)
def test_slime_style_float32_reshape_leaves_a_residue(value: float, residue: float) -> None:
    """What position-reshaped float32 normalization does (the bug this package avoids)."""
    grouped = torch.full((16,), value, dtype=torch.float32).reshape(-1, 16)
    centered = grouped - grouped.mean(dim=-1, keepdim=True)
    adv = (centered / (centered.std(dim=-1, keepdim=True) + 1e-6)).flatten()
    assert adv.min().item() == pytest.approx(residue, abs=1e-4)
    assert adv.min().item() == adv.max().item()  # same sign for every answer: a push


@pytest.mark.parametrize("stage", ESTIMATORS)
@pytest.mark.parametrize(
    ("rewards", "ids", "valid"),
    [
        pytest.param([0.9, 0.1, 0.5], [0, 1, 2], None, id="singletons"),
        pytest.param([0.9, 1.0, 0.0], [0, 1, 1], [True, False, False], id="group_left_empty"),
        pytest.param([0.9, 1.0, 0.0], [5, 5, 5], [True, False, False], id="one_valid_member_left"),
    ],
)
def test_groups_without_a_baseline_get_zero(
    stage: AdvantageStage, rewards: list[float], ids: list[int], valid: list[bool] | None
) -> None:
    mask = None if valid is None else torch.tensor(valid)
    result = group_advantages(torch.tensor(rewards), torch.tensor(ids), stage, valid=mask)
    assert result.tolist() == [0.0] * len(rewards)


@pytest.mark.parametrize("stage", ESTIMATORS)
def test_invalid_rewards_are_left_out_and_get_zero(stage: AdvantageStage) -> None:
    rewards = torch.tensor([1.0, 0.0, float("nan"), 1.0, 0.0, 123.0], dtype=torch.float64)
    ids = torch.tensor([0, 0, 0, 1, 1, 1])
    valid = torch.tensor([True, True, False, True, True, False])
    stage = stage.model_copy(update={"dtype": "float64"})
    masked = group_advantages(rewards, ids, stage, valid=valid)
    dropped = group_advantages(rewards[valid], ids[valid], stage)
    assert masked[~valid].tolist() == [0.0, 0.0]
    assert masked[valid].tolist() == pytest.approx(dropped.tolist(), rel=1e-12)


@pytest.mark.parametrize(
    ("stage", "expected"),
    [
        # unbiased std of {1, 0} is 1/sqrt(2); centered rewards are ±1/2
        pytest.param(GRPOStage(device="cpu", eps=0.0), 0.5**0.5, id="grpo_pair_is_1_over_sqrt2"),
        pytest.param(GRPOStage(device="cpu", std="none"), 0.5, id="dr_grpo_pair_is_half"),
        pytest.param(RLOOStage(device="cpu"), 1.0, id="rloo_pair_is_difference"),
    ],
)
def test_group_of_two(stage: AdvantageStage, expected: float) -> None:
    stage = stage.model_copy(update={"dtype": "float64"})
    adv = group_advantages(torch.tensor([1.0, 0.0]), torch.tensor([4, 4]), stage)
    assert adv.tolist() == pytest.approx([expected, -expected], rel=1e-15)


def test_eps_is_added_to_the_std_as_slime_does() -> None:
    adv = group_advantages(
        torch.tensor([1.0, 0.0]), torch.tensor([0, 0]), GRPOStage(device="cpu", dtype="float64")
    )
    assert adv[0].item() == pytest.approx(0.5 / (0.5**0.5 + 1e-6), rel=1e-15)


def _correctly_rounded_sqrt(value: float) -> float:
    """The square root of ``value`` to 50 digits, then rounded to a double: a square root of a
    double is never within 1e-33 (relative) of a point halfway between two doubles, so these
    digits round as the exact value does."""
    with localcontext() as context:
        context.prec = 50
        return float(Decimal(value).sqrt())


def test_square_roots_on_the_cpu_are_correctly_rounded() -> None:
    # with MKL, torch's own sqrt(0.5) is 0.7071067811865475, one unit in the last place low
    uniform = torch.rand(5000, dtype=torch.float64, generator=_seeded()).mul_(8)
    values = [0.5, 2.0, 1e-300, 5e-324, *uniform.tolist()]
    got = cpu.sqrt_(torch.tensor(values, dtype=torch.float64))
    assert got.tolist() == [_correctly_rounded_sqrt(v) for v in values]


@pytest.mark.parametrize(
    ("std", "groups"),
    [
        # each std of the rewards {1, 0} is sqrt(0.5) exactly, then rounded once
        pytest.param(GroupMoments.group_std, [0, 0], id="group_std"),
        pytest.param(GroupMoments.batch_std, [0, 1], id="batch_std"),
        pytest.param(GroupMoments.centered_batch_std, [0, 0], id="centered_batch_std"),
    ],
)
def test_every_std_is_the_correctly_rounded_square_root(
    std: Callable[[GroupMoments], torch.Tensor], groups: list[int]
) -> None:
    moments = group_moments(
        torch.tensor([1.0, 0.0]), segments.segments_by_index(torch.tensor(groups))
    )
    assert std(moments).reshape(-1)[0].item() == _correctly_rounded_sqrt(0.5) == 0.7071067811865476


def test_grpo_divides_by_the_correctly_rounded_std() -> None:
    stage = GRPOStage(device="cpu", dtype="float64", eps=0.0)
    adv = group_advantages(torch.tensor([1.0, 0.0]), torch.tensor([0, 0]), stage)
    std = _correctly_rounded_sqrt(0.5)
    assert adv.tolist() == [0.5 * (1 / std), -0.5 * (1 / std)]


def _seeded() -> torch.Generator:
    return torch.Generator().manual_seed(26)
