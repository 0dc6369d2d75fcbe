"""``f1`` and ``exact_match``: SQuAD-normalized answers."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import pytest

from rewardrouter.rewards import BoxedAnswer
from rewardrouter.rewards.exact import exact_match
from rewardrouter.rewards.f1 import f1
from rewardrouter.rewards.labels import LabelError

MEGABYTE = "word " * 200_000

F1_CASES = [
    # identical
    pytest.param("Denver Broncos", "Denver Broncos", 1.0, id="identical"),
    # case, punctuation and articles do not count
    pytest.param("The Denver Broncos!", "denver broncos", 1.0, id="normalized"),
    # half the tokens: precision 1, recall 1/2
    pytest.param("Broncos", "Denver Broncos", 2 / 3, id="partial"),
    # extra tokens: precision 1/2, recall 1
    pytest.param("Denver Broncos won it", "Denver Broncos", 2 / 3, id="extra_tokens"),
    # nothing in common
    pytest.param("Carolina Panthers", "Denver Broncos", 0.0, id="wrong"),
    # repeated tokens count once per occurrence in both
    pytest.param("the the cat cat", "cat", 2 / 3, id="repeated_tokens"),
    # only the text after </think> is the answer
    pytest.param(
        "<think>Broncos? Panthers?</think> Denver Broncos",
        "Denver Broncos",
        1.0,
        id="after_thinking",
    ),
    # a list label scores its best entry
    pytest.param("Broncos", ["Panthers", "Broncos"], 1.0, id="list_label"),
    # numbers are tokens like any other
    pytest.param("1,000 people", "1000 people", 1.0, id="thousands_punctuation"),
    # negative sign is punctuation in SQuAD
    pytest.param("-5 degrees", "5 degrees", 1.0, id="negative_sign_dropped"),
    # unicode punctuation goes too
    pytest.param("«Zürich»", "Zürich", 1.0, id="unicode"),
    # an empty response
    pytest.param("", "Denver Broncos", 0.0, id="empty_response"),
    # cut off mid-answer: partial credit
    pytest.param("Denver Bron", "Denver Broncos", 0.5, id="cut_mid_answer"),
    # no label: not applicable
    pytest.param("Broncos", None, None, id="none_label"),
    # a blank label: not applicable
    pytest.param("Broncos", " ", None, id="empty_label"),
    # a megabyte of words against one of them: tiny precision
    pytest.param(MEGABYTE, "word", 2 / 200_001, id="one_megabyte"),
]


@pytest.mark.parametrize(("response", "label", "expected"), F1_CASES)
def test_f1(response: str, label: Any, expected: float | None) -> None:
    got = f1(response, label, {})
    assert got == (pytest.approx(expected) if expected is not None else None)


@pytest.mark.parametrize("grader", [f1, exact_match])
@pytest.mark.parametrize("label", ["A", "the", "?", ["An", "the"]])
def test_a_label_that_normalizes_to_nothing_is_refused(grader: Any, label: Any) -> None:
    # an empty or a content-free answer would match it: the sample's error, never a reward
    for response in ("", "A", "the", "!!!"):
        with pytest.raises(LabelError, match="only articles or punctuation once SQuAD-normalized"):
            grader(response, label, {})
    assert (
        grader("an apple", [*label, "Apple"] if isinstance(label, list) else [label, "Apple"], {})
        == 1.0
    )


EXACT_CASES = [
    # identical
    pytest.param("Paris", "Paris", 1.0, id="identical"),
    # case, punctuation, articles and spacing are normalized away
    pytest.param("  The   paris. ", "Paris", 1.0, id="normalized"),
    # a different answer
    pytest.param("Lyon", "Paris", 0.0, id="wrong"),
    # a longer answer is not exact
    pytest.param("Paris, France", "Paris", 0.0, id="longer"),
    # after </think>
    pytest.param("<think>Lyon?</think>Paris", "Paris", 1.0, id="after_thinking"),
    # a list label accepts any entry
    pytest.param("NYC", ["New York", "NYC"], 1.0, id="list_label"),
    # numbers: punctuation goes, so 1,000 equals 1000
    pytest.param("1,000", "1000", 1.0, id="thousands"),
    # 0.5 is not 1/2 here: this is string matching
    pytest.param("0.5", "1/2", 0.0, id="no_math"),
    # percent is punctuation
    pytest.param("50%", "50", 1.0, id="percent"),
    # unicode letters are kept, unicode punctuation dropped
    pytest.param("¿Zürich?", "zürich", 1.0, id="unicode"),
    # an empty response
    pytest.param("", "Paris", 0.0, id="empty_response"),
    # cut off mid-answer
    pytest.param("Par", "Paris", 0.0, id="cut_mid_answer"),
    # an integer label
    pytest.param("42", 42, 1.0, id="integer_label"),
    # no label: not applicable
    pytest.param("Paris", None, None, id="none_label"),
    # a blank label: not applicable
    pytest.param("Paris", "", None, id="empty_label"),
    # a megabyte is not the label
    pytest.param(MEGABYTE, "word", 0.0, id="one_megabyte"),
]


@pytest.mark.parametrize(("response", "label", "expected"), EXACT_CASES)
def test_exact_match(response: str, label: Any, expected: float | None) -> None:
    assert exact_match(response, label, {}) == expected


def test_exact_match_case_sensitive() -> None:
    assert exact_match("paris", "Paris", {}, case_sensitive=True) == 0.0
    assert exact_match("The Paris.", "Paris", {}, case_sensitive=True) == 1.0


def test_boxed_variants_grade_the_content() -> None:
    assert exact_match(BoxedAnswer("Paris"), "paris", {}) == 1.0
    assert f1(BoxedAnswer(""), "paris", {}) == 0.0


SQUAD_ANSWERS = {"text": ["Denver Broncos", "Denver Broncos"], "answer_start": [177, 177]}

LABEL_SHAPES = [
    # Hugging Face SQuAD's `answers` column: its texts are the acceptable answers
    pytest.param("Denver Broncos", SQUAD_ANSWERS, 1.0, 1.0, id="squad_answers"),
    pytest.param("Carolina Panthers", SQUAD_ANSWERS, 0.0, 0.0, id="squad_answers_wrong"),
    pytest.param("Broncos", SQUAD_ANSWERS, 2 / 3, 0.0, id="squad_answers_partial"),
    # ...and the same stored as JSON text
    pytest.param("Denver Broncos", json.dumps(SQUAD_ANSWERS), 1.0, 1.0, id="squad_json"),
    # a JSON list stored as a string: its entries, not the text of the list
    pytest.param("Denver Broncos", '["Denver Broncos", "Broncos"]', 1.0, 1.0, id="json_list"),
    pytest.param("Panthers", '["Denver Broncos", "Broncos"]', 0.0, 0.0, id="json_list_wrong"),
    # a list column read from Parquet arrives as a NumPy array
    pytest.param("Broncos", np.array(["Denver Broncos", "Broncos"]), 1.0, 1.0, id="numpy_array"),
    # verl's reward_model column
    pytest.param("Paris", {"ground_truth": "Paris", "style": "rule"}, 1.0, 1.0, id="verl_dict"),
    # SQuAD v2's unanswerable question lists no answer: not applicable, never a score
    pytest.param("Paris", {"text": [], "answer_start": []}, None, None, id="squad_no_answer"),
    # text that only looks like JSON stays text
    pytest.param("[1, 2]", "[1, 2]", 1.0, 1.0, id="bracketed_text"),
]


@pytest.mark.parametrize(("response", "label", "f1_reward", "exact_reward"), LABEL_SHAPES)
def test_label_shapes(response: str, label: Any, f1_reward: Any, exact_reward: Any) -> None:
    assert f1(response, label, {}) == pytest.approx(f1_reward)
    assert exact_match(response, label, {}) == exact_reward


REFUSED_LABELS = [
    pytest.param({"answer": "Paris"}, "label is a dict with keys 'answer'", id="other_dict"),
    pytest.param('{"answer": "Paris"}', "label is a dict with keys 'answer'", id="other_json_dict"),
    pytest.param(["Paris", ["Lyon"]], "holds a value of type list", id="nested_list"),
    pytest.param([{"text": "Paris"}], "holds a value of type dict", id="list_of_dicts"),
    pytest.param(True, "is a boolean", id="boolean"),
    pytest.param({"text": [True]}, "holds a boolean", id="squad_boolean"),
    pytest.param(object(), "is a value of type object", id="object"),
    # past Python's limit on writing an int as text: its ValueError blamed the response
    pytest.param(10**5000, "is an integer of 16610 bits", id="integer_of_5001_digits"),
]


@pytest.mark.parametrize(("label", "message"), REFUSED_LABELS)
def test_labels_of_another_shape_are_refused(label: Any, message: str) -> None:
    # a label read wrongly gives a plausible score: it is an error, with what to do
    for grade in (f1, exact_match):
        with pytest.raises(LabelError, match=re.escape(message)) as info:
            grade("Paris", label, {})
        assert "map data.columns.label" in str(info.value)
