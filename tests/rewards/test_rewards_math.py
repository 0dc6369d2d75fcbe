"""``math`` and ``boxed_math``: hand-scored final answers."""

from __future__ import annotations

import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from rewardrouter.outcome import UNDECIDED
from rewardrouter.rewards import BoxedAnswer
from rewardrouter.rewards.labels import LabelError
from rewardrouter.rewards.math import math_answer, math_quick

MEGABYTE_OF_THOUGHT = "Let me think about this step by step. " * 27_000  # about 1 MB

CASES = [
    # the same integer
    pytest.param("So the answer is \\boxed{42}.", "42", 1.0, id="integer"),
    # a different integer
    pytest.param("So the answer is \\boxed{41}.", "42", 0.0, id="wrong_integer"),
    # a decimal equals the fraction it spells
    pytest.param("\\boxed{0.5}", "\\frac{1}{2}", 1.0, id="decimal_vs_frac"),
    # \dfrac is \frac
    pytest.param("\\boxed{\\dfrac{3}{4}}", "\\frac{3}{4}", 1.0, id="dfrac"),
    # a radical in another form
    pytest.param("\\boxed{\\sqrt{12}}", "2\\sqrt{3}", 1.0, id="radical_form"),
    # an expression, rearranged
    pytest.param("\\boxed{(x+1)^2}", "x^2+2x+1", 1.0, id="expression_form"),
    # sets are unordered
    pytest.param("\\boxed{\\{3, 1, 2\\}}", "\\{1,2,3\\}", 1.0, id="set"),
    # an interval's open and closed ends matter
    pytest.param("\\boxed{(1, 2]}", "[1,2)", 0.0, id="interval_ends"),
    # the same interval
    pytest.param("\\boxed{[1, 2)}", "[1,2)", 1.0, id="interval"),
    # a unit after the value
    pytest.param("\\boxed{5 \\text{ cm}}", "5", 1.0, id="units"),
    # thousands separators, plain and braced
    pytest.param("\\boxed{1{,}000{,}000}", "1000000", 1.0, id="thousands"),
    # the sign counts
    pytest.param("\\boxed{-3}", "3", 0.0, id="negative"),
    # a percent sign is dropped on both sides
    pytest.param("\\boxed{25\\%}", "25", 1.0, id="percent"),
    # an assignment is read by its right side
    pytest.param("\\boxed{x = 7}", "7", 1.0, id="assignment"),
    # several boxes: the last one counts
    pytest.param("First \\boxed{3}, then on reflection \\boxed{4}.", "4", 1.0, id="last_box"),
    # ...even when an earlier one was right
    pytest.param("First \\boxed{4}, then on reflection \\boxed{3}.", "4", 0.0, id="last_box_wrong"),
    # cut off inside the box: no earlier box stands in
    pytest.param("\\boxed{4} hmm, actually \\boxed{4", "4", 0.0, id="cut_mid_answer"),
    # no box at all, in the default mode
    pytest.param("The answer is 42.", "42", 0.0, id="no_marker"),
    # an empty response
    pytest.param("", "42", 0.0, id="empty_response"),
    # an empty box
    pytest.param("\\boxed{}", "42", 0.0, id="empty_box"),
    # the label may hold a box itself
    pytest.param("\\boxed{7}", "$\\boxed{7}$", 1.0, id="boxed_label"),
    # a list label accepts any entry
    pytest.param("\\boxed{12}", ["twelve", "12"], 1.0, id="list_label"),
    # numeric labels are spelled plainly
    pytest.param("\\boxed{0.25}", 0.25, 1.0, id="float_label"),
    # no label: not applicable
    pytest.param("\\boxed{1}", None, None, id="none_label"),
    # a blank label: not applicable
    pytest.param("\\boxed{1}", "  ", None, id="empty_label"),
    # unicode around the answer does not matter
    pytest.param("Réponse : donc \\boxed{\\frac{1}{3}} ✓", "\\frac13", 1.0, id="unicode"),
    # a megabyte of thought before the answer
    pytest.param(MEGABYTE_OF_THOUGHT + "\\boxed{9}", "9", 1.0, id="one_megabyte"),
    # a power tower is unequal at once, without sympy running for minutes
    pytest.param("\\boxed{9^{9^{9^{9}}}}", "3", 0.0, id="power_tower"),
]


@pytest.mark.parametrize(("response", "label", "expected"), CASES)
def test_math(response: str, label: Any, expected: float | None) -> None:
    assert math_answer(response, label, {}) == expected


BOXED_CASES = [
    # the box's content is the answer: no second search for \boxed (slime scores 0 here)
    pytest.param("\\frac{1}{2}", "0.5", 1.0, id="content_graded"),
    # a wrong content
    pytest.param("\\frac{1}{3}", "0.5", 0.0, id="content_wrong"),
    # a response without a box arrives as an empty answer
    pytest.param("", "0.5", 0.0, id="no_box"),
]


@pytest.mark.parametrize(("content", "label", "expected"), BOXED_CASES)
def test_boxed_math_grades_the_extracted_answer(content: str, label: str, expected: float) -> None:
    assert math_answer(BoxedAnswer(content), label, {}) == expected


BOX_RUNS = [
    # words between two boxes take the first back: the last box is the answer (a self-correction)
    pytest.param("\\boxed{41}, so \\boxed{42}", "42", 1.0, id="so"),
    pytest.param("\\boxed{42}, so \\boxed{41}", "42", 0.0, id="so_wrong"),
    pytest.param("\\boxed{41}, final \\boxed{42}", "42", 1.0, id="final"),
    pytest.param("\\boxed{42}, final \\boxed{41}", "42", 0.0, id="final_wrong"),
    pytest.param("\\boxed{41}, final answer \\boxed{42}", "42", 1.0, id="final_answer"),
    pytest.param("\\boxed{42}, final answer \\boxed{41}", "42", 0.0, id="final_answer_wrong"),
    pytest.param("\\boxed{41}, but corrected: \\boxed{42}", "42", 1.0, id="corrected"),
    pytest.param("\\boxed{42}, but corrected: \\boxed{41}", "42", 0.0, id="corrected_wrong"),
    pytest.param("$\\boxed{41} \\text{, so } \\boxed{42}$", "42", 1.0, id="so_in_text"),
    # ...and the box taken back is no part of the answer
    pytest.param("\\boxed{41}, so \\boxed{42}", "41, 42", 0.0, id="so_not_two_parts"),
    # nothing but separators between boxes: one answer in parts, every part compared
    pytest.param("\\boxed{41}, \\boxed{42}", "41, 42", 1.0, id="comma_two_parts"),
    pytest.param("\\boxed{41}, \\boxed{42}", "42", 0.0, id="comma_hedge"),
    pytest.param("\\boxed{41} \\boxed{42}", "42", 0.0, id="space_hedge"),
    pytest.param("(a) \\boxed{3} (b) \\boxed{4}", "3, 4", 1.0, id="part_labels"),
    pytest.param("(a) \\boxed{3} (b) \\boxed{4}", "4", 0.0, id="part_labels_one_part"),
    pytest.param("Part (a): \\boxed{3}; Part (b): \\boxed{4}", "3, 4", 1.0, id="part_words"),
    pytest.param("\\boxed{3} cm and \\boxed{4} cm", "3, 4", 1.0, id="units_after_boxes"),
    pytest.param("\\boxed{3} cm and \\boxed{4} cm", "4", 0.0, id="units_after_boxes_hedge"),
]


@pytest.mark.parametrize(("response", "label", "expected"), BOX_RUNS)
def test_a_run_of_boxes_is_one_answer_only_when_separators_join_it(
    response: str, label: str, expected: float
) -> None:
    assert math_answer(response, label, {}) == expected


LONG_SUM = "+".join(["x"] * 600)  # 1,199 characters: past the 1,000-character bound

EMPTY_AND_LONG = [
    # the empty set, however it is written, is one set
    pytest.param("\\boxed{\\{\\}}", "\\emptyset", 1.0, id="braces_for_emptyset"),
    pytest.param("\\boxed{\\emptyset}", "\\{\\}", 1.0, id="emptyset_for_braces"),
    pytest.param("\\boxed{\\varnothing}", "\\{ \\}", 1.0, id="varnothing"),
    pytest.param("\\boxed{\u2205}", "\\emptyset", 1.0, id="unicode_empty_set"),
    pytest.param("\\boxed{x \\in \\emptyset}", "\\varnothing", 1.0, id="member_of_empty"),
    # ...and no other set, nor the number 0
    pytest.param("\\boxed{\\{0\\}}", "\\emptyset", 0.0, id="zero_set_is_not_empty"),
    pytest.param("\\boxed{\\{\\emptyset\\}}", "\\{\\}", 0.0, id="set_of_empty_set"),
    pytest.param("\\boxed{\\{\\}}", "\\{1, 2\\}", 0.0, id="empty_for_nonempty"),
    pytest.param("\\boxed{\\emptyset}", "0", 0.0, id="empty_set_is_not_zero"),
    # past 1,000 characters an answer matches only the label's very text
    pytest.param(f"\\boxed{{{LONG_SUM}}}", LONG_SUM, 1.0, id="long_identical"),
    pytest.param(f"\\boxed{{ {LONG_SUM} }}", f"{LONG_SUM}\n", 1.0, id="long_identical_spaces"),
    pytest.param(f"\\boxed{{{LONG_SUM}}}", "600x", 0.0, id="long_equal_value_not_text"),
    pytest.param(f"\\boxed{{{LONG_SUM}+x}}", LONG_SUM, 0.0, id="long_other_text"),
]


@pytest.mark.parametrize(("response", "label", "expected"), EMPTY_AND_LONG)
def test_empty_sets_and_long_answers(response: str, label: str, expected: float) -> None:
    assert math_answer(response, label, {}) == expected
    # the quick path (no math-verify) agrees wherever it decides
    assert math_quick(response, label, {}) in (expected, UNDECIDED)


LABELS = [
    # a label that states its answer in a sentence is read as that answer
    pytest.param("\\boxed{10000}", "The answer is 10000", 1.0, id="answer_is"),
    pytest.param("\\boxed{1000}", "The answer is 10000", 0.0, id="answer_is_wrong"),
    pytest.param("\\boxed{10000}", "The final answer is 10000.", 1.0, id="final_answer_is"),
    pytest.param("\\boxed{10001}", "The final answer is 10000.", 0.0, id="final_answer_is_wrong"),
    pytest.param("\\boxed{10000}", "Answer: 10000", 1.0, id="answer_colon"),
    pytest.param("\\boxed{100}", "Answer: 10000", 0.0, id="answer_colon_wrong"),
    pytest.param("\\boxed{0.5}", "The answer is $\\frac{1}{2}$.", 1.0, id="answer_is_latex"),
    pytest.param("\\boxed{0.25}", "The answer is $\\frac{1}{2}$.", 0.0, id="latex_wrong"),
    # GSM8K's solutions close with "#### N"
    pytest.param("\\boxed{18}", "3 packs of 6 is 3 * 6 = 18 eggs.\n#### 18", 1.0, id="gsm8k"),
    pytest.param("\\boxed{6}", "3 packs of 6 is 3 * 6 = 18 eggs.\n#### 18", 0.0, id="gsm8k_wrong"),
    pytest.param("\\boxed{1800}", "#### 1,800", 1.0, id="gsm8k_grouped"),
    # verl's reward_model column, as a dict or as JSON text
    pytest.param("\\boxed{42}", {"ground_truth": "42", "style": "rule"}, 1.0, id="verl_dict"),
    pytest.param("\\boxed{41}", {"ground_truth": "42", "style": "rule"}, 0.0, id="verl_wrong"),
    pytest.param("\\boxed{42}", '{"ground_truth": "42", "style": "rule"}', 1.0, id="verl_json"),
    # a JSON list stored as a string: any entry
    pytest.param("\\boxed{1/2}", '["\\\\frac{1}{2}", "0.5"]', 1.0, id="json_list"),
    pytest.param("\\boxed{1/3}", '["\\\\frac{1}{2}", "0.5"]', 0.0, id="json_list_wrong"),
    # an interval is not a JSON list of answers
    pytest.param("\\boxed{[1, 2]}", "[1, 2]", 1.0, id="interval_label"),
    pytest.param("\\boxed{1}", "[1, 2]", 0.0, id="interval_label_not_a_list"),
]


@pytest.mark.parametrize(("response", "label", "expected"), LABELS)
def test_label_forms(response: str, label: Any, expected: float) -> None:
    assert math_answer(response, label, {}) == expected


@pytest.mark.parametrize(
    ("label", "message"),
    [
        pytest.param({"solution": "42"}, "label is a dict with keys 'solution'", id="other_dict"),
        pytest.param(["42", ["43"]], "holds a value of type list", id="nested_list"),
        pytest.param("The answer is", "states no answer after 'answer is'", id="empty_statement"),
        pytest.param("Answer:", "states no answer after 'Answer:'", id="empty_answer_line"),
        # the last statement decides, as it does where it states an answer
        pytest.param(
            "Answer: 5. The final answer is",
            "states no answer after 'final answer is'",
            id="empty_last_statement",
        ),
    ],
)
def test_labels_of_another_shape_are_refused(label: Any, message: str) -> None:
    # right and wrong would both score 0 on such a label: it is an error instead
    for response in ("\\boxed{42}", "\\boxed{41}"):
        with pytest.raises(LabelError, match=re.escape(message)):
            math_answer(response, label, {})


def test_a_refused_label_is_that_samples_error(make_router: Any) -> None:
    config = {"default_route": "m", "routes": {"m": {"rewards": {"t": {"kind": "math"}}}}}
    router = make_router(config)
    rows = [
        {"response": "\\boxed{42}", "label": {"ground_truth": "42", "style": "rule"}},
        {"response": "\\boxed{42}", "label": {"solution": "42"}},
        {"response": "\\boxed{42}", "label": "Answer: 42"},
    ]
    first, bad, last = router.score_sync(rows, failures="record")
    assert (first.reward, last.reward) == (1.0, 1.0)
    assert (bad.reward, bad.status) == (None, "error")
    assert bad.error_message is not None
    assert "LabelError: label is a dict with keys 'solution'" in bad.error_message


ALTERNATIVES = [
    # alternatives are a list of answers: all of them must be the answer
    pytest.param("\\boxed{x = 2 \\vee x = 3}", "2, 3", 1.0, id="vee_roots"),
    pytest.param("\\boxed{2 \\lor 3}", "\\{2, 3\\}", 1.0, id="lor_set"),
    pytest.param("\\boxed{2 \\text{ or } 3}", "2, 3", 1.0, id="text_or"),
    pytest.param("\\boxed{41 \\vee 42}", "42", 0.0, id="vee_hedge"),
    pytest.param("\\boxed{x = 41 \\vee x = 42}", "42", 0.0, id="vee_named_hedge"),
    pytest.param("\\boxed{41 \\text{ or } 42}", "41", 0.0, id="text_or_hedge"),
    # an inequality joined by "or" is still the intervals it describes
    pytest.param(
        "\\boxed{x < -1 \\text{ or } x > 3}",
        "(-\\infty, -1) \\cup (3, \\infty)",
        1.0,
        id="inequalities_or",
    ),
    # a power too large to compute, scaled: told apart from an ordinary number at once
    pytest.param("\\boxed{1 \\times 10^{999999999}}", "42", 0.0, id="scaled_huge_power"),
    pytest.param("\\boxed{-2.5 \\cdot 10^{10^{10}}}", "42", 0.0, id="scaled_power_tower"),
]


@pytest.mark.parametrize(("response", "label", "expected"), ALTERNATIVES)
def test_alternatives_and_huge_values(response: str, label: str, expected: float) -> None:
    assert math_answer(response, label, {}) == expected
    if expected == 0.0:  # decided by the exact rules, without math-verify
        assert math_quick(response, label, {}) == 0.0


def test_any_extraction_reads_unboxed_answers() -> None:
    # with extract: any, math-verify's own extraction finds an unboxed final answer
    assert math_answer("The final answer is $\\frac{1}{2}$.", "0.5", {}, extract="any") == 1.0
    # ...but a box left open still scores 0
    assert math_answer("So \\boxed{\\frac{1}{2", "0.5", {}, extract="any") == 0.0


ANY = [
    # an answer stated after the last box wins over it (the default reads the box)
    pytest.param(
        "So \\boxed{200} is the interest. The final answer is $10,455$.",
        "10455",
        1.0,
        0.0,
        id="statement_after_box",
    ),
    pytest.param(
        "So \\boxed{10455}. The final answer is $10,456$.",
        "10455",
        0.0,
        1.0,
        id="statement_after_box_wrong",
    ),
    # a statement that is no answer leaves the box the answer
    pytest.param(
        "\\boxed{5}. I hope the answer is correct.", "5", 1.0, 1.0, id="statement_no_answer"
    ),
    pytest.param(
        "\\boxed{6}. I hope the answer is correct.", "5", 0.0, 0.0, id="statement_no_answer_wrong"
    ),
    # free text: math-verify's extraction, compared by the exact rules (a decimal comma)
    pytest.param("So it is 1,22 in the end", "1.22", 1.0, 0.0, id="free_text"),
    pytest.param("So it is 1,23 in the end", "1.22", 0.0, 0.0, id="free_text_wrong"),
]


@pytest.mark.parametrize(("response", "label", "any_reward", "boxed_reward"), ANY)
def test_any_extraction(response: str, label: str, any_reward: float, boxed_reward: float) -> None:
    assert math_answer(response, label, {}, extract="any") == any_reward
    assert math_answer(response, label, {}) == boxed_reward


def test_works_off_the_main_thread() -> None:
    # math-verify's SIGALRM timeouts would raise in a thread; they are off
    responses = ["\\boxed{5 \\text{ cm}}", "\\boxed{\\{1,2\\}}", "\\boxed{x=3}", "\\boxed{0.5}"]
    with ThreadPoolExecutor(max_workers=4) as pool:
        got = list(pool.map(lambda r: math_answer(r, "5", {}), responses))
    assert got == [1.0, 0.0, 0.0, 0.0]
    assert threading.current_thread() is threading.main_thread()


def test_megabyte_response_is_fast() -> None:
    start = time.perf_counter()
    assert math_answer(MEGABYTE_OF_THOUGHT + "\\boxed{9}", "9", {}) == 1.0
    assert time.perf_counter() - start < 1.0
