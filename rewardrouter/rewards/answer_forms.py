"""What a final answer says: a number, a set, a tuple, an interval, a matrix, an inequality, text.

:func:`read_answer` turns the text of a final answer (a box's content, a label) into a
:class:`Form`, after normalizing how it is written (:func:`normalize`): math delimiters, Unicode
symbols, a sentence's final period, units, a percent sign or word, digit grouping
(``1{,}000``, ``1\\,000\\,000``, ``1 000``), ``\\left`` / ``\\right``. Forms nest: the elements
of a set may be tuples. Everything the reader cannot make out with certainty becomes
:class:`Unknown`, which the comparison leaves to math-verify.

The forms and what they mean:

- :class:`Number`: an exact value (:mod:`~rewardrouter.rewards.latex_value`), possibly written
  as a percentage;
- :class:`Infinity`: ``\\infty``, ``-\\infty``;
- :class:`Collection`: ``\\{1, 2\\}`` (``set``), ``(1, 2)`` / ``[1, 2)`` (``tuple``, its
  brackets kept: an ordered pair and an open interval are written alike and compared alike),
  ``1, 2`` or ``1 and 2`` (``list``, an unordered list of answers), and ``a \\pm b``
  (a ``list`` of two);
- :class:`Union`: intervals or sets joined by ``\\cup``; an inequality in one variable
  (``x > 2``, ``1 < x \\le 3``, ``x < -1 \\text{ or } x > 3``) is read as the intervals it
  describes;
- :class:`Matrix`: ``pmatrix``, ``bmatrix``, ``matrix``, ``array``;
- :class:`Named`: ``x = 5`` (one name, then the value; ``x \\in (0, 1)`` too);
- :class:`Text`: words only (``\\text{Evelyn}``), compared without case and punctuation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TypeAlias

from rewardrouter.rewards.closed_form import Ratio
from rewardrouter.rewards.latex_value import ParsedValue, parse_value

__all__ = [
    "Collection",
    "Form",
    "Infinity",
    "Matrix",
    "Named",
    "Number",
    "Text",
    "Union",
    "Unknown",
    "normalize",
    "read_answer",
]

#: Elements a collection may hold before the reader gives up (comparisons are quadratic).
MAX_ELEMENTS = 64


@dataclass(frozen=True)
class Number:
    """An exact value; ``percent`` when written with ``%`` or ``percent``."""

    parsed: ParsedValue
    percent: bool = False


@dataclass(frozen=True)
class Infinity:
    negative: bool


@dataclass(frozen=True)
class Collection:
    """``kind``: ``set`` (``\\{\\}``), ``tuple`` (round or square brackets, kept in ``brackets``)
    or ``list`` (bare, comma-separated); ``raw`` is the text a bare pair was read from."""

    kind: str
    items: tuple[Form, ...]
    brackets: str = ""
    raw: str = ""


@dataclass(frozen=True)
class Union:
    parts: tuple[Form, ...]


@dataclass(frozen=True)
class Matrix:
    rows: tuple[tuple[Form, ...], ...]


@dataclass(frozen=True)
class Named:
    name: str
    value: Form


@dataclass(frozen=True)
class Text:
    words: str


@dataclass(frozen=True)
class Unknown:
    """Not read with certainty; compared by math-verify."""

    text: str


Form: TypeAlias = Number | Infinity | Collection | Union | Matrix | Named | Text | Unknown

# ------------------------------------------------------------------------------- normalization

# Already canonical: digits, operators and single letters (no word, unit, space or command)
_SIMPLE = re.compile(r"-?(?:\d{1,3}|\d*\.\d+)|(?:[-+*/^(){}\d]|[a-zA-Z](?![a-zA-Z]))*[\w)}]")
_DELIMITED = re.compile(r"^(?:\$\$(.*)\$\$|\$(.*)\$|\\\((.*)\\\)|\\\[(.*)\\\])$", re.DOTALL)
_UNICODE = {
    "\u2212": "-",  # minus sign
    "\u2013": "-",
    "\u00d7": "\\times ",
    "\u22c5": "\\cdot ",
    "\u00b7": "\\cdot ",
    "\u00f7": "\\div ",
    "\u03c0": "\\pi ",
    "\u221e": "\\infty ",
    "\u2264": "\\le ",
    "\u2265": "\\ge ",
    "\u2260": "\\neq ",
    "\u222a": "\\cup ",
    "\u00b0": "^\\circ",
    "\u00a0": " ",
    "\u2009": " ",
    "\u202f": " ",
    "\uff0c": ",",
}
_UNICODE_SQRT = re.compile(r"\u221a\s*(\d+|\{)")
_LEFT_RIGHT = re.compile(r"\\(?:left|right|bigl|bigr|Bigl|Bigr|big|Big)(?=[()\[\]|.]|\\[{}|])")
_LEFT_RIGHT_DOT = re.compile(r"\\(?:left|right)\.")
_STYLE = re.compile(r"\\(?:displaystyle|textstyle|mathbf|boldsymbol|bm)\b\s*")
_FRAC_STYLE = re.compile(r"\\[dtc]frac(?![A-Za-z])")
_SPACING = re.compile(r"\\[,;:! ]|\\q?quad\b|~")
_TRAILING_PUNCTUATION = re.compile(r"(?:\s|\\[,;: ]|\\q?quad\b|[.,;:])+$")
_DEGREES = re.compile(r"\s*(?:\^\s*\{?\s*\\circ\s*\}?|\\circ|\\degree)\s*(?:[CF]\b)?")
_PERCENT = re.compile(
    r"\s*(?:\\?%|\\text\{\s*\\?%\s*\}|\\(?:text|mathrm)\{\s*(?:percent(?:age)?|pct)\s*\}"
    r"|(?:(?<=\d)|\b)(?:percent(?:age)?|pct)\b)$"
)
_CURRENCY_PREFIX = re.compile(r"^(?:\\\$|\$|\\text\{\s*\\?\$\s*\}|USD\s*|€|£)\s*")
_CURRENCY_SUFFIX = re.compile(r"\s*(?:\\\$|\\text\{\s*\\?\$\s*\}|€|£)$")
# A unit: a \text-like group of words (optionally raised to a power), or a plain word of two or
# more letters after a number; several may follow one another (\text{ m}/\text{s}).
_UNIT_GROUP = (
    r"\\(?:text|textnormal|mbox|mathrm|textrm|operatorname)\s*"
    r"\{\s*(?:[A-Za-z][A-Za-z .]*[A-Za-z.]|[a-df-hj-zA-Z])\s*\}"  # one letter: not e or i
)
_UNIT = re.compile(
    rf"(?<=[\d}}.)\s])\s*(?:{_UNIT_GROUP}|(?<=[\d\s])[A-Za-z]{{2,}}(?:\s+[A-Za-z]{{2,}})?)"
    rf"(?:\s*\^\s*(?:\{{\s*\d\s*\}}|\d))?(?:\s*/\s*(?:{_UNIT_GROUP}|[A-Za-z]{{1,}}))?\s*$"
)
_SPACE_BEFORE_UNIT = re.compile(r"\\[,;:! ]\s*(?=\\(?:text|textnormal|mbox|mathrm|textrm)\b)")
_GROUPED = re.compile(
    r"(?<![\d.])([1-9]\d{0,2})((?:(?:\{,\}|,\\!|\\,|\\;|\\:|\\ |~|\s)\s?\d{3})+)(?![\d])"
)
_PLAIN_GROUPED = re.compile(r"-?[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?")
_GROUP_SEPARATOR = re.compile(r"\{,\}|,\\!|\\[,;: ]|~|\s")
_IN_SET = re.compile(r"^[a-zA-Z]\s*\\in\s*")
_TEXT_WRAPPER = re.compile(r"^\\(?:text|textbf|textit|mathrm|mbox|textnormal)\s*\{([^{}]*)\}$")
_WORDS = re.compile(r"[A-Za-z][A-Za-z' -]*[A-Za-z]")
_NAME = re.compile(r"[a-zA-Z](?:_\{?[\w]+\}?)?|\\(?:alpha|beta|gamma|theta|lambda|mu)")


def _unicode_root(match: re.Match[str]) -> str:
    radicand = match.group(1)
    return "\\sqrt{" if radicand == "{" else f"\\sqrt{{{radicand}}}"


def normalize(text: str) -> tuple[str, bool]:
    """The answer text in a canonical spelling, and whether it was written as a percentage."""
    text = text.strip()
    if _SIMPLE.fullmatch(text):
        return text, False
    for _ in range(3):
        match = _DELIMITED.match(text)
        if match is None:
            break
        text = next(g for g in match.groups() if g is not None).strip()
    if not text.isascii():
        text = _UNICODE_SQRT.sub(_unicode_root, text)
        text = "".join(_UNICODE.get(c, c) for c in text)
    text = _LEFT_RIGHT_DOT.sub("", _LEFT_RIGHT.sub("", text))
    text = _STYLE.sub("", _FRAC_STYLE.sub(r"\\frac", text))
    text = _TRAILING_PUNCTUATION.sub("", text)
    text = _DEGREES.sub("", text).strip() if "circ" in text or "degree" in text else text
    percent = False
    match = _PERCENT.search(text)
    if match and match.start() > 0:
        text, percent = text[: match.start()].rstrip(), True
    text = _CURRENCY_SUFFIX.sub("", _CURRENCY_PREFIX.sub("", text))
    text = _SPACE_BEFORE_UNIT.sub(" ", text)
    for _ in range(2):
        match = _UNIT.search(text)
        if match is None or match.start() == 0:
            break
        text = text[: match.start()].rstrip()
    if not percent:
        match = _PERCENT.search(text)  # 28\% after a unit strip, or 28 \text{percent}
        if match and match.start() > 0:
            text, percent = text[: match.start()].rstrip(), True
    text = _GROUPED.sub(lambda m: m.group(1) + _GROUP_SEPARATOR.sub("", m.group(2)), text)
    text = _TRAILING_PUNCTUATION.sub("", text)
    if _PLAIN_GROUPED.fullmatch(text):
        text = text.replace(",", "")
    text = _IN_SET.sub("", text)
    return text.strip(), percent


# ------------------------------------------------------------------------------------ splitting

_OPEN = {"(": ")", "[": "]", "{": "}"}
_RELATION = re.compile(
    r"\\(?:leqslant|geqslant|leq|geq|le|ge|lt|gt|neq|ne)(?![A-Za-z])|<=|>=|!=|<|>"
)
_RELATION_SIGN = {
    "<": "<",
    "\\lt": "<",
    ">": ">",
    "\\gt": ">",
    "<=": "<=",
    "\\le": "<=",
    "\\leq": "<=",
    "\\leqslant": "<=",
    ">=": ">=",
    "\\ge": ">=",
    "\\geq": ">=",
    "\\geqslant": ">=",
}
_AND = re.compile(r"\s*(?:\\text\{\s*and\s*\}|\band\b)\s*")
_OR = re.compile(r"\s*(?:\\text\{\s*or\s*\}|\bor\b|\\lor\b|\\vee\b)\s*")
_MATRIX = re.compile(
    r"^\\begin\{(pmatrix|bmatrix|Bmatrix|vmatrix|matrix|smallmatrix|array)\}(?:\{[^{}]*\})?"
    r"(.*)\\end\{\1\}$",
    re.DOTALL,
)


def _top_level(text: str, separators: re.Pattern[str]) -> list[str] | None:
    """``text`` split at the matches of ``separators`` outside brackets, braces and
    environments; None when its brackets do not balance."""
    parts: list[str] = []
    depth = 0
    start = 0
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            if text.startswith("\\begin", i):
                depth += 1
            elif text.startswith("\\end", i):
                depth -= 1
            elif text.startswith("\\{", i):
                depth += 1
                i += 2
                continue
            elif text.startswith("\\}", i):
                depth -= 1
                i += 2
                continue
            if depth == 0 and (match := separators.match(text, i)) is not None and match.end() > i:
                parts.append(text[start:i])
                start = i = match.end()
                continue
            i += 1
            while i < n and text[i].isalpha():
                i += 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth < 0:
                return None
        elif depth == 0 and (match := separators.match(text, i)) is not None and match.end() > i:
            parts.append(text[start:i])
            start = i = match.end()
            continue
        i += 1
    if depth != 0:
        return None
    parts.append(text[start:])
    return parts


_COMMA = re.compile(r",|;")
_MAYBE_OR = re.compile(r"or|\\vee")
_NOTHING = re.compile(r"(?!)")
_CUP = re.compile(r"\\cup(?![A-Za-z])")


def _enclosed(text: str, open_: str, close: str) -> bool:
    """Whether the bracket opening ``text`` closes at its very end (brackets of any shape)."""
    if not (text.startswith(open_) and text.endswith(close)):
        return False
    inner = text[len(open_) : len(text) - len(close)]
    return _top_level(inner, _NOTHING) is not None


# --------------------------------------------------------------------------------------- reading


def read_answer(text: str) -> Form:
    """The :class:`Form` of an answer's text (see the module docstring)."""
    return _read(text, 0)


@lru_cache(maxsize=16384)
def _read(text: str, depth: int) -> Form:
    text, percent = normalize(text)
    if not text or depth > 4:
        return Unknown(text)
    form = _read_normalized(text, depth)
    if percent:
        if isinstance(form, Number):
            return Number(form.parsed, percent=True)
        return Unknown(text + "\\%")
    return form


def _read_normalized(text: str, depth: int) -> Form:
    matrix = _MATRIX.match(text)
    if matrix is not None:
        return _read_matrix(matrix.group(2), depth)
    # each split is tried only when its separator occurs at all (most answers have none)
    if "\\cup" in text and (parts := _top_level(text, _CUP)) and len(parts) > 1:
        return _many(Union, parts, depth)
    if _MAYBE_OR.search(text) and (parts := _top_level(text, _OR)) and len(parts) > 1:
        return _inequalities(parts, depth)
    if ("," in text or ";" in text) and (parts := _top_level(text, _COMMA)) and len(parts) > 1:
        return _collection("list", parts, depth, raw=text)
    if "and" in text and (parts := _top_level(text, _AND)) and len(parts) > 1:
        return _collection("list", parts, depth)
    if _enclosed(text, "\\{", "\\}"):
        inner = _top_level(text[2:-2], _COMMA) or []
        return _collection("set", inner, depth)
    if text[0] in "([" and text[-1] in ")]" and _enclosed(text, text[0], text[-1]):
        inner = _top_level(text[1:-1], _COMMA) or []
        if len(inner) > 1:
            return _collection("tuple", inner, depth, brackets=text[0] + text[-1])
    if _RELATION.search(text):
        return _inequalities([text], depth)
    if "=" in text:
        return _named(text, depth)
    if "\\pm" in text or "\\mp" in text:
        return _plus_minus(text, depth)
    return _scalar(text)


def _scalar(text: str) -> Form:
    bare = text.replace(" ", "")
    if bare in ("\\infty", "+\\infty", "\\infty+"):
        return Infinity(False)
    if bare == "-\\infty":
        return Infinity(True)
    parsed = parse_value(text)
    if parsed is not None:
        return Number(parsed)
    wrapped = _TEXT_WRAPPER.match(text)
    words = wrapped.group(1).strip() if wrapped else text
    # words: wrapped in \text, or more than one, or longer than a product of letters would be
    plain = wrapped is not None or " " in words or len(words) > 3
    if plain and _WORDS.fullmatch(words) and len(words.replace(" ", "")) >= 2:
        return Text(" ".join(re.sub(r"[^a-z ]", " ", words.lower()).split()))
    return Unknown(text)


def _collection(kind: str, parts: list[str], depth: int, brackets: str = "", raw: str = "") -> Form:
    parts = [p for p in (p.strip() for p in parts) if p]
    if not parts or len(parts) > MAX_ELEMENTS:
        return Unknown(raw or ",".join(parts))
    items: list[Form] = []
    for part in parts:
        item = _read(part, depth + 1)
        if kind != "tuple" and isinstance(item, Collection) and item.kind == "list":
            items.extend(item.items)  # 1 \pm \sqrt{2}, 3: a list of three
        else:
            items.append(item)
    first = items[0]
    if (
        kind == "list"
        and isinstance(first, Named)
        and not any(isinstance(i, Named) for i in items[1:])
    ):
        # n = 1, 2, 3: one name for the whole list
        rest = (first.value, *items[1:])
        return Named(first.name, Collection("list", rest))
    return Collection(kind, tuple(items), brackets, raw if len(parts) == 2 else "")


def _many(make: type[Union], parts: list[str], depth: int) -> Form:
    return make(tuple(_read(p.strip(), depth + 1) for p in parts))


def _read_matrix(body: str, depth: int) -> Form:
    rows = [r for r in re.split(r"\\\\", body) if r.strip() and not r.strip().startswith("\\hline")]
    cells = [tuple(_read(c.strip(), depth + 1) for c in row.split("&")) for row in rows]
    if not cells or len({len(r) for r in cells}) != 1:
        return Unknown(body)
    return Matrix(tuple(cells))


def _named(text: str, depth: int) -> Form:
    sides = _top_level(text, re.compile("="))
    if sides is None or len(sides) < 2:
        return Unknown(text)
    name = sides[0].strip()
    if not _NAME.fullmatch(name):
        return Unknown(text)
    # x = 2 + 3 = 5: the last side is the answer
    return Named(name.replace("{", "").replace("}", ""), _read(sides[-1].strip(), depth + 1))


def _plus_minus(text: str, depth: int) -> Form:
    sign = "\\pm" if "\\pm" in text else "\\mp"
    if text.count(sign) != 1:
        return Unknown(text)
    first, second = ("+", "-") if sign == "\\pm" else ("-", "+")
    return Collection(
        "list",
        (_read(text.replace(sign, first), depth + 1), _read(text.replace(sign, second), depth + 1)),
    )


def _inequalities(parts: list[str], depth: int) -> Form:
    """``x > 2``, ``1 < x \\le 3``, or several joined by "or": the intervals they describe."""
    intervals: list[Form] = []
    variable = None
    for part in parts:
        interval = _inequality(part.strip(), depth)
        if interval is None:
            return Unknown(" or ".join(parts))
        name, form = interval
        if variable not in (None, name):
            return Unknown(" or ".join(parts))
        variable = name
        intervals.append(form)
    return intervals[0] if len(intervals) == 1 else Union(tuple(intervals))


def _inequality(text: str, depth: int) -> tuple[str, Form] | None:
    pieces: list[str] = []
    signs: list[str] = []
    last = 0
    for match in _RELATION.finditer(text):
        sign = _RELATION_SIGN.get(match.group(0))
        if sign is None:
            return None  # \neq
        pieces.append(text[last : match.start()].strip())
        signs.append(sign)
        last = match.end()
    pieces.append(text[last:].strip())
    if not 1 <= len(signs) <= 2 or not all(pieces):
        return None
    names = [i for i, p in enumerate(pieces) if re.fullmatch(r"[a-z]", p)]
    if len(names) != 1:
        return None
    at = names[0]
    if len(signs) == 2 and (at != 1 or signs[0][0] != signs[1][0]):
        return None  # a < x > b
    # orient every bound as  low (<|<=) x (<|<=) high
    low: tuple[Form, bool] = (Infinity(True), False)
    high: tuple[Form, bool] = (Infinity(False), False)
    for i, sign in enumerate(signs):
        left, right = pieces[i], pieces[i + 1]
        closed = sign.endswith("=")
        if i == at:  # x ? right
            bound = _read(right, depth + 1)
            if sign[0] == "<":
                high = (bound, closed)
            else:
                low = (bound, closed)
        else:  # left ? x
            bound = _read(left, depth + 1)
            if sign[0] == "<":
                low = (bound, closed)
            else:
                high = (bound, closed)
    brackets = ("[" if low[1] else "(") + ("]" if high[1] else ")")
    return pieces[at], Collection("tuple", (low[0], high[0]), brackets)


def as_decimal_comma(form: Collection) -> Number | None:
    """A bare pair like ``0,111`` or ``1000,99`` read as one number with a decimal comma, when it
    cannot be a thousands grouping (as ``1,234`` can); None otherwise."""
    match = re.fullmatch(r"(-?)(\d+),(\d+)", form.raw)
    if match is None:
        return None
    sign, whole, fraction = match.groups()
    if len(fraction) == 3 and len(whole) <= 3 and not whole.startswith("0"):
        return None  # 1,234 is a thousand and more
    parsed = parse_value(f"{sign}{whole}.{fraction}")
    return Number(parsed) if parsed is not None else None


def ratio_of(form: Form) -> Ratio | None:
    """The exact value of a number form (not a percentage, not huge), else None."""
    if isinstance(form, Number) and isinstance(form.parsed.value, Ratio):
        return form.parsed.value
    return None
