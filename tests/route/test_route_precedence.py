"""Per-sample precedence (docs/routing.md): each level, and which level wins over which."""

from __future__ import annotations

from typing import Any

import pytest
from rr_frameworks import MilesSample, RewardSpec, SlimeSample
from rr_testfns import row

from rewardrouter import RoutingError

CONFIG = {
    "allowed_modules": ["rr_testfns", "rewardrouter"],
    "route_by": ["dataset", "data_source"],
    "default_route": "fallback",
    "routes": {
        "lengths": {"match": ["org/lengths"], "rewards": {"r": {"path": "rr_testfns.length"}}},
        "exact": {"match": ["org/exact"], "rewards": {"r": {"kind": "exact_match"}}},
        "fallback": {"rewards": {"r": {"kind": "exact_match"}}},
    },
}


@pytest.mark.parametrize(
    ("sample", "route", "level"),
    [
        pytest.param(
            SlimeSample(
                response="abc",
                label="abc",
                metadata={"dataset": "org/exact", "rm_type": "exact_match"},
                custom_rm_path="rr_testfns.length",
            ),
            "custom_rm_path:rr_testfns.length",
            "custom_rm_path",
            id="slime_custom_rm_path_beats_rm_type_and_route",
        ),
        pytest.param(
            MilesSample(
                response="abc",
                label="abc",
                reward_spec=RewardSpec(custom_rm_path="rr_testfns.length", rm_type="exact_match"),
            ),
            "custom_rm_path:rr_testfns.length",
            "custom_rm_path",
            id="miles_reward_spec_custom_rm_path_beats_its_rm_type",
        ),
        pytest.param(
            MilesSample(response="abc", label="abc", reward_spec={"rm_type": "exact_match"}),
            "rm_type:exact_match",
            "rm_type",
            id="miles_reward_spec_as_dict",
        ),
        pytest.param(
            row("abc", "abc", dataset="org/lengths", custom_rm_path="rr_testfns.length"),
            "custom_rm_path:rr_testfns.length",
            "custom_rm_path",
            id="metadata_custom_rm_path",
        ),
        pytest.param(
            row("abc", "abc", dataset="org/lengths", rm_type="boxed_exact_match"),
            "rm_type:boxed_exact_match",
            "rm_type",
            id="metadata_rm_type_beats_route",
        ),
        pytest.param(
            row("abc", "abc", dataset="org/lengths"), "lengths", "route", id="route_by_first_field"
        ),
        pytest.param(
            row("abc", "abc", dataset="unknown", data_source="org/exact"),
            "exact",
            "route",
            id="route_by_second_field_when_first_matches_nothing",
        ),
        pytest.param(
            row("abc", "abc", dataset="lengths"), "lengths", "route", id="route_name_matches_itself"
        ),
        pytest.param(
            row("abc", "abc", dataset="nowhere"), "fallback", "default_route", id="default_route"
        ),
        pytest.param(
            SlimeSample(response="abc", label="abc", metadata={"dataset": "org/exact"}),
            "exact",
            "route",
            id="slime_object_routed_by_metadata",
        ),
    ],
)
def test_precedence_level(make_router: Any, sample: Any, route: str, level: str) -> None:
    router = make_router(CONFIG)
    decision = router.decide(sample)
    assert (decision.route.name, decision.level) == (route, level)
    [result] = router.score_sync([sample])
    assert (result.route, result.level, result.status) == (route, level, "ok")


def test_custom_rm_path_outside_allowed_modules_is_refused(make_router: Any) -> None:
    router = make_router({**CONFIG, "allowed_modules": ["rewardrouter"]})
    with pytest.raises(RoutingError, match=r"sample 1: .*'os\.system' is outside allowed_modules"):
        router.score_sync([row("a", dataset="org/exact"), row("b", custom_rm_path="os.system")])


def test_module_prefix_must_match_whole_names(make_router: Any) -> None:
    router = make_router({**CONFIG, "allowed_modules": ["rr_test"]})
    with pytest.raises(RoutingError, match="outside allowed_modules"):
        router.score_sync([row("a", custom_rm_path="rr_testfns.length")])


def test_unroutable_sample_names_index_and_fields(make_router: Any) -> None:
    router = make_router({**CONFIG, "default_route": None})
    with pytest.raises(RoutingError) as info:
        router.score_sync([row("a", dataset="org/exact"), row("b", dataset="org/lenghts")])
    message = str(info.value)
    assert "sample 1" in message
    assert "dataset='org/lenghts'" in message
    assert "did you mean 'org/lengths'?" in message
    assert "default_route" in message


def test_unknown_rm_type_suggests_a_kind(make_router: Any) -> None:
    router = make_router(CONFIG)
    with pytest.raises(RoutingError, match=r"rm_type 'exact_mach'.*did you mean 'exact_match'"):
        router.score_sync([row("a", rm_type="exact_mach")])


def test_data_named_function_that_does_not_import(make_router: Any) -> None:
    router = make_router(CONFIG)
    with pytest.raises(RoutingError, match=r"no attribute 'lenght'.*did you mean 'length'"):
        router.score_sync([row("a", custom_rm_path="rr_testfns.lenght")])
