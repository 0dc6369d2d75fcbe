"""What a final answer says: a number, a set, a tuple, an interval, a matrix, an inequality, text.

:func:`read_answer` turns the text of a final answer (a box's content, a label) into a
:class:`Form`, after normalizing how it is written
(:func:`~rewardrouter.rewards.math.answer_text.normalize`: delimiters, Unicode, units, percentages,
digit grouping). Forms nest: the elements of a set may be tuples. Everything the reader cannot
make out with certainty becomes :class:`Unknown`, which the comparison leaves to math-verify.

The forms and what they mean:

- :class:`Number`: an exact value (:mod:`~rewardrouter.rewards.math.latex_value`), possibly written
  as a percentage;
- :class:`Infinity`: ``\\infty``, ``-\\infty``;
- :class:`Collection`: ``\\{1, 2\\}`` (``set``; the empty set as ``\\{\\}``, ``\\emptyset``,
  ``\\varnothing`` or ``∅``), ``(1, 2)`` / ``[1, 2)`` (``tuple``, its
  brackets kept: an ordered pair and an open interval are written alike and compared alike),
  ``1, 2``, ``1 and 2`` or ``1 \\text{ or } 2`` / ``1 \\vee 2`` (``list``, an unordered list of
  answers, every one compared: alternatives are not a hedge), and ``a \\pm b`` (a ``list`` of
  two);
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

from rewardrouter.rewards.math.answer_text import normalize
from rewardrouter.rewards.math.latex_value import ParsedValue, parse_value

__all__ = [
    "EMPTY_SET",
    "Collection",
    "Form",
    "Infinity",
    "Matrix",
    "Named",
    "Number",
    "Text",
    "Union",
    "Unknown",
    "clear_cache",
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
class Negated:
    """An answer that negates (``x \\not= 5``, ``\\neg(x = 5)``): it names no value."""

    text: str


@dataclass(frozen=True)
class Text:
    words: str


@dataclass(frozen=True)
class Unknown:
    """Not read with certainty; compared by math-verify."""

    text: str


Form: TypeAlias = Number | Infinity | Collection | Union | Matrix | Named | Negated | Text | Unknown

#: The empty set, however it is written (``\\{\\}``, ``\\emptyset``, ``\\varnothing``, ``∅``).
EMPTY_SET = Collection("set", ())
_EMPTY_SET_NAMES = frozenset({"\\emptyset", "\\varnothing", "\u2205"})

_TEXT_WRAPPER = re.compile(r"^\\(?:text|textbf|textit|mathrm|mbox|textnormal)\s*\{([^{}]*)\}$")
_WORDS = re.compile(r"[A-Za-z][A-Za-z' -]*[A-Za-z]")
_NAME = re.compile(r"[a-zA-Z](?:_\{?[\w]+\}?)?|\\(?:alpha|beta|gamma|theta|lambda|mu)")


# ------------------------------------------------------------------------------------ splitting

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
#: ``\\not`` before a relation (``\\not=``, ``\\not<``) and logical negation (math-verify
#: reads ``x \\not= 5`` as ``x = 5``); ``\\notin`` and ``\\neq`` are relations of their own.
_NEGATION = re.compile(r"\\(?:not|neg|lnot)(?![A-Za-z])")
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
    """The :class:`Form` of an answer's text (see the module docstring); cached per process."""
    return _read(text, 0)


def clear_cache() -> None:
    """Forget the answers read so far."""
    _read.cache_clear()


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
    if text in _EMPTY_SET_NAMES:
        return EMPTY_SET
    if _NEGATION.search(text):
        return Negated(text)
    matrix = _MATRIX.match(text)
    if matrix is not None:
        return _read_matrix(matrix.group(2), depth)
    form = _split(text, depth)
    if form is None:
        form = _bracketed(text, depth)
    if form is not None:
        return form
    if _RELATION.search(text):
        return _inequalities([text], depth)
    if "=" in text:
        return _named(text, depth)
    if "\\pm" in text or "\\mp" in text:
        return _plus_minus(text, depth)
    return _scalar(text)


def _split(text: str, depth: int) -> Form | None:
    """A union, alternatives, a list: ``text`` split at its top-level separators, else None.
    Each split is tried only when its separator occurs at all (most answers have none)."""
    if "\\cup" in text and (parts := _top_level(text, _CUP)) and len(parts) > 1:
        return _many(Union, parts, depth)
    if _MAYBE_OR.search(text) and (parts := _top_level(text, _OR)) and len(parts) > 1:
        if not any(_RELATION.search(p) for p in parts):
            return _collection("list", parts, depth)  # 2 or 3: every alternative counts
        return _inequalities(parts, depth)
    if ("," in text or ";" in text) and (parts := _top_level(text, _COMMA)) and len(parts) > 1:
        return _collection("list", parts, depth, raw=text)
    if "and" in text and (parts := _top_level(text, _AND)) and len(parts) > 1:
        return _collection("list", parts, depth)
    return None


def _bracketed(text: str, depth: int) -> Form | None:
    """A set (``\\{...\\}``) or a tuple (``(a, b)``, ``[a, b]``) that ``text`` encloses, else
    None."""
    if _enclosed(text, "\\{", "\\}"):
        inner = _top_level(text[2:-2], _COMMA) or []
        return _collection("set", inner, depth)
    if text[0] in "([" and text[-1] in ")]" and _enclosed(text, text[0], text[-1]):
        inner = _top_level(text[1:-1], _COMMA) or []
        if len(inner) > 1:
            return _collection("tuple", inner, depth, brackets=text[0] + text[-1])
    return None


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
    if not parts and kind == "set":
        return EMPTY_SET  # \{\}
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
    """A bare pair like ``0,375`` or ``2500,25`` read as one number with a decimal comma, when it
    cannot be a thousands grouping (as ``1,234`` can); None otherwise."""
    match = re.fullmatch(r"(-?)(\d+),(\d+)", form.raw)
    if match is None:
        return None
    sign, whole, fraction = match.groups()
    if len(fraction) == 3 and len(whole) <= 3 and not whole.startswith("0"):
        return None  # 1,234 is a thousand and more
    parsed = parse_value(f"{sign}{whole}.{fraction}")
    return Number(parsed) if parsed is not None else None
