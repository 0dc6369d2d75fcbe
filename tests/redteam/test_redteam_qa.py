"""``exact_match`` and ``f1``: short answers a policy would write to be graded right without
giving the answer.

Each hostile response is scored in one batch between honest ones to the same label: it earns
0.0 (``exact_match``, ``f1``) or its own error, the honest rows earn 1.0, the batch is scored.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rewardrouter import Router, compile_router

from .conftest import Canary, score_between_honest_rows

HOSTILE = [
    pytest.param("", "Paris", id="empty"),
    pytest.param("   \n\t", "Paris", id="whitespace"),
    pytest.param("!!! ... ???", "Paris", id="punctuation_only"),
    pytest.param("The a an the.", "Paris", id="articles_only"),
    pytest.param("<think>Paris</think>London", "Paris", id="the_answer_in_the_thinking"),
    pytest.param("<think>I do not know</think>", "Paris", id="nothing_after_the_thinking"),
    pytest.param("Par\u200bis", "Paris", id="zero_width_space_inside"),
    pytest.param("Lyon, Marseille, Nice", "Paris", id="other_answers_listed"),
    # a label of only articles or punctuation: every answer would be compared with nothing
    pytest.param("the the", "A", id="articles_against_a_letter_label"),
    pytest.param("!!!", "The", id="punctuation_against_an_article_label"),
    pytest.param("an a", "?", id="articles_against_a_punctuation_label"),
]


@pytest.fixture(scope="module")
def router() -> Iterator[Router]:
    routes = {kind: {"rewards": {"t": {"kind": kind}}} for kind in ("exact_match", "f1")}
    with compile_router({"routes": routes}) as built:
        yield built


def row(kind: str, response: str, label: str) -> dict[str, Any]:
    return {"response": response, "label": label, "metadata": {"dataset": kind}}


@pytest.mark.parametrize("kind", ["exact_match", "f1"])
@pytest.mark.parametrize(("hostile", "label"), HOSTILE)
def test_hostile_answer_earns_nothing(
    router: Router, canary: Canary, kind: str, hostile: str, label: str
) -> None:
    honest = row(kind, "Paris", "Paris")
    bad = score_between_honest_rows(router, canary, honest, row(kind, hostile, label), 10.0)
    if label.strip("?").lower() in ("", "a", "the"):
        assert (bad.reward, bad.status) == (None, "error"), bad
        assert "only articles or punctuation once SQuAD-normalized" in str(bad.error_message)
    else:
        assert (bad.reward, bad.status) == (0.0, "ok"), bad
