"""miles contract: slime's hooks with ``Sample.reward_spec`` taking part in routing.

miles' ``Sample`` has no ``custom_rm_path``; per-sample dispatch lives in a frozen
``RewardSpec(rm_type, custom_rm_path)`` (set per LoRA adapter). Precedence, per the router:
``reward_spec.custom_rm_path`` > ``reward_spec.rm_type`` > ``metadata.rm_type`` > route. The
config is the shipped ``examples/miles`` one, with its own reward module.
"""

from __future__ import annotations

import asyncio
from argparse import Namespace
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rr_frameworks import MilesSample as Sample
from rr_frameworks import RewardSpec

from rewardrouter import RoutingError
from rewardrouter.integrations._router_cache import close_shared
from rewardrouter.integrations.miles import batched_custom_rm, custom_rm, post_process_rewards

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "miles"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("REWARDROUTER_CONFIG", raising=False)
    monkeypatch.syspath_prepend(str(EXAMPLE))
    yield
    close_shared()


def miles_args(**fields: Any) -> Namespace:
    return Namespace(
        rewardrouter_config=str(EXAMPLE / "router.yaml"),
        reward_key=None,
        eval_reward_key=None,
        **fields,
    )


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
