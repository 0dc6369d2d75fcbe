"""Property tests: every estimator against a plain float64 reference written out below.

Batches have random group sizes (1..24), random group ids (small, negative or huge), random
order, random values (with ties, so constant groups occur) and random invalid samples.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from unittest import mock

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardrouter.advantage import group_advantages, segments
from rewardrouter.config.stages import (
    AdvantageStage,
    GRPOStage,
    NoAdvantageStage,
    ReinforcePPBaselineStage,
    RLOOStage,
)

pytestmark = pytest.mark.slow  # a long file: `make test` starts it first


@dataclass(frozen=True)
class Batch:
    rewards: list[float]
    ids: list[int]
    valid: list[bool]


def _std(values: list[float]) -> float:
    """Unbiased std, two passes with exact sums; 0 below two values."""
    if len(values) < 2:
        return 0.0
    mean = math.fsum(values) / len(values)
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))


def reference(batch: Batch, stage: AdvantageStage) -> tuple[list[float], set[int]]:
    """Advantages computed one sample at a time, and the samples whose group std is tiny."""
    members: dict[int, list[float]] = defaultdict(list)
    for r, g, ok in zip(batch.rewards, batch.ids, batch.valid, strict=True):
        if ok:
            members[g].append(r)
    mean = {g: math.fsum(v) / len(v) for g, v in members.items()}
    std = {g: _std(v) for g, v in members.items()}
    valid_rewards = [r for r, ok in zip(batch.rewards, batch.valid, strict=True) if ok]
    centered_all = [
        r - mean[g] for r, g, ok in zip(batch.rewards, batch.ids, batch.valid, strict=True) if ok
    ]
    tiny = {
        i
        for i, g in enumerate(batch.ids)
        if batch.valid[i] and 0 < std[g] < 1e-6 * max(abs(x) for x in members[g])
    }
    out: list[float] = []
    for r, g, ok in zip(batch.rewards, batch.ids, batch.valid, strict=True):
        if not ok:
            out.append(0.0)
            continue
        n, c = len(members[g]), r - mean[g]
        if isinstance(stage, NoAdvantageStage):
            out.append(r)
        elif n < 2:
            out.append(0.0)
        elif isinstance(stage, RLOOStage):
            out.append(r - (math.fsum(members[g]) - r) / (n - 1))
        elif isinstance(stage, ReinforcePPBaselineStage):
            s = _std(centered_all)
            out.append(c / (s + stage.eps) if s > 0 else 0.0)
        elif stage.std == "none":
            out.append(c)
        else:
            s = std[g] if stage.std == "group" else _std(valid_rewards)
            out.append(c / (s + stage.eps) if s > 0 else 0.0)
    return out, tiny


VALUE = st.one_of(
    st.sampled_from([0.0, 1.0, 0.3, -1.0, 7.3]),  # ties: constant groups happen
    st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False),
)
GROUP_ID = st.one_of(st.integers(0, 64), st.integers(-(2**62), 2**62))


@st.composite
def batches(draw: st.DrawFn) -> Batch:
    group_ids = draw(st.lists(GROUP_ID, min_size=1, max_size=12, unique=True))
    rows = [
        (draw(VALUE), g, draw(st.booleans()) or draw(st.booleans()))  # ~75% valid
        for g in group_ids
        for _ in range(draw(st.integers(1, 24)))
    ]
    rows = draw(st.permutations(rows))
    return Batch([r for r, _, _ in rows], [g for _, g, _ in rows], [ok for _, _, ok in rows])


STAGES = [
    pytest.param(GRPOStage(device="cpu", dtype="float64"), id="grpo_group"),
    pytest.param(GRPOStage(device="cpu", dtype="float64", std="batch"), id="grpo_batch"),
    pytest.param(GRPOStage(device="cpu", dtype="float64", std="none"), id="dr_grpo"),
    pytest.param(GRPOStage(device="cpu", dtype="float64", eps=0.0), id="grpo_eps0"),
    pytest.param(RLOOStage(device="cpu", dtype="float64"), id="rloo"),
    pytest.param(ReinforcePPBaselineStage(device="cpu", dtype="float64"), id="rpp_baseline"),
    pytest.param(NoAdvantageStage(device="cpu", dtype="float64"), id="none"),
]


@contextmanager
def _kernels(which: str) -> Iterator[None]:
    """``host``: the CPU's bincount and NumPy passes; ``torch``: the index_add_ and take
    passes a GPU runs, here on the CPU."""
    if which == "host":
        yield
        return
    with mock.patch.object(segments, "_uses_host_kernels", lambda device: False):
        yield


@pytest.mark.parametrize("kernels", ["host", "torch"])
@pytest.mark.parametrize("stage", STAGES)
@settings(max_examples=40, deadline=None)
@given(batch=batches())
def test_matches_float64_reference(kernels: str, stage: AdvantageStage, batch: Batch) -> None:
    rewards = torch.tensor(
        [r if ok else math.nan for r, ok in zip(batch.rewards, batch.valid, strict=True)],
        dtype=torch.float64,
    )
    with _kernels(kernels):
        got = group_advantages(
            rewards, torch.tensor(batch.ids), stage, valid=torch.tensor(batch.valid)
        ).tolist()
    want, tiny = reference(batch, stage)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if i in tiny:
            continue  # the std is cancellation noise: no 1e-6 claim there
        assert abs(g - w) <= 1e-6 * abs(w) + 1e-12, (i, g, w)


@settings(max_examples=40, deadline=None)
@given(batch=batches())
def test_float32_output_is_the_float64_result_rounded(batch: Batch) -> None:
    rewards, ids = torch.tensor(batch.rewards), torch.tensor(batch.ids)
    wide = group_advantages(rewards, ids, GRPOStage(device="cpu", dtype="float64"))
    narrow = group_advantages(rewards, ids, GRPOStage(device="cpu", dtype="float32"))
    assert torch.equal(narrow, wide.to(torch.float32))


@settings(max_examples=30, deadline=None)
@given(
    per_group=st.integers(1, 16),
    groups=st.integers(1, 20),
    seed=st.integers(0, 2**32 - 1),
)
def test_position_grouping_equals_index_grouping(per_group: int, groups: int, seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    rewards = torch.randint(0, 3, (per_group * groups,), generator=gen).to(torch.float32) / 3
    by_position = GRPOStage(device="cpu", group_by="position", n_samples_per_prompt=per_group)
    ids = torch.arange(rewards.numel()) // per_group
    assert torch.equal(
        group_advantages(rewards, None, by_position),
        group_advantages(rewards, ids, GRPOStage(device="cpu")),
    )


@settings(max_examples=30, deadline=None)
@given(batch=batches(), seed=st.integers(0, 2**32 - 1))
def test_result_does_not_depend_on_order_or_id_values(batch: Batch, seed: int) -> None:
    rewards, ids = torch.tensor(batch.rewards, dtype=torch.float64), torch.tensor(batch.ids)
    stage = GRPOStage(device="cpu", dtype="float64")
    base = group_advantages(rewards, ids, stage)
    order = torch.randperm(rewards.numel(), generator=torch.Generator().manual_seed(seed))
    renamed = torch.unique(ids, return_inverse=True)[1] * 1000 - 7
    shuffled = group_advantages(rewards[order], renamed[order], stage)
    assert shuffled.tolist() == pytest.approx(base[order].tolist(), rel=1e-12, abs=1e-15)
