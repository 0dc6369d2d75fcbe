"""``think_format`` and ``boxed_format``: shape, not correctness."""

from __future__ import annotations

import pytest

from rewardrouter.rewards.formats import boxed_format, think_format

LONG = "<think>" + "pondering " * 100_000 + "</think> 42"  # about 1 MB

THINK_CASES = [
    # reasoning, then an answer
    pytest.param("<think>2+2 is 4</think>The answer is 4.", 1.0, id="well_formed"),
    # leading whitespace before <think> is fine
    pytest.param("\n <think>r</think>\nanswer", 1.0, id="leading_whitespace"),
    # no answer after </think>
    pytest.param("<think>reasoning</think>  ", 0.0, id="no_answer"),
    # empty reasoning
    pytest.param("<think> </think>answer", 0.0, id="empty_reasoning"),
    # text before <think>
    pytest.param("Sure! <think>r</think>answer", 0.0, id="text_before_think"),
    # two thinking blocks
    pytest.param("<think>a</think>b<think>c</think>d", 0.0, id="two_blocks"),
    # a nested <think>
    pytest.param("<think>a<think>b</think>answer", 0.0, id="nested_open"),
    # cut off while thinking
    pytest.param("<think>still thinking about", 0.0, id="cut_mid_thinking"),
    # no tags at all
    pytest.param("The answer is 4.", 0.0, id="no_marker"),
    # an empty response
    pytest.param("", 0.0, id="empty_response"),
    # a close tag without an open tag
    pytest.param("reasoning</think>answer", 0.0, id="close_without_open"),
    # misspelled tags do not count
    pytest.param("<thinking>r</thinking>answer", 0.0, id="wrong_tag"),
    # unicode reasoning and answer
    pytest.param("<think>思考中…</think>答案是 4。", 1.0, id="unicode"),
    # a boxed answer after thinking is an answer like any other
    pytest.param("<think>r</think>\\boxed{4}", 1.0, id="boxed_answer"),
    # a megabyte of thinking
    pytest.param(LONG, 1.0, id="one_megabyte"),
]


@pytest.mark.parametrize(("response", "expected"), THINK_CASES)
def test_think_format(response: str, expected: float) -> None:
    assert think_format(response, None, {}) == expected


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        # the prompt opened <think>; the response only closes it
        pytest.param("reasoning</think>answer", 1.0, id="closed_only"),
        # an opening tag in the response is one too many
        pytest.param("<think>reasoning</think>answer", 0.0, id="opened_again"),
        # no answer
        pytest.param("reasoning</think>", 0.0, id="no_answer"),
    ],
)
def test_think_format_opened_by_prompt(response: str, expected: float) -> None:
    assert think_format(response, None, {}, opened_by_prompt=True) == expected


BOXED_CASES = [
    # a box
    pytest.param("So \\boxed{4}.", 1.0, id="boxed"),
    # \fbox counts too
    pytest.param("So \\fbox{4}.", 1.0, id="fbox"),
    # nested braces inside the box
    pytest.param("\\boxed{\\frac{1}{2}}", 1.0, id="nested_braces"),
    # an empty box
    pytest.param("\\boxed{}", 0.0, id="empty_box"),
    # a blank box
    pytest.param("\\boxed{  }", 0.0, id="blank_box"),
    # cut off inside the box
    pytest.param("\\boxed{\\frac{1}{2}", 0.0, id="cut_mid_answer"),
    # several boxes: the last must be complete
    pytest.param("\\boxed{1} and \\boxed{2", 0.0, id="last_box_cut"),
    # several complete boxes
    pytest.param("\\boxed{1} and \\boxed{2}", 1.0, id="several_boxes"),
    # a box only inside the thinking does not count
    pytest.param("<think>\\boxed{1}</think>The answer is 1.", 0.0, id="box_in_thinking"),
    # after the thinking
    pytest.param("<think>hm</think>\\boxed{1}", 1.0, id="box_after_thinking"),
    # no box
    pytest.param("The answer is 4.", 0.0, id="no_marker"),
    # an empty response
    pytest.param("", 0.0, id="empty_response"),
    # \boxed without braces
    pytest.param("\\boxed 4", 0.0, id="no_braces"),
    # unicode content
    pytest.param("\\boxed{π/2}", 1.0, id="unicode"),
    # a megabyte, then a box
    pytest.param("x" * 1_000_000 + "\\boxed{1}", 1.0, id="one_megabyte"),
]


@pytest.mark.parametrize(("response", "expected"), BOXED_CASES)
def test_boxed_format(response: str, expected: float) -> None:
    assert boxed_format(response, None, {}) == expected
