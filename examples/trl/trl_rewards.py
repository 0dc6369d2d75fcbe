"""Custom rewards for the TRL example's ``capitals`` route.

The router calls them as ``fn(args, sample)``; under TRL ``sample.response`` is the completion
text and ``sample.label`` the row's ``solution`` column.
"""

from __future__ import annotations

from typing import Any


def keyword_coverage(args: Any, sample: Any) -> float | None:
    """The fraction of the label's comma-separated keywords that the response contains.

    Case is ignored. ``None`` (not applicable) for a row without keywords.
    """
    keywords = [k.strip().lower() for k in str(sample.label or "").split(",") if k.strip()]
    if not keywords:
        return None
    text = sample.response.lower()
    return sum(k in text for k in keywords) / len(keywords)


def brevity(args: Any, sample: Any, *, budget: int = 200) -> float:
    """1.0 for an empty response, falling linearly to 0.0 at ``budget`` characters."""
    return max(0.0, 1.0 - len(sample.response) / budget)
