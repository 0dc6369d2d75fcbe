"""Is an extracted answer mathematically equal to a reference answer? Cheap checks, then math-verify.

:func:`answers_match` is the comparison behind ``math``, ``deepscaler`` and ``dapo``. It gives
math-verify's verdict (``verify(parse(gold), parse(answer))`` on both strings wrapped in
``\\boxed{}``) and calls math-verify only when two cheap checks cannot decide:

1. the two strings are equal after spacing, ``\\dfrac``/``\\tfrac`` and ``\\left``/``\\right``
   are normalized away: equal;
2. both lie in the unambiguous subset of :mod:`~rewardrouter.rewards.latex_value`, and their values
   decide: values further apart than math-verify's rounding could hide are unequal; exactly
   equal rationals, or floats equal to 1e-12, are equal, unless a variable sits under a root or
   in an exponent. Expressions in variables are compared at two points whose coordinates are
   drawn uniformly from 10 * 2^30 rationals, with a hash of the two strings as the source: two
   different rational functions of degree ``d`` agree at one such point with probability at
   most ``d / 2^33`` (Schwartz-Zippel), and no answer can be written to hit points that are not
   fixed in advance. They are called equal only when every value was computed exactly (a
   degree too high for exact powers leaves the verdict to math-verify).

Before both, digit grouping goes (``1{,}000`` is ``1000``, as math-verify reads it), and an
assignment ``x = 5`` compared with a plain ``5`` is compared by its right side, as math-verify
does. Everything else (units, sets, intervals, other equations, text, values too close to call)
goes to math-verify. One deliberate departure: a trailing percent sign is dropped on both sides
(``50\\%`` equals ``50``, the MATH convention; math-verify cannot parse a boxed percentage).

math-verify runs with its own ``SIGALRM`` timeouts disabled, so it works in threads and worker
processes and leaves an outer alarm alone; bounding its time is the executor's job (a CPU-heavy
grader runs in a worker process that is killed when it overruns). An outer deadline must raise an
exception of its own: math-verify turns its ``TimeoutException`` (a ``BaseException``) into a
``False`` verdict where it catches it, and where it escapes, it is re-raised here as
:class:`TimeoutError`, an ordinary exception the router records as a failed call.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from fractions import Fraction
from functools import lru_cache
from typing import Any

from rewardrouter.rewards.latex_value import Expr, Number, Undefined, parse_value

# An answer longer than this is not a final answer; math-verify on it could run for minutes.
MAX_ANSWER_CHARS = 1000

_SPACE = re.compile(r"\s+")
_PERCENT = re.compile(r"\s*(?:\\?%|\\text\{\s*\\?%\s*\})$")
_DELIMITED = re.compile(r"^(?:\$(.*)\$|\\\((.*)\\\)|\\\[(.*)\\\])$", re.DOTALL)
_LEFT_RIGHT = re.compile(r"\\(?:left|right)(?=[()\[\]|.]|\\[{}])")
_FRAC_STYLE = re.compile(r"\\[dt]frac(?![A-Za-z])")
# Rounding to 6 decimals (math-verify's float rule) cannot merge values further apart than this.
_ABS_TOL = 1e-5
_REL_TOL = 1e-9
# Values this close (relatively) are one value computed two ways in floating point.
_EQUAL_TOL = 1e-12


# Expressions in variables are compared at this many points, each coordinate one of _SPAN
# rationals k / _DENOMINATOR in [1, 11).
_POINTS = 2
_DENOMINATOR = 2**30
_SPAN = 10 * _DENOMINATOR
# "x = 5": one variable letter (not e or i), then a value with no further relation
_ASSIGNMENT = re.compile(r"\s*[a-df-hj-z]\s*=\s*([^=<>]+?)\s*")
_GROUPED_DIGITS = re.compile(r"-?\d{1,3}(?:(?:,|\{,\})\d{3})+(?:\.\d+)?")


def clean_answer(text: str) -> str:
    """Strip spacing, one pair of math delimiters, a trailing percent sign, digit grouping.

    ``1,000`` and ``1{,}000`` become ``1000`` as math-verify reads them; ``1,23`` (a pair) stays.
    """
    text = text.strip()
    match = _DELIMITED.match(text)
    if match:
        text = next(group for group in match.groups() if group is not None).strip()
    text = _PERCENT.sub("", text).strip()
    if _GROUPED_DIGITS.fullmatch(text):
        text = text.replace("{,}", "").replace(",", "")
    return text


def _space(match: re.Match[str]) -> str:
    # a space between two letters or digits means something (\pi r, 1 000); others do not
    text, start, end = match.string, match.start(), match.end()
    if start > 0 and end < len(text) and text[start - 1].isalnum() and text[end].isalnum():
        return " "
    return ""


def _canonical(text: str) -> str:
    return _SPACE.sub(_space, _FRAC_STYLE.sub(r"\\frac", _LEFT_RIGHT.sub("", text)).strip())


def _as_floats(a: Number, b: Number) -> tuple[float, float] | None:
    try:
        return float(a), float(b)
    except OverflowError:  # a rational too large for a float
        return None


def _clearly_different(a: Number, b: Number, exact: bool) -> bool:
    """Whether math-verify cannot call ``a`` and ``b`` equal (``exact``: no decimal literal)."""
    if exact and isinstance(a, Fraction) and isinstance(b, Fraction):
        return a != b
    pair = _as_floats(a, b)
    if pair is None:
        return False
    x, y = pair
    if math.isinf(x) or math.isinf(y):  # astronomically large (9^{9^{9^9}}): unequal to finite
        return math.isinf(x) != math.isinf(y)
    diff = abs(x - y)
    return diff > _ABS_TOL and diff > _REL_TOL * max(abs(x), abs(y))


def _surely_equal(a: Number, b: Number) -> bool:
    if isinstance(a, Fraction) and isinstance(b, Fraction):
        return a == b
    pair = _as_floats(a, b)
    if pair is None or math.isinf(pair[0]) or math.isinf(pair[1]):
        return False
    x, y = pair
    return abs(x - y) <= _EQUAL_TOL * max(1.0, abs(x), abs(y))


def _unassigned(answer: str, gold: str) -> tuple[str, str] | None:
    """``x = 5`` against ``5`` compares ``5``, as math-verify does; None if it cannot tell."""
    if ("=" in answer) == ("=" in gold):
        return (answer, gold) if "=" not in answer else None
    match = _ASSIGNMENT.fullmatch(answer if "=" in answer else gold)
    if match is None:
        return None
    return (match.group(1), gold) if "=" in answer else (answer, match.group(1))


def quick_verdict(answer: str, gold: str) -> bool | None:
    """math-verify's verdict on two cleaned answers when cheap checks can tell it, else None."""
    if _canonical(answer) == _canonical(gold):
        return True
    pair = _unassigned(answer, gold)
    if pair is None:
        return None
    answer, gold = pair
    got, want = _value(answer), _value(gold)
    if got is None or want is None:
        return None
    exact = not (got.decimal or want.decimal)
    envs = _points(answer, gold, got.variables | want.variables)
    values: list[Number] = []
    try:
        for env in envs:
            a, b = got.value(env), want.value(env)
            if _clearly_different(a, b, exact):
                return False
            values.append(a if _surely_equal(a, b) else math.nan)
    except (Undefined, OverflowError):
        return None
    if any(v != v for v in values) or not (got.rational and want.rational):
        return None  # too close to call, or \sqrt{x^2} against x (equal for x > 0 only)
    if len(envs[0]) and not all(isinstance(v, Fraction) for v in values):
        return None  # x^{50} and x^{50}+1 agree in floating point; only exact values tell
    lone = got.variables | want.variables
    if any(all(v == env[x] for v, env in zip(values, envs, strict=True)) for x in lone):
        return None  # math-verify compares a lone variable by its spelling: (x) \cdot 1 is not x
    # equal values are equal for math-verify too: 0.25 = 1/4, 2\sqrt{3} = \sqrt{12},
    # (x+1)^2 = x^2+2x+1
    return True


def _points(answer: str, gold: str, variables: frozenset[str]) -> tuple[dict[str, Number], ...]:
    """Where to compare two expressions: one empty point without variables, else ``_POINTS``
    points that give each variable a rational ``k / 2^30`` in [1, 11) (positive, so square
    roots of the variables stay real), ``k`` uniform, read from a hash of both strings (the
    same verdict every time)."""
    if not variables:
        return ({},)
    names = sorted(variables)
    stream = hashlib.shake_256(f"{answer}\0{gold}".encode()).digest(8 * _POINTS * len(names))
    draws = iter(int.from_bytes(stream[i : i + 8], "big") for i in range(0, len(stream), 8))
    return tuple(
        {name: Fraction(_DENOMINATOR + next(draws) % _SPAN, _DENOMINATOR) for name in names}
        for _ in range(_POINTS)
    )


@lru_cache(maxsize=8192)
def _value(text: str) -> Expr | None:
    return parse_value(text)


@lru_cache(maxsize=4096)
def _parsed(text: str) -> list[Any]:
    # imported on first use: sympy takes a second to import, and most answers never need it
    from math_verify import parse

    return list(parse(f"\\boxed{{{text}}}", parsing_timeout=None))


@contextmanager
def _timeouts_as_errors() -> Iterator[None]:
    from math_verify.errors import TimeoutException

    try:
        yield
    except TimeoutException as exc:  # a BaseException: only an outer SIGALRM raises it now
        raise TimeoutError("math-verify timed out (an outer SIGALRM fired)") from exc


def math_verify_match(answer: str, gold: str) -> bool:
    """math-verify's own verdict, without its SIGALRM timeouts (see the module docstring)."""
    from math_verify import verify

    with _timeouts_as_errors():
        return bool(verify(_parsed(gold), _parsed(answer), timeout_seconds=None))


def free_form_match(text: str, golds: Sequence[str]) -> bool:
    """Whether the answer math-verify extracts from free ``text`` equals any of ``golds``.

    math-verify's own extraction: ``final answer is``, ``Answer:``, else the last LaTeX or number.
    """
    from math_verify import parse, verify

    with _timeouts_as_errors():
        found = parse(text, parsing_timeout=None)
        return bool(found) and any(
            verify(_parsed(g), found, timeout_seconds=None) for g in map(clean_answer, golds) if g
        )


def answers_match(answer: str, golds: Sequence[str]) -> bool:
    """Whether ``answer`` equals any of ``golds`` (see the module docstring for how).

    Empty answers and answers longer than :data:`MAX_ANSWER_CHARS` match nothing.

    >>> answers_match("0.5", ["\\\\frac{1}{2}"])
    True
    """
    answer = clean_answer(answer)
    if not answer or len(answer) > MAX_ANSWER_CHARS:
        return False
    for gold in golds:
        gold = clean_answer(gold)
        if not gold:
            continue
        verdict = quick_verdict(answer, gold)
        if verdict is None:
            verdict = math_verify_match(answer, gold)
        if verdict:
            return True
    return False


def clear_caches() -> None:
    """Forget parsed answers (benchmarks time a cold grader with this)."""
    _value.cache_clear()
    _parsed.cache_clear()
