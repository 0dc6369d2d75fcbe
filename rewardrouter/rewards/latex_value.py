"""Values of a small, unambiguous subset of LaTeX, for deciding answer equality without sympy.

The subset: numbers (``3``, ``-0.25``, ``.5``), ``+ - * / \\cdot \\times``, implicit products
(``2x``, ``3\\sqrt{2}``, ``\\frac{1}{2}\\pi``), powers (``x^2``, ``2^{10}``), ``\\frac`` /
``\\dfrac`` / ``\\tfrac``, ``\\sqrt{}`` and ``\\sqrt[n]{}``, ``\\pi``, parentheses and braces,
``\\left`` / ``\\right``, and single lowercase letters other than ``e`` and ``i`` as variables.
:func:`parse_value` returns ``None`` for anything outside it (units, sets, percentages,
thousands separators, equations, ``e``, functions), and for every reading on which LaTeX parsers
disagree (``x(y)``, ``1/2x``, ``2^10``, ``xy``, ``2(3)``, the mixed number ``2\\frac{1}{2}``), so
that whatever it does accept means one thing.

An :class:`Expr` evaluates exactly (``fractions.Fraction``, variables set to rationals) while it
stays rational and with floats once an irrational root or ``\\pi`` is involved; huge powers
overflow to infinity instead of hanging. Contract of :meth:`Expr.value`: a ``Fraction`` or a finite
or infinite ``float``, or :class:`Undefined` (division by zero, even roots of negatives,
``inf - inf``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import TypeAlias

Number: TypeAlias = Fraction | float
Env: TypeAlias = Mapping[str, Number]

_TOKEN = re.compile(r"\s*(?:(\d+\.\d+|\.\d+|\d+)|(\\[A-Za-z]+)|([A-Za-z])|(\S))")
_VARIABLES = frozenset("abcdfghjklmnopqrstuvwxyz")  # e is Euler's number and i is imaginary
_FRAC = frozenset({"\\frac", "\\dfrac", "\\tfrac"})
_TIMES = frozenset({"*", "\\cdot", "\\times"})
_IGNORED = frozenset({"\\left", "\\right"})
_MAX_EXACT_BITS = 1000  # beyond this a power is computed as a float (and may overflow to inf)
_MAX_TOKENS = 200


class Undefined(ArithmeticError):
    """The expression has no real value at this point (a zero divisor, a negative radicand)."""


class _Reject(Exception):
    """The text lies outside the subset, or is ambiguous."""


@dataclass(frozen=True)
class Expr:
    """A parsed expression: ``value(env)`` evaluates it, ``variables`` are its letters.

    ``decimal`` tells whether a decimal literal occurs: graders that follow math-verify compare
    such values by rounding rather than exactly. ``rational`` tells whether variables occur only
    under ``+ - * /`` and integer powers (no ``\\sqrt{x}``, no ``2^x``): then the expression is a
    rational function of its variables, and two such that agree at a few distinct points are
    (barring a contrived choice of points) the same function.
    """

    evaluate: Callable[[Env], Number]
    variables: frozenset[str]
    decimal: bool
    rational: bool

    def value(self, env: Env | None = None) -> Number:
        """The value at ``env`` (a value for every name in ``variables``); may raise Undefined."""
        return self.evaluate(env or {})


def _finite_or_inf(result: Number) -> Number:
    if isinstance(result, float) and math.isnan(result):
        raise Undefined("inf - inf or 0 * inf")
    return result


def _add(a: Number, b: Number) -> Number:
    return _finite_or_inf(a + b)


def _sub(a: Number, b: Number) -> Number:
    return _finite_or_inf(a - b)


def _mul(a: Number, b: Number) -> Number:
    return _finite_or_inf(a * b)


def _div(a: Number, b: Number) -> Number:
    if b == 0:
        raise Undefined("division by zero")
    return _finite_or_inf(a / b)


def _integer_root(k: int, n: int) -> int | None:
    """The integer ``r`` with ``r ** n == k``, or None (``k >= 0``)."""
    if n == 2:
        r = math.isqrt(k)
        return r if r * r == k else None
    if k >= 2**50:  # beyond float precision; leave it to the float path
        return None
    r = round(k ** (1 / n))
    return next((c for c in (r - 1, r, r + 1) if c >= 0 and c**n == k), None)


def _root(x: Number, n: int) -> Number:
    if x < 0:
        raise Undefined("root of a negative number")
    if isinstance(x, Fraction):
        num, den = _integer_root(x.numerator, n), _integer_root(x.denominator, n)
        if num is not None and den is not None:
            return Fraction(num, den)
    return math.pow(float(x), 1 / n)


def _pow(base: Number, exp: Number) -> Number:
    if isinstance(exp, Fraction) and exp.denominator == 1:
        k = exp.numerator
        if base == 0 and k < 0:
            raise Undefined("0 to a negative power")
        if isinstance(base, Fraction):
            bits = max(base.numerator.bit_length(), base.denominator.bit_length())
            if bits * abs(k) <= _MAX_EXACT_BITS:
                exact: Fraction = base**k
                return exact
    elif base < 0:
        raise Undefined("negative base, fractional exponent")
    try:
        return _finite_or_inf(math.pow(float(base), float(exp)))
    except OverflowError:
        # astronomically large (or, for a base below one, small): 9^{9^{9^9}} ends here at once
        return math.inf if (base > 1 or base < -1) == (exp > 0) else 0.0
    except ValueError as exc:
        raise Undefined(str(exc)) from exc


class _Parser:
    """Recursive descent over the token list; each ``_rule`` returns an evaluator."""

    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        self.variables: set[str] = set()
        self.decimal = False
        self.rational = True
        self.var_uses = 0  # variables consumed so far
        self.under_root = 0  # nesting depth of radicands and exponents being parsed
        self.last_factor = ""  # first token of the last factor parsed ("^" once raised to a power)
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

    def parse(self) -> Expr:
        if not self.tokens:
            raise _Reject("empty")
        evaluate = self.sum()
        if self.pos != len(self.tokens):
            raise _Reject("trailing input")
        return Expr(evaluate, frozenset(self.variables), self.decimal, self.rational)

    def sum(self) -> Callable[[Env], Number]:
        sign = self.peek()[1]
        if sign in ("-", "+"):
            self.pos += 1
        left = self.product()
        if sign == "-":
            inner = left
            left = lambda env: -inner(env)  # noqa: E731
        while self.peek()[1] in ("+", "-"):
            op = _add if self.tokens[self.pos][1] == "+" else _sub
            self.pos += 1
            left = _binary(op, left, self.product())
        return left

    def product(self) -> Callable[[Env], Number]:
        left = self.power()
        after_division = False
        while True:
            kind, token = self.peek()
            if token in _TIMES or token == "/":
                self.pos += 1
                after_division = token == "/"
                left = _binary(_div if after_division else _mul, left, self.power())
            elif self.starts_implicit_factor(kind, token):
                if after_division:
                    raise _Reject("a/b c is read differently by different parsers")
                left = _binary(_mul, left, self.power())
            else:
                return left

    def starts_implicit_factor(self, kind: str, token: str) -> bool:
        """Whether the next token starts a factor multiplied by juxtaposition (``2x``)."""
        previous_kind = self.tokens[self.pos - 1][0]
        if kind == "num":
            raise _Reject("a number right after a factor (x2, 2 3)")
        if kind == "var" and previous_kind == "var":
            raise _Reject("xy may be one symbol")
        if token in _FRAC and previous_kind == "num":
            raise _Reject("2\\frac{1}{2} is a mixed number to some parsers")
        if token == "(" and self.last_factor not in ("\\frac", "\\sqrt"):
            # x(3), x^2(3) may be calls; 2(3) and (2)(3) are 5 to latex2sympy
            raise _Reject("(...) after a number, letter, power or parenthesis")
        return kind == "var" or token in ("(", "\\pi", "\\sqrt") or token in _FRAC

    def power(self) -> Callable[[Env], Number]:
        uses = self.var_uses
        first = self.peek()[1]
        base = self.atom()
        self.last_factor = first  # set after atom(), which parses nested factors of its own
        if self.peek()[1] != "^":
            return base
        self.last_factor = "^"
        base_varies, uses = self.var_uses > uses, self.var_uses
        self.pos += 1
        self.under_root += 1
        kind, token = self.peek()
        if (kind == "num" and len(token) == 1) or kind == "var":
            exponent = self.atom()
        elif token == "{":
            exponent = self.group("{", "}")
        else:
            raise _Reject("unbraced exponent")
        self.under_root -= 1
        if self.peek()[1] == "^":
            raise _Reject("a^b^c")
        if base_varies and self.var_uses == uses:
            try:
                constant = exponent({})
            except Undefined as exc:
                raise _Reject("undefined exponent") from exc
            if not (isinstance(constant, Fraction) and constant.denominator == 1):
                self.rational = False
        return _binary(_pow, base, exponent)

    def group(self, open_: str, close: str) -> Callable[[Env], Number]:
        self.take(open_)
        inner = self.sum()
        self.take(close)
        return inner

    def atom(self) -> Callable[[Env], Number]:
        kind, token = self.peek()
        if kind == "num":
            self.pos += 1
            self.decimal = self.decimal or "." in token
            value = Fraction(token)
            return lambda env: value
        if kind == "var":
            if token not in _VARIABLES:
                raise _Reject(f"letter {token!r}")
            self.pos += 1
            self.variables.add(token)
            self.var_uses += 1
            if self.under_root:
                self.rational = False
            return lambda env: env[token]
        if token == "(":
            return self.group("(", ")")
        if token == "{":
            return self.group("{", "}")
        if token == "\\pi":
            self.pos += 1
            return lambda env: math.pi
        if token in _FRAC:
            self.pos += 1
            num = self.group("{", "}")
            den = self.group("{", "}")
            return _binary(_div, num, den)
        if token == "\\sqrt":
            self.pos += 1
            degree = 2
            if self.peek()[1] == "[":
                self.pos += 1
                kind, digits = self.peek()
                if kind != "num" or not digits.isdigit() or int(digits) < 2:
                    raise _Reject("root degree")
                degree = int(digits)
                self.pos += 1
                self.take("]")
            self.under_root += 1
            radicand = self.group("{", "}")
            self.under_root -= 1
            return lambda env: _root(radicand(env), degree)
        raise _Reject(f"unexpected {token!r}")


def _binary(
    op: Callable[[Number, Number], Number],
    left: Callable[[Env], Number],
    right: Callable[[Env], Number],
) -> Callable[[Env], Number]:
    return lambda env: op(left(env), right(env))


def parse_value(text: str) -> Expr | None:
    """The :class:`Expr` of ``text``, or ``None`` when it lies outside the subset.

    >>> parse_value("\\\\dfrac{3}{4}").value()
    Fraction(3, 4)
    >>> parse_value("1,000") is None
    True
    """
    try:
        return _Parser(text).parse()
    except (_Reject, ValueError, ZeroDivisionError, RecursionError):
        return None
