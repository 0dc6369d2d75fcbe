"""``gpqa`` and ``multiple_choice``: option letters from the usual answer forms."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from rewardrouter.rewards import BoxedAnswer
from rewardrouter.rewards.choice import gpqa, multiple_choice

CHOICES = {"choices": ["Carbon", "Nitrogen", "Oxygen", "Helium"]}
LONG = "Let us weigh each option in turn. " * 30_000  # about 1 MB

GPQA_CASES = [
    # "The answer is (C)"
    pytest.param("Reasoning... The answer is (C).", "C", {}, 1.0, id="answer_is_parens"),
    # a wrong letter
    pytest.param("The answer is (B).", "C", {}, 0.0, id="wrong"),
    # "Answer: C" with markdown
    pytest.param("Answer: **C**", "C", {}, 1.0, id="answer_colon_bold"),
    # a boxed letter
    pytest.param("so \\boxed{C}", "C", {}, 1.0, id="boxed"),
    # a boxed \text{(C)}
    pytest.param("so $\\boxed{\\text{(C)}}$", "C", {}, 1.0, id="boxed_text"),
    # "C is correct"
    pytest.param("Clearly (C) is correct.", "C", {}, 1.0, id="is_correct"),
    # the last stated answer counts
    pytest.param("The answer is A. Wait, no: the answer is C.", "C", {}, 1.0, id="last_stated"),
    # the article "a" is not option A
    pytest.param("The answer is a tricky one; answer: C", "C", {}, 1.0, id="article_not_letter"),
    # "Answer: Carbon" is a word, not option C; but it names choice A
    pytest.param("Answer: Carbon", "A", CHOICES, 1.0, id="choice_text"),
    # the label as an index
    pytest.param("Answer: B", 1, CHOICES, 1.0, id="index_label"),
    # the label as the choice's text
    pytest.param("Answer: C", "Oxygen", CHOICES, 1.0, id="text_label"),
    # metadata.correct_letter wins over the label
    pytest.param("Answer: D", "A", {"correct_letter": "d"}, 1.0, id="correct_letter"),
    # a letter outside the valid ones is no answer
    pytest.param("Answer: E", "A", {}, 0.0, id="invalid_letter"),
    # the thinking before </think> is ignored
    pytest.param("<think>answer: A?</think>Answer: B", "B", {}, 1.0, id="after_thinking"),
    # no marker, no box
    pytest.param("I am not sure about this one.", "C", {}, 0.0, id="no_marker"),
    # an empty response
    pytest.param("", "C", {}, 0.0, id="empty_response"),
    # cut off before the letter
    pytest.param("The answer is", "C", {}, 0.0, id="cut_mid_answer"),
    # no label and no correct_letter: not applicable
    pytest.param("Answer: C", None, {}, None, id="none_label"),
    # a blank label: not applicable
    pytest.param("Answer: C", "", {}, None, id="empty_label"),
    # unicode around the answer
    pytest.param("Réponse — answer: (C) ✓", "C", {}, 1.0, id="unicode"),
    # a megabyte of deliberation
    pytest.param(LONG + "Answer: D", "D", {}, 1.0, id="one_megabyte"),
]


@pytest.mark.parametrize(("response", "label", "metadata", "expected"), GPQA_CASES)
def test_gpqa(response: str, label: Any, metadata: dict[str, Any], expected: float | None) -> None:
    assert gpqa(response, label, metadata) == expected


MC_CASES = [
    # ten options by default
    pytest.param("Answer: J", "J", {}, 1.0, id="default_ten_letters"),
    # valid_letters narrows them
    pytest.param("Answer: J", "A", {"valid_letters": ["A", "B"]}, 0.0, id="valid_letters"),
    # as many letters as choices
    pytest.param("Answer: E", "A", {"choices": ["x", "y", "z"]}, 0.0, id="letters_from_choices"),
    # choices as a mapping from letter to text
    pytest.param("Answer: Q", "Q", {"choices": {"P": "yes", "Q": "no"}}, 1.0, id="choice_mapping"),
    # a last line equal to a choice's text
    pytest.param("I pick\nNitrogen", "B", CHOICES, 1.0, id="last_line_text"),
    # a boxed choice text
    pytest.param("\\boxed{Oxygen}", "C", CHOICES, 1.0, id="boxed_text_choice"),
    # a line that starts with the option
    pytest.param("Final:\n(B) Nitrogen", "B", CHOICES, 1.0, id="line_start"),
    # a label written (C)
    pytest.param("Answer: C", "(C)", {}, 1.0, id="parenthesized_label"),
    # several boxes: the last counts
    pytest.param("\\boxed{A} ... \\boxed{B}", "B", {}, 1.0, id="last_box"),
    # cut off inside the last box: the answer stated before it does not stand in
    pytest.param("Answer: B then \\boxed{C", "B", {}, 0.0, id="cut_box"),
    # numbers are not letters
    pytest.param("Answer: 3", "C", {}, 0.0, id="number"),
    # a lower-case letter that ends the statement is the option
    pytest.param("answer: c", "C", {}, 1.0, id="lower_case"),
    # an empty response
    pytest.param("", "A", {}, 0.0, id="empty_response"),
    # no label: not applicable
    pytest.param("Answer: A", None, {}, None, id="none_label"),
    # a megabyte, no answer
    pytest.param(LONG, "A", {}, 0.0, id="one_megabyte"),
]


@pytest.mark.parametrize(("response", "label", "metadata", "expected"), MC_CASES)
def test_multiple_choice(
    response: str, label: Any, metadata: dict[str, Any], expected: float | None
) -> None:
    assert multiple_choice(response, label, metadata) == expected


@pytest.mark.parametrize(
    ("label", "metadata"),
    [
        # text that is no choice
        pytest.param("Argon", CHOICES, id="unknown_text"),
        # an index past the options
        pytest.param(7, CHOICES, id="index_out_of_range"),
    ],
)
def test_unusable_labels_are_errors(label: Any, metadata: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="label"):
        gpqa("Answer: A", label, metadata)


def _both_ways(name: str, rows: list[tuple[str, str, str]]) -> list[object]:
    """``(response, its letter, another letter)``: right with its letter, wrong with another."""
    cases: list[object] = []
    for i, (response, right, other) in enumerate(rows):
        cases.append(pytest.param(response, right, 1.0, id=f"{name}-{i}-right"))
        cases.append(pytest.param(response, other, 0.0, id=f"{name}-{i}-wrong"))
    return cases


FINAL_CHOICE = [
    # any case, with or without parentheses
    *_both_ways(
        "lower_case",
        [
            ("After checking the units, answer: c", "C", "A"),
            ("Answer: (b)", "B", "A"),
            ("so the answer is d.", "D", "A"),
        ],
    ),
    # common phrasings of a choice
    *_both_ways(
        "phrasings",
        [
            ("I would go with option (D).", "D", "A"),
            ("So I'll pick C.", "C", "A"),
            ("After all that, I choose A.", "A", "B"),
            ("The best option is **B**.", "B", "A"),
            ("I'm selecting choice c.", "C", "A"),
        ],
    ),
    # what is left after eliminating the others
    *_both_ways(
        "elimination",
        [
            ("I eliminate A, B and D, which leaves C.", "C", "A"),
            ("A and B fail the test, leaving us with D.", "D", "A"),
            ("Ruling out (a) and (c) leaves (b).", "B", "A"),
        ],
    ),
    # the final statement wins over earlier ones
    *_both_ways(
        "final_statement",
        [
            ("At first I'd pick B, but re-checking, the answer is C.", "C", "B"),
            ("Answer: A\nHmm, no. Answer: (d)", "D", "A"),
            ("Option B looks right. Actually I choose A.", "A", "B"),
        ],
    ),
    # an article "a" is no option A: the stated letter is read instead
    *_both_ways(
        "article",
        [
            ("The answer is a bit subtle. The answer is B.", "B", "A"),
            ("I'd pick a different unit here, then choose C.", "C", "A"),
            ("Answer: a careful look shows the answer is (D).", "D", "A"),
        ],
    ),
]


@pytest.mark.parametrize(("response", "label", "expected"), FINAL_CHOICE)
def test_the_final_stated_choice_counts(response: str, label: str, expected: float) -> None:
    assert gpqa(response, label, {}) == expected


@pytest.mark.parametrize(
    "response",
    [
        # an article, and nothing else that names an option
        pytest.param("The answer is a bit subtle and I am not sure.", id="article_only"),
        pytest.param("I'd pick a different approach.", id="article_after_verb"),
        pytest.param("Answer: a good question.", id="article_after_colon"),
    ],
)
def test_an_article_is_never_option_a(response: str) -> None:
    assert gpqa(response, "A", {}) == 0.0


def test_boxed_gpqa_reads_the_content() -> None:
    assert gpqa(BoxedAnswer("(D)"), "D", {}) == 1.0
    assert gpqa(BoxedAnswer("Helium"), "D", CHOICES) == 1.0
    assert gpqa(BoxedAnswer(""), "D", {}) == 0.0


SPACES = " " * 20_000


@pytest.mark.parametrize(
    ("response", "label", "expected"),
    [
        # spaces after the lead words, then a word that is no option
        pytest.param("Answer:" + SPACES + "Cz", "C", 0.0, id="after_the_lead"),
        pytest.param("Answer:" + SPACES + "C", "C", 1.0, id="after_the_lead_then_the_option"),
        # a line of spaces before a word that is no option
        pytest.param(SPACES + "Cx\nAnswer: B", "B", 1.0, id="line_of_spaces"),
        # spaces after a boxed letter, then more
        pytest.param("\\boxed{C" + SPACES + "x}", "C", 0.0, id="in_the_box"),
        # a non-breaking space before the option, on its own line
        pytest.param("So:\n\u00a0(C)", "C", 1.0, id="other_whitespace_before_the_line"),
        # a capital dotted I lower-cases to two characters: the statement after it is found
        pytest.param("İ think so. Answer: C", "C", 1.0, id="text_that_lengthens_when_lowered"),
    ],
)
def test_any_text_is_read_in_linear_time(response: str, label: str, expected: float) -> None:
    # Two quantifiers over one run of spaces would try every split of it: hours for these.
    done: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: done.update(reward=gpqa(response, label, {})))
    thread.daemon = True
    thread.start()
    thread.join(timeout=30)
    assert done == {"reward": expected}
