"""``deepscaler``: the boxed answer after ``</think>``."""

from __future__ import annotations

from typing import Any

import pytest

from rewardrouter.rewards import BoxedAnswer
from rewardrouter.rewards.deepscaler import deepscaler

THINK = "<think>\nSome reasoning with a draft \\boxed{99}.\n</think>\n"
LONG = "<think>" + "Reasoning at length. " * 50_000 + "</think>"  # about 1 MB

CASES = [
    # the right answer after thinking
    pytest.param(THINK + "So \\boxed{42}.", "42", 1.0, id="correct"),
    # a wrong answer
    pytest.param(THINK + "So \\boxed{43}.", "42", 0.0, id="wrong"),
    # the draft inside the thinking does not count
    pytest.param(THINK + "No box here.", "99", 0.0, id="box_only_in_thinking"),
    # a decimal against a fraction
    pytest.param(THINK + "\\boxed{0.5}", "\\frac{1}{2}", 1.0, id="decimal_vs_frac"),
    # \dfrac
    pytest.param(THINK + "\\boxed{\\dfrac{2}{3}}", "\\frac{2}{3}", 1.0, id="dfrac"),
    # an interval
    pytest.param(THINK + "\\boxed{(0, \\infty)}", "(0,\\infty)", 1.0, id="interval"),
    # thousands separators
    pytest.param(THINK + "\\boxed{12{,}500}", "12500", 1.0, id="thousands"),
    # negative numbers
    pytest.param(THINK + "\\boxed{-4}", "4", 0.0, id="negative"),
    # a label holding a box is unboxed
    pytest.param(THINK + "\\boxed{7}", "\\boxed{7}", 1.0, id="boxed_label"),
    # several boxes after thinking: the last counts
    pytest.param(THINK + "\\boxed{1} or rather \\boxed{2}", "2", 1.0, id="last_box"),
    # a multi-part answer in several boxes, and a wrong one of the same shape
    pytest.param(THINK + "$x = \\boxed{2}$ or $x = \\boxed{3}$", "2, 3", 1.0, id="two_boxes"),
    pytest.param(THINK + "$x = \\boxed{2}$ or $x = \\boxed{4}$", "2, 3", 0.0, id="two_boxes_wrong"),
    pytest.param(THINK + "\\boxed{1}, \\boxed{5}", "(1, 5)", 1.0, id="pair_in_boxes"),
    pytest.param(THINK + "\\boxed{5}, \\boxed{1}", "(1, 5)", 0.0, id="pair_in_boxes_wrong"),
    pytest.param(THINK + "\\boxed{-2} and \\boxed{1}", "\\{1, -2\\}", 1.0, id="set_in_boxes"),
    pytest.param(
        THINK + "\\boxed{-2} and \\boxed{-1}", "\\{1, -2\\}", 0.0, id="set_in_boxes_wrong"
    ),
    # ###Response marks the solution too
    pytest.param("draft\n###Response\nThus \\boxed{8}", "8", 1.0, id="response_marker"),
    # no marker: the model never finished thinking
    pytest.param("So \\boxed{42}.", "42", 0.0, id="no_marker"),
    # cut off inside the box
    pytest.param(THINK + "\\boxed{4", "42", 0.0, id="cut_mid_answer"),
    # an empty response
    pytest.param("", "42", 0.0, id="empty_response"),
    # no label: not applicable
    pytest.param(THINK + "\\boxed{1}", None, None, id="none_label"),
    # a blank label: not applicable
    pytest.param(THINK + "\\boxed{1}", "", None, id="empty_label"),
    # unicode in the solution
    pytest.param(
        THINK + "Ответ: \\boxed{\\frac{\\sqrt{3}}{2}}", "\\frac{\\sqrt3}{2}", 1.0, id="unicode"
    ),
    # a megabyte of thinking
    pytest.param(LONG + "\\boxed{3}", "3", 1.0, id="one_megabyte"),
]


@pytest.mark.parametrize(("response", "label", "expected"), CASES)
def test_deepscaler(response: str, label: Any, expected: float | None) -> None:
    assert deepscaler(response, label, {}) == expected


def test_boxed_deepscaler_needs_no_marker() -> None:
    # slime's boxed_deepscaler always scores 0: the content has neither </think> nor a box
    assert deepscaler(BoxedAnswer("\\frac{1}{2}"), "0.5", {}) == 1.0
    assert deepscaler(BoxedAnswer(""), "0.5", {}) == 0.0
