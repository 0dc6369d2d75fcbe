"""``math`` on each class of answers it must get right, both ways: the right answer scores 1.0 and a
wrong answer of the same shape scores 0.0.

Every row is graded through the ``math`` grader on a boxed response. The classes are those where
a numeric fast path or a plain extraction goes wrong: exactness beyond floating point, and the
ways people write a final answer.
"""

from __future__ import annotations

import pytest

from rewardrouter.rewards.math import math_answer


def _cases(name: str, rows: list[tuple[str, str, str]]) -> list[object]:
    """``(label, right answer, wrong answer of the same shape)`` rows as two cases each."""
    cases: list[object] = []
    for i, (label, right, wrong) in enumerate(rows):
        cases.append(pytest.param(right, label, 1.0, id=f"{name}-{i}-right"))
        cases.append(pytest.param(wrong, label, 0.0, id=f"{name}-{i}-wrong"))
    return cases


EXACTNESS = [
    # irrational values a float tolerance apart are different values
    *_cases(
        "irrational_within_tolerance",
        [
            ("\\sqrt{2}", "\\sqrt{2}+\\frac{1}{2}-\\frac{1}{2}", "\\sqrt{2}+10^{-13}"),
            ("0", "\\frac{\\pi}{2}-\\frac{\\pi}{2}", "\\frac{\\pi}{10^{14}}"),
            ("10^6", "\\sqrt{10^{12}}", "\\sqrt{10^{12}+1}"),
            ("\\frac{\\sqrt{3}}{2}", "\\frac{3}{2\\sqrt{3}}", "\\frac{\\sqrt{3}}{2}-10^{-20}"),
        ],
    ),
    # integers past 2^53 are compared digit for digit
    *_cases(
        "integer_past_double_precision",
        [
            ("10^{300}+1", "1" + "0" * 299 + "1", "10^{300}"),
            ("2^{64}", "18446744073709551616", "18446744073709551617"),
            ("9007199254740993", "2^{53}+1", "2^{53}"),
        ],
    ),
    # values whose intermediate steps overflow a double
    *_cases(
        "overflow",
        [
            ("2^{100}", "\\frac{2^{1100}}{2^{1000}}", "\\frac{2^{1101}}{2^{1000}}"),
            ("10^{300}", "\\sqrt{10^{600}}", "\\sqrt{10^{601}}"),
            ("1", "10^{400}\\cdot 10^{-400}", "(10^{400}+1)\\cdot 10^{-400}"),
        ],
    ),
    # values below a double's smallest number are not zero
    *_cases(
        "tiny_values",
        [
            ("2^{-600}", "\\frac{1}{2^{600}}", "0"),
            ("10^{-400}", "\\frac{1}{10^{400}}", "10^{-401}"),
            ("0", "2^{-600}-\\frac{1}{2^{600}}", "2^{-1100}"),
        ],
    ),
]

EXTRACTION = [
    # several boxes that together state a multi-part answer
    *_cases(
        "multi_part_boxes",
        [
            (
                "2, 3",
                "The roots are $\\boxed{2}$ and $\\boxed{3}$.",
                "So $\\boxed{2}$ and $\\boxed{4}$.",
            ),
            (
                "-2, 1",
                "The integers are \\boxed{-2} and \\boxed{1}.",
                "\\boxed{-2}, \\boxed{1}, \\boxed{3}",
            ),
            (
                "(1, 5)",
                "So $x = \\boxed{1}$, $y = \\boxed{5}$.",
                "So $x = \\boxed{5}$, $y = \\boxed{1}$.",
            ),
        ],
    ),
    # an inequality in one variable for an interval
    *_cases(
        "inequality_for_interval",
        [
            ("(2,\\infty)", "\\boxed{x > 2}", "\\boxed{x \\ge 2}"),
            ("(1,3)", "\\boxed{1<x<3}", "\\boxed{1<x\\le 3}"),
            (
                "(-\\infty, -1] \\cup [3, \\infty)",
                "\\boxed{x \\le -1 \\text{ or } x \\geq 3}",
                "\\boxed{x < -1 \\text{ or } x \\geq 3}",
            ),
        ],
    ),
    # repeating decimals are exact rationals
    *_cases(
        "repeating_decimal",
        [
            ("\\frac{1}{3}", "\\boxed{0.\\overline{3}}", "\\boxed{0.\\overline{6}}"),
            ("\\frac{1}{6}", "\\boxed{0.1\\overline{6}}", "\\boxed{0.\\overline{16}}"),
            ("\\frac{1}{7}", "\\boxed{0.\\overline{142857}}", "\\boxed{0.\\overline{142856}}"),
        ],
    ),
    # digit grouping with thin spaces (and other spacing)
    *_cases(
        "thin_space_grouping",
        [
            ("1000000", "\\boxed{1\\,000\\,000}", "\\boxed{1\\,000\\,001}"),
            ("25000", "\\boxed{25\\;000}", "\\boxed{25\\;500}"),
            ("1234567", "\\boxed{1\\,234\\,567}", "\\boxed{1\\,234\\,568}"),
        ],
    ),
    # a sentence's final point inside the box
    *_cases(
        "trailing_point",
        [
            ("5", "\\boxed{5.}", "\\boxed{6.}"),
            ("\\frac{1}{2}", "\\boxed{\\frac{1}{2}.}", "\\boxed{\\frac{1}{3}.}"),
            ("12", "\\boxed{12 .}", "\\boxed{21 .}"),
        ],
    ),
    # a number before a parenthesis multiplies it
    *_cases(
        "implicit_product",
        [
            ("6", "\\boxed{2(3)}", "\\boxed{2(4)}"),
            ("2\\sqrt{3}+2", "\\boxed{2(\\sqrt{3}+1)}", "\\boxed{2(\\sqrt{3}+2)}"),
            ("12", "\\boxed{(3)(4)}", "\\boxed{(3)(5)}"),
        ],
    ),
    # a percentage in words
    *_cases(
        "percent_words",
        [
            ("45\\%", "\\boxed{45 percent}", "\\boxed{54 percent}"),
            ("7\\%", "\\boxed{7 pct}", "\\boxed{70 pct}"),
            ("12.5\\%", "\\boxed{12.5 \\text{ percent}}", "\\boxed{1.25 \\text{ percent}}"),
        ],
    ),
    # a percent sign on one side only: its number, or its value
    *_cases(
        "percent_one_side",
        [
            ("28\\%", "\\boxed{28}", "\\boxed{29}"),
            ("28", "\\boxed{28\\%}", "\\boxed{2.8\\%}"),
            ("0.28", "\\boxed{28\\%}", "\\boxed{2.8\\%}"),
        ],
    ),
    # a decimal comma where a thousands grouping is impossible
    *_cases(
        "decimal_comma",
        [
            ("0.375", "\\boxed{0,375}", "\\boxed{0,376}"),
            ("2500.25", "\\boxed{2500,25}", "\\boxed{2500,2}"),
            ("1.5", "\\boxed{1,5}", "\\boxed{1,05}"),
        ],
    ),
]

STRUCTURED = [
    # ordered pairs and tuples: in order
    *_cases(
        "ordered_pairs",
        [
            ("(3, 4)", "\\boxed{(3,4)}", "\\boxed{(4, 3)}"),
            (
                "(1, \\frac{1}{2}, -2)",
                "\\boxed{\\left(1, 0.5, -2\\right)}",
                "\\boxed{(1, -2, 0.5)}",
            ),
            (
                "(3, \\frac{\\pi}{2})",
                "\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}",
                "\\boxed{(3, \\pi)}",
            ),
        ],
    ),
    # sets and unordered lists: in any order
    *_cases(
        "sets",
        [
            ("\\{1, 2, 3\\}", "\\boxed{\\{3, 1, 2\\}}", "\\boxed{\\{3, 1, 4\\}}"),
            ("1, 2", "\\boxed{2, 1}", "\\boxed{2, 3}"),
            (
                "\\{1\\pm\\sqrt{5}, -2\\}",
                "\\boxed{-2, 1+\\sqrt{5}, 1-\\sqrt{5}}",
                "\\boxed{2, 1\\pm\\sqrt{5}}",
            ),
        ],
    ),
    # intervals: ends and brackets
    *_cases(
        "intervals",
        [
            ("[1, 2)", "\\boxed{[1,2)}", "\\boxed{(1,2]}"),
            ("(-\\infty, 0)", "\\boxed{(-\\infty,0)}", "\\boxed{(0, \\infty)}"),
            ("[\\frac{1}{2}, 3]", "\\boxed{[0.5, 3]}", "\\boxed{[0.5, 3)}"),
        ],
    ),
    # matrices: shape and entries
    *_cases(
        "matrices",
        [
            (
                "\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}",
                "\\boxed{\\begin{bmatrix}1 & 2\\\\ 3 & 4\\end{bmatrix}}",
                "\\boxed{\\begin{pmatrix}1&2\\\\4&3\\end{pmatrix}}",
            ),
            (
                "\\begin{pmatrix}\\frac{1}{2}\\\\-1\\end{pmatrix}",
                "\\boxed{\\begin{pmatrix}0.5\\\\-1\\end{pmatrix}}",
                "\\boxed{\\begin{pmatrix}-1\\\\0.5\\end{pmatrix}}",
            ),
            (
                "\\begin{pmatrix}1&0\\\\0&1\\end{pmatrix}",
                "\\boxed{\\begin{pmatrix}1&0\\\\0&1\\end{pmatrix}}",
                "\\boxed{\\begin{pmatrix}1&0&0\\\\0&1&0\\end{pmatrix}}",
            ),
        ],
    ),
]


@pytest.mark.parametrize(("response", "label", "expected"), EXACTNESS)
def test_exact_values(response: str, label: str, expected: float) -> None:
    assert math_answer(f"The answer is $\\boxed{{{response}}}$.", label, {}) == expected


@pytest.mark.parametrize(("response", "label", "expected"), EXTRACTION + STRUCTURED)
def test_final_answers(response: str, label: str, expected: float) -> None:
    assert math_answer(response, label, {}) == expected
