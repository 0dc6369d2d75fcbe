"""Is an extracted answer mathematically equal to a reference answer? Exact checks, then math-verify.

:func:`answers_match` is the comparison behind ``math``, ``deepscaler`` and ``dapo``. Both answers
are read into forms (:mod:`~rewardrouter.rewards.math.answer_forms`: numbers, sets, tuples, intervals,
inequalities, matrices, assignments, text) and compared by :func:`compare_forms`, which says
"equal" or "not equal" only when the verdict is exact:

- numbers are compared in exact arithmetic (:mod:`~rewardrouter.rewards.math.closed_form`: rationals,
  radicals, powers of pi, polynomials and rational functions of variables); two values are equal
  exactly when they are the same number (``\\sqrt{2}+10^{-13}`` is not ``\\sqrt{2}``,
  ``\\sqrt{10^{600}}`` is ``10^{300}``, ``(x+1)^2`` is ``x^2+2x+1``);
- a terminating decimal (``0.333``) equals a value only when it is that value exactly, and differs
  from it when further apart than math-verify's rounding to 6 places could hide; in between (it
  may be a rounded value, ``0.333333`` for ``\\frac{1}{3}``) math-verify decides;
- tuples, intervals and matrices element by element (an interval's brackets count), sets and
  unordered lists as sets, each element by these same rules; an inequality in one variable as the
  interval it describes;
- ``x = 5`` against ``5`` by its right side (the last side of a chain, as math-verify reads it);
- a negation (``x \\not= 5``, ``\\neg(x = 5)``) as no value: it equals no number;
- alternatives (``41 \\vee 42``, ``41 \\text{ or } 42``) as a list of answers, every one
  compared, so that naming several is no hedge;
- a percentage against a plain number: equal when the number is the percentage's number (``28\\%``
  and ``28``, the MATH convention) or its value (``28\\%`` and ``0.28``);
- a bare pair that cannot be a thousands grouping (``0,375``, ``2500,25``) against a number: read
  with a decimal comma.

An answer longer than :data:`MAX_ANSWER_CHARS` (1,000 characters) matches nothing unless it is
identical to a reference answer (both stripped): no final answer is that long, and reading one
costs time that grows with it (math-verify's parse of a long expression can run for minutes), so
a response cannot buy a slow comparison by writing one. A long reference, such as a large
matrix, is still matched by the same text.

Whatever these rules cannot decide goes to math-verify: ``verify(parse(gold), parse(answer))``
on both (normalized) strings wrapped in ``\\boxed{}``. Verdicts are cached per process, keyed by
the two strings, so the answers a GRPO group repeats, and the label it shares, are read once.

math-verify runs with its own ``SIGALRM`` timeouts disabled, so it works in threads and worker
processes and leaves an outer alarm alone; bounding its time is the executor's job (a CPU-heavy
grader runs in a worker process that is killed when it overruns). An outer deadline must raise an
exception of its own: math-verify turns its ``TimeoutException`` (a ``BaseException``) into a
``False`` verdict where it catches it, and where it escapes, it is re-raised here as
:class:`TimeoutError`, an ordinary exception the router records as a failed call.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from fractions import Fraction
from functools import lru_cache
from typing import Any, TypeGuard

from rewardrouter.rewards.labels import clear_label_cache
from rewardrouter.rewards.math.answer_forms import (
    Collection,
    Form,
    Infinity,
    Matrix,
    Named,
    Negated,
    Number,
    Text,
    Union,
    Unknown,
    as_decimal_comma,
    read_answer,
)
from rewardrouter.rewards.math.answer_forms import clear_cache as clear_forms
from rewardrouter.rewards.math.answer_text import normalize
from rewardrouter.rewards.math.closed_form import Inexpressible, Ratio, TooLarge, Undefined
from rewardrouter.rewards.math.latex_value import Huge, ParsedValue

#: An answer longer than this is not a final answer: it matches only a reference identical to
#: it (math-verify on such an answer could run for minutes).
MAX_ANSWER_CHARS = 1000

# Rounding to 6 decimals (math-verify's float rule) cannot merge values further apart than this,
# and math-verify's 15-digit floats cannot either, relatively.
_ABS_TOL = Fraction(1, 10**5)
_REL_TOL = Fraction(1, 10**9)
# Pairs of elements compared at most when matching two sets.
_MAX_PAIRS = 4096
_ARITHMETIC = (Inexpressible, TooLarge, Undefined, ZeroDivisionError)


def clean_answer(text: str) -> str:
    """The text math-verify is given: normalized spelling, without a percent sign or units.

    >>> clean_answer("$1{,}000 \\\\text{ cm}.$")
    '1000'
    """
    return normalize(text)[0]


# ------------------------------------------------------------------------------------ comparison


def _values(gold: ParsedValue, answer: ParsedValue) -> bool | None:
    g, a = gold.value, answer.value
    if isinstance(g, Huge) or isinstance(a, Huge):
        return _against_huge(g, a)
    try:
        if g.equals(a):
            return True
        if not (gold.decimal or answer.decimal):
            return False  # exact values, and different
        if gold.variables or answer.variables:
            return None
        low, high = (g - a).bounds()
        gap = min(abs(low), abs(high)) if low * high > 0 else Fraction(0)
        size = max(abs(x) for pair in (g.bounds(), a.bounds()) for x in pair)
    except _ARITHMETIC:
        return None
    if gap > _ABS_TOL and gap > _REL_TOL * size:
        return False  # further apart than any rounding math-verify does
    return None  # close: maybe a rounded value, math-verify's call


def _against_huge(g: Ratio | Huge, a: Ratio | Huge) -> bool | None:
    if isinstance(g, Huge) and isinstance(a, Huge):
        return None
    huge, other = (g, a) if isinstance(g, Huge) else (a, g)
    assert isinstance(huge, Huge) and isinstance(other, Ratio)
    try:
        low, high = other.bounds()
    except _ARITHMETIC:
        return None
    bound = max(abs(low), abs(high))
    if bound == 0 or bound.numerator.bit_length() - bound.denominator.bit_length() < huge.log2 - 2:
        return False  # |huge| >= 2^log2 > |other|
    return None


def _numbers(gold: Number, answer: Number) -> bool | None:
    if gold.percent == answer.percent:
        return _values(gold.parsed, answer.parsed)
    percent, plain = (gold, answer) if gold.percent else (answer, gold)
    as_written = _values(percent.parsed, plain.parsed)  # 28\% and 28
    if as_written:
        return True
    value = percent.parsed.value
    if not isinstance(value, Ratio):
        return None
    scaled = ParsedValue(
        value * Ratio.of(Fraction(1, 100)), percent.parsed.decimal, percent.parsed.variables
    )
    as_fraction = _values(scaled, plain.parsed)  # 28\% and 0.28
    if as_fraction:
        return True
    if as_written is False and as_fraction is False:
        return False
    return None


def _sequence(golds: Sequence[Form], answers: Sequence[Form]) -> bool | None:
    if len(golds) != len(answers):
        return False
    verdicts = [compare_forms(g, a) for g, a in zip(golds, answers, strict=True)]
    if all(v is True for v in verdicts):
        return True
    if any(v is False for v in verdicts):
        return False
    return None


def _sets(golds: Sequence[Form], answers: Sequence[Form]) -> bool | None:
    if len(golds) * len(answers) > _MAX_PAIRS:
        return None
    table = [[compare_forms(g, a) for a in answers] for g in golds]
    rows = range(len(golds))
    columns = range(len(answers))
    if all(any(table[i][j] is True for j in columns) for i in rows) and all(
        any(table[i][j] is True for i in rows) for j in columns
    ):
        return True
    if any(all(table[i][j] is False for j in columns) for i in rows) or any(
        all(table[i][j] is False for i in rows) for j in columns
    ):
        return False
    return None


def _collections(gold: Collection, answer: Collection) -> bool | None:
    if gold.kind == "tuple" and answer.kind == "tuple":
        if len(gold.items) == len(answer.items) == 2 and gold.brackets != answer.brackets:
            return False  # (1, 2] is not [1, 2)
        return _sequence(gold.items, answer.items)
    if "tuple" in (gold.kind, answer.kind):
        if "list" in (gold.kind, answer.kind):
            return _sequence(gold.items, answer.items)  # 3, 4 for the pair (3, 4): in order
        return None  # a set against a tuple: math-verify's call
    return _sets(gold.items, answer.items)


def _scalar_against_list(scalar: Form, listed: Collection) -> bool | None:
    """A single answer against a set or list: as the set holding it (``5`` against ``\\{5, 6\\}``
    is unequal), after reading a bare pair with a decimal comma."""
    decimal = as_decimal_comma(listed)
    if decimal is not None and compare_forms(scalar, decimal):
        return True  # 0,375 for 0.375
    return _sets((scalar,), listed.items)


def _is_unordered(form: Form) -> TypeGuard[Collection]:
    return isinstance(form, Collection) and form.kind in ("list", "set")


def _wrapped(gold: Form, answer: Form) -> tuple[bool | None] | None:
    """The verdict where either form wraps or negates a value (a negation, ``x = v``, an
    infinity), as a one-element tuple; None when neither does."""
    if isinstance(answer, Negated) or isinstance(gold, Negated):
        # a negation names no value: it equals no value, and another negation only as
        # math-verify reads the two
        return (None if isinstance(answer, Negated) and isinstance(gold, Negated) else False,)
    if isinstance(gold, Named) or isinstance(answer, Named):
        if isinstance(gold, Named) and isinstance(answer, Named):
            same = gold.name == answer.name
            return (compare_forms(gold.value, answer.value) if same else None,)
        if isinstance(gold, Named):
            return (compare_forms(gold.value, answer),)
        assert isinstance(answer, Named)
        return (compare_forms(gold, answer.value),)
    if isinstance(gold, Infinity) or isinstance(answer, Infinity):
        if isinstance(gold, Infinity) and isinstance(answer, Infinity):
            return (gold.negative == answer.negative,)
        if isinstance(gold, Number | Infinity) and isinstance(answer, Number | Infinity):
            return (False,)  # infinity is no number
        return (None,)
    return None


def compare_forms(gold: Form, answer: Form) -> bool | None:
    """The exact verdict on two answer forms, or None when these rules cannot decide it."""
    if isinstance(gold, Number) and isinstance(answer, Number):
        return _numbers(gold, answer)
    wrapped = _wrapped(gold, answer)
    if wrapped is not None:
        return wrapped[0]
    if isinstance(gold, Collection) and isinstance(answer, Collection):
        return _collections(gold, answer)
    if _is_unordered(answer) and isinstance(gold, Number | Text):
        return _scalar_against_list(gold, answer)
    if _is_unordered(gold) and isinstance(answer, Number | Text):
        return _scalar_against_list(answer, gold)
    if isinstance(gold, Union) and isinstance(answer, Union):
        return True if _sets(gold.parts, answer.parts) else None
    if isinstance(gold, Matrix) and isinstance(answer, Matrix):
        if len(gold.rows) != len(answer.rows) or len(gold.rows[0]) != len(answer.rows[0]):
            return False
        return _sequence(
            [c for row in gold.rows for c in row], [c for row in answer.rows for c in row]
        )
    if isinstance(gold, Text) and isinstance(answer, Text):
        return gold.words == answer.words
    return None


# ----------------------------------------------------------------------------------- math-verify


@lru_cache(maxsize=8192)
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
    """math-verify's own verdict on two answers, without its SIGALRM timeouts."""
    from math_verify import verify

    with _timeouts_as_errors():
        return bool(
            verify(_parsed(clean_answer(gold)), _parsed(clean_answer(answer)), timeout_seconds=None)
        )


# Scripts written without spaces between words, next to a digit: math-verify reads a number only
# where a word does not touch it, so 共有99颗 and 比例为13/28 are spaced first
_UNSPACED = "[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\u0e00-\u0e7f]"
_GLUED = re.compile(f"(?<={_UNSPACED})(?=\\d)|(?<=\\d)(?={_UNSPACED})")
# A list's marker at a line's start, followed by its item: "2. **Conclusion**" is no answer
_LIST_MARKER = re.compile(r"(?m)^([ \t]*(?:[-*>][ \t]*)?)\d{1,3}[.)](?=[ \t]+\S)")


def _for_free_reading(text: str) -> str:
    """``text`` as math-verify's extraction should read it: numbers glued to CJK, kana, Hangul
    or Thai text spaced apart from it, list markers at lines' starts dropped."""
    if not text.isascii():
        text = _GLUED.sub(" ", text)
    return _LIST_MARKER.sub(r"\1", text)


def free_form_match(text: str, golds: Sequence[str]) -> bool:
    """Whether the answer math-verify extracts from free ``text`` equals any of ``golds``.

    math-verify's own extraction (``final answer is``, ``Answer:``, else the last LaTeX or
    number) on the text with numbers glued to CJK text spaced apart and lines' list markers
    dropped (:func:`_for_free_reading`); the text it extracts is compared by the exact rules where they decide, and by
    math-verify's verdict otherwise.
    """
    from math_verify import parse, verify

    with _timeouts_as_errors():
        found = parse(_for_free_reading(text), parsing_timeout=None)
        if not found:
            return False
        extracted = found[-1] if isinstance(found[-1], str) else None
        for gold in golds:
            if not gold.strip():
                continue
            decided = quick_verdict(extracted, gold) if extracted else None
            if decided is None:
                decided = bool(verify(_parsed(clean_answer(gold)), found, timeout_seconds=None))
            if decided:
                return True
        return False


# --------------------------------------------------------------------------------------- verdicts


@lru_cache(maxsize=65536)
def quick_verdict(answer: str, gold: str) -> bool | None:
    """The exact rules' verdict on two answers (an empty answer is wrong), or None when they
    cannot decide (cached per process)."""
    form = read_answer(answer)
    if isinstance(form, Unknown) and not form.text:
        return False
    return compare_forms(read_answer(gold), form)


@lru_cache(maxsize=65536)
def verdict(answer: str, gold: str) -> bool:
    """Whether ``answer`` equals ``gold``: the exact rules, else math-verify (cached)."""
    decided = quick_verdict(answer, gold)
    return math_verify_match(answer, gold) if decided is None else decided


def _answers(answer: str, golds: Sequence[str]) -> tuple[str, list[str]] | bool:
    """The stripped answer and non-blank golds to compare, or the verdict already: False for an
    empty answer; for one over :data:`MAX_ANSWER_CHARS`, whether a gold is that very text."""
    answer = answer.strip()
    if not answer:
        return False
    stripped = [g for g in (gold.strip() for gold in golds) if g]
    if len(answer) > MAX_ANSWER_CHARS:
        return answer in stripped
    return answer, stripped


def answers_match(answer: str, golds: Sequence[str]) -> bool:
    """Whether ``answer`` equals any of ``golds`` (see the module docstring for how).

    An empty answer matches nothing; one longer than :data:`MAX_ANSWER_CHARS` matches only a
    gold identical to it.

    >>> answers_match("0.5", ["\\\\frac{1}{2}"])
    True
    >>> long = "+".join(["x"] * 600)
    >>> answers_match(long, [long]), answers_match(long + " ", [long]), answers_match(long, ["1"])
    (True, True, False)
    """
    pair = _answers(answer, golds)
    if isinstance(pair, bool):
        return pair
    return any(verdict(pair[0], gold) for gold in pair[1])


def decided_match(answer: str, golds: Sequence[str]) -> bool | None:
    """:func:`answers_match` by the exact rules alone: None when only math-verify could tell."""
    pair = _answers(answer, golds)
    if isinstance(pair, bool):
        return pair
    undecided = False
    for gold in pair[1]:
        decided = quick_verdict(pair[0], gold)
        if decided:
            return True
        undecided = undecided or decided is None
    return None if undecided else False


def clear_caches() -> None:
    """Forget parsed answers, verdicts and labels (benchmarks time a cold grader with this)."""
    clear_label_cache()
    verdict.cache_clear()
    quick_verdict.cache_clear()
    clear_forms()
    _parsed.cache_clear()
