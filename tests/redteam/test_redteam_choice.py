"""``gpqa`` and ``multiple_choice``: responses a policy would write to be credited with an option
it did not choose, whatever the label, or to stall the grader.

Each hostile response is scored in one batch beside an honest response to the same question,
through a router compiled from a config with ``kind: gpqa`` (and ``multiple_choice``): the
hostile one earns 0.0 against *every* option letter (it names all of them, or none it stands
by), the honest one earns 1.0 against its own letter, and the batch is scored within a bound
whatever the hostile text's length.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from rewardrouter import Router, compile_router

from .conftest import Canary

#: What a batch of every case against every letter may take on a loaded machine, in seconds.
BATCH_SECONDS = 20.0
LETTERS = "ABCD"
K100 = 100_000

HOSTILE = [
    # -- every option at once
    pytest.param(
        "\\boxed{A}\\boxed{B}\\boxed{C}\\boxed{D}", "So \\boxed{C}.", id="every_letter_boxed"
    ),
    pytest.param(
        "A: \\boxed{A}? B: \\boxed{B}? C: \\boxed{C}? D: \\boxed{D}?",
        "So \\boxed{C}.",
        id="every_letter_boxed_between_words",
    ),
    pytest.param("$\\boxed{A}$ or $\\boxed{C}$", "$\\boxed{C}$", id="either_of_two_boxes"),
    pytest.param(
        "\\boxed{A: carbon, B: nitrogen, C: oxygen, D: helium}",
        "\\boxed{C: oxygen}",
        id="every_option_labelled_in_a_box",
    ),
    pytest.param(
        "\\boxed{A: x}\\boxed{B: x}\\boxed{C: x}\\boxed{D: x}",
        "\\boxed{C: oxygen}",
        id="every_option_in_a_labelled_box",
    ),
    pytest.param(
        "\\boxed{0}. Answer: A, B, C or D",
        "\\boxed{0}. Answer: C",
        id="value_box_then_every_letter",
    ),
    pytest.param("A B C D", "C", id="a_b_c_d"),
    pytest.param("Answer: A B C D", "Answer: C", id="answer_every_letter"),
    pytest.param("The answer is A, B, C or D.", "The answer is C.", id="answer_one_of_them"),
    pytest.param("(A) (B) (C) (D)", "(C)", id="every_letter_in_parentheses"),
    pytest.param("A\nB\nC\nD", "C", id="every_letter_on_its_line"),
    pytest.param(
        "A. Carbon\nB. Nitrogen\nC. Oxygen\nD. Helium",
        "C. Oxygen",
        id="the_options_restated",
    ),
    pytest.param(
        "Answer: A. Answer: B. Answer: C. Answer: D.", "Answer: C.", id="every_answer_in_a_row"
    ),
    pytest.param(
        "Option A. Option B. Option C. Option D.", "Option C.", id="every_option_sentence"
    ),
    pytest.param(
        "答案是A。Respuesta: B. Réponse : C. Antwort: D.",
        "答案是C。",
        id="every_answer_in_four_languages",
    ),
    pytest.param(
        "Jibu ni A. Impendulo ithi B. คำตอบคือ C. उत्तर है D.",
        "उत्तर है (C)",
        id="every_answer_in_four_more_languages",
    ),
    # -- lists in the languages of MMLU-ProX and simple-evals: "or", "and", their commas
    pytest.param("الإجابة: أ أو ب أو ج أو د", "الإجابة: ج", id="arabic_letters_or"),
    pytest.param("الإجابة: أ، ب، ج، د", "الإجابة هي (C)", id="arabic_commas"),
    pytest.param("उत्तर है (A) या (B) या (C) या (D)", "उत्तर है (C)", id="hindi_or"),
    pytest.param("উত্তর: অ, ব, ড, ঢ", "উত্তরঃ ড", id="bengali_letters_listed"),
    pytest.param("คำตอบคือ A หรือ B หรือ C หรือ D", "คำตอบคือ (C)", id="thai_or"),
    pytest.param("Câu trả lời là A hoặc B hoặc C hoặc D", "Câu trả lời là (C)", id="vietnamese_or"),
    pytest.param("Jibu ni A au B au C au D", "Jibu ni (C)", id="swahili_or"),
    pytest.param("Ìdáhùn náà ni A tàbí B tàbí C tàbí D", "Ìdáhùn náà ni (C)", id="yoruba_or"),
    pytest.param("جواب (A) یا (B) یا (C) یا (D) ہے", "جواب (C) ہے", id="urdu_or"),
    pytest.param("Відповідь: A або B або C або D", "Відповідь: (C)", id="ukrainian_or"),  # noqa: RUF001
    pytest.param("Answer: A? B? C? D?", "Answer: C", id="every_letter_asked"),
    pytest.param("Answer:\u200bA\u200bB\u200bC\u200bD", "Answer:\u200bC", id="zero_width_spaces"),
    # -- negated where the language puts the negation: before the lead, or after the letter
    pytest.param(
        "उत्तर (A) नहीं है। उत्तर (B) नहीं है। उत्तर (C) नहीं है। उत्तर (D) नहीं है।",
        "उत्तर (C) हो।",
        id="hindi_negated_after_the_letter",
    ),
    pytest.param("উত্তর অ নয়, ব নয়, ড নয়, ঢ নয়", "উত্তর হল ড", id="bengali_negated_after"),
    pytest.param(
        "ليست الإجابة أ. ليست الإجابة ب. ليست الإجابة ج. ليست الإجابة د.",
        "الإجابة: ج",
        id="arabic_negated_before",
    ),
    pytest.param(
        "Câu trả lời không phải là A, B, C hay D", "Câu trả lời là C", id="vietnamese_negated"
    ),
    pytest.param(
        "أ. كربون\nب. نيتروجين\nج. أكسجين\nد. هيليوم", "الإجابة: ج", id="arabic_options_restated"
    ),
    pytest.param("Câu hỏi khó.", "Câu trả lời là C", id="a_word_that_starts_with_a_letter"),
    pytest.param("I think A, B, C or D.", "I think C.", id="hedged_list"),
    pytest.param("Answer: A-D", "Answer: C", id="a_range"),
    pytest.param("Answer: A\u2013D", "Answer: C", id="a_range_with_an_en_dash"),
    pytest.param("Answer: A through D", "Answer: C", id="a_range_in_words"),
    pytest.param("Answer: A|C", "Answer: C", id="alternatives_by_a_bar"),
    pytest.param("Answer: C (or possibly A)", "Answer: C", id="another_letter_in_parentheses"),
    # -- an answer that is not one
    pytest.param("The answer is not A, not B, not C, not D.", "Answer: C", id="all_negated"),
    pytest.param(
        "We can eliminate option A, option B, option C and option D.",
        "We can eliminate the others, so C.",
        id="all_eliminated",
    ),
    pytest.param("So A? B? C? D?", "So C.", id="asked_not_stated"),
    pytest.param("<think>Answer: C</think>", "<think>hmm</think>Answer: C", id="only_thinking"),
    pytest.param("Answer: C\n\\boxed{C", "Answer: C\n\\boxed{C}", id="cut_off_in_its_box"),
    pytest.param("Answer: \u0421", "Answer: C", id="cyrillic_look_alike"),
    # -- 100,000 characters
    pytest.param("A B C D " * (K100 // 8), "C", id="a_b_c_d_100k"),
    pytest.param("Answer: " * (K100 // 8), "Answer: C", id="answer_colons_100k"),
    pytest.param("the answer is " * (K100 // 14), "the answer is C", id="leads_100k"),
    pytest.param("(A)(B)(C)(D)" * (K100 // 12), "(C)", id="parentheses_100k"),
    pytest.param("\\boxed{A}\\boxed{B}" * (K100 // 18), "\\boxed{C}", id="boxes_100k"),
    pytest.param("A\nB\nC\nD\n" * (K100 // 8), "C", id="lines_100k"),
    pytest.param("Answer: A" + " " * K100 + "B C D", "Answer: C", id="letters_100k_apart"),
    pytest.param("so " * (K100 // 3), "So C.", id="hedges_100k"),
    pytest.param("选" * K100, "选C", id="chinese_leads_100k"),
    pytest.param("$" * K100 + "C", "$C$", id="dollars_100k"),
]


@pytest.fixture(scope="module")
def router() -> Iterator[Router]:
    config = {
        "default_route": "gpqa",
        "routes": {
            "gpqa": {"rewards": {"correct": {"kind": "gpqa"}}},
            "mc": {"rewards": {"correct": {"kind": "multiple_choice"}}},
        },
    }
    with compile_router(config) as built:
        yield built


def row(route: str, response: str, label: str) -> dict[str, Any]:
    return {
        "prompt": "Which gas? (A) carbon (B) nitrogen (C) oxygen (D) helium",
        "response": response,
        "label": label,
        "metadata": {"dataset": route},
    }


@pytest.mark.parametrize("route", ["gpqa", "mc"])
@pytest.mark.parametrize(("hostile", "honest"), HOSTILE)
def test_hostile_response_earns_nothing(
    router: Router, canary: Canary, route: str, hostile: str, honest: str
) -> None:
    rows = [row(route, honest, "C"), *(row(route, hostile, letter) for letter in LETTERS)]
    begun = time.monotonic()
    batch = router.score_sync(rows, failures="record")
    took = time.monotonic() - begun
    honest_result, *hostile_results = batch
    assert (honest_result.reward, honest_result.status) == (1.0, "ok")
    assert [(r.reward, r.status) for r in hostile_results] == [(0.0, "ok")] * len(LETTERS)
    assert took < BATCH_SECONDS / 4, f"the batch took {took:.1f} s"
    canary.absent_from(*batch)


def test_one_batch_of_every_hostile_response_is_scored(router: Router) -> None:
    # all at once, as a trainer's batch would hold them: each against every letter
    rows = [row("gpqa", str(p.values[1]), "C") for p in HOSTILE]
    rows += [row("gpqa", str(p.values[0]), letter) for p in HOSTILE for letter in LETTERS]
    begun = time.monotonic()
    batch = router.score_sync(rows, failures="record")
    took = time.monotonic() - begun
    honest, hostile = batch[: len(HOSTILE)], batch[len(HOSTILE) :]
    assert [r.reward for r in honest] == [1.0] * len(HOSTILE)
    assert [r.reward for r in hostile] == [0.0] * len(hostile)
    assert took < BATCH_SECONDS, f"the batch took {took:.1f} s"


@pytest.mark.parametrize(
    "hedge", ["Answer: I don't know", "Answer: I am not sure", "Answer: I'm not sure."]
)
def test_the_pronoun_i_is_not_option_i(router: Router, canary: Canary, hedge: str) -> None:
    """With ten options (A to J), "I don't know" after a lead gives no answer, not option I."""
    options = {"choices": [f"option {n}" for n in range(10)]}
    rows = [
        {"response": text, "label": "I", "metadata": {"dataset": "mc", **options}}
        for text in ("Answer: I", hedge, "The answer is (I).")
    ]
    batch = router.score_sync(rows, failures="record")
    assert [(r.reward, r.status) for r in batch] == [(1.0, "ok"), (0.0, "ok"), (1.0, "ok")]
    canary.absent_from(batch)
