"""Hostile values through the whole router: a reward beyond float range is one sample's
failure under its term's ``on_error``, never an exception out of ``score`` for the batch."""

from __future__ import annotations

from typing import Any

import pytest
from rr_testfns import row

from rewardrouter import RewardError, Sample, SampleError

HUGE = 10**400  # a Python int no float can hold


def _router(make_router: Any, *terms: tuple[str, dict[str, Any]]) -> Any:
    return make_router({"default_route": "r", "routes": {"r": {"rewards": dict(terms)}}})


@pytest.mark.parametrize(
    ("value", "term"),
    [
        pytest.param(HUGE, {}, id="int_beyond_float"),
        pytest.param(-HUGE, {}, id="negative_int_beyond_float"),
        pytest.param({"score": HUGE}, {"key": "score"}, id="dict_entry_beyond_float"),
        pytest.param(1e308, {"weight": 10.0}, id="finite_times_weight_overflows"),
    ],
)
def test_a_reward_beyond_float_range_follows_on_error(
    make_router: Any, value: Any, term: dict[str, Any]
) -> None:
    spec = {"path": "rr_testfns.returns", "on_error": {"value": 0.5}, **term}
    router = _router(make_router, ("t", spec))
    good, bad = router.score_sync([row("a", value=1.0), row("b", value=value)])
    assert (good.reward, good.status) == (spec.get("weight", 1.0), "ok")
    assert (bad.reward, bad.status) == (0.5 * spec.get("weight", 1.0), "invalid")
    assert "beyond the range of a float" in (bad.error_message or "")


def test_a_reward_beyond_float_range_under_raise_names_the_sample(make_router: Any) -> None:
    router = _router(make_router, ("t", {"path": "rr_testfns.returns"}))
    with pytest.raises(RewardError, match=r"sample 1, route 'r', term 't'.*beyond the range"):
        router.score_sync([row("a", value=1.0), row("b", value=HUGE)])


def test_terms_whose_sum_overflows_fail_the_term_that_overflows(make_router: Any) -> None:
    spec = {"path": "rr_testfns.returns", "on_error": "skip"}
    router = _router(make_router, ("a", spec), ("b", spec))
    [result] = router.score_sync([row("x", value=1e308)])
    assert (result.reward, result.status) == (None, "invalid")
    assert result.terms == {"a": 1e308, "b": None}
    assert "added to the other terms' 1e+308" in (result.error_message or "")


def test_a_kept_reward_beyond_float_range_names_the_sample(make_router: Any) -> None:
    router = _router(make_router, ("t", {"kind": "exact_match"}))
    with pytest.raises(SampleError, match=r"sample 1 carries a reward .*beyond the range"):
        router.score_sync([Sample(response="a", reward=1.0), Sample(response="b", reward=HUGE)])
