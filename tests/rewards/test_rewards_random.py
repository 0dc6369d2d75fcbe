"""``random`` and ``deterministic_random``: meaningless rewards for pipeline tests."""

from __future__ import annotations

from typing import Any

import pytest

from rewardrouter.rewards.random import deterministic_random, random_reward

RESPONSES = [f"response number {i}" for i in range(2000)]


@pytest.mark.parametrize(
    ("p", "low", "high"),
    [
        # a fair coin: about half
        pytest.param(0.5, 0.45, 0.55, id="fair"),
        # never
        pytest.param(0.0, 0.0, 0.0, id="never"),
        # always
        pytest.param(1.0, 1.0, 1.0, id="always"),
        # rarely
        pytest.param(0.1, 0.07, 0.13, id="rare"),
    ],
)
def test_rates(p: float, low: float, high: float) -> None:
    for grade in (random_reward, deterministic_random):
        values = [grade(r, None, {}, p=p) for r in RESPONSES]
        assert set(values) <= {0.0, 1.0}
        assert low <= sum(values) / len(values) <= high


def test_deterministic_random_depends_on_response_and_salt_only() -> None:
    first = [deterministic_random(r, None, {}) for r in RESPONSES]
    assert first == [deterministic_random(r, "other label", {"x": 1}) for r in RESPONSES]
    assert first != [deterministic_random(r, None, {}, salt="run 2") for r in RESPONSES]


PINNED = [
    # pinned values: the same on every machine and in every process (BLAKE2b, not hash())
    # an empty response
    pytest.param("", 0.0, id="empty_response"),
    # whitespace is text like any other
    pytest.param(" ", 1.0, id="space"),
    # case matters
    pytest.param("a", 0.0, id="lower_a"),
    pytest.param("A", 1.0, id="upper_a"),
    # right and wrong answers are unrelated to the value
    pytest.param("The answer is 42.", 0.0, id="answer_42"),
    pytest.param("The answer is 43.", 0.0, id="answer_43"),
    # markup is text
    pytest.param("\\boxed{1}", 1.0, id="boxed"),
    # a response cut mid-answer
    pytest.param("\\boxed{1", 1.0, id="cut_mid_answer"),
    # thinking tags
    pytest.param("<think>x</think>y", 0.0, id="thinking"),
    # unicode is hashed as UTF-8
    pytest.param("héllo wörld", 0.0, id="unicode_latin"),
    pytest.param("答案是四", 1.0, id="unicode_cjk"),
    # a megabyte
    pytest.param("x" * 1_000_000, 1.0, id="one_megabyte"),
    # lone surrogates, which UTF-8 cannot encode: hashed as their code points' bytes
    pytest.param("\ud800", 1.0, id="lone_high_surrogate"),
    pytest.param("A\udfffB", 0.0, id="lone_low_surrogate_inside_text"),
    # near-identical responses get independent values
    pytest.param("r0", 1.0, id="r0"),
    pytest.param("r1", 0.0, id="r1"),
    pytest.param("r2", 1.0, id="r2"),
    pytest.param("r3", 0.0, id="r3"),
]


@pytest.mark.parametrize(("response", "expected"), PINNED)
def test_deterministic_random_pinned(response: str, expected: float) -> None:
    assert deterministic_random(response, None, {}) == expected


def test_random_ignores_everything() -> None:
    # no label, no metadata, an empty response: still 0.0 or 1.0, never None
    assert random_reward("", None, {}) in (0.0, 1.0)
    assert random_reward("x", "label", {"a": 1}, p=1.0) == 1.0


def test_a_lone_surrogate_is_scored_beside_honest_rows(make_router: Any) -> None:
    # it raised UnicodeEncodeError, recorded as the sample's error: no reward for a response
    # that the kind's contract says always gets one
    term = {"kind": "deterministic_random"}
    router = make_router({"default_route": "r", "routes": {"r": {"rewards": {"t": term}}}})
    batch = router.score_sync([{"response": "A"}, {"response": "\ud800"}, {"response": "a"}])
    assert [(r.reward, r.status) for r in batch] == [(1.0, "ok"), (1.0, "ok"), (0.0, "ok")]
