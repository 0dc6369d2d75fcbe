"""``dapo``: DAPO's Minerva-style ``Answer:`` grading, returning ``{score, acc, pred}``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rewardrouter.outcome import UNDECIDED, Undecided
from rewardrouter.rewards.labels import label_texts
from rewardrouter.rewards.math.equivalence import answers_match, decided_match
from rewardrouter.rewards.registry import BoxedAnswer, builtin, last_boxed

# DAPO reads only the end of a response: a final answer line is short.
TAIL_CHARS = 300
_ANSWER_LINE = re.compile(r"answer\s*:\s*([^\n]+)", re.IGNORECASE)
# Markdown around an answer: **3**, `3`, and the "**Answer:** 3" that leaves "** 3" behind
_MARKDOWN = re.compile(r"\*\*|`")
_WRAPPERS = re.compile(r"\\(?:text|textbf|mathrm|mbox)\{([^{}]*)\}")
_DEGREES = re.compile(r"\^\s*(?:\{\s*\\circ\s*\}|\\circ)")
_SPACING = re.compile(r"\\[,;:! ]|\s+")
_SHORT_FRAC = re.compile(r"\\frac(?:\s*(\w)\s*(\w)|\s*(\w)(?=\{)|\{([^{}]*)\}\s*(\w))")
_SHORT_SQRT = re.compile(r"\\sqrt\s*(\w)")
_GROUPED_DIGITS = re.compile(r"^-?\d{1,3}(?:,\d{3})+(?:\.\d+)?$")
# Words a final answer carries besides its value (units, counted things); the Minerva list.
_UNIT_WORDS = re.compile(
    r"\\?(?:square|ways|integers|dollars|mph|inches|hours|km|units|sue|points|feet|minutes|"
    r"digits|cents|degrees|cm|gm|pounds|meters|meals|edges|students|childrentickets|multiples)\b"
)


def normalize_final_answer(text: str) -> str:
    """A final answer as Minerva compares it: value only, no units, spacing or markup.

    Keeps what follows the last ``=``; unwraps ``\\boxed``, ``\\text`` and friends; removes
    markdown bold and code marks, dollar signs, spacing, degree marks, unit words and a final
    period; spells ``\\frac12`` and ``\\sqrt2`` with braces; drops thousands separators from
    plain numbers.

    >>> normalize_final_answer("x = \\\\$1,000 \\\\text{dollars}.")
    '1000'
    """
    text = _MARKDOWN.sub("", text).rsplit("=", 1)[-1]
    boxed = last_boxed(text)
    if boxed is not None:
        text = boxed
    text = _WRAPPERS.sub(r"\1", text)
    text = _DEGREES.sub("", text.replace("\\$", "").replace("$", ""))
    text = _SPACING.sub("", _UNIT_WORDS.sub("", text))
    text = _SHORT_FRAC.sub(
        _braced_frac, text.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    )
    text = _SHORT_SQRT.sub(r"\\sqrt{\1}", text).rstrip(".")
    return text.replace(",", "") if _GROUPED_DIGITS.match(text) else text


def _braced_frac(match: re.Match[str]) -> str:
    num_a, den_a, num_b, num_c, den_c = match.groups()
    if num_a is not None:
        return f"\\frac{{{num_a}}}{{{den_a}}}"
    if num_b is not None:
        return f"\\frac{{{num_b}}}"
    return f"\\frac{{{num_c}}}{{{den_c}}}"


def _prediction(response: str) -> str | None:
    if isinstance(response, BoxedAnswer):
        return str(response)
    lines = _ANSWER_LINE.findall(response[-TAIL_CHARS:])
    return lines[-1] if lines else None


def _dapo(response: str, label: Any, *, exact: bool) -> dict[str, Any] | Undecided | None:
    truths = label_texts(label)
    if truths is None:
        return None
    found = _prediction(response)
    pred = normalize_final_answer(found) if found is not None else ""
    golds = [normalize_final_answer(t) for t in truths]
    acc: bool | None = bool(pred) and pred in golds
    if pred and not acc:
        # the Minerva normalization is lossy (it drops every space: \le x becomes \lex), so
        # the mathematical comparison reads the answer as written
        written = _as_written(found or "")
        acc = decided_match(written, truths) if exact else answers_match(written, truths)
        if acc is None:
            return UNDECIDED
    return {"score": 1.0 if acc else -1.0, "acc": bool(acc), "pred": pred}


def dapo_quick(
    response: str, label: Any, metadata: Mapping[str, Any]
) -> dict[str, Any] | Undecided | None:
    """``dapo`` without math-verify: the reward where the exact rules decide, else UNDECIDED."""
    return _dapo(response, label, exact=True)


@builtin("dapo", returns="dict", keys=("score", "acc", "pred"), cpu_heavy=True, quick=dapo_quick)
def dapo(response: str, label: Any, metadata: Mapping[str, Any]) -> dict[str, Any] | None:
    """``{score: 1.0 | -1.0, acc: bool, pred: str}`` from the last ``Answer:`` line (use key: score).

    Contract: the prediction is the text after the last ``Answer:`` (any case) within the last 300
    characters (under ``boxed_dapo``: the last box's content), normalized the Minerva way (see
    :func:`normalize_final_answer`); ``pred`` is that normalized text, ``""`` when there is no
    ``Answer:`` line. It is correct when it equals the normalized label, or else when the answer
    as written is mathematically equal to the label
    (:func:`~rewardrouter.rewards.math.equivalence.answers_match`, as ``math`` compares), so
    ``2.5``, ``\\frac{1}{2}`` or ``x+1`` labels compare as themselves: never truncated to an integer
    and never a crash. ``score`` is 1.0 when correct, -1.0 otherwise (empty, cut-off or unmarked
    responses included). ``None`` when the label is missing or blank.
    """
    reward = _dapo(response, label, exact=False)
    assert not isinstance(reward, Undecided)
    return reward


def _as_written(found: str) -> str:
    """The stated answer without markdown, and unboxed when it is boxed."""
    text = _MARKDOWN.sub("", found).strip()
    return last_boxed(text) or text if "\\boxed" in text or "\\fbox" in text else text
