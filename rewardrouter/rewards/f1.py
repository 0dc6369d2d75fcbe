"""``f1``: SQuAD token F1 between the final answer and the label."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rewardrouter.rewards.labels import label_texts
from rewardrouter.rewards.registry import builtin
from rewardrouter.rewards.squad import normalize_answer, normalized_truths, token_f1
from rewardrouter.rewards.thinking import after_thinking


@builtin("f1")
def f1(response: str, label: Any, metadata: Mapping[str, Any]) -> float | None:
    """SQuAD token F1 (0.0 to 1.0) of the response's final answer against the label.

    Contract: the answer is the text after the last ``</think>`` (the whole response when there is
    none; under ``boxed_f1`` the last box's content). Both sides are SQuAD-normalized (lowercase,
    punctuation — Unicode too — and the articles a / an / the removed, whitespace collapsed), then
    scored by token overlap; a label listing several answers (a list, Hugging Face SQuAD's
    ``answers`` dict, a JSON list stored as text: see
    :func:`~rewardrouter.rewards.labels.label_texts`) scores its best entry, and a label of
    another shape raises :class:`~rewardrouter.rewards.labels.LabelError`, as does a label that
    normalizes to nothing (``"A"``, ``"The"``: an empty answer would match it). An empty answer
    scores 0.0. ``None`` when the label is missing or blank.
    """
    truths = label_texts(label, unbox=False)
    if truths is None:
        return None
    prediction = normalize_answer(after_thinking(response))
    return max(token_f1(prediction, truth) for truth in normalized_truths(truths))
