"""The cheap checks of ``answers_match`` give math-verify's verdict, or decline to give one."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rewardrouter.rewards.equivalence import (
    answers_match,
    clean_answer,
    math_verify_match,
    quick_verdict,
)
from rewardrouter.rewards.latex_value import Undefined, parse_value

logging.getLogger("math_verify").setLevel(logging.ERROR)

VALUES = [
    # integers
    pytest.param("42", Fraction(42), id="integer"),
    # decimals, with and without a leading zero
    pytest.param("-0.25", Fraction(-1, 4), id="decimal"),
    pytest.param(".5", Fraction(1, 2), id="leading_point"),
    # every \frac spelling
    pytest.param("\\dfrac{3}{4}", Fraction(3, 4), id="dfrac"),
    pytest.param("\\tfrac{3}{4}+1", Fraction(7, 4), id="tfrac"),
    # perfect roots stay exact
    pytest.param("\\sqrt{\\frac{9}{4}}", Fraction(3, 2), id="exact_sqrt"),
    pytest.param("\\sqrt[3]{27}", Fraction(3), id="cube_root"),
    # implicit products and \cdot, \times
    pytest.param("2\\cdot 3\\times 4", Fraction(24), id="products"),
    # \left and \right are spacing
    pytest.param("\\left(1+2\\right)^2", Fraction(9), id="left_right"),
    # a negative exponent
    pytest.param("2^{-2}", Fraction(1, 4), id="negative_exponent"),
    # a power tower overflows to infinity instead of hanging
    pytest.param("9^{9^{9^{9}}}", float("inf"), id="power_tower"),
]


@pytest.mark.parametrize(("text", "value"), VALUES)
def test_values(text: str, value: Fraction | float) -> None:
    expr = parse_value(text)
    assert expr is not None
    assert expr.value() == value


REJECTED = [
    # thousands separators and sets: math-verify reads commas
    pytest.param("1,000", id="comma"),
    # x(y) may be a function call
    pytest.param("x(y+1)", id="call"),
    # 1/2x is 1/(2x) to some parsers and x/2 to others
    pytest.param("1/2x", id="slash_then_product"),
    # 2^10 is 2^1 * 0 in LaTeX
    pytest.param("2^10", id="unbraced_exponent"),
    # xy may be one symbol
    pytest.param("xy", id="adjacent_letters"),
    # e is Euler's number, i the imaginary unit
    pytest.param("e^2", id="euler"),
    pytest.param("3i", id="imaginary"),
    # upper-case letters, units, text
    pytest.param("5 \\text{ cm}", id="text"),
    pytest.param("A", id="upper_case"),
    # malformed
    pytest.param("\\frac{1}", id="half_frac"),
    pytest.param("", id="empty"),
]


@pytest.mark.parametrize("text", REJECTED)
def test_rejected(text: str) -> None:
    assert parse_value(text) is None


def test_undefined_values() -> None:
    for text in ("\\frac{1}{0}", "\\sqrt{-4}", "(-8)^{\\frac{1}{3}}"):
        expr = parse_value(text)
        assert expr is not None
        with pytest.raises(Undefined):
            expr.value()


VERDICTS = [
    # equal strings after spacing and \dfrac
    pytest.param("\\dfrac{1}{2}", "\\frac{1}{2}", True, id="canonical"),
    # 0.5 and 1/2 are one rational
    pytest.param("0.5", "\\frac{1}{2}", True, id="decimal_frac"),
    # math-verify rounds decimals to 6 places: too close to call cheaply
    pytest.param("0.3333333", "\\frac{1}{3}", None, id="rounding_left_to_math_verify"),
    # ...but far apart is unequal
    pytest.param("0.33", "\\frac{1}{3}", False, id="decimal_far"),
    # radicals: equal values
    pytest.param("\\sqrt{8}", "2\\sqrt{2}", True, id="radicals"),
    # polynomials agree at two points
    pytest.param("(x-2)^2", "x^2-4x+4", True, id="polynomial"),
    # a removable singularity, as sympy simplifies it
    pytest.param("\\frac{x^2-1}{x-1}", "x+1", True, id="rational_function"),
    # a root of a variable: equal at positive points only, left to math-verify
    pytest.param("\\sqrt{x^2}", "x", None, id="root_of_variable"),
    # tiny but exact differences count
    pytest.param("x+10^{-13}", "x", False, id="tiny_difference"),
    # variables are distinct
    pytest.param("2x", "2y", False, id="variables"),
    # math-verify compares a lone variable by its spelling: left to it
    pytest.param("(x)\\cdot 1", "x", None, id="lone_variable"),
    # an assignment against a value
    pytest.param("x = 5", "5", True, id="assignment"),
    # units are math-verify's
    pytest.param("5 \\text{ cm}", "5", None, id="units"),
]


@pytest.mark.parametrize(("answer", "gold", "verdict"), VERDICTS)
def test_quick_verdicts_agree_with_math_verify(
    answer: str, gold: str, verdict: bool | None
) -> None:
    assert quick_verdict(clean_answer(answer), clean_answer(gold)) is verdict
    if verdict is not None:
        assert math_verify_match(answer, gold) is verdict


def test_an_answer_cannot_be_written_to_agree_only_at_the_comparison_points() -> None:
    # 2x plus a product that vanishes at two chosen values of x agrees with 2x exactly there.
    # Built against fixed comparison points (these were x's in an earlier scheme), it would be
    # scored equal; the points are drawn per pair of strings, so it is told apart.
    answer = "2x+(x-\\frac{268}{29})\\cdot(x-\\frac{200}{19})"
    assert parse_value(answer) is not None  # decided cheaply, not left to math-verify
    assert quick_verdict(answer, "2x") is False
    assert math_verify_match(answer, "2x") is False


def test_comparison_points_depend_on_both_strings_and_nothing_else() -> None:
    from rewardrouter.rewards.equivalence import _points

    first = _points("(x+1)^2", "x^2+2x+1", frozenset("xy"))
    # the same in another process with another string-hash seed: the verdict is reproducible
    script = (
        "from rewardrouter.rewards.equivalence import _points;"
        "print(repr(_points('(x+1)^2', 'x^2+2x+1', frozenset('xy'))))"
    )
    other = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "PYTHONHASHSEED": "12345"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert other.stdout.strip() == repr(first)
    assert first != _points("(x+1)^2", "x^2+2x+2", frozenset("xy"))
    assert len(first) == 2 and first[0] != first[1]
    for point in first:
        assert set(point) == {"x", "y"}
        for value in point.values():
            assert isinstance(value, Fraction) and 1 <= value < 11
            assert (2**30) % value.denominator == 0


@pytest.mark.parametrize(
    ("answer", "gold"),
    [
        pytest.param("x^{50}", "x^{50}+1", id="degree_50"),
        pytest.param("x^{100}", "x^{100}+1", id="degree_100"),
        pytest.param("2^{100}x^{40}", "2^{100}x^{40}+x^{2}", id="small_term"),
    ],
)
def test_high_degrees_are_not_called_equal_in_floating_point(answer: str, gold: str) -> None:
    # Powers this high are evaluated as floats, which cannot see the +1: math-verify decides.
    assert quick_verdict(answer, gold) is None
    assert not answers_match(answer, [gold])


def test_answers_match_falls_back_to_math_verify() -> None:
    assert answers_match("5 \\text{ cm}", ["5"])
    assert answers_match("\\{2, 1\\}", ["\\{1,2\\}"])
    assert not answers_match("", ["5"])
    assert not answers_match("1" * 2000, ["1" * 2000])  # not a final answer


def _numbers() -> st.SearchStrategy[str]:
    integers = st.integers(-30, 30).map(str)
    decimals = st.tuples(st.integers(0, 20), st.integers(0, 99)).map(lambda p: f"{p[0]}.{p[1]}")
    fractions = st.tuples(st.integers(-9, 9), st.integers(1, 9)).map(
        lambda p: f"\\frac{{{p[0]}}}{{{p[1]}}}"
    )
    radicals = st.tuples(st.integers(1, 5), st.integers(2, 20)).map(
        lambda p: f"{p[0]}\\sqrt{{{p[1]}}}"
    )
    polynomials = st.tuples(st.integers(1, 5), st.integers(-5, 5)).map(
        lambda p: f"{p[0]}x^2{p[1]:+d}x"
    )
    return st.one_of(integers, decimals, fractions, radicals, polynomials, st.just("\\pi"))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_numbers(), _numbers())
def test_quick_verdicts_never_contradict_math_verify(answer: str, gold: str) -> None:
    verdict = quick_verdict(answer, gold)
    if verdict is not None:
        assert verdict is math_verify_match(answer, gold)


class _Deadline(BaseException):
    """What an outer deadline raises: like math-verify's TimeoutException, not an Exception."""


def test_outer_deadline_interrupts_math_verify() -> None:
    # math-verify's own alarms are off, so an outer one (here on a power tower sympy would chew on
    # for minutes) is neither cancelled nor swallowed: it interrupts the grader at once
    import signal

    def fire(signum: int, frame: object) -> None:
        raise _Deadline

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        with pytest.raises(_Deadline):
            math_verify_match("9^{9^{9^{9}}}", "3")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
