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
