"""The final boxed answer of a response, including a multi-part answer spread over several boxes.

A response states its final answer in its last ``\\boxed{}``. When the answer has several parts,
models often box each part: ``the roots are \\boxed{2} and \\boxed{3}``, ``x = \\boxed{1}, y =
\\boxed{5}``. :func:`final_boxes` returns the contents of the last *run* of boxes: the last box
and the boxes right before it that are joined to it by nothing but connectors (commas, "and",
"or", math delimiters, spacing, ``x =``). Boxes separated by prose are not a run: in ``first
\\boxed{3}, then on reflection \\boxed{4}`` only ``4`` is the answer.
"""

from __future__ import annotations

import re

from rewardrouter.rewards.registry import last_boxed

# What may stand between two boxes of one multi-part answer.
_CONNECTOR = re.compile(
    r"(?:\s|\$|\\[\[\]()]|[,;.&:]|\\\\|\\q?quad\b|\\[,;:! ]|\band\b|\bor\b"
    r"|\\text\{\s*(?:and|or|,)?\s*\}|[a-zA-Z](?:_\{?\w{1,3}\}?)?\s*=)*"
)
_MAX_CONNECTOR = 40
_MAX_PARTS = 16


def _box_at(text: str, start: int) -> tuple[str, int] | None:
    """Content and end (after the closing brace) of the box starting at ``start``."""
    content = last_boxed(text[start:])  # the caller passes text that ends before the next box
    brace = text.find("{", start)
    if content is None or brace == -1:
        return None
    return content, brace + len(content) + 2


def final_boxes(text: str) -> list[str] | None:
    """Contents of the final run of boxes, first to last; None when the last box is missing or
    cut off before its closing brace.

    >>> final_boxes("so $x = \\\\boxed{2}$ and $x = \\\\boxed{3}$.")
    ['2', '3']
    >>> final_boxes("first \\\\boxed{3}, then on reflection \\\\boxed{4}")
    ['4']
    """
    last = last_boxed(text)
    if last is None:
        return None
    parts = [last]
    start = max(text.rfind("\\boxed"), text.rfind("\\fbox"))
    while len(parts) < _MAX_PARTS:
        before = max(text.rfind("\\boxed", 0, start), text.rfind("\\fbox", 0, start))
        if before == -1:
            break
        found = _box_at(text[:start], before)
        if found is None:
            break
        content, end = found
        gap = text[end:start]
        if len(gap) > _MAX_CONNECTOR or not _CONNECTOR.fullmatch(gap):
            break
        parts.append(content)
        start = before
    parts.reverse()
    return parts


def final_answer(text: str) -> str | None:
    """The final boxed answer as one string: a run of boxes is joined with ``", "`` (repeated
    parts once); None without a complete last box."""
    parts = final_boxes(text)
    if parts is None:
        return None
    distinct = list(dict.fromkeys(p.strip() for p in parts))
    return distinct[0] if len(distinct) == 1 else ", ".join(distinct)
