"""SQuAD answer normalization and token F1, shared by ``f1`` and ``exact_match``.

The official SQuAD evaluation lowercases, removes ASCII punctuation and the articles a / an / the,
and splits on whitespace. Here punctuation also covers Unicode punctuation (``«»``, ``。``, ``—``),
so that answers in other scripts normalize the same way.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Sequence

from rewardrouter.errors import short_repr
from rewardrouter.rewards.labels import LabelError

_ARTICLES = re.compile(r"\b(?:a|an|the)\b", re.IGNORECASE)
_ASCII_PUNCTUATION = dict.fromkeys(map(ord, string.punctuation))


def _strip_punctuation(text: str) -> str:
    text = text.translate(_ASCII_PUNCTUATION)
    if text.isascii():
        return text
    return "".join(c for c in text if c.isascii() or unicodedata.category(c)[0] != "P")


def normalize_answer(text: str, *, lowercase: bool = True) -> str:
    """SQuAD normalization: lowercase, drop punctuation and articles, collapse whitespace.

    >>> normalize_answer("The  Eiffel Tower!")
    'eiffel tower'
    """
    text = _strip_punctuation(text.lower() if lowercase else text)
    return " ".join(_ARTICLES.sub(" ", text).split())


def normalized_truths(truths: Sequence[str], *, lowercase: bool = True) -> list[str]:
    """The label's answers normalized, those that normalize to nothing left out.

    Raises :class:`~rewardrouter.rewards.labels.LabelError` when every one does (``"A"``,
    ``"The"``, ``"?"``): no answer can be told right from wrong against it, and an empty
    response would match it.

    >>> normalized_truths(["A", "Apple"])
    ['apple']
    """
    kept = [n for n in (normalize_answer(t, lowercase=lowercase) for t in truths) if n]
    if not kept:
        raise LabelError(
            f"the label {short_repr(truths[0] if len(truths) == 1 else list(truths))} is only "
            "articles or punctuation once SQuAD-normalized: no answer can be compared with it "
            "(for option letters use kind `multiple_choice` or `gpqa`)"
        )
    return kept


def token_f1(prediction: str, truth: str) -> float:
    """Harmonic mean of token precision and recall of two normalized answers.

    When either side has no tokens, 1.0 if both have none, else 0.0 (as SQuAD scores it).
    """
    pred_tokens, true_tokens = prediction.split(), truth.split()
    if not pred_tokens or not true_tokens:
        return float(pred_tokens == true_tokens)
    if pred_tokens == true_tokens:
        return 1.0
    if set(pred_tokens).isdisjoint(true_tokens):
        return 0.0
    common = sum((Counter(pred_tokens) & Counter(true_tokens)).values())  # > 0: they share one
    precision, recall = common / len(pred_tokens), common / len(true_tokens)
    return 2 * precision * recall / (precision + recall)
