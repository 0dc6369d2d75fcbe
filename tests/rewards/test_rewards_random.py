"""``random`` and ``deterministic_random``: meaningless rewards for pipeline tests."""

from __future__ import annotations

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


def test_deterministic_random_known_values() -> None:
    # pinned: the same on every machine and in every process (BLAKE2b, not Python's hash())
    values = [deterministic_random(f"r{i}", None, {}) for i in range(8)]
    assert values == [1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]
