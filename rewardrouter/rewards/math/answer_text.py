"""How an answer is written, normalized: what is left is its mathematical content.

:func:`normalize` strips math delimiters (``$...$``, ``\\(...\\)``, ``\\[...\\]``), spells
Unicode symbols in LaTeX (``π``, ``√2``, ``≤``, the minus sign), drops ``\\left`` / ``\\right`` and style
commands, a sentence's final period, degree marks, currency signs and units after a value
(``5 \\text{ cm}``, ``6 inches``; never converted), reads a percent sign or word (``28\\%``,
``45 percent``, ``7 pct``) into a flag, and removes digit grouping (``1{,}000``, ``1,000``,
``1\\,000\\,000``, ``1 000``, never ``0,375`` or ``1,5``, which may be decimal commas).

>>> normalize("$1{,}000 \\\\text{ cm}.$")
('1000', False)
>>> normalize("45 percent")
('45', True)
"""

from __future__ import annotations

import re

__all__ = ["normalize"]

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
