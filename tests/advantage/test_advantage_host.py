"""The NumPy path (no torch) gives the torch path's bits on the CPU, and declines what it cannot.

Each batch runs through :func:`host_advantages` and through :meth:`PostProcessor.process` (the
torch path) and the two answers are compared bit for bit: advantages as IEEE bit patterns (so
``-0.0`` and ``0.0`` differ) and the constant-group check.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
import pytest
import torch

from rewardrouter.advantage import host
from rewardrouter.advantage.host import host_advantages
from rewardrouter.advantage.kernels import SPLIT_FROM
from rewardrouter.config.stages import (
    AdvantageStage,
    GRPOStage,
    NoAdvantageStage,
    ReinforcePPBaselineStage,
    RLOOStage,
)
from rewardrouter.shape import PostProcessor, PostProcessResult


def _torch_path(
    stage: AdvantageStage, rewards: Sequence[float | None], groups: Sequence[int] | None
) -> PostProcessResult:
    """What the processor computes with torch: the tensors it builds, then ``process``."""
    processor = PostProcessor.compile({}, [stage])
    out = processor.process(
        torch.tensor([float("nan") if r is None else r for r in rewards], dtype=torch.float64),
        valid=torch.tensor([r is not None for r in rewards]),
        group_index=None if groups is None else torch.tensor(groups, dtype=torch.int64),
        check=True,
    )
    return PostProcessResult([], [], out.advantages.tolist(), out.constant_groups)


def _bits(values: Sequence[float]) -> list[int]:
    return np.array(values, dtype=np.float64).view(np.int64).tolist()


def _assert_host_gives_the_torch_bits(
    stage: AdvantageStage, rewards: Sequence[float | None], groups: Sequence[int] | None
) -> None:
    """The NumPy path answers, with the torch path's advantage bits and constant-group check."""
    done = host_advantages(rewards, groups, stage)
    assert done is not None
    expected = _torch_path(stage, rewards, groups)
    assert _bits(done[0]) == _bits(expected.advantages)
    assert done[1] == expected.constant_groups


def _batch(seed: int, n: int, missing: float) -> tuple[list[float | None], list[int]]:
    """Rewards of every kind a scorer returns, in groups of mixed sizes and scattered order."""
    rng = random.Random(seed)
    groups = [rng.randrange(n // 6 + 1) for _ in range(n)]
    kinds = [
        lambda: float(rng.random() < 0.5),  # 0/1 verdicts
        lambda: rng.choice([0.3, 7.3, -1.0, 1e-3]),  # few values: many constant groups
        lambda: rng.uniform(-5.0, 5.0),
        lambda: rng.choice([0.0, -0.0]),
    ]
    by_group = {g: rng.choice(kinds) for g in set(groups)}
    rewards: list[float | None] = [
        None if rng.random() < missing else by_group[g]() for g in groups
    ]
    return rewards, groups


STAGES = [
    pytest.param(GRPOStage(device="cpu"), id="grpo_group_std_float32"),
    pytest.param(GRPOStage(device="cpu", dtype="float64"), id="grpo_group_std_float64"),
    pytest.param(GRPOStage(device="cpu", eps=0.0, dtype="float64"), id="grpo_group_std_no_eps"),
    pytest.param(GRPOStage(device="cpu", std="none"), id="dr_grpo_float32"),
    pytest.param(GRPOStage(device="cpu", std="none", dtype="float64"), id="dr_grpo_float64"),
    pytest.param(RLOOStage(device="cpu"), id="rloo"),
    pytest.param(RLOOStage(device="cpu", dtype="float64"), id="rloo_float64"),
    pytest.param(NoAdvantageStage(device="cpu"), id="none_passes_rewards"),
]


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize(
    ("seed", "n", "missing"),
    [
        pytest.param(1, 8192, 0.0, id="step_of_8192"),
        pytest.param(2, 997, 0.2, id="missing_rewards"),
        pytest.param(3, 40, 0.5, id="small_half_missing"),
        pytest.param(4, 1, 0.0, id="one_sample"),
    ],
)
def test_host_path_gives_the_torch_bits(
    stage: AdvantageStage, seed: int, n: int, missing: float
) -> None:
    rewards, groups = _batch(seed, n, missing)
    _assert_host_gives_the_torch_bits(stage, rewards, groups)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("seed", range(24))
def test_grpo_group_std_gives_the_torch_bits_on_random_batches(seed: int, dtype: str) -> None:
    """Batch sizes up to 3,000, groups of 1 to about 40 members in scattered order, up to half
    the rewards missing, many constant groups."""
    rng = random.Random(1000 + seed)
    rewards, groups = _batch(seed, rng.randrange(2, 3000), rng.choice([0.0, 0.05, 0.5]))
    stage = GRPOStage(device="cpu", dtype=dtype, eps=rng.choice([1e-6, 0.0, 0.01]))
    _assert_host_gives_the_torch_bits(stage, rewards, groups)


@pytest.mark.parametrize(
    ("rewards", "groups", "advantages"),
    [
        # one reward per group: no baseline, no std
        pytest.param([0.3, 7.3, -1.0], [0, 1, 2], [0.0, 0.0, 0.0], id="singletons"),
        # every member equal (0.3 + 0.3 + 0.3 is not 0.9): exactly 0, not 0 / eps
        pytest.param([0.3] * 16 + [7.3] * 3, [0] * 16 + [1] * 3, [0.0] * 19, id="constant_groups"),
        # deviations of 5e-201 square to 0: the zero-std policy, not a division by eps
        pytest.param([1e-200, 0.0], [0, 0], [0.0, 0.0], id="squares_underflow"),
        # a missing reward leaves a singleton: 0 for both
        pytest.param([None, 1.0, 0.5, 0.5], [0, 0, 1, 1], [0.0, 0.0, 0.0, 0.0], id="missing"),
    ],
)
def test_grpo_group_std_policies(
    rewards: list[float | None], groups: list[int], advantages: list[float]
) -> None:
    stage = GRPOStage(device="cpu", dtype="float64")
    done = host_advantages(rewards, groups, stage)
    assert done is not None
    assert done[0] == advantages  # a negative deviation times a factor of 0 gives -0.0
    assert _bits(done[0]) == _bits(_torch_path(stage, rewards, groups).advantages)


@pytest.mark.parametrize(
    "groups",
    [
        pytest.param([10**12 + g for g in range(64)], id="ids_far_from_zero"),
        pytest.param([g * 10**9 - 5 * 10**9 for g in range(64)], id="sparse_negative_ids"),
        pytest.param([g % 3 for g in range(64)], id="interleaved"),
    ],
)
def test_host_path_numbers_any_group_ids(groups: list[int]) -> None:
    rewards, _ = _batch(5, 64, 0.1)
    stage = RLOOStage(device="cpu")
    _assert_host_gives_the_torch_bits(stage, rewards, groups)


def test_host_path_groups_by_position() -> None:
    rewards, _ = _batch(6, 64, 0.1)
    stage = RLOOStage(device="cpu", group_by="position", n_samples_per_prompt=8)
    _assert_host_gives_the_torch_bits(stage, rewards, None)


@pytest.mark.parametrize(
    ("stage", "rewards", "groups"),
    [
        # a sum over the slots, in an order torch decides
        pytest.param(GRPOStage(device="cpu", std="batch"), [1.0, 0.0], [0, 0], id="batch_std"),
        pytest.param(ReinforcePPBaselineStage(device="cpu"), [1.0, 0.0], [0, 0], id="reinforce"),
        pytest.param(RLOOStage(device="cpu", dtype="bfloat16"), [1.0, 0.0], [0, 0], id="bf16"),
        pytest.param(RLOOStage(device="cpu"), [], [], id="empty_batch"),
        pytest.param(RLOOStage(device="cpu"), [1.0, float("nan")], [0, 0], id="nan_reward"),
        pytest.param(RLOOStage(device="cpu"), [1e200, -1e200], [0, 0], id="squares_overflow"),
        pytest.param(GRPOStage(device="cpu"), [1e200, -1e200], [0, 0], id="grpo_squares_overflow"),
        pytest.param(RLOOStage(device="cpu"), [1.0, 0.0], None, id="no_group_ids"),
        pytest.param(RLOOStage(device="cpu"), [1.0, 0.0], [2**64, 0], id="id_beyond_int64"),
        pytest.param(
            RLOOStage(device="cpu", group_by="position", n_samples_per_prompt=4),
            [1.0, 0.0, 1.0],
            None,
            id="not_a_multiple_of_the_group",
        ),
        pytest.param(
            NoAdvantageStage(device="cpu"), [1e300, 0.0], [0, 0], id="beyond_float32_output"
        ),
    ],
)
def test_host_path_declines_what_torch_must_decide(
    stage: AdvantageStage, rewards: list[float | None], groups: list[int] | None
) -> None:
    assert host_advantages(rewards, groups, stage) is None


def test_batches_torch_would_split_stay_with_torch() -> None:
    assert host.handles(RLOOStage(), SPLIT_FROM - 1)
    assert not host.handles(RLOOStage(), SPLIT_FROM)


def test_processor_falls_back_to_torch_and_raises_as_before() -> None:
    processor = PostProcessor.compile({}, [RLOOStage(device="cpu")])
    with pytest.raises(ValueError, match="reward of sample 1 is nan"):
        processor([1.0, float("nan")], group_index=[0, 0])


@pytest.mark.parametrize("std", ["none", "group"])
def test_processor_result_is_the_same_either_way(std: str) -> None:
    rewards, groups = _batch(7, 500, 0.1)
    stage = GRPOStage(device="cpu", std=std)
    hosted = PostProcessor.compile({}, [stage])(rewards, group_index=groups)
    expected = _torch_path(stage, rewards, groups)
    assert _bits(hosted.advantages) == _bits(expected.advantages)
    assert hosted.shaped == hosted.raw == [None if r is None else r for r in rewards]
