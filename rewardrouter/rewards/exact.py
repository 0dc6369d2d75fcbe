"""Exact-match grading: the simplest built-in, and the core router's example grader."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rewardrouter.rewards.registry import builtin

_SPACE = re.compile(r"\s+")


def _normalize(text: str, case_sensitive: bool) -> str:
    text = _SPACE.sub(" ", text).strip()
    return text if case_sensitive else text.casefold()


@builtin("exact_match")
def exact_match(
    response: str, label: Any, metadata: Mapping[str, Any], *, case_sensitive: bool = False
) -> float | None:
    """1.0 when the response equals the label after whitespace (and case) normalization.

    Contract: whitespace runs collapse to one space and ends are stripped; comparison ignores case
    unless ``case_sensitive``. A list label accepts any of its entries. ``None`` (not applicable)
    when the label is missing; an empty response scores 0.0.
    """
    if label is None:
        return None
    labels = label if isinstance(label, list | tuple) else [label]
    got = _normalize(response, case_sensitive)
    return float(any(got == _normalize(str(lab), case_sensitive) for lab in labels))
