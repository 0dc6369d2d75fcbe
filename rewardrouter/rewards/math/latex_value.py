"""Exact values of a small, unambiguous subset of LaTeX, for deciding answer equality without sympy.

The subset: numbers (``3``, ``-0.25``, ``.5``, repeating decimals ``0.\\overline{3}``), ``+ - * /
\\cdot \\times \\div``, implicit products (``2x``, ``3\\sqrt{2}``, ``\\frac{1}{2}\\pi``,
``2(\\sqrt{3}+1)``, ``(2)(3)``), powers with rational exponents (``x^2``, ``2^{10}``,
``8^{\\frac{2}{3}}``), ``\\frac`` / ``\\dfrac`` / ``\\tfrac`` (also ``\\frac12``), ``\\sqrt{}``,
``\\sqrt[n]{}`` and ``\\sqrt3``, ``\\pi``, parentheses and braces, ``\\left`` / ``\\right``, and
single lowercase letters other than ``e`` and ``i`` as variables. :func:`parse_value` returns
``None`` for anything outside it (units, sets, equations, ``e``, functions) and for every reading
on which LaTeX parsers or people disagree (``x(y)``, ``1/2x``, ``2^10``, ``xy``, the mixed number
``2\\frac{1}{2}``), so that whatever it does accept means one thing.

Values are exact (:mod:`~rewardrouter.rewards.math.closed_form`): rationals, radicals, powers of pi and
polynomials or rational functions of the variables. What exact arithmetic cannot express (a root
of a sum or of a variable, an irrational exponent) or what exceeds its size limits makes
:func:`parse_value` return ``None`` as well, with one exception: a lone power too large to
compute (``9^{9^{9^{9}}}``) is returned as :class:`Huge`, with a lower bound on its magnitude, so
that it can still be told apart from an ordinary number.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction

from rewardrouter.rewards.math.closed_form import (
    ClosedForm,
    Inexpressible,
    Ratio,
    TooLarge,
    Undefined,
)

__all__ = ["Huge", "Inexpressible", "ParsedValue", "TooLarge", "Undefined", "parse_value"]

_NUMBER = r"\d*\.\d*\\overline\{\d+\}|\d+\.\d+|\.\d+|\d+"
_TOKEN = re.compile(rf"\s*(?:({_NUMBER})|(\\[A-Za-z]+)|([A-Za-z])|(\S))")
_REPEATING = re.compile(r"(\d*)\.(\d*)\\overline\{(\d+)\}")
_VARIABLES = frozenset("abcdfghjklmnopqrstuvwxyz")  # e is Euler's number and i is imaginary
_FRAC = frozenset({"\\frac", "\\dfrac", "\\tfrac", "\\cfrac"})
_TIMES = frozenset({"*", "\\cdot", "\\times"})
_DIVIDE = frozenset({"/", "\\div"})
_IGNORED = frozenset({"\\left", "\\right", "\\displaystyle"})
_MAX_TOKENS = 200
_SIMPLE_FRACTION = re.compile(r"(-?)\\[dt]?frac\{(\d{1,30})\}\{(\d{1,30})\}")
_PLAIN = re.compile(r"-?(?:\d{1,400}(?:\.\d{1,400})?|\.\d{1,400})")
# A power whose magnitude is provably above 2 ** this is reported as Huge.
HUGE_LOG2 = 4096


class _Reject(Exception):
    """The text lies outside the subset, or is ambiguous."""


@dataclass(frozen=True)
class Huge:
    """A lone power too large to compute exactly; its magnitude is at least ``2 ** log2``."""

    log2: float


@dataclass(frozen=True)
class ParsedValue:
    """An exact value and how it was written.

    ``decimal`` tells whether a terminating decimal literal occurs (``0.33``): graders that follow
    math-verify let such an answer stand for a value it rounds to, so only an exact match or a
    clear difference is decided for it. ``variables`` are the letters used.
    """

    value: Ratio | Huge
    decimal: bool
    variables: frozenset[str]


def _repeating(token: str) -> Fraction:
    match = _REPEATING.fullmatch(token)
    assert match is not None
    whole, fixed, cycle = match.groups()
    shift = 10 ** len(fixed)
    value = Fraction(int(whole or "0")) + Fraction(int(fixed or "0"), shift)
    return value + Fraction(int(cycle), shift * (10 ** len(cycle) - 1))


def _log2_floor(q: Fraction) -> int:
    """A lower bound on log2 |q| for |q| >= 1."""
    num, den = abs(q.numerator), q.denominator
    return num.bit_length() - 1 - (den.bit_length() if den > 1 else 0)


def _log2_lower(q: Fraction) -> int:
    """A lower bound on log2 q for q > 0."""
    return _log2_floor(q) if q >= 1 else -math.ceil(1 / q).bit_length()


def _scale(tokens: list[tuple[str, str]]) -> bool:
    """Whether ``tokens`` are a nonzero plain number and a product sign (``3 \\times``)."""
    if len(tokens) != 2 or tokens[1][1] not in _TIMES or tokens[0][0] != "num":
        return False
    return "\\" not in tokens[0][1] and Fraction(tokens[0][1]) != 0


class _Parser:
    """Recursive descent over the token list; each rule returns an exact :class:`Ratio`."""

    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        self.variables: set[str] = set()
        self.decimal = False
        self.last_factor = (
            ""  # kind of the last factor parsed: num, var, paren, frac, sqrt, pi, pow
        )
        self.huge: tuple[int, int, float] | None = None  # token span and log2 of a huge power
        for match in _TOKEN.finditer(text.strip()):
            number, command, letter, other = match.groups()
            kind = "num" if number else "cmd" if command else "var" if letter else "op"
            token = number or command or letter or other
            if kind == "cmd" and token in _IGNORED:
                continue
            self.tokens.append((kind, token))
        if len(self.tokens) > _MAX_TOKENS:
            raise _Reject("too long")
        self.pos = 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else ("end", "")

    def take(self, token: str) -> None:
        if self.peek()[1] != token:
            raise _Reject(f"expected {token}")
        self.pos += 1

    def parse(self) -> ParsedValue:
        if not self.tokens:
            raise _Reject("empty")
        try:
            value: Ratio | Huge = self.sum()
        except TooLarge:
            value = self.lone_huge()
        if self.pos != len(self.tokens):
            raise _Reject("trailing input")
        return ParsedValue(value, self.decimal, frozenset(self.variables))

    def lone_huge(self) -> Huge:
        """The whole text is one huge power, possibly negated or scaled by a number written
        before it (``-3 \\times 10^{10^{9}}``): its magnitude bound."""
        if self.huge is None:
            raise _Reject("too large")
        start, end, log2 = self.huge
        lead = self.tokens[1:start] if start and self.tokens[0][1] in "+-" else self.tokens[:start]
        if end != len(self.tokens) or (lead and not _scale(lead)):
            raise _Reject("too large, inside a larger expression")
        if lead:
            log2 += _log2_lower(abs(Fraction(lead[0][1])))
        self.pos = end
        return Huge(log2)

    def sum(self) -> Ratio:
        sign = self.peek()[1]
        if sign in ("-", "+"):
            self.pos += 1
        left = self.product()
        if sign == "-":
            left = -left
        while self.peek()[1] in ("+", "-"):
            minus = self.tokens[self.pos][1] == "-"
            self.pos += 1
            right = self.product()
            left = left - right if minus else left + right
        return left

    def product(self) -> Ratio:
        left = self.power()
        after_division = False
        while True:
            kind, token = self.peek()
            if token in _TIMES or token in _DIVIDE:
                self.pos += 1
                after_division = token in _DIVIDE
                right = self.power()
                left = left / right if after_division else left * right
            elif self.starts_implicit_factor(kind, token):
                if after_division:
                    raise _Reject("a/b c is read differently by different parsers")
                left = left * self.power()
            else:
                return left

    def starts_implicit_factor(self, kind: str, token: str) -> bool:
        """Whether the next token starts a factor multiplied by juxtaposition (``2x``)."""
        previous = self.last_factor
        if kind == "num":
            raise _Reject("a number right after a factor (x2, 2 3)")
        if kind == "var" and previous == "var":
            raise _Reject("xy may be one symbol")
        if token in _FRAC and previous == "num":
            raise _Reject("2\\frac{1}{2} is a mixed number to some readers")
        if token == "(" and previous not in ("num", "paren", "frac", "sqrt", "pi", "pow"):
            # x(3) and x^2(3) may be function calls; 2(3), (2)(3), \pi(1+x), 2^{\frac{2}{3}}(3)
            # are products
            raise _Reject("(...) after a letter or a power of one")
        return kind == "var" or token in ("(", "\\pi", "\\sqrt") or token in _FRAC

    def power(self) -> Ratio:
        start = self.pos
        base = self.atom()
        base_kind = self.last_factor
        if self.peek()[1] != "^":
            return base
        self.pos += 1
        kind, token = self.peek()
        if kind == "num" and len(token) == 1:
            exponent = self.atom()
        elif token == "{":
            inside = self.pos + 1
            try:
                exponent = self.group("{", "}")
            except TooLarge as exc:
                # a power tower: the whole exponent is one huge positive power
                if not (exc.log2 > 0 and self.huge == (inside, self.pos, exc.log2)):
                    raise
                self.take("}")
                return self.huge_power(start, base, None, exc.log2)
        else:
            raise _Reject("unbraced exponent")  # 2^10 is 2^1 0 in LaTeX; x^y is not exact
        if self.peek()[1] == "^":
            raise _Reject("a^b^c")
        self.last_factor = "pow_of_letter" if base_kind == "var" else "pow"
        q = exponent.as_rational()
        if q is None:
            raise _Reject("an exponent that is not a rational number")
        try:
            return base.power(q)
        except TooLarge:
            return self.huge_power(start, base, q, 0.0)

    def huge_power(
        self, start: int, base: Ratio, exponent: Fraction | None, exponent_log2: float
    ) -> Ratio:
        """Record a power too large to compute whose magnitude is provably huge, and raise.

        ``exponent`` is the exact exponent, or None when the exponent is itself huge and at
        least ``2 ** exponent_log2``.
        """
        b = base.as_rational()
        if b is None or abs(b) < 2 or (exponent is not None and exponent <= 0):
            raise TooLarge("a power too large to compute")
        if exponent is not None:
            try:
                log2 = float(exponent) * _log2_floor(b)
            except OverflowError:
                log2 = float("inf")
        else:
            log2 = 2.0**exponent_log2 if exponent_log2 < 1000 else float("inf")
        if log2 < HUGE_LOG2:
            raise TooLarge("a power too large to compute")
        sign_known = b > 0 or (exponent is not None and exponent.denominator == 1)
        positive = b > 0 or (exponent is not None and exponent.numerator % 2 == 0)
        self.huge = (start, self.pos, log2)
        raise TooLarge("a huge power", log2 if sign_known and positive else 0.0)

    def group(self, open_: str, close: str) -> Ratio:
        self.take(open_)
        inner = self.sum()
        self.take(close)
        return inner

    def digit_argument(self) -> Ratio:
        """An unbraced one-digit argument: ``\\sqrt3``, ``\\frac12`` (read one digit at a time)."""
        kind, token = self.peek()
        if kind != "num" or not token.isdigit():
            raise _Reject("an unbraced argument that is not a digit")
        return Ratio.of(int(token))

    def argument(self, ambiguous: str) -> Ratio:
        """A braced argument, or an unbraced one-digit one (``\\sqrt3``, the ``2`` of
        ``\\frac12``); a longer unbraced token is refused, ``ambiguous`` naming its spelling."""
        if self.peek()[1] == "{":
            return self.group("{", "}")
        if len(self.peek()[1]) != 1:
            raise _Reject(f"{ambiguous} is ambiguous")
        value = self.digit_argument()
        self.pos += 1
        return value

    def atom(self) -> Ratio:
        kind, token = self.peek()
        if kind == "num":
            self.pos += 1
            self.last_factor = "num"
            if "\\overline" in token:
                return Ratio.of(_repeating(token))
            if token.isdigit():
                return Ratio.of(Fraction(int(token)))
            self.decimal = True
            return Ratio.of(Fraction(token))
        if kind == "var":
            if token not in _VARIABLES:
                raise _Reject(f"letter {token!r}")
            self.pos += 1
            self.variables.add(token)
            self.last_factor = "var"
            return Ratio(ClosedForm.variable(token))
        if token in ("(", "{"):
            inner = self.group(token, ")" if token == "(" else "}")
            self.last_factor = "paren"
            return inner
        if token == "\\pi":
            self.pos += 1
            self.last_factor = "pi"
            return Ratio(ClosedForm.pi())
        if token in _FRAC:
            self.pos += 1
            value = self.fraction()
            self.last_factor = "frac"
            return value
        if token == "\\sqrt":
            self.pos += 1
            value = self.radical()
            self.last_factor = "sqrt"
            return value
        raise _Reject(f"unexpected {token!r}")

    def fraction(self) -> Ratio:
        kind, token = self.peek()
        if self.peek()[1] == "{":
            num = self.group("{", "}")
        elif kind == "num" and token.isdigit() and len(token) == 2:  # \frac12
            self.pos += 1
            return Ratio.of(int(token[0])) / Ratio.of(int(token[1]))
        else:
            num = self.digit_argument()
            self.pos += 1
        return num / self.argument("\\frac1 23")

    def radical(self) -> Ratio:
        degree = 2
        if self.peek()[1] == "[":
            self.pos += 1
            kind, digits = self.peek()
            if kind != "num" or not digits.isdigit() or not 2 <= int(digits) <= 64:
                raise _Reject("root degree")
            degree = int(digits)
            self.pos += 1
            self.take("]")
        return self.argument("\\sqrt12").root(degree)


def parse_value(text: str) -> ParsedValue | None:
    """The exact :class:`ParsedValue` of ``text``, or ``None`` when it lies outside the subset.

    >>> parse_value("\\\\dfrac{3}{4}").value.as_rational()
    Fraction(3, 4)
    >>> parse_value("1,000") is None
    True
    """
    if _PLAIN.fullmatch(text):
        return ParsedValue(Ratio.of(Fraction(text)), "." in text, frozenset())
    simple = _SIMPLE_FRACTION.fullmatch(text)
    if simple is not None and simple.group(3) != "0":
        sign, num, den = simple.groups()
        value = Fraction(int(num), int(den))
        return ParsedValue(Ratio.of(-value if sign else value), False, frozenset())
    try:
        return _Parser(text).parse()
    except (_Reject, ArithmeticError, ValueError):
        return None
    except RecursionError:
        return None
