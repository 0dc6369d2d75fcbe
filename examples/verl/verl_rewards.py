"""A custom reward for the verl example: GSM8K's ``#### <answer>`` convention."""

from __future__ import annotations

from typing import Any


def hash_answer(args: Any, sample: Any, *, format_score: float = 0.0) -> float:
    """1.0 when the number after the last ``####`` equals the label; ``format_score`` when an
    answer is given but wrong; 0.0 when there is none.

    Commas and a trailing period are ignored (``#### 1,200.`` reads 1200).
    """
    _, marker, tail = sample.response.rpartition("####")
    words = tail.split()
    if not marker or not words:
        return 0.0
    answer = words[0].replace(",", "").rstrip(".")
    return 1.0 if answer == str(sample.label).replace(",", "").strip() else format_score
