"""Read a score out of a judge's reply: the last number, a tag, or a JSON field.

>>> read_score("The answer is mostly right. Score: 7/10", "number", tag="score", field="score")
7.0
>>> read_score("<score>3.5</score>", "tag", tag="score", field="score")
3.5
>>> read_score('Verdict: {"score": 4, "why": "ok"}', "json", tag="score", field="score")
4.0
"""

from __future__ import annotations

import json
import re
from typing import Literal

# A number not written as the denominator of a fraction ("7/10" reads 7).
_NUMBER = re.compile(r"(?<![/\d.])-?\d+(?:\.\d+)?(?![\d])")


class UnreadableScore(ValueError):
    """The reply holds no score the parser can read."""


def _last_json_object(text: str) -> dict[str, object] | None:
    decoder = json.JSONDecoder()
    found: dict[str, object] | None = None
    for start in (i for i, char in enumerate(text) if char == "{"):
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(value, dict):
            found = value
    return found


def read_score(
    reply: str, parser: Literal["number", "tag", "json"], *, tag: str, field: str
) -> float:
    """The score in ``reply``; :class:`UnreadableScore` saying what was missing."""
    if parser == "tag":
        matches = re.findall(rf"<{re.escape(tag)}>\s*(.*?)\s*</{re.escape(tag)}>", reply, re.S)
        if not matches:
            raise UnreadableScore(f"no <{tag}>...</{tag}> in the reply")
        text = matches[-1]
        try:
            return float(text)
        except ValueError:
            raise UnreadableScore(f"<{tag}> holds {text[:40]!r}, not a number") from None
    if parser == "json":
        obj = _last_json_object(reply)
        if obj is None or field not in obj:
            raise UnreadableScore(f"no JSON object with {field!r} in the reply")
        value = obj[field]
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise UnreadableScore(f"{field!r} is {value!r}, not a number")
        try:
            return float(value)
        except ValueError:
            raise UnreadableScore(f"{field!r} is {value!r}, not a number") from None
    numbers = _NUMBER.findall(reply)
    if not numbers:
        raise UnreadableScore("no number in the reply")
    return float(numbers[-1])
