"""``exact_match``: SQuAD exact match, the simplest built-in."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rewardrouter.rewards.labels import label_texts
from rewardrouter.rewards.registry import builtin
from rewardrouter.rewards.squad import normalize_answer, normalized_truths
from rewardrouter.rewards.thinking import after_thinking


@builtin("exact_match")
def exact_match(
    response: str, label: Any, metadata: Mapping[str, Any], *, case_sensitive: bool = False
) -> float | None:
    """1.0 when the final answer equals the label after SQuAD normalization, else 0.0.

    Contract: the answer is the text after the last ``</think>`` (the whole response when there is
    none; under ``boxed_exact_match`` the last box's content). Both sides lose punctuation
    (Unicode too), the articles a / an / the and extra whitespace, and are lowercased unless
    ``case_sensitive``; then they must be equal. A label listing several answers (a list, SQuAD's
    ``answers`` dict, a JSON list stored as text) accepts any of them; a label of another shape
    raises :class:`~rewardrouter.rewards.labels.LabelError`, as does a label that normalizes to
    nothing (``"A"``: no answer could equal it). An empty answer scores 0.0; ``None`` (not
    applicable) when the label is missing or blank.
    """
    truths = label_texts(label, unbox=False)
    if truths is None:
        return None
    lowercase = not case_sensitive
    expected = normalized_truths(truths, lowercase=lowercase)
    got = normalize_answer(after_thinking(response), lowercase=lowercase)
    return float(got in expected) if got else 0.0
