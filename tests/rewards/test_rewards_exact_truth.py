"""The fast path never contradicts exact truth: 6,000 generated pairs, truth computed independently.

The pairs and their truth come from ``benchmarks/exact_truth.py`` (Python integers and fractions
for the numbers it builds, sympy for radicals and pi); the same generator runs 200,000 pairs as a
benchmark. Here a fixed seed keeps the suite reproducible.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
import rr_benchmarks

PAIRS = 6000
SEED = 20261201


def _generator() -> ModuleType:
    return rr_benchmarks.load("exact_truth")


@pytest.fixture(scope="module")
def tally() -> Any:
    generator = _generator()
    return generator.check(generator.generate(PAIRS, SEED))


def test_no_fast_path_verdict_contradicts_exact_truth(tally: Any) -> None:
    wrong = [f"{p.gold!r} vs {p.answer!r}: truth {p.equal}" for p, _ in tally.wrong]
    assert wrong == []


@pytest.mark.parametrize(
    ("family", "share"),
    [
        pytest.param("big_integers", 1.0, id="big_integers"),
        pytest.param("tiny", 1.0, id="tiny"),
        pytest.param("overflow", 1.0, id="overflow"),
        pytest.param("radicals", 0.95, id="radicals"),
        pytest.param("polynomials", 1.0, id="polynomials"),
        pytest.param("printed_by_sympy", 0.95, id="printed_by_sympy"),
        pytest.param("structured", 0.95, id="structured"),
        # decimals within 10^-6 of a value may be rounded values: math-verify's call
        pytest.param("rationals", 0.8, id="rationals"),
        pytest.param("pi", 0.7, id="pi"),
    ],
)
def test_each_family_is_decided_both_ways(tally: Any, family: str, share: float) -> None:
    # the property is not vacuous: most pairs of every family get a verdict, equal and unequal
    decided, declined = tally.decided[family], tally.declined[family]
    assert decided >= share * (decided + declined)
    assert tally.equal_decided[family] >= 50
    assert tally.unequal_decided[family] >= 50


def test_unequal_only_families_are_decided(tally: Any) -> None:
    # towers beyond any float, and decimals against irrationals, are never called equal; a
    # decimal close to an irrational is left to math-verify's rounding rule
    assert tally.equal_decided["huge"] == 0
    assert tally.unequal_decided["huge"] >= 400
    assert tally.equal_decided["decimals_vs_irrationals"] == 0
    assert tally.unequal_decided["decimals_vs_irrationals"] >= 50


def test_every_generated_pair_is_counted(tally: Any) -> None:
    assert sum(tally.decided.values()) + sum(tally.declined.values()) == PAIRS >= 5000
