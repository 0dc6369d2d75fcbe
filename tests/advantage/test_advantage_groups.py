"""Group ids, input checks, devices and the constant-group check."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
import torch

from rewardrouter.advantage import (
    constant_groups,
    device_problem,
    group_advantages,
    resolve_device,
    segments,
    segments_by_index,
)
from rewardrouter.config.stages import GRPOStage

REWARDS = torch.tensor([1.0, 0.0, 0.5, 0.5, 1.0, 0.25])
CANONICAL = torch.tensor([0, 0, 1, 1, 2, 2])
F64 = GRPOStage(device="cpu", dtype="float64")


@pytest.mark.parametrize(
    ("ids", "dtype"),
    [
        pytest.param([0, 0, 1, 1, 2, 2], torch.int64, id="dense"),
        pytest.param([1, 1, 2, 2, 3, 3], torch.int64, id="one_based"),
        pytest.param([-5, -5, -4, -4, -3, -3], torch.int64, id="negative_compact"),
        pytest.param([10**15, 10**15, 3, 3, -(10**15), -(10**15)], torch.int64, id="sparse_huge"),
        pytest.param([2**62, 2**62, 0, 0, 17, 17], torch.int64, id="mixed_range"),
        pytest.param([9, 9, -1, -1, 4, 4], torch.int32, id="int32"),
        pytest.param([2, 2, 0, 0, 1, 1], torch.uint8, id="uint8"),
    ],
)
def test_any_integer_ids_give_the_same_groups(ids: list[int], dtype: torch.dtype) -> None:
    got = group_advantages(REWARDS, torch.tensor(ids, dtype=dtype), F64)
    assert torch.equal(got, group_advantages(REWARDS, CANONICAL, F64))


@pytest.mark.parametrize(
    ("ids", "slots"),
    [
        pytest.param([3, 3, 0], 4, id="small_ids_used_as_slots"),
        pytest.param([-2, 5, 5], 8, id="compact_range_shifted"),
        pytest.param([-(2**40), 2**40, 7], 3, id="wide_range_renumbered"),
    ],
)
def test_slot_numbering(ids: list[int], slots: int) -> None:
    seg = segments_by_index(torch.tensor(ids))
    assert seg.slots == slots
    assert seg.sizes.sum().item() == len(ids)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        pytest.param(
            lambda: group_advantages(torch.zeros(2, 2), torch.zeros(4, dtype=torch.long)),
            "must be 1-D",
            id="rewards_2d",
        ),
        pytest.param(
            lambda: group_advantages(torch.zeros(3), torch.zeros(4, dtype=torch.long)),
            "group_ids has shape (4,)",
            id="ids_length",
        ),
        pytest.param(
            lambda: group_advantages(torch.zeros(3), torch.zeros(3)),
            "group ids must be integers",
            id="float_ids",
        ),
        pytest.param(
            lambda: group_advantages(torch.zeros(3), None), "needs group ids", id="no_ids"
        ),
        pytest.param(
            lambda: group_advantages(
                torch.zeros(5), None, GRPOStage(group_by="position", n_samples_per_prompt=2)
            ),
            "multiple of n_samples_per_prompt (2); got 5",
            id="position_uneven",
        ),
        pytest.param(
            lambda: group_advantages(
                torch.zeros(4),
                torch.zeros(4, dtype=torch.long),
                GRPOStage(group_by="position", n_samples_per_prompt=2),
            ),
            "takes no group ids",
            id="position_with_ids",
        ),
        pytest.param(
            lambda: group_advantages(
                torch.tensor([0.0, float("nan"), 1.0]), torch.zeros(3, dtype=torch.long)
            ),
            "reward of sample 1 is nan",
            id="nan_reward_valid",
        ),
        pytest.param(lambda: resolve_device("cuda:0"), "cuda", id="cuda_without_gpu"),
    ],
)
def test_bad_input_is_refused_with_a_reason(call: Callable[[], object], message: str) -> None:
    if message == "cuda" and torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(ValueError, match=re.escape(message)):
        call()


def test_empty_batch() -> None:
    out = group_advantages(torch.zeros(0), torch.zeros(0, dtype=torch.long))
    assert out.shape == (0,)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param("cpu", None, id="cpu"),
        pytest.param("auto", None, id="auto"),
        pytest.param("tpu", "unknown device", id="unknown"),
    ],
)
def test_device_problem(spec: str, expected: str | None) -> None:
    found = device_problem(spec)
    assert found is None if expected is None else expected in (found or "")


def test_auto_device_keeps_cpu_tensors_on_cpu() -> None:
    out = group_advantages(REWARDS, CANONICAL, GRPOStage(device="auto"))
    assert out.device == REWARDS.device


@pytest.mark.parametrize(
    ("rewards", "ids", "valid", "groups"),
    [
        pytest.param([0.3, 0.3, 1.0, 0.0], [5, 5, 9, 9], None, 1, id="one_constant_one_mixed"),
        pytest.param([0.3, 0.3, 0.3, 0.3], [1, 1, 2, 2], None, 2, id="two_constant"),
        pytest.param([0.3, 1.0, 0.3], [1, 1, 1], [True, False, True], 1, id="invalid_ignored"),
        pytest.param([0.3, 0.7], [1, 2], None, 0, id="singletons_not_counted"),
    ],
)
def test_constant_groups_counts_and_checks(
    rewards: list[float], ids: list[int], valid: list[bool] | None, groups: int
) -> None:
    r, g = torch.tensor(rewards), torch.tensor(ids)
    mask = None if valid is None else torch.tensor(valid)
    found = constant_groups(r, g, group_advantages(r, g, valid=mask), valid=mask)
    assert found.groups == groups
    assert found.max_abs_advantage == 0.0 and found.all_zero


def test_constant_groups_reports_the_residue_of_a_wrong_normalization() -> None:
    rewards = torch.full((16,), 0.3)
    grouped = rewards.reshape(-1, 16)
    slime_style = ((grouped - grouped.mean(-1, keepdim=True)) / 1e-6).flatten()
    found = constant_groups(rewards, torch.zeros(16, dtype=torch.long), slime_style)
    assert found.groups == 1 and not found.all_zero


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_tensors_stay_on_the_gpu_and_agree_with_cpu() -> None:
    rewards = torch.rand(10_000, dtype=torch.float64)
    ids = torch.randint(0, 500, (10_000,))
    on_gpu = group_advantages(rewards.cuda(), ids.cuda(), F64)
    assert on_gpu.is_cuda
    assert torch.allclose(on_gpu.cpu(), group_advantages(rewards, ids, F64), rtol=1e-12)


def test_the_index_add_and_take_path_used_on_gpus_gives_the_cpu_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gen = torch.Generator().manual_seed(3)
    rewards = torch.rand(5000, generator=gen, dtype=torch.float64)
    ids = torch.randint(0, 400, (5000,), generator=gen)
    valid = torch.rand(5000, generator=gen) > 0.1
    by_bincount = group_advantages(rewards, ids, F64, valid=valid)
    monkeypatch.setattr(segments, "_uses_host_kernels", lambda device: False)
    seg = segments_by_index(ids)
    assert seg.bins is None and seg.host_ids is None
    by_index_add = group_advantages(rewards, ids, F64, valid=valid)
    assert torch.allclose(by_index_add, by_bincount, rtol=1e-12, atol=1e-15)


def test_rewards_that_track_gradients_give_the_same_advantages_and_no_graph() -> None:
    rewards = REWARDS.clone().requires_grad_()
    got = group_advantages(rewards, CANONICAL, F64)
    assert not got.requires_grad
    assert torch.equal(got, group_advantages(REWARDS, CANONICAL, F64))


@pytest.mark.parametrize(
    ("ids", "valid"),
    [
        pytest.param([0, 0, 2, 2, 3], [True] * 5, id="id_gap"),
        pytest.param([0, 0, 1, 1, 1], [True, True, True, True, False], id="invalid_sample"),
    ],
)
def test_a_batch_std_whose_squares_overflow_still_normalizes(
    ids: list[int], valid: list[bool]
) -> None:
    # The group sums and squares overflow float64 (an empty slot's 0 * inf would be NaN
    # everywhere): the rewards are scaled by a power of two first, so the constant group
    # gets exactly 0 and the other its normalized advantages, none NaN.
    rewards = torch.tensor([8e307, 8e307, 8e307, 7e307, 0.0], dtype=torch.float64)
    stage = GRPOStage(device="cpu", dtype="float64", std="batch")
    got = group_advantages(rewards, torch.tensor(ids), stage, valid=torch.tensor(valid))
    assert got[:2].tolist() == [0.0, 0.0] and got[4].item() == 0.0
    assert got[2].item() > 0 > got[3].item() and bool(torch.isfinite(got).all())


def test_segments_stay_hashable() -> None:
    seg = segments_by_index(CANONICAL)
    assert seg.host_ids is not None
    assert hash(seg) == hash(seg)
