"""The final boxed answer of a response, including a multi-part answer spread over several boxes.

A response states its final answer in its last ``\\boxed{}``. When the answer has several parts,
models often box each part: ``the roots are \\boxed{2} and \\boxed{3}``, ``x = \\boxed{1}, y =
\\boxed{5}``. :func:`final_boxes` returns the contents of the last *run* of boxes: the last box
and the boxes right before it that are joined to it by nothing but separators: punctuation,
"and", "or", math delimiters, spacing, a name and its equals sign (``x =``), a part label
(``(b)``, ``for part (a)``), and a unit right after a box (``\\boxed{3} cm and \\boxed{4} cm``).
Any other word between two boxes ends the run, and the last box is the answer: in
``\\boxed{41}, so \\boxed{42}``, ``\\boxed{41}, final answer \\boxed{42}`` or ``first \\boxed{3},
then on reflection \\boxed{4}``, a self-correction, only the last box counts. A label, which
does not correct itself, may also name its parts (``\\boxed{1} papers and \\boxed{2} bins``).
"""

from __future__ import annotations

import re

from rewardrouter.rewards.registry import boxed_at, last_box_start

# What may stand between two boxes of one multi-part answer: separators only.
_SEPARATOR = re.compile(
    r"\s|\$|\\[\[\]()]|[,;.&:]|\\\\|\\q?quad\b|\\[,;:! ]|\band\b|\bor\b"
    r"|(?:\b(?i:for)\s+)?(?:\b(?i:part)\s*)?\((?:[a-zA-Z]|[ivx]{1,4}|\d{1,2})\)|\\text\{|\}|[a-zA-Z](?:_\{?\w{1,3}\}?)?\s*="
)
# A unit right after the earlier box's closing brace, in \text{} or not: part of its answer.
_UNITS = "|".join(
    (
        "mm|cm|km|m|inch|inches|ft|feet|foot|yd|yards?|mi|miles?|meters?|metres?",
        "mg|g|kg|grams?|kilograms?|lbs?|pounds?|oz|ounces?|[mk]?L|liters?|litres?",
        "ms|s|sec|seconds?|min|minutes?|h|hr|hours?|days?|weeks?|months?|years?",
        "degrees?|radians?|units?|dollars?|cents?|percent|square units|sq",
    )
)
_UNIT_AFTER_BOX = re.compile(
    rf"(?:\s|\\[,;: ]|\\text\{{|\\mathrm\{{)*(?:{_UNITS})\b\}}?(?:\^\{{?[23]\}}?)?"
)
# A label (which does not correct itself) may also name its parts between boxes: up to two words
# besides separators, when a comma, a semicolon, "and" or "or" joins them ("\\boxed{1} papers and
# \\boxed{2} bins"), unless a word takes a box back ("or rather").
_LABEL_WORDS = 2
_JOINER = re.compile(r"\band\b|\bor\b|[,;]")
_WORD = re.compile(r"[A-Za-z]{1,12}")
_REVISION = frozenset(
    {"rather", "actually", "wait", "no", "not", "instead", "then", "maybe", "perhaps", "hmm"}
)
_MAX_CONNECTOR = 60
_MAX_PARTS = 16


def _joins(gap: str, loose: bool) -> bool:
    """Whether ``gap``, the text between two boxes, joins them into one multi-part answer:
    nothing but separators, after a unit that ends the earlier box's answer. ``loose`` (a
    label): also any gap without a letter or digit (``\\boxed{35} ++ \\boxed{4}``), and up to
    two words that name the parts (:data:`_LABEL_WORDS`)."""
    if len(gap) > _MAX_CONNECTOR:
        return False
    if loose and not any(c.isalnum() for c in gap):
        return True
    unit = _UNIT_AFTER_BOX.match(gap)
    rest = _SEPARATOR.sub(" ", gap[unit.end() :] if unit is not None else gap).split()
    if not rest or not loose:
        return not rest
    words = [w for w in rest if _WORD.fullmatch(w) and w.lower() not in _REVISION]
    return len(words) == len(rest) <= _LABEL_WORDS and _JOINER.search(gap) is not None


def final_run(text: str, *, loose: bool = False) -> tuple[list[str], int] | None:
    """Contents of the final run of boxes, first to last, and where the run starts; None when the
    last box is missing or cut off before its closing brace. ``loose`` (for labels, which do not
    hedge): boxes separated by symbols only are one run too."""
    start = last_box_start(text, len(text))
    last = boxed_at(text, start)
    if last is None:
        return None
    parts = [last[0]]
    # a box joined to the run closes at most _MAX_CONNECTOR characters before it starts
    while len(parts) < _MAX_PARTS and "}" in text[max(0, start - _MAX_CONNECTOR - 1) : start]:
        before = last_box_start(text, start)
        box = boxed_at(text, before)
        # the box must close before the next one starts, and only connectors lie between them
        if box is None or box[1] > start or not _joins(text[box[1] : start], loose):
            break
        parts.append(box[0])
        start = before
    parts.reverse()
    return parts, start


def final_boxes(text: str) -> list[str] | None:
    """Contents of the final run of boxes, first to last; None when the last box is missing or
    cut off before its closing brace.

    >>> final_boxes("so $x = \\\\boxed{2}$ and $x = \\\\boxed{3}$.")
    ['2', '3']
    >>> final_boxes("first \\\\boxed{3}, then on reflection \\\\boxed{4}")
    ['4']
    """
    run = final_run(text)
    return run[0] if run is not None else None


def joined(parts: list[str]) -> str:
    """Several answer parts as one answer: joined with ``", "``, repeated parts once."""
    distinct = list(dict.fromkeys(p.strip() for p in parts))
    return distinct[0] if len(distinct) == 1 else ", ".join(distinct)


def final_answer(text: str, *, loose: bool = False) -> str | None:
    """The final boxed answer as one string (a run of boxes :func:`joined`); None without a
    complete last box. ``loose`` as for :func:`final_run`."""
    run = final_run(text, loose=loose)
    return joined(run[0]) if run is not None else None
