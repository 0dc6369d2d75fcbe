"""The exact checks of ``answers_match``: values, verdicts, and where math-verify decides instead."""

from __future__ import annotations

import logging
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rewardrouter.rewards.math.closed_form import Ratio
from rewardrouter.rewards.math.equivalence import answers_match, math_verify_match, quick_verdict
from rewardrouter.rewards.math.latex_value import Huge, parse_value

logging.getLogger("math_verify").setLevel(logging.ERROR)

VALUES = [
    # integers
    pytest.param("42", Fraction(42), id="integer"),
    # decimals, with and without a leading zero
    pytest.param("-0.25", Fraction(-1, 4), id="decimal"),
    pytest.param(".5", Fraction(1, 2), id="leading_point"),
    # a repeating decimal is exact
    pytest.param("0.1\\overline{6}", Fraction(1, 6), id="repeating_decimal"),
    # every \frac spelling, the unbraced one too
    pytest.param("\\dfrac{3}{4}", Fraction(3, 4), id="dfrac"),
    pytest.param("\\tfrac{3}{4}+1", Fraction(7, 4), id="tfrac"),
    pytest.param("\\frac12", Fraction(1, 2), id="unbraced_frac"),
    # perfect roots stay rational
    pytest.param("\\sqrt{\\frac{9}{4}}", Fraction(3, 2), id="exact_sqrt"),
    pytest.param("\\sqrt[3]{27}", Fraction(3), id="cube_root"),
    pytest.param("\\sqrt{10^{600}}", Fraction(10**300), id="root_of_a_huge_square"),
    # implicit products and \cdot, \times; a number before a parenthesis multiplies it
    pytest.param("2\\cdot 3\\times 4", Fraction(24), id="products"),
    pytest.param("2(3)", Fraction(6), id="number_times_parenthesis"),
    pytest.param("(2)(3)", Fraction(6), id="parentheses"),
    # \left and \right are spacing
    pytest.param("\\left(1+2\\right)^2", Fraction(9), id="left_right"),
    # negative and rational exponents
    pytest.param("2^{-2}", Fraction(1, 4), id="negative_exponent"),
    pytest.param("8^{\\frac{2}{3}}", Fraction(4), id="rational_exponent"),
    # integers past double precision stay exact
    pytest.param("10^{300}+1", Fraction(10**300 + 1), id="big_integer"),
    pytest.param("2^{-600}", Fraction(1, 2**600), id="tiny"),
    pytest.param("\\frac{2^{1100}}{2^{1000}}", Fraction(2**100), id="overflowing_quotient"),
]


@pytest.mark.parametrize(("text", "value"), VALUES)
def test_values(text: str, value: Fraction) -> None:
    parsed = parse_value(text)
    assert parsed is not None
    assert isinstance(parsed.value, Ratio)
    assert parsed.value.as_rational() == value


def test_a_power_tower_is_huge_not_slow() -> None:
    parsed = parse_value("9^{9^{9^{9}}}")
    assert parsed is not None and isinstance(parsed.value, Huge)
    assert parse_value("9^{9^{9^{9}}}+1") is None  # huge inside a sum: no bound, no verdict


REJECTED = [
    # thousands separators and sets: the answer reader handles commas, not the value parser
    pytest.param("1,000", id="comma"),
    # x(y) may be a function call
    pytest.param("x(y+1)", id="call"),
    # 1/2x is 1/(2x) to some parsers and x/2 to others
    pytest.param("1/2x", id="slash_then_product"),
    # 2^10 is 2^1 * 0 in LaTeX
    pytest.param("2^10", id="unbraced_exponent"),
    # xy may be one symbol
    pytest.param("xy", id="adjacent_letters"),
    # 2\frac{1}{2} is a mixed number to some readers
    pytest.param("2\\frac{1}{2}", id="mixed_number"),
    # e is Euler's number, i the imaginary unit
    pytest.param("e^2", id="euler"),
    pytest.param("3i", id="imaginary"),
    # upper-case letters, units, text
    pytest.param("5 \\text{ cm}", id="text"),
    pytest.param("A", id="upper_case"),
    # not exact: a root of a variable or of a sum, an irrational exponent
    pytest.param("\\sqrt{x}", id="root_of_variable"),
    pytest.param("\\sqrt{2+\\sqrt{3}}", id="nested_root"),
    pytest.param("2^{\\sqrt{2}}", id="irrational_exponent"),
    # undefined: no value at all
    pytest.param("\\frac{1}{0}", id="division_by_zero"),
    pytest.param("\\sqrt{-4}", id="root_of_negative"),
    # malformed
    pytest.param("\\frac{1}", id="half_frac"),
    pytest.param("", id="empty"),
]


@pytest.mark.parametrize("text", REJECTED)
def test_rejected(text: str) -> None:
    assert parse_value(text) is None


VERDICTS = [
    # equal spellings
    pytest.param("\\dfrac{1}{2}", "\\frac{1}{2}", True, id="dfrac"),
    # 0.5 and 1/2 are one rational
    pytest.param("0.5", "\\frac{1}{2}", True, id="decimal_frac"),
    # math-verify rounds decimals to 6 places: a rounded value is its call
    pytest.param("0.3333333", "\\frac{1}{3}", None, id="rounding_left_to_math_verify"),
    # ...but far apart is unequal
    pytest.param("0.33", "\\frac{1}{3}", False, id="decimal_far"),
    # radicals: equal values, exactly
    pytest.param("\\sqrt{8}", "2\\sqrt{2}", True, id="radicals"),
    pytest.param("\\sqrt[3]{16}", "2\\sqrt[3]{2}", True, id="cube_roots"),
    pytest.param("\\frac{1}{1+\\sqrt{2}}", "\\sqrt{2}-1", True, id="rationalized"),
    # polynomials and rational functions, exactly
    pytest.param("(x-2)^2", "x^2-4x+4", True, id="polynomial"),
    pytest.param("\\frac{x^2-1}{x-1}", "x+1", True, id="rational_function"),
    # a root of a variable: equal for x > 0 only, left to math-verify
    pytest.param("\\sqrt{x^2}", "x", None, id="root_of_variable"),
    # tiny but exact differences count
    pytest.param("x+10^{-13}", "x", False, id="tiny_difference"),
    pytest.param("x^{50}", "x^{50}+1", False, id="high_degree"),
    # variables are distinct
    pytest.param("2x", "2y", False, id="variables"),
    # an assignment against a value
    pytest.param("x = 5", "5", True, id="assignment"),
    # units go, and are not converted
    pytest.param("5 \\text{ cm}", "5", True, id="units"),
    # sets, tuples, intervals
    pytest.param("\\{3, 1, 2\\}", "\\{1,2,3\\}", True, id="set"),
    pytest.param("(4, 3)", "(3, 4)", False, id="ordered_pair"),
    pytest.param("(1, 2]", "[1,2)", False, id="interval_ends"),
]


@pytest.mark.parametrize(("answer", "gold", "verdict"), VERDICTS)
def test_quick_verdicts_agree_with_math_verify(
    answer: str, gold: str, verdict: bool | None
) -> None:
    assert quick_verdict(answer, gold) is verdict
    if verdict is not None:
        assert math_verify_match(answer, gold) is verdict


DEPARTURES = [
    # math-verify compares a lone variable by its spelling; x times one is x
    pytest.param("(x)\\cdot 1", "x", id="lone_variable"),
    # latex2sympy reads 2(3) as 5
    pytest.param("2(3)", "6", id="number_times_parenthesis"),
    # an inequality describes the interval
    pytest.param("x > 2", "(2, \\infty)", id="inequality_for_interval"),
    # a repeating decimal is exact, not text
    pytest.param("0.\\overline{3}", "\\frac{1}{3}", id="repeating_decimal"),
    # a thin space groups digits
    pytest.param("1\\,000\\,000", "1000000", id="thin_space_grouping"),
    # a percentage against its number
    pytest.param("28", "28\\%", id="percent_on_one_side"),
]


def _plain_math_verify(answer: str, gold: str) -> bool:
    from math_verify import parse, verify

    return bool(verify(parse(f"\\boxed{{{gold}}}"), parse(f"\\boxed{{{answer}}}")))


@pytest.mark.parametrize(("answer", "gold"), DEPARTURES)
def test_deliberate_departures_from_math_verify(answer: str, gold: str) -> None:
    # each is equal by the documented policy, and plain math-verify calls it unequal
    assert quick_verdict(answer, gold) is True
    assert _plain_math_verify(answer, gold) is False


DEPARTURES_UNEQUAL = [
    # two different numbers; math-verify's parser stops at \frac{3}{ and reads both as 2
    pytest.param(
        "$2 + \\frac{3}{\\mathrm{e}}$", "$2 - \\frac{3}{\\mathrm{e}}$", id="truncated_parse"
    ),
    pytest.param(
        "$3 + \\frac{1}{\\mathrm{e}^2}$",
        "$3 - \\frac{1}{\\mathrm{e}^2}$",
        id="truncated_parse_power",
    ),
    # a box taken back is no part of the answer; math-verify joins the boxes
    pytest.param("so \\boxed{1} or rather \\boxed{2}", "$1, 2$", id="box_taken_back"),
]


@pytest.mark.parametrize(("response", "gold"), DEPARTURES_UNEQUAL)
def test_departures_where_math_verify_says_equal(response: str, gold: str) -> None:
    from math_verify import parse, verify

    from rewardrouter.rewards.math import math_answer

    assert math_answer(response, gold, {}, extract="any") == 0.0
    assert verify(parse(gold), parse(response))


def test_an_inequality_is_its_interval_on_either_side() -> None:
    # math-verify turns the gold relation into a set, but not a predicted relation
    assert quick_verdict("-2 \\le x \\le 7", "x \\in [-2, 7]") is True
    assert quick_verdict("x \\in [-2, 7]", "-2 \\le x \\le 7") is True
    assert _plain_math_verify("-2 \\le x \\le 7", "x \\in [-2, 7]") is False


def test_an_answer_cannot_be_written_to_agree_at_a_few_points() -> None:
    # 2x plus a product that vanishes at two chosen values of x agrees with 2x there; exact
    # polynomial arithmetic tells it apart everywhere
    answer = "2x+(x-\\frac{268}{29})\\cdot(x-\\frac{200}{19})"
    assert quick_verdict(answer, "2x") is False
    assert math_verify_match(answer, "2x") is False


def test_answers_match_falls_back_to_math_verify() -> None:
    # an equation (no name on its left) is math-verify's, the same line or another
    assert quick_verdict("3x-6y+12=0", "y=\\frac{1}{2}x+2") is None
    assert answers_match("3x-6y+12=0", ["y=\\frac{1}{2}x+2"])
    assert answers_match("4x+2y-6=0", ["y=-2x+3"])
    assert not answers_match("3x-6y+12=0", ["y=\\frac{1}{2}x+3"])
    assert not answers_match("4x+2y-6=0", ["y=2x+3"])
    assert not answers_match("", ["5"])
    # past 1,000 characters no final answer is read: only the label's very text matches
    assert answers_match("1" * 2000, ["1" * 2000])
    assert not answers_match("1" * 2000, ["1" * 1999 + "2"])
    assert not answers_match("1" * 2000, ["10" * 1000])


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
