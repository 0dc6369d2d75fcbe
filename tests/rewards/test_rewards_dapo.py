"""``dapo``: Minerva ``Answer:`` grading, ``{score, acc, pred}``."""

from __future__ import annotations

from typing import Any

import pytest

from rewardrouter.rewards import BoxedAnswer
from rewardrouter.rewards.dapo import dapo, normalize_final_answer

LONG_THOUGHT = "Let me reconsider the problem carefully. " * 25_000  # about 1 MB

CASES = [
    # the right integer
    pytest.param("Work...\nAnswer: 34", "34", (1.0, "34"), id="integer"),
    # a wrong integer
    pytest.param("Work...\nAnswer: 35", "34", (-1.0, "35"), id="wrong_integer"),
    # a non-integer label is not truncated (slime's int(float()) would accept 2)
    pytest.param("Answer: 2", "2.5", (-1.0, "2"), id="no_truncation"),
    # ...and its own value is right
    pytest.param("Answer: 2.5", "2.5", (1.0, "2.5"), id="decimal_label"),
    # a LaTeX label is compared mathematically, not crashed on
    pytest.param("Answer: 0.5", "\\frac{1}{2}", (1.0, "0.5"), id="latex_label"),
    # shorthand \frac12 normalized
    pytest.param(
        "Answer: $\\dfrac12$", "\\frac{1}{2}", (1.0, "\\frac{1}{2}"), id="dfrac_shorthand"
    ),
    # text after the last "=" is the answer
    pytest.param("Answer: x = -7", "-7", (1.0, "-7"), id="negative_after_equals"),
    # units and dollar signs go
    pytest.param("Answer: \\$1,000 dollars", "1000", (1.0, "1000"), id="units_thousands"),
    # degrees go
    pytest.param("Answer: 30^\\circ", "30", (1.0, "30"), id="degrees"),
    # percentages compare as numbers
    pytest.param("Answer: 50\\%", "50", (1.0, "50\\%"), id="percent"),
    # a set answer
    pytest.param("Answer: \\{1,2\\}", "\\{2,1\\}", (1.0, "\\{1,2\\}"), id="set"),
    # a boxed answer on the Answer line is unwrapped
    pytest.param("Answer: \\boxed{12}", "12", (1.0, "12"), id="boxed_on_line"),
    # several Answer lines: the last counts
    pytest.param("Answer: 3\nNo wait.\nAnswer: 4", "4", (1.0, "4"), id="last_answer_line"),
    # case does not matter in the marker
    pytest.param("ANSWER: 9", "9", (1.0, "9"), id="marker_case"),
    # no Answer line: -1 and an empty pred
    pytest.param("The result is 34.", "34", (-1.0, ""), id="no_marker"),
    # an empty response
    pytest.param("", "34", (-1.0, ""), id="empty_response"),
    # cut off mid-answer: what is there is graded, and it is wrong
    pytest.param("Answer: 3", "34", (-1.0, "3"), id="cut_mid_answer"),
    # the marker far before the last 300 characters is not read
    pytest.param("Answer: 34\n" + "x" * 400, "34", (-1.0, ""), id="marker_outside_tail"),
    # unicode text answers
    pytest.param("Answer: Zürich", "Zürich", (1.0, "Zürich"), id="unicode"),
    # a megabyte of thought, then the answer
    pytest.param(LONG_THOUGHT + "\nAnswer: 5", "5", (1.0, "5"), id="one_megabyte"),
    # markdown bold around the answer, or around the marker, and a wrong bold answer
    pytest.param("So.\nAnswer: **3**", "3", (1.0, "3"), id="bold_answer"),
    pytest.param("So.\nAnswer: **4**", "3", (-1.0, "4"), id="bold_answer_wrong"),
    pytest.param("**Answer:** 12", "12", (1.0, "12"), id="bold_marker"),
    pytest.param("**Answer:** 21", "12", (-1.0, "21"), id="bold_marker_wrong"),
    pytest.param("Answer: **\\frac{1}{2}**", "0.5", (1.0, "\\frac{1}{2}"), id="bold_fraction"),
    pytest.param(
        "Answer: **\\frac{1}{3}**", "0.5", (-1.0, "\\frac{1}{3}"), id="bold_fraction_wrong"
    ),
]


@pytest.mark.parametrize(("response", "label", "expected"), CASES)
def test_dapo(response: str, label: Any, expected: tuple[float, str]) -> None:
    score, pred = expected
    assert dapo(response, label, {}) == {"score": score, "acc": score == 1.0, "pred": pred}


@pytest.mark.parametrize("label", [pytest.param(None, id="none"), pytest.param("", id="empty")])
def test_missing_label_is_not_applicable(label: Any) -> None:
    assert dapo("Answer: 1", label, {}) is None


def test_boxed_dapo_grades_the_box_content() -> None:
    # boxed_dapo: the content is the prediction; no Answer: line needed
    assert dapo(BoxedAnswer("\\frac{3}{4}"), "0.75", {}) == {
        "score": 1.0,
        "acc": True,
        "pred": "\\frac{3}{4}",
    }
    assert dapo(BoxedAnswer(""), "0.75", {})["score"] == -1.0  # type: ignore[index]


NORMALIZED = [
    # units, dollars, thousands separators
    pytest.param("x = \\$1,000 \\text{dollars}.", "1000", id="dollars"),
    # \text{} unwrapped, spacing gone
    pytest.param("\\text{ 5 } \\, cm", "5", id="text_spacing"),
    # shorthand roots and fractions
    pytest.param("\\sqrt2 + \\frac1{2}", "\\sqrt{2}+\\frac{1}{2}", id="shorthand"),
]


@pytest.mark.parametrize(("text", "normalized"), NORMALIZED)
def test_normalize_final_answer(text: str, normalized: str) -> None:
    assert normalize_final_answer(text) == normalized
