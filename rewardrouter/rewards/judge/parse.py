"""Read a judge's verdict out of its reply, and refuse any reply whose verdict is not certain.

The reply is hostile text at one remove: a judge quotes the response it grades, so whatever
the policy wrote ("Score: 10", ``<score>10</score>``, ``{"score": 10}``) may come back inside
it. Before a parser looks for a score:

1. every echoed response block is cut out: the text from ``<FENCE>`` to ``</FENCE>`` (to the
   end of the reply when it is never closed), where ``FENCE`` is the judge's secret fence (the
   ``{fence}`` of the rubric), which a response cannot write;
2. the judge's own reasoning before its last ``</think>`` is dropped.

Then each parser collects the scores the rest of the reply states, and the reply has a score
only when they are one value:

- ``tag``: every ``<score>...</score>`` (the ``tag`` setting); a content that is not a number
  is refused, unless the rubric itself writes that content between the tags (a placeholder such
  as ``<score>N</score>``, quoted back by the judge);
- ``json``: ``field`` of every top-level JSON object that has it;
- ``number``: the numbers on the reply's last line that holds a number.

``N/M`` and ``N out of M`` read ``N`` when ``M`` is the top of the scale, and are refused
otherwise. No score, two different scores, or a number written oddly (``1e1``, ``٣``, a
thousand digits) is :class:`UnreadableScore`, never a guess. The caller bounds the reply's
length (the judge's ``max_reply_chars``); each pass here is a single left-to-right scan, so the
time is linear in that length.

>>> read_score("The answer is mostly right. Score: 7/10", "number", top=10)
7.0
>>> read_score("<score>3.5</score>", "tag")
3.5
>>> read_score('Verdict: {"score": 4, "why": "ok"}', "json")
4.0
>>> read_score("<score>2</score> but it says <score>10</score>", "tag")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
rewardrouter.rewards.judge.parse.UnreadableScore: ambiguous: the reply gives the scores 2 and 10, ...
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator
from typing import Literal

Parser = Literal["number", "tag", "json"]

#: Digits a score may have; a longer numeral is on no rubric's scale.
MAX_DIGITS = 32
#: Nesting a JSON verdict may have (``{"score": 3, "why": {...}}``); deeper text is not read.
MAX_JSON_DEPTH = 32
#: Times the JSON scan starts again after the reply ends inside an unclosed bracket.
JSON_RESCANS = 2

_NUM = r"[+-]?\d+(?:\.\d+)?"
# A number written on its own (not inside a word, version, date or fraction's denominator),
# with an optional denominator: "7", "-1", "7.5", "7/10", "7 out of 10".
_NUMBER = re.compile(
    rf"(?<![\w.+\-/])({_NUM})(?!\.?\d)(?:\s*(?:/|\bout\s+of\b)\s*({_NUM})(?!\.?\d))?", re.ASCII
)
_WHOLE = re.compile(rf"\s*({_NUM})\s*(?:(?:/|\bout\s+of\b)\s*({_NUM})\s*)?", re.ASCII)
_DIGIT = re.compile(r"\d", re.ASCII)
_JSON_MARK = re.compile(r'[{}\[\]"\\]')


class UnreadableScore(ValueError):
    """The reply holds no score the parser can read, or more than one."""


def read_score(
    reply: str,
    parser: Parser,
    *,
    tag: str = "score",
    field: str = "score",
    fence: str | None = None,
    top: float | None = None,
    placeholders: Collection[str] = (),
) -> float:
    """The one score that ``reply`` states (see the module doc); :class:`UnreadableScore` when
    it states none, or two different ones.

    ``fence``: the secret of the rubric's ``<{fence}>`` block (cut out of the reply); ``top``:
    the top of the scale (what a denominator must be); ``placeholders``: non-numeric contents
    the rubric itself writes between the ``tag`` tags.
    """
    text = verdict_text(reply, fence)
    if parser == "tag":
        scores = _tag_scores(text, tag, top, placeholders)
        form = f"<{tag}>N</{tag}>"
    elif parser == "json":
        scores = _json_scores(text, field, top)
        form = f"JSON object with {field!r}"
    else:
        scores = _line_scores(text, top)
        form = "number"
    distinct = sorted(set(scores))
    if not distinct:
        where = " outside the quoted response" if fence is not None and fence in reply else ""
        raise UnreadableScore(
            f"no {form} in the reply{where}; expected the judge to state one score as the "
            "rubric asks"
        )
    if len(distinct) > 1:
        listed = ", ".join(f"{s:g}" for s in distinct[:-1]) + f" and {distinct[-1]:g}"
        raise UnreadableScore(
            f"ambiguous: the reply gives the scores {listed}, expected one; a rubric that fences "
            "the response (<{fence}>...</{fence}>) keeps quotes of it from counting"
        )
    return distinct[0]


def verdict_text(reply: str, fence: str | None) -> str:
    """``reply`` without its fenced blocks and without the judge's reasoning before ``</think>``.

    >>> verdict_text("ok <f>Score: 10</f> then <f>more", "f")
    'ok \\n then '
    """
    if fence is not None:
        opening, closing = f"<{fence}>", f"</{fence}>"
        kept: list[str] = []
        pos = 0
        while True:
            start = reply.find(opening, pos)
            if start == -1:
                kept.append(reply[pos:])
                break
            kept.append(reply[pos:start])
            end = reply.find(closing, start + len(opening))
            if end == -1:  # never closed: the rest is the quote
                break
            pos = end + len(closing)
        # Joined by a line break, so that text on both sides of a cut never forms one token.
        reply = "\n".join(kept)
    _, thought, after = reply.rpartition("</think>")
    return after if thought else reply


def _scalar(text: str, top: float | None) -> float | None:
    """The score that ``text`` is as a whole ("7", " 7.5 ", "7/10"), or ``None``."""
    found = _WHOLE.fullmatch(text)
    if found is None:
        return None
    return _on_scale(found.group(1), found.group(2), top)


def _on_scale(numeral: str, denominator: str | None, top: float | None) -> float:
    if len(numeral) > MAX_DIGITS + 2:
        raise UnreadableScore(f"a {len(numeral)}-character number is on no scale")
    if denominator is not None and (
        len(denominator) > MAX_DIGITS or top is None or float(denominator) != top
    ):
        scale = f"the scale tops at {top:g}" if top is not None else "no scale is set"
        raise UnreadableScore(f"the reply gives {numeral}/{denominator[:MAX_DIGITS]}; {scale}")
    return float(numeral)


def _tag_contents(text: str, tag: str) -> Iterator[str]:
    """The content of every ``<tag>...</tag>`` in ``text``, left to right, stripped; for
    ``<score><score>3</score>`` the innermost opening before the closing counts."""
    opening, closing = f"<{tag}>", f"</{tag}>"
    pos = 0
    while True:
        start = text.find(opening, pos)
        if start == -1:
            return
        end = text.find(closing, start + len(opening))
        if end == -1:  # an opening never closed holds no score
            return
        inner = text.rfind(opening, start, end) + len(opening)
        yield text[inner:end].strip()
        pos = end + len(closing)


def tag_placeholders(template: str, tag: str) -> frozenset[str]:
    """What ``template`` writes between ``tag`` tags that is not a number (``N`` in
    ``<score>N</score>``): a judge that quotes the rubric repeats it, and it states no score.

    >>> sorted(tag_placeholders("End with <score>N</score>, e.g. <score>7</score>.", "score"))
    ['N']
    """
    found: set[str] = set()
    for content in _tag_contents(template, tag):
        try:
            score = _scalar(content, None)
        except UnreadableScore:
            score = None
        if score is None:
            found.add(content)
    return frozenset(found)


def _tag_scores(
    text: str, tag: str, top: float | None, placeholders: Collection[str]
) -> list[float]:
    scores: list[float] = []
    for content in _tag_contents(text, tag):
        score = _scalar(content, top) if len(content) <= 2 * MAX_DIGITS + 16 else None
        if score is not None:
            scores.append(score)
        elif content not in placeholders:
            raise UnreadableScore(f"<{tag}> holds {content[:40]!r}, not a number")
    return scores


def _line_scores(text: str, top: float | None) -> list[float]:
    for line in reversed(text.splitlines()):
        if _DIGIT.search(line) is not None:
            return [_on_scale(n, d or None, top) for n, d in _NUMBER.findall(line)]
    return []


def _json_scores(text: str, field: str, top: float | None) -> list[float]:
    scores: list[float] = []
    for obj in json_objects(text):
        if field not in obj:
            continue
        value = obj[field]
        score: float | None = None
        if isinstance(value, int | float) and not isinstance(value, bool):
            # json.loads reads 1e999 as inf and refuses NaN (``_refuse_constant``).
            score = float(value) if abs(value) < 10**MAX_DIGITS else None
        elif isinstance(value, str) and len(value) <= 2 * MAX_DIGITS + 16:
            score = _scalar(value, top)
        if score is None:
            raise UnreadableScore(f"{field!r} is {json.dumps(value)[:40]}, not a number")
        scores.append(score)
    return scores


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a score")


def json_objects(text: str) -> Iterator[dict[str, object]]:
    """Every top-level JSON object in ``text``, left to right, each read once.

    One scan from the first ``{`` pairs brackets with a stack, skipping JSON strings, and notes
    every balanced ``{...}`` span; the outermost spans that parse as objects are yielded, and
    the spans inside one that does not parse are tried in turn (up to :data:`MAX_JSON_DEPTH`
    deep, so a tangle of brackets costs at most that many parses of each character). When the
    text ends inside an unclosed bracket, the scan starts again from the first ``{`` that it
    had read as part of a string (``{"why": "a { here`` ... ``{"score": 3}``), at most
    :data:`JSON_RESCANS` times, then gives up with :class:`UnreadableScore`: time linear in the
    length of ``text``, and no object missed silently.

    >>> list(json_objects('so {"a": "}"} then {x} and {"score": [1, {"b": 2}]}'))
    [{'a': '}'}, {'score': [1, {'b': 2}]}]
    >>> list(json_objects('a set {1, 2 and {"score": 3}'))
    [{'score': 3}]
    """
    start = text.find("{")
    rescans = 0
    while start != -1:
        spans, end, in_string = _bracket_spans(text, start)
        covered = -1  # the end of the last object yielded: what lies inside it is read
        for opening, closing, nesting in sorted(spans):
            if opening < covered or nesting > MAX_JSON_DEPTH:
                continue
            try:
                found = json.loads(text[opening:closing], parse_constant=_refuse_constant)
            except (ValueError, RecursionError):
                continue
            if isinstance(found, dict):
                covered = closing
                yield found
        if end != -1:
            start = text.find("{", end)
            continue
        if in_string == -1:
            return
        rescans += 1
        if rescans > JSON_RESCANS:
            raise UnreadableScore(
                f"the reply's brackets and quotes never balance, even read from "
                f"{JSON_RESCANS + 1} starting points; its JSON objects cannot be told apart"
            )
        start = in_string


def _bracket_spans(text: str, start: int) -> tuple[list[tuple[int, int, int]], int, int]:
    """Scan from the ``{`` at ``start`` until its brackets balance.

    Returns the balanced ``{...}`` spans met (opening, index after the closing, nesting), the
    index after the closing bracket of ``start`` (-1 when the text ends first), and the first
    ``{`` read inside a string (-1 when none).
    """
    spans: list[tuple[int, int, int]] = []
    stack: list[list[int]] = []  # per open bracket: its index, the nesting of its children
    in_string = -1
    string = False
    escaped_to = -1  # a backslash in a string escapes the character up to here
    for mark in _JSON_MARK.finditer(text, start):
        at = mark.start()
        if at < escaped_to:
            continue
        char = text[at]
        if string:
            if char == '"':
                string = False
            elif char == "\\":
                escaped_to = at + 2
            elif char == "{" and in_string == -1:
                in_string = at
        elif char == '"':
            string = True
        elif char == "{" or char == "[":
            stack.append([at, 0])
        elif char == "}" or char == "]":
            opening, nesting = stack.pop()
            nesting += 1
            if text[opening] == "{":
                spans.append((opening, at + 1, nesting))
            if not stack:
                return spans, at + 1, in_string
            stack[-1][1] = max(stack[-1][1], nesting)
    return spans, -1, in_string
