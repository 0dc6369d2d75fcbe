"""``math`` (``extract: any``) on worked solutions in many languages, beside plain math-verify and
MGSM's own readers, the cases read at run time from the peers' sources
(``benchmarks/math_languages.py``; nothing of theirs is copied here):

- MGSM's native chain-of-thought exemplars, 8 in each of 11 languages (a google-research/url-nlp
  checkout: ``tests/rr_checkouts.py``), each against its answer and against another;
- lighteval's multilingual extraction tests (a huggingface/lighteval checkout).
"""

from __future__ import annotations

from typing import Any

import pytest
import rr_benchmarks
from rr_checkouts import LIGHTEVAL, URL_NLP, checkout

from rewardrouter.rewards.math.kind import math_answer


@pytest.fixture(scope="module")
def languages() -> Any:
    for needed in ("external_suites", "choice_suites"):  # what it imports, loaded the same way
        rr_benchmarks.load(needed)
    return rr_benchmarks.load("math_languages")


SUITES = [
    # (the checkout, how its cases are read, how many, what plain math-verify gets right)
    pytest.param(URL_NLP, "mgsm_cases", 176, 170, id="mgsm_native_exemplars"),
    pytest.param(LIGHTEVAL, "lighteval_cases", 41, 38, id="lighteval_multilingual_math"),
]


@pytest.mark.parametrize(("source", "reader", "count", "math_verify_right"), SUITES)
def test_math_reads_every_solution_and_credits_no_other_answer(
    languages: Any, source: Any, reader: str, count: int, math_verify_right: int
) -> None:
    cases = getattr(languages, reader)(checkout(source))
    assert len(cases) == count
    ours = languages.tally(languages._math, cases)
    theirs = languages.tally(languages._math_verify, cases)
    wrong = [(c.suite, c.gold, c.pred[-80:]) for c in cases if languages._math(c) != c.expected]
    assert wrong == []
    assert (ours.right, ours.false_positives) == (count, 0)
    assert theirs.right == math_verify_right  # the peer's verdict beside ours


def test_mgsm_reads_as_mgsm_own_filters(languages: Any) -> None:
    pytest.importorskip("lm_eval", reason="MGSM's task filters are lm-eval's: pip install lm-eval")
    cases = languages.mgsm_cases(checkout(URL_NLP))
    for name, grade in languages.lm_eval_mgsm().items():
        theirs = languages.tally(grade, cases)
        assert theirs.false_positives == 0, name
        assert languages.tally(languages._math, cases).right >= theirs.right, name


# Each class of answer the readers above miss, written here afresh: (solution, its answer, another)
CLASSES = [
    # a number glued to CJK text, without spaces
    pytest.param("所以小明一共有57颗糖。", "57", "58", id="glued_to_chinese"),
    pytest.param("したがって、残りは18個です。", "18", "19", id="glued_to_japanese"),
    pytest.param("最后的比例为7/12", "7/12", "7/13", id="fraction_glued_to_chinese"),
    # a list's marker at a line's start is no answer: the number of the last item is
    pytest.param("Steps:\n1. Add: 30 + 14 = 44\n2. Conclude", "44", "2", id="list_marker"),
    # a sentence that states its answer first, then a number that is not it
    pytest.param(
        "Réponse : il lui reste 35 euros au bout de 4 semaines.", "35", "4", id="french_sentence"
    ),
    pytest.param("La respuesta es 64, porque 8 por 8 son 64.", "64", "8", id="spanish_reason"),
    pytest.param("Die Antwort lautet 9 Äpfel nach 3 Tagen.", "9", "3", id="german_sentence"),
]


@pytest.mark.parametrize(("solution", "answer", "other"), CLASSES)
def test_each_class_of_answer_is_read(solution: str, answer: str, other: str) -> None:
    assert math_answer(solution, answer, {}, extract="any") == 1.0
    assert math_answer(solution, other, {}, extract="any") == 0.0
