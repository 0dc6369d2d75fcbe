"""``gpqa`` and ``multiple_choice``: option letters from the usual answer forms."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

from rewardrouter.rewards import BoxedAnswer
from rewardrouter.rewards.choice import statements as choice_statements
from rewardrouter.rewards.choice.kind import gpqa, multiple_choice
from rewardrouter.rewards.labels import LabelError

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
    # several boxes with words between them: the last counts
    pytest.param("\\boxed{A}, then on reflection \\boxed{B}", "B", {}, 1.0, id="last_box"),
    # two boxes side by side name two answers: none
    pytest.param("\\boxed{A}, \\boxed{B}", "B", {}, 0.0, id="boxes_side_by_side"),
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
        pytest.param(10**5000, CHOICES, id="index_of_five_thousand_digits"),
        pytest.param(0.0, CHOICES, id="a_float"),
        pytest.param(object(), CHOICES, id="an_object"),
    ],
)
def test_unusable_labels_are_the_datas_fault(label: Any, metadata: dict[str, Any]) -> None:
    # a LabelError (a DataFault) stops the batch under on_error: raise, as a fault of the
    # dataset; any other exception would be blamed on the response
    with pytest.raises(LabelError, match="label") as raised:
        gpqa("Answer: A", label, metadata)
    assert len(str(raised.value)) < 200


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
    # a dash or an arrow after "Answer"
    *_both_ways(
        "answer_dash",
        [
            ("After the units check, Answer - b", "B", "A"),
            ("Final answer — (D)", "D", "C"),
            ("answer -> C", "C", "D"),
        ],
    ),
    # "Option C." as a sentence of its own
    *_both_ways(
        "option_sentence",
        [
            ("Everything points one way. Option C.", "C", "A"),
            ("**Option (b).**", "B", "D"),
        ],
    ),
    # a conclusion: "So C.", "thus, (B)", at a sentence's or a clause's start
    *_both_ways(
        "conclusion",
        [
            ("Both A and D overshoot the bound. So C.", "C", "A"),
            ("The energy must rise; thus, (B).", "B", "C"),
            ("Nothing else fits, therefore I think it's D", "D", "B"),
            ("It's (A).", "A", "C"),
        ],
    ),
    # a later correction takes back a first choice
    *_both_ways(
        "correction",
        [
            ("I think B, but actually D", "D", "B"),
            ("Answer: A. No wait, it's C.", "C", "A"),
            ("My first guess was (b); on second thought, (d).", "D", "B"),
            ("Answer: C, though A looked right at first. Wait, B.", "B", "C"),
        ],
    ),
    # the letter in math mode, up to three marks deep
    *_both_ways(
        "math_mode",
        [
            ("The answer is $\\text{(C)}$.", "C", "B"),
            ("Final answer: \\(\\mathbf{A}\\)", "A", "B"),
            ("So my choice is $\\textbf{D}$.", "D", "A"),
        ],
    ),
    # the letter, then its verdict
    *_both_ways(
        "verdict",
        [
            ("Checking the units, (C) is correct.", "C", "A"),
            ("After all, D was right.", "D", "B"),
            ("Only B is the best answer here.", "B", "A"),
        ],
    ),
    # what is left after the rest is ruled out
    *_both_ways(
        "settled",
        [
            ("We ruled out the rest and settled on B.", "B", "A"),
            ("I'm opting for (c) here.", "C", "D"),
        ],
    ),
    # a first line that starts with the option, or a line after a colon
    *_both_ways(
        "option_line",
        [
            ("D. Helium\n\nIt is the only noble gas listed.", "D", "A"),
            ("The likeliest cause is:\n\nB. Nitrogen narcosis\n\nThis follows from", "B", "A"),
        ],
    ),
    # Chinese (full-width forms too)
    *_both_ways(
        "chinese",
        [
            ("经过计算\uff0c答案是C。", "C", "A"),
            ("故选\uff08\uff22\uff09", "B", "D"),
            ("答案\uff1a\uff24", "D", "C"),
            ("不是A\uff0c是D。", "D", "A"),
            ("选项C正确。", "C", "A"),
        ],
    ),
    # Japanese
    *_both_ways(
        "japanese",
        [
            ("よって、答えはDです。", "D", "B"),
            ("正解\uff1aA", "A", "C"),
            ("Bが正解です。", "B", "A"),
        ],
    ),
    # Korean
    *_both_ways(
        "korean",
        [
            ("따라서 정답은 B입니다.", "B", "C"),
            ("답: C", "C", "D"),
        ],
    ),
    # Spanish
    *_both_ways(
        "spanish",
        [
            ("Por lo tanto, la respuesta correcta es la C.", "C", "A"),
            ("Respuesta: d", "D", "B"),
        ],
    ),
    # French (a space before the colon)
    *_both_ways(
        "french",
        [
            ("Donc la bonne réponse est (B).", "B", "C"),
            ("Réponse : A", "A", "D"),
        ],
    ),
    # German
    *_both_ways(
        "german",
        [
            ("Die richtige Antwort lautet D.", "D", "A"),
            ("Antwort: (b)", "B", "C"),
        ],
    ),
    # Italian, Portuguese, Indonesian, Russian
    *_both_ways(
        "other_languages",
        [
            ("Quindi la risposta è C.", "C", "B"),
            ("Logo, a resposta correta é D.", "D", "A"),
            ("Jawaban: A", "A", "B"),
            ("Ответ: B", "B", "D"),
        ],
    ),
]


@pytest.mark.parametrize(("response", "label", "expected"), FINAL_CHOICE)
def test_the_final_stated_choice_counts(response: str, label: str, expected: float) -> None:
    assert gpqa(response, label, {}) == expected


# Each class of statement in a negation, a list, an elimination or a question names no option:
# ``(response, the letters it must not be read as)``.
NOT_CHOSEN = [
    pytest.param("The answer is not C.", "C", id="lead_negated"),
    pytest.param("I wouldn't pick A, honestly.", "A", id="pick_negated"),
    pytest.param("Answer: A, B or C", "ABC", id="lead_list"),
    pytest.param("Answer - A and C", "AC", id="answer_dash_list"),
    pytest.param("Not option C.", "C", id="option_sentence_negated"),
    pytest.param("We can eliminate option A and option B.", "AB", id="option_sentence_eliminated"),
    pytest.param("Option D, helium, is a noble gas.", "D", id="option_talked_about"),
    pytest.param("So not C.", "C", id="conclusion_negated"),
    pytest.param("So C?", "C", id="conclusion_asked"),
    pytest.param("So it's between A and C.", "AC", id="conclusion_list"),
    pytest.param("Actually, D is wrong.", "D", id="correction_denied"),
    pytest.param("Wait, not B.", "B", id="correction_negated"),
    pytest.param("The answer is not $\\text{(C)}$.", "C", id="math_mode_negated"),
    pytest.param("Neither A nor B is correct.", "AB", id="verdict_negated"),
    pytest.param("Vitamin C is correct here.", "C", id="verdict_of_a_name"),
    pytest.param("I think A is wrong.", "A", id="hedged_denied"),
    pytest.param("I don't think B.", "B", id="hedged_negated"),
    pytest.param("We ruled out A, then B.", "AB", id="ruled_out"),
    pytest.param("A. Carbon\nB. Nitrogen\nC. Oxygen\nD. Helium", "ABCD", id="options_restated"),
    pytest.param("答案不是C。", "C", id="chinese_negated"),
    pytest.param("答案\uff1aA或B", "AB", id="chinese_list"),
    pytest.param("选项A和选项B都不对。", "AB", id="chinese_eliminated"),
    pytest.param("答えはCではない。", "C", id="japanese_negated"),
    pytest.param("答えはAかBです。", "AB", id="japanese_list"),
    pytest.param("정답은 C가 아닙니다.", "C", id="korean_negated"),
    pytest.param("La respuesta no es C.", "C", id="spanish_negated"),
    pytest.param("La réponse n'est pas C.", "C", id="french_negated"),
    pytest.param("Die Antwort ist nicht C.", "C", id="german_negated"),
]


@pytest.mark.parametrize(("response", "letters"), NOT_CHOSEN)
def test_a_negated_or_listed_statement_names_no_option(response: str, letters: str) -> None:
    assert [gpqa(response, letter, {}) for letter in letters] == [0.0] * len(letters)


TEXT_CHOICES = [
    # a lead, then one option's text
    *_both_ways("text_after_a_lead", [("The answer is nitrogen, by its mass.", "B", "A")]),
    # a last sentence that names one option
    *_both_ways(
        "text_in_a_sentence",
        [
            ("So the gas must be oxygen.", "C", "B"),
            ("Definitely helium.", "D", "A"),
            ("After all that, carbon it is.", "A", "C"),
        ],
    ),
]


@pytest.mark.parametrize(("response", "label", "expected"), TEXT_CHOICES)
def test_an_options_text_in_a_sentence(response: str, label: str, expected: float) -> None:
    assert gpqa(response, label, CHOICES) == expected


@pytest.mark.parametrize(
    ("response", "letters"),
    [
        # negated, ruled out, or one of two named
        pytest.param("The answer is not nitrogen.", "B", id="negated"),
        pytest.param("Carbon and oxygen are both wrong.", "AC", id="ruled_out"),
        pytest.param("It is nitrogen or oxygen.", "BC", id="two_named"),
        pytest.param("We can eliminate helium.", "D", id="eliminated"),
    ],
)
def test_an_options_text_negated_names_no_option(response: str, letters: str) -> None:
    assert [gpqa(response, letter, CHOICES) for letter in letters] == [0.0] * len(letters)


def test_an_options_text_in_chinese() -> None:
    choices = {"choices": ["氢气", "氧气", "氮气", "氦气"]}
    assert gpqa("所以答案是氧气。", "B", choices) == 1.0
    assert gpqa("所以答案是氧气。", "A", choices) == 0.0
    assert gpqa("答案不是氧气。", "B", choices) == 0.0


BOX_THEN_CORRECTION = [
    # an explicit correction after the box takes it back
    *_both_ways(
        "box_corrected",
        [
            ("\\boxed{B}\n\nWait, actually the answer is D.", "D", "B"),
            ("So \\boxed{A}. Hmm, I made an error: the answer is C.", "C", "A"),
            ("\\boxed{(C)} No, D.", "D", "C"),
        ],
    ),
    # anything else after the box leaves it standing
    *_both_ways(
        "box_kept",
        [
            ("\\boxed{B}. Option D is wrong.", "B", "D"),
            ("\\boxed{B}. The answer is D.", "B", "D"),
            ("\\boxed{C}\nLet me double-check: C is correct.", "C", "A"),
        ],
    ),
]


BOX_NAMING_NO_OPTION_OR_A_LABELLED_ONE = [
    # a box that holds a value, not an option, hides no answer stated after it
    *_both_ways(
        "value_box_then_a_statement",
        [
            ("The ratio is \\boxed{42}.\n\n**Answer: D**", "D", "A"),
            ("So $x = \\boxed{3/4}$, hence the answer is (B).", "B", "C"),
        ],
    ),
    # a box that starts with an option and a colon names that option
    *_both_ways(
        "labelled_box",
        [
            ("\\boxed{E: the reaction is endothermic}", "E", "A"),
            ("$\\boxed{\\text{(C): Nitrogen}}$", "C", "B"),
        ],
    ),
]


@pytest.mark.parametrize(("response", "label", "expected"), BOX_NAMING_NO_OPTION_OR_A_LABELLED_ONE)
def test_a_value_box_or_a_labelled_box(response: str, label: str, expected: float) -> None:
    assert multiple_choice(response, label, {}) == expected


@pytest.mark.parametrize(
    "response",
    [
        # two labelled options in one box, or in boxes side by side
        pytest.param("\\boxed{A: carbon, B: nitrogen}", id="two_labels_in_a_box"),
        pytest.param("\\boxed{A: carbon} \\boxed{B: nitrogen}", id="labelled_boxes_side_by_side"),
        # a value box, then a statement that hedges
        pytest.param("\\boxed{42}. Answer: A or B", id="value_box_then_a_hedge"),
    ],
)
def test_labelled_or_value_boxes_that_hedge_name_no_option(response: str) -> None:
    assert [multiple_choice(response, letter, {}) for letter in "ABCDE"] == [0.0] * 5


@pytest.mark.parametrize(("response", "label", "expected"), BOX_THEN_CORRECTION)
def test_a_box_and_a_later_correction(response: str, label: str, expected: float) -> None:
    assert gpqa(response, label, {}) == expected


@pytest.mark.parametrize(
    "response",
    [
        # a run of boxes naming several letters, or boxes naming three letters anywhere
        pytest.param("\\boxed{A}\\boxed{B}\\boxed{C}\\boxed{D}", id="run_of_every_letter"),
        pytest.param("$\\boxed{A}$ or $\\boxed{B}$", id="either_box"),
        pytest.param("A: \\boxed{A}? B: \\boxed{B}? C: \\boxed{C}?", id="three_with_words"),
    ],
)
def test_boxes_that_hedge_name_no_option(response: str) -> None:
    assert [gpqa(response, letter, {}) for letter in "ABCD"] == [0.0] * 4


@pytest.mark.parametrize("kind", [gpqa, multiple_choice])
@pytest.mark.parametrize(
    "label",
    [
        pytest.param(None, id="none"),
        pytest.param("", id="empty"),
        pytest.param("  ", id="blank"),
        pytest.param([], id="empty_list"),
        pytest.param((), id="empty_tuple"),
        pytest.param([" ", None], id="list_of_blanks"),
    ],
)
def test_a_missing_label_is_not_applicable(kind: Any, label: Any) -> None:
    assert kind("Answer: C", label, {}) is None


def test_a_list_label_of_one_answer_is_read() -> None:
    assert gpqa("Answer: C", ["C"], {}) == 1.0
    assert gpqa("Answer: C", [" ", "(c)"], {}) == 1.0
    with pytest.raises(LabelError, match="label is a list of 2 answers"):
        gpqa("Answer: C", ["A", "C"], {})


NUMPY_LABELS = [
    # how a Parquet column arrives: read as the list or value it holds
    pytest.param(np.array(["C"]), 1.0, id="array_of_the_letter"),
    pytest.param(np.array(["A"]), 0.0, id="array_of_another_letter"),
    pytest.param(np.array([" ", "(c)"]), 1.0, id="array_with_a_blank"),
    pytest.param(np.int64(2), 1.0, id="numpy_index"),
    pytest.param(np.str_("C"), 1.0, id="numpy_string"),
    pytest.param(np.array([]), None, id="empty_array"),
    pytest.param(np.array([" "]), None, id="array_of_a_blank"),
]


@pytest.mark.parametrize("kind", [gpqa, multiple_choice])
@pytest.mark.parametrize(("label", "expected"), NUMPY_LABELS)
def test_a_numpy_label_is_read_as_what_it_holds(
    kind: Any, label: Any, expected: float | None
) -> None:
    assert kind("Answer: C", label, {}) == expected


def test_a_numpy_label_of_two_answers_is_an_error() -> None:
    with pytest.raises(LabelError, match="label is a list of 2 answers"):
        gpqa("Answer: C", np.array(["A", "C"]), {})


def test_lead_words_do_not_hide_each_other() -> None:
    # Lead words are found without overlaps: one that starts inside another at a word's start
    # would never be seen. Inside another one elsewhere it is inside a word (not a lead), or the
    # other one's leads cover it: 回答 for 答, 不对 for 对 (a correction, not a verdict), the
    # Arabic article's الإجابة for إجابة, ...
    inside = {
        (word, other)
        for word in choice_statements.TRIGGERS
        for other in choice_statements.TRIGGERS
        if word != other and word in other[1:]
    }
    at_a_word_start = {(w, o) for w, o in inside if f" {w}" in o}
    assert at_a_word_start == set()
    assert {(w, o) for w, o in inside if not w.isascii()} == {
        ("对", "不对"), ("對", "不對"), ("是", "而是"), ("答", "回答"), ("答", "解答"),
        ("답", "정답"), ("إجابة", "الإجابة"), ("اجابة", "الاجابة"), ("جواب", "الجواب"),
    }  # fmt: skip


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
        # a lead and its letter are one statement, at most STATEMENT_CHARS long
        pytest.param("Answer:" + SPACES + "C", "C", 0.0, id="after_the_lead_too_far_off"),
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
