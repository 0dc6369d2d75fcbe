"""Read a judge's verdict out of its reply, and refuse any reply whose verdict is not certain.

The reply is hostile text at one remove: a judge quotes the response it grades, so whatever
the policy wrote ("Score: 10", ``<score>10</score>``, ``{"score": 10}``, ``[[10]]``) may come
back inside it. Before a parser looks for a score:

1. every echoed response block is cut out: the text from ``<FENCE>`` to ``</FENCE>`` (to the
   end of the reply when it is never closed), where ``FENCE`` is the judge's secret fence (the
   ``{fence}`` of the rubric), which a response cannot write;
2. the judge's own reasoning before its last ``</think>`` is dropped.

Then each parser collects the scores the rest of the reply states, and the reply has a score
only when they are one value, read on the term's scale (``min`` to ``max``, here ``bottom`` to
``top``):

- ``number``: every *labelled* score (``Score: 7``, ``Rating = 7``, ``**Final score:** 7``,
  ``Grade is 7``); without one, the numbers of the reply's last line that holds a number, less
  those stated in a negated clause ("It is not a 7.": the clause from ``not``, ``no``,
  ``never``, ``n't``, ``cannot``, ``neither`` or ``nor`` to the next ``,;:!?`` or full stop
  states no score; a line whose every number is negated is refused);
- ``tag``: every ``<score>...</score>`` (the ``tag`` setting); a content that is not a score
  is refused, unless the rubric itself writes that content between the tags (a placeholder such
  as ``<score>N</score>``, quoted back by the judge);
- ``json``: ``field`` of every top-level JSON object that has it (a number, or a string read as
  a tag's content is);
- ``mt_bench``: MT-Bench's ``[[8]]`` (FastChat's single-answer grading, and the rubrics that
  copy it): every ``[[...]]``, its content read as a tag's content is (``[[rating]]`` quoted
  from the rubric is a placeholder); without one, FastChat's own fallback: every ``[8]`` (not
  an index such as ``x[8]``, not a link ``[8](url)``; other bracketed text is no score);
- ``prometheus``: Prometheus' ``[RESULT] 4`` (any case), the number right after every
  ``[RESULT]`` marker, which may name it first (``[RESULT] Score: 4``, ``[RESULT] score of 4``)
  or wrap it (``[RESULT] (4)``); a marker followed by anything else states no score.

What a score may look like, in each parser (each read the one way, and refused the other, in
``tests/rewards/test_rewards_judge.py``), on a 0-10 scale:

| reply form | ``number`` | ``tag`` | ``json`` |
|---|---|---|---|
| ``Score: 7``, ``**Rating:** 7``, ``Grade is 7`` | 7 | | |
| a last line ``I give it 7.`` / ``<score>7</score>`` / ``{"score": 7}`` | 7 | 7 | 7 |
| ``7/10`` (10 the scale's top) | 7 | 7 | 7 (``"7/10"``) |
| ``7 out of 10`` | 7 | 7 | 7 |
| ``85%``, ``85 percent`` | 8.5 | 8.5 | 8.5 |
| ``7 (out of 10)``, ``7 (0-10)`` | 7 | 7 | 7 |
| ``7 on a scale of 0 to 10`` | 7 | | |
| *invalid:* two different scores | ambiguous | ambiguous | ambiguous |
| *invalid:* ``7/5``, ``7 (0-5)``: another scale than the term's | another scale | same | same |
| *invalid:* ``7-8``, ``7 to 8`` | a range | a range | a range |
| *invalid:* ``120%`` | off 0-100% | same | same |
| *invalid:* ``1e1``, ``\\u0661``, ``ten`` | no score | not a number | not a number |
| *invalid:* ``It is not a 7.``, ``It never earns 7`` | negated | | |

``mt_bench`` reads ``[[...]]`` and ``prometheus`` what follows ``[RESULT]`` as ``tag`` reads a
tag's content (``[[7/10]]``, ``[RESULT] 4/5`` on 1-5).

A percentage is a share of the scale: ``85%`` of 0-10 is 8.5, of 1-5 is 4.4. Other numbers of
a labelled reply ("Score: 7 (3 points off)", "Score: 7" then "The 2 errors ...") are its
explanation, not scores. No score, two different scores, or a number written oddly (``1e1``,
``\\u0663``, a thousand digits) is :class:`UnreadableScore`, never a guess; a score outside the
scale is refused by the caller. The caller bounds the reply's length (the judge's
``max_reply_chars``); each pass here is a left-to-right scan with no two quantifiers that can
take the same characters, so the time is linear in that length.

>>> read_score("The answer is mostly right. Score: 7/10", "number", top=10)
7.0
>>> read_score("Score: 7 (3 points off)\\nThe 2 slips are minor.", "number", top=10)
7.0
>>> read_score("<score>85%</score>", "tag", top=10)
8.5
>>> read_score('Verdict: {"score": 4, "why": "ok"}', "json")
4.0
>>> read_score("Mostly right, 3 small slips. Rating: [[8.5]]", "mt_bench", top=10)
8.5
>>> read_score("Feedback: clear and correct. [RESULT] 4", "prometheus", top=5, bottom=1)
4.0
>>> read_score("<score>2</score> but it says <score>10</score>", "tag")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
rewardrouter.rewards.judge.parse.UnreadableScore: ambiguous: the reply gives the scores 2 and 10, ...
>>> read_score("Clear, but it is not a 7.", "number")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
rewardrouter.rewards.judge.parse.UnreadableScore: the reply's last line with a number states ...
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Literal

from rewardrouter.rewards.thinking import after_thinking

Parser = Literal["number", "tag", "json", "mt_bench", "prometheus"]

#: Digits a score may have; a longer numeral is on no rubric's scale.
MAX_DIGITS = 32
#: Nesting a JSON verdict may have (``{"score": 3, "why": {...}}``); deeper text is not read.
MAX_JSON_DEPTH = 32
#: Times the JSON scan starts again after the reply ends inside an unclosed bracket.
JSON_RESCANS = 2

_NUM = r"[+-]?[0-9]+(?:\.[0-9]+)?"  # ASCII digits only: "٣" is no score
_AFTER_NUM = r"(?!\.?[0-9]|[eE][+-]?[0-9])"  # not "7.5" cut short, not "1e1"
_DASH = "(?:-|\u2013|\u2014|to\\b)"  # a hyphen, an en dash, an em dash, "to"
# A number written on its own (not inside a word, version, date or fraction's denominator).
_NUMBER = re.compile(rf"(?<![\w.+\-/])({_NUM}){_AFTER_NUM}")
# What may follow a score: its denominator ("/10", "out of 10"), or a percent sign
_DENOMINATOR = re.compile(rf"\s*(?:/|out\s+of\b)\s*({_NUM}){_AFTER_NUM}", re.IGNORECASE)
_PERCENT = re.compile(r"\s*(?:%|percent\b)", re.IGNORECASE)
# A note of the scale the score is on: "(out of 10)", "(0-10)", "(/10)", "on a scale of 0 to 10"
_SCALE_NOTE_FORM = (
    rf"\(\s*(?:(?:(?:out\s+)?of|/)\s*(?P<top>{_NUM})|(?P<low>{_NUM})\s*{_DASH}\s*"
    rf"(?P<high>{_NUM})){_AFTER_NUM}\s*\)"
    rf"|\bon\s+(?:a|the)\s+scale\s+(?:of\s+|from\s+)?(?P<from>{_NUM})\s*{_DASH}\s*"
    rf"(?P<to>{_NUM}){_AFTER_NUM}"
)
_SCALE_NOTE = re.compile(rf"\s*(?:{_SCALE_NOTE_FORM})", re.IGNORECASE)  # right after a score
# Searched for, a note starts at its bracket or word: a search for "\s*(" would try every
# space of a long run of spaces, and each try would read the rest of the run (quadratic).
_SCALE_NOTE_AHEAD = re.compile(_SCALE_NOTE_FORM, re.IGNORECASE)
# A range is no score: "7-8", "7 to 8"
_RANGE = re.compile(rf"\s*{_DASH}\s*{_NUM}{_AFTER_NUM}", re.IGNORECASE)
# A labelled score: "Score: 7", "Rating = 7", "**Final score:** 7", "Grade is 7"
_LABELLED = re.compile(
    r"\b(?:(?:final|overall|total)\s+)?(?:score|rating|grade)\b(?:\s*\*\*)?\s*(?:[:=]|is\b)"
    rf"(?:\s*\*\*)?\s*(?={_NUM})",
    re.IGNORECASE,
)
_DIGIT = re.compile(r"[0-9]")
# A clause that negates what it states: "not 3", "no 10", "never a 9", "isn't 7"
_NEGATION = re.compile(r"\b(?:not|no|never|cannot|neither|nor)\b|n['\u2019]t\b", re.IGNORECASE)
# Where a clause ends: a comma, semicolon, colon, "!", "?", a dash, a full stop (not a decimal)
_CLAUSE_END = re.compile(r"[,;:!?\u2014]|\.(?![0-9])")
# FastChat's fallback, "[8]": not an index ("x[8]", "a[1][8]"), not a link's text ("[8](url)")
_SINGLE_BRACKET = re.compile(r"(?<![\w\])])\[([^\[\]\n]*)\](?!\()")
# Prometheus' verdict: "[RESULT] 4", "[RESULT]: (4)", "[Result] Score: 4", "[RESULT] score of 4"
_RESULT = re.compile(
    rf"\[RESULT\]:?\s*(?:(?:score|result)\b\s*:?\s*|score\s+of\s+)?(?P<paren>\(\s*)?(?={_NUM})",
    re.IGNORECASE,
)
_CLOSING_PAREN = re.compile(r"\s*\)")
#: The longest content of a tag, ``[[...]]`` or JSON string that is read as a score.
MAX_SCORE_CHARS = 2 * MAX_DIGITS + 48
_JSON_MARK = re.compile(r'[{}\[\]"\\]')


class UnreadableScore(ValueError):
    """The reply holds no score the parser can read, or more than one."""


@dataclass(frozen=True)
class Scale:
    """The term's scale: the lowest and the highest score (a percentage is a share of it)."""

    bottom: float = 0.0
    top: float | None = None

    def of(self, low: str | None, high: str) -> None:
        """Refuse a reply that grades on another scale than this one."""
        if self.top is None:
            return
        if float(high) != self.top or (low is not None and float(low) != self.bottom):
            given = f"{low}-{high}" if low is not None else f"0-{high}"
            raise UnreadableScore(
                f"the reply grades on {given}; the term's scale is {self.bottom:g}-{self.top:g}"
            )

    def percent(self, numeral: str) -> float:
        share = float(numeral)
        if not 0 <= share <= 100:
            raise UnreadableScore(f"the reply gives {numeral}%, outside 0-100%")
        if self.top is None:
            return share
        return self.bottom + share / 100 * (self.top - self.bottom)


def read_score(
    reply: str,
    parser: Parser,
    *,
    tag: str = "score",
    field: str = "score",
    fence: str | None = None,
    top: float | None = None,
    bottom: float = 0.0,
    placeholders: Collection[str] = (),
) -> float:
    """The one score that ``reply`` states (see the module doc); :class:`UnreadableScore` when
    it states none, or two different ones.

    ``fence``: the secret of the rubric's ``<{fence}>`` block (cut out of the reply); ``bottom``
    and ``top``: the term's scale (what a denominator or a scale note must be, what a percentage
    is a share of); ``placeholders``: non-numeric contents the rubric itself writes where the
    parser reads a score (:func:`rubric_placeholders`).
    """
    text = verdict_text(reply, fence)
    scale = Scale(bottom, top)
    if parser == "tag":
        scores = _enclosed_scores(text, f"<{tag}>", f"</{tag}>", scale, placeholders)
        form = f"<{tag}>N</{tag}>"
    elif parser == "json":
        scores = _json_scores(text, field, scale)
        form = f"JSON object with {field!r}"
    elif parser == "mt_bench":
        scores = _mt_bench_scores(text, scale, placeholders)
        form = "[[N]] (or [N])"
    elif parser == "prometheus":
        scores = _prometheus_scores(text, scale)
        form = "[RESULT] N"
    else:
        scores = _number_scores(text, scale)
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
    return after_thinking(reply)


def _score_at(text: str, number: re.Match[str], scale: Scale) -> tuple[float, int]:
    """The score the number ``number`` of ``text`` states with what follows it (a denominator,
    a percent sign, a scale note), and where that ends; :class:`UnreadableScore` for a range, a
    denominator or a note of another scale, a share outside 0-100%."""
    numeral, end = number.group(1), number.end()
    if len(numeral) > MAX_DIGITS + 2:
        raise UnreadableScore(f"a {len(numeral)}-character number is on no scale")
    value: float | None = None
    denominator = _DENOMINATOR.match(text, end)
    if denominator is not None:
        value = _on_scale(numeral, denominator.group(1), scale)
        end = denominator.end()
    elif (percent := _PERCENT.match(text, end)) is not None:
        value = scale.percent(numeral)
        end = percent.end()
    elif _RANGE.match(text, end) is not None:
        raise UnreadableScore(f"the reply gives a range from {numeral}, not one score")
    note = _SCALE_NOTE.match(text, end)
    if note is not None:
        _check_note(note, scale)
        end = note.end()
    return (float(numeral) if value is None else value), end


def _check_note(note: re.Match[str], scale: Scale) -> None:
    if note.group("top") is not None:
        scale.of(None, note.group("top"))
    elif note.group("high") is not None:
        scale.of(note.group("low"), note.group("high"))
    else:
        scale.of(note.group("from"), note.group("to"))


def _on_scale(numeral: str, denominator: str, scale: Scale) -> float:
    if len(denominator) > MAX_DIGITS or scale.top is None or float(denominator) != scale.top:
        where = f"the scale tops at {scale.top:g}" if scale.top is not None else "no scale is set"
        raise UnreadableScore(f"the reply gives {numeral}/{denominator[:MAX_DIGITS]}; {where}")
    return float(numeral)


_WHOLE = re.compile(rf"\s*(?={_NUM})")


def _scalar(text: str, scale: Scale) -> float | None:
    """The score that ``text`` is as a whole ("7", " 7.5 ", "7/10", "85%", "7 (out of 10)"),
    or ``None``."""
    start = _WHOLE.match(text)
    number = _NUMBER.match(text, start.end()) if start is not None else None
    if number is None:
        return None
    value, end = _score_at(text, number, scale)
    return value if not text[end:].strip() else None


def _bounded_scalar(content: str, scale: Scale) -> float | None:
    """:func:`_scalar` of a content no longer than :data:`MAX_SCORE_CHARS`; None for a longer
    one, which is no score."""
    return _scalar(content, scale) if len(content) <= MAX_SCORE_CHARS else None


def _enclosed(text: str, opening: str, closing: str) -> Iterator[str]:
    """The content of every ``opening...closing`` in ``text``, left to right, stripped; for
    ``<score><score>3</score>`` the innermost opening before the closing counts."""
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


def rubric_placeholders(template: str, parser: Parser, tag: str = "score") -> frozenset[str]:
    """What ``template`` writes where ``parser`` reads a score that is not a number (``N`` in
    ``<score>N</score>``, ``rating`` in MT-Bench's ``[[rating]]``): a judge that quotes the
    rubric repeats it, and it states no score.

    >>> sorted(rubric_placeholders("End with <score>N</score>, e.g. <score>7</score>.", "tag"))
    ['N']
    >>> sorted(rubric_placeholders('strictly this format: "[[rating]]"', "mt_bench"))
    ['rating']
    """
    if parser == "tag":
        opening, closing = f"<{tag}>", f"</{tag}>"
    elif parser == "mt_bench":
        opening, closing = "[[", "]]"
    else:  # the other parsers read no placeholder
        return frozenset()
    found: set[str] = set()
    for content in _enclosed(template, opening, closing):
        try:
            score = _scalar(content, Scale())
        except UnreadableScore:
            score = None
        if score is None:
            found.add(content)
    return frozenset(found)


def _enclosed_scores(
    text: str, opening: str, closing: str, scale: Scale, placeholders: Collection[str]
) -> list[float]:
    """The score in every ``opening...closing`` of ``text``; a content that is neither a score
    nor one of the rubric's ``placeholders`` is refused."""
    scores: list[float] = []
    for content in _enclosed(text, opening, closing):
        score = _bounded_scalar(content, scale)
        if score is not None:
            scores.append(score)
        elif content not in placeholders:
            raise UnreadableScore(f"{opening} holds {content[:40]!r}, not a number")
    return scores


def _mt_bench_scores(text: str, scale: Scale, placeholders: Collection[str]) -> list[float]:
    """Every ``[[N]]``; without one, every ``[N]`` (FastChat's fallback), other bracketed text
    (``[The End of Answer]``, ``[a]``) being no score there."""
    scores = _enclosed_scores(text, "[[", "]]", scale, placeholders)
    if scores:
        return scores
    for found in _SINGLE_BRACKET.finditer(text):
        score = _bounded_scalar(found.group(1), scale)
        if score is not None:
            scores.append(score)
    return scores


def _prometheus_scores(text: str, scale: Scale) -> list[float]:
    """The number after every ``[RESULT]`` marker that a number follows."""
    scores: list[float] = []
    for marker in _RESULT.finditer(text):
        value, end = _score_at(text, _expect_number(text, marker.end()), scale)
        if marker.group("paren") is not None and _CLOSING_PAREN.match(text, end) is None:
            raise UnreadableScore(f"the score after {marker.group()!r} is never closed by ')'")
        scores.append(value)
    return scores


def _number_scores(text: str, scale: Scale) -> list[float]:
    """The labelled scores of ``text``; without one, the scores of its last line that holds a
    number."""
    labelled = [_score_at(text, _expect_number(text, m.end()), scale)[0]
                for m in _LABELLED.finditer(text)]  # fmt: skip
    if labelled:
        return labelled
    for line in reversed(text.splitlines()):
        if _DIGIT.search(line) is not None:
            return _line_scores(line, scale)
    return []


def _expect_number(text: str, at: int) -> re.Match[str]:
    number = _NUMBER.match(text, at)
    if number is None:  # "Score: 7e" or "Score: -.5": a number, but not one written plainly
        raise UnreadableScore(
            f"the score after {text[max(0, at - 12) : at].strip()!r} is no number"
        )
    return number


def _line_scores(line: str, scale: Scale) -> list[float]:
    """The scores of one line: each number with what follows it, unless a negation precedes it
    in its clause; scale notes are no scores."""
    scores: list[float] = []
    negated: list[str] = []
    at = 0
    in_negation = False  # whether the clause read so far negates
    note = _SCALE_NOTE_AHEAD.search(line)  # the first note that starts at or after `at`
    while True:
        number = _NUMBER.search(line, at)
        if number is None:
            break
        if note is not None and note.start() < at:  # passed: the next one (none stays none)
            note = _SCALE_NOTE_AHEAD.search(line, at)
        in_negation = _negates(line, at, number.start(), in_negation)
        if note is not None and note.start() <= number.start() < note.end():
            _check_note(note, scale)  # "on a scale of 0 to 10" states no score
            at = note.end()
            continue
        value, at = _score_at(line, number, scale)
        if in_negation:
            negated.append(line[number.start() : at])
        else:
            scores.append(value)
    if negated and not scores:
        raise UnreadableScore(
            f"the reply's last line with a number states {negated[0][:40]!r} in a negated "
            f"clause ({line.strip()[:80]!r}): a score it says the answer is not is no score"
        )
    return scores


def _negates(line: str, start: int, end: int, negating: bool) -> bool:
    """Whether the clause in force at ``end`` of ``line`` negates, given that it did at
    ``start`` (``negating``): a clause ending in ``line[start:end]`` ends its negation."""
    for boundary in _CLAUSE_END.finditer(line, start, end):
        start, negating = boundary.end(), False
    return negating or _NEGATION.search(line, start, end) is not None


def _json_scores(text: str, field: str, scale: Scale) -> list[float]:
    scores: list[float] = []
    for obj in json_objects(text):
        if field not in obj:
            continue
        value = obj[field]
        score: float | None = None
        if isinstance(value, int | float) and not isinstance(value, bool):
            # json.loads reads 1e999 as inf and refuses NaN (``_refuse_constant``).
            score = float(value) if abs(value) < 10**MAX_DIGITS else None
        elif isinstance(value, str):
            score = _bounded_scalar(value, scale)
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
