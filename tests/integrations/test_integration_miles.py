"""miles contract: slime's hooks with ``Sample.reward_spec`` taking part in routing.

miles' ``Sample`` has no ``custom_rm_path``; per-sample dispatch lives in a frozen
``RewardSpec(rm_type, custom_rm_path)`` (set per LoRA adapter). Precedence, per the router:
``reward_spec.custom_rm_path`` > ``reward_spec.rm_type`` > ``metadata.rm_type`` > route. The
config is the shipped ``examples/miles`` one, with its own reward module.
"""

from __future__ import annotations

import asyncio
import warnings
from argparse import Namespace
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import rr_benchmarks
from rr_checkouts import Trainer, checkout
from rr_frameworks import AdapterRef, RewardSpec
from rr_frameworks import MilesSample as Sample

from rewardrouter import RoutingError, SampleError
from rewardrouter.errors import RewardRouterWarning
from rewardrouter.integrations._metrics import WARNINGS
from rewardrouter.integrations._router_cache import close_shared
from rewardrouter.integrations.miles import (
    adapter_prompt_group_sizes,
    batched_custom_rm,
    custom_rm,
    post_process_rewards,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "miles"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("REWARDROUTER_CONFIG", raising=False)
    monkeypatch.syspath_prepend(str(EXAMPLE))
    yield
    close_shared()


def miles_args(**fields: Any) -> Namespace:
    values = {
        "rewardrouter_config": str(EXAMPLE / "router.yaml"),
        "reward_key": None,
        "eval_reward_key": None,
    }
    return Namespace(**{**values, **fields})


BOXED = "so \\boxed{Paris}"  # squad's exact_match: 0.0; boxed_exact_match and concise: 1.0


def squad(spec: RewardSpec | None = None, rm_type: str | None = None, **fields: Any) -> Sample:
    metadata: dict[str, Any] = {"dataset": "rajpurkar/squad"}
    if rm_type:
        metadata["rm_type"] = rm_type
    return Sample(response=BOXED, label="Paris", metadata=metadata, reward_spec=spec, **fields)


# Each row pits one precedence level against the next, with rewards that tell them apart.
PRECEDENCE = [
    pytest.param(
        squad(RewardSpec("exact_match", "miles_rewards.concise_answer")),
        1.0,
        id="spec_custom_rm_path_beats_spec_rm_type",
    ),
    pytest.param(
        squad(RewardSpec("boxed_exact_match"), rm_type="exact_match"),
        1.0,
        id="spec_rm_type_beats_metadata_rm_type",
    ),
    pytest.param(squad(rm_type="boxed_exact_match"), 1.0, id="metadata_rm_type_beats_route"),
    pytest.param(squad(RewardSpec()), 0.0, id="empty_spec_falls_through_to_route"),
    pytest.param(squad(), 0.0, id="no_spec_route"),
    pytest.param(
        squad(
            RewardSpec(custom_rm_path="rewardrouter.integrations.miles.custom_rm"),
            rm_type="boxed_exact_match",
        ),
        1.0,
        id="spec_naming_the_hook_itself_is_skipped",
    ),
]


@pytest.mark.parametrize(("row", "expected"), PRECEDENCE)
def test_reward_spec_precedence_single(row: Sample, expected: float) -> None:
    assert asyncio.run(custom_rm(miles_args(), row)) == expected


def test_reward_spec_precedence_in_one_group_call() -> None:
    rows = [p.values[0] for p in PRECEDENCE]
    expected = [p.values[1] for p in PRECEDENCE]
    assert asyncio.run(batched_custom_rm(miles_args(group_rm=True), rows)) == expected


def test_reward_spec_path_outside_allowed_modules_is_refused() -> None:
    row = squad(RewardSpec(custom_rm_path="subprocess.run"))
    with pytest.raises(RoutingError, match=r"reward_spec\.custom_rm_path 'subprocess\.run'"):
        asyncio.run(custom_rm(miles_args(), row))


def test_post_process_groups_by_group_index() -> None:
    rows = [
        squad(reward=1.0, group_index=5),
        squad(reward=0.3, group_index=9),
        squad(reward=0.0, group_index=5),
        squad(reward=0.3, group_index=9),
        squad(reward=0.3, group_index=9),
    ]
    raw, advantages = post_process_rewards(miles_args(), rows)
    assert raw == [1.0, 0.3, 0.0, 0.3, 0.3]
    assert advantages[1] == advantages[3] == advantages[4] == 0.0
    assert advantages[0] == -advantages[2] == pytest.approx(2**-0.5, rel=1e-5)


# -- post-processing as miles' own normalization does it ------------------------------------


def router_with(tmp_path: Path, stage: str) -> Path:
    path = tmp_path / "router.yaml"
    path.write_text(f"routes: {{}}\npost_process:\n  - {stage}\n")
    return path


CENTER = "{kind: grpo, std: none}"


def answer(reward: float, group: int | None = 0, **fields: Any) -> Sample:
    return Sample(reward=reward, group_index=group, **fields)


def test_one_reward_per_rollout_normalized_once_and_copied_to_its_rows(tmp_path: Path) -> None:
    """Rows sharing a rollout_id (else an index) are one answer: group 0 holds two rollouts
    (3.0 and 5.0, the second spread over three rows), so each row gets -1 or +1, not the
    -1.5 / +0.5 that counting rows would give."""
    rows = [
        answer(3.0, index=0, rollout_id=40),
        answer(5.0, index=1, rollout_id=41),
        answer(5.0, index=1, rollout_id=41),
        answer(5.0, index=1, rollout_id=41),
        answer(2.0, group=1, index=2),  # no rollout_id: the index names the rollout
        answer(2.0, group=1, index=2),
        answer(4.0, group=1, index=3),
    ]
    args = miles_args(rewardrouter_config=str(router_with(tmp_path, CENTER)))
    raw, advantages = post_process_rewards(args, rows)
    assert raw == [3.0, 5.0, 5.0, 5.0, 2.0, 2.0, 4.0]
    assert advantages == [-1.0, 1.0, 1.0, 1.0, -1.0, -1.0, 1.0]


def test_rows_without_rollout_identity_are_answers_of_their_own(tmp_path: Path) -> None:
    rows = [answer(0.0, index=None), answer(2.0, index=None)]
    args = miles_args(rewardrouter_config=str(router_with(tmp_path, CENTER)))
    assert post_process_rewards(args, rows)[1] == [-1.0, 1.0]


def test_siblings_with_different_rewards_are_refused(tmp_path: Path) -> None:
    rows = [
        answer(1.0, index=0, rollout_id=7),
        answer(0.5, index=1, rollout_id=8),
        answer(3.0, index=2, rollout_id=9),
        answer(0.5, index=1, rollout_id=8),
        answer(0.25, index=1, rollout_id=8),
    ]
    args = miles_args(rewardrouter_config=str(router_with(tmp_path, CENTER)))
    with pytest.raises(SampleError) as caught:
        post_process_rewards(args, rows)
    assert str(caught.value) == (
        "samples [1, 3, 4] of rollout 8 carry different rewards [0.5, 0.5, 0.25]; miles trains "
        "one reward per rollout: give every sample of a rollout the same reward, or each answer "
        "its own rollout_id"
    )
    assert isinstance(caught.value, ValueError)  # the kind of error miles' normalization raises


def test_each_lora_adapter_numbers_its_groups_from_zero(tmp_path: Path) -> None:
    """Adapters A and B both have a group 0: two groups, not one of four."""
    a, b = AdapterRef("A", 0), AdapterRef("B", 1)
    rows = [
        answer(0.0, index=0, adapter=a),
        answer(2.0, index=1, adapter=a),
        answer(10.0, index=0, adapter=b),
        answer(14.0, index=1, adapter=b),
    ]
    args = miles_args(rewardrouter_config=str(router_with(tmp_path, CENTER)))
    assert post_process_rewards(args, rows)[1] == [-1.0, 1.0, -2.0, 2.0]


def test_prompt_group_sizes_win_over_group_index(tmp_path: Path) -> None:
    rows = [
        answer(0.0, index=0),
        answer(2.0, index=1),
        answer(10.0, index=2),
        answer(14.0, index=3),
    ]
    args = miles_args(rewardrouter_config=str(router_with(tmp_path, CENTER)))
    assert post_process_rewards(args, rows, prompt_group_sizes=[2, 2])[1] == [-1.0, 1.0, -2.0, 2.0]
    with pytest.raises(SampleError, match=r"add up to 3, but the batch holds 4 samples"):
        post_process_rewards(args, rows, prompt_group_sizes=[2, 1])


@pytest.mark.parametrize(
    ("rewards", "expected"),
    [
        pytest.param([0.0, 2.0, 10.0, 14.0], [-1.0, 1.0, -2.0, 2.0], id="full_layout_by_position"),
        pytest.param([0.0, 2.0, 4.0], [-2.0, 0.0, 2.0], id="short_batch_is_one_group"),
    ],
)
def test_without_group_index_positions_or_one_group(
    tmp_path: Path, rewards: list[float], expected: list[float]
) -> None:
    rows = [answer(r, group=None, index=i) for i, r in enumerate(rewards)]
    args = miles_args(
        rewardrouter_config=str(router_with(tmp_path, CENTER)),
        n_samples_per_prompt=2,
        rollout_batch_size=2,
    )
    assert post_process_rewards(args, rows)[1] == expected


def test_none_stage_keeps_the_rewards_unrounded(tmp_path: Path) -> None:
    """miles returns its raw rewards untouched when it does not normalize; so does ``none``."""
    rewards = [0.1 + 0.2, 1 / 3, 7.3]  # none of them a float32 value
    rows = [answer(r, index=i) for i, r in enumerate(rewards)]
    args = miles_args(rewardrouter_config=str(router_with(tmp_path, "{kind: none}")))
    raw, advantages = post_process_rewards(args, rows)
    assert raw == advantages == rewards


# -- multi-LoRA batches as miles hands them to the hook: ``fn(args, samples)`` ---------------


def lora_batch(layout: list[tuple[AdapterRef, int, list[float]]], **fields: Any) -> list[Sample]:
    """Prompt groups in a row as miles' multi-LoRA rollout lays them out: (adapter,
    group_index, rewards) per group, every row its own rollout (a running index)."""
    rows: list[Sample] = []
    for adapter, group, rewards in layout:
        for reward in rewards:
            rows.append(answer(reward, group, index=len(rows), adapter=adapter, **fields))
    return rows


A, B = AdapterRef("A", 0), AdapterRef("B", 1)

# Each row: the batch, n_samples_per_prompt, the prompt group sizes read back, and whether the
# group_index_reused warning counts it. An adapter's group size is its smallest run when it has
# two runs or more, else n_samples_per_prompt.
LORA_GROUPS = [
    pytest.param(
        [(A, 0, [1.0, 0.0, 1.0, 0.0]), (A, 0, [1.0] * 4), (B, 0, [3.0, 1.0])],
        4,
        [4, 4, 2],
        True,
        id="reused_group_index_split_by_n_samples_per_prompt",
    ),
    pytest.param(
        [(A, 0, [1.0, 0.0]), (A, 1, [1.0, 1.0]), (B, 0, [3.0, 1.0])],
        2,
        [2, 2, 2],
        False,
        id="distinct_group_index_one_group_each",
    ),
    pytest.param(
        [(A, 7, [1.0, 0.0, 1.0]), (B, 7, [3.0, 1.0])],
        2,
        [3, 2],
        False,
        id="not_a_whole_multiple_stays_one_group",
    ),
    pytest.param(
        [(A, 3, [0.0, 1.0, 2.0, 3.0])],
        4,
        [4],
        False,
        id="one_group_of_n_is_not_split",
    ),
    pytest.param(
        [(A, 0, [1.0] * 8), (A, 1, [0.0] * 8), (B, 0, [3.0, 1.0])],
        4,
        [8, 8, 2],
        False,
        id="adapter_with_a_larger_n_of_its_own_keeps_its_groups",
    ),
    pytest.param(
        [(A, 0, [1.0] * 8), (A, 1, [0.0] * 4)],
        2,
        [4, 4, 4],
        True,
        id="group_size_from_the_adapters_smallest_group",
    ),
]


@pytest.mark.parametrize(("layout", "size", "expected", "warned"), LORA_GROUPS)
def test_lora_prompt_groups_read_back_from_the_flat_batch(
    layout: list[tuple[AdapterRef, int, list[float]]],
    size: int,
    expected: list[int],
    warned: bool,
) -> None:
    before = WARNINGS["group_index_reused"]
    rows = lora_batch(layout)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RewardRouterWarning)
        assert adapter_prompt_group_sizes(miles_args(n_samples_per_prompt=size), rows) == expected
    assert (WARNINGS["group_index_reused"] > before) is warned


def test_reused_group_index_normalized_per_prompt_group_as_miles_calls_the_hook(
    tmp_path: Path,
) -> None:
    """miles' multi-LoRA train-data case: C's two groups both carry group_index 0; called as
    ``fn(args, samples)`` each group is still zero-mean, and the constant one exactly 0."""
    c = AdapterRef("C", 2)
    rows = lora_batch([(c, 0, [1.0, 0.0, 1.0, 0.0]), (c, 0, [1.0] * 4), (B, 0, [3.0, 1.0])])
    args = miles_args(
        rewardrouter_config=str(router_with(tmp_path, CENTER)), n_samples_per_prompt=4
    )
    before = WARNINGS["group_index_reused"]
    with pytest.warns(RewardRouterWarning) as caught:
        advantages = post_process_rewards(args, rows)[1]
    assert WARNINGS["group_index_reused"] == before + 1
    assert str(caught[0].message) == (
        "samples 0..7 of LoRA adapter 'C' all carry group_index 0: 2 x 4 rollouts in a row "
        "(4: n_samples_per_prompt), normalized as 2 prompt groups of 4 rollouts (miles hands "
        "its own normalization the rollout's group sizes, but not this hook); give each prompt "
        "group its own group_index, as miles' data sources do"
    )
    assert advantages == [0.5, -0.5, 0.5, -0.5, 0.0, 0.0, 0.0, 0.0, 1.0, -1.0]


def test_compact_rollouts_split_by_rollout_not_by_row(tmp_path: Path) -> None:
    """Rows sharing a rollout_id count once toward n_samples_per_prompt."""
    rows = [
        answer(1.0, index=0, rollout_id=10, adapter=A),
        answer(1.0, index=0, rollout_id=10, adapter=A),
        answer(3.0, index=1, rollout_id=11, adapter=A),
        answer(5.0, index=2, rollout_id=12, adapter=A),
        answer(9.0, index=3, rollout_id=13, adapter=A),
    ]
    args = miles_args(
        rewardrouter_config=str(router_with(tmp_path, CENTER)), n_samples_per_prompt=2
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RewardRouterWarning)
        assert adapter_prompt_group_sizes(args, rows) == [3, 2]
        assert post_process_rewards(args, rows)[1] == [-1.0, -1.0, 1.0, -2.0, 2.0]


# -- miles' own tests, miles calling the hook -------------------------------------------------

MILES = Trainer("radixark/miles", "RR_MILES", "miles", needs=("ray", "torch"))


@pytest.mark.slow
def test_miles_multi_lora_train_data_tests_pass_with_miles_calling_the_hook(
    tmp_path: Path,
) -> None:
    """miles' ``test_multi_lora_train_data.py`` (two adapters, one reusing group_index 0 for
    two groups, heterogeneous group sizes) with its normalization replaced by the hook, which
    miles' own ``_post_process_rewards`` calls as ``fn(args, samples)``: every test passes, and
    every one that normalizes went through the router's post-process chain."""
    root = checkout(MILES)
    suites = rr_benchmarks.load("trainer_suites")
    [run] = suites.run_miles(root, tmp_path, ["miles test_multi_lora_train_data"])
    assert (run.passed, run.failed) == (4, 0), run.summary
    assert run.entry_tests() == {"rewardrouter.integrations.miles.post_process_rewards": 3}
    assert run.tests(lambda t: t["post_processed"] > 0) == 3
