"""Does the exact fast path of ``math`` ever contradict exact truth? Generated pairs, exact truth.

Each generated pair is two LaTeX answers and whether they are equal, computed exactly and
independently of the grader: with Python's integers and fractions for numbers the generator
builds itself (``10^{300}+1`` is built as the integer it spells), and with sympy (``expand``,
``radsimp``, ``cancel``) for radicals, pi and polynomials. The families cover what float
comparison gets wrong: integers past double precision, values that overflow a float, tiny values,
irrational values a tolerance away from each other, decimals against irrationals, and
structured answers (ordered pairs, sets, intervals) built from them.

The grader's fast path (:func:`~rewardrouter.rewards.math.equivalence.quick_verdict`) may decline a
pair (it then goes to math-verify); every verdict it does give must equal the truth.

    python benchmarks/exact_truth.py                      # 200,000 pairs, a few minutes
    python benchmarks/exact_truth.py --pairs 20000 --seed 7

The test suite runs 6,000 pairs of the same generator with a fixed seed.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any


@dataclass(frozen=True)
class Pair:
    """Two answers and whether they are equal (exact truth)."""

    family: str
    gold: str
    answer: str
    equal: bool


# ----------------------------------------------------------------------------------- spellings


def _frac(q: Fraction, style: str = "\\frac") -> str:
    if q.denominator == 1:
        return str(q.numerator)
    sign = "-" if q < 0 else ""
    return f"{sign}{style}{{{abs(q.numerator)}}}{{{q.denominator}}}"


def _decimal(q: Fraction) -> str | None:
    """The terminating decimal of ``q``, or None."""
    den = q.denominator
    twos = fives = 0
    while den % 2 == 0:
        den //= 2
        twos += 1
    while den % 5 == 0:
        den //= 5
        fives += 1
    if den != 1:
        return None
    places = max(twos, fives)
    scaled = abs(q) * 10**places
    digits = str(scaled.numerator).rjust(places + 1, "0")
    sign = "-" if q < 0 else ""
    if places == 0:
        return sign + digits
    return f"{sign}{digits[:-places]}.{digits[-places:]}"


def _spell_rational(rng: random.Random, q: Fraction) -> str:
    options = [_frac(q), _frac(q, "\\dfrac")]
    if q.denominator != 1:
        options.append(f"{q.numerator}/{q.denominator}")
    decimal = _decimal(q)
    if decimal is not None and len(decimal) < 60:
        options.append(decimal)
    return rng.choice(options)


# ------------------------------------------------------------------------------------- families


def _big_integer(rng: random.Random) -> tuple[str, Fraction]:
    k = rng.randint(16, 400)
    base = rng.choice([2, 10, 3, 7])
    d = rng.randint(-9, 9)
    value = base**k + d
    tail = "" if d == 0 else f"{d:+d}"
    return rng.choice([f"{base}^{{{k}}}{tail}", str(value)]), Fraction(value)


def family_big_integers(rng: random.Random) -> Pair:
    """Integers past 2^53: equal only when every digit is."""
    gold, g = _big_integer(rng)
    if rng.random() < 0.5:
        return Pair("big_integers", gold, str(g.numerator), True)
    delta = rng.choice([1, -1, 2, 10 ** rng.randint(1, 8)])
    value = g + delta
    answer = str(value.numerator) if rng.random() < 0.5 else f"{gold}+{delta}"
    if "+-" in answer:
        answer = answer.replace("+-", "-")
    return Pair("big_integers", gold, answer, value == g)


def family_tiny(rng: random.Random) -> Pair:
    """Values far below double precision's smallest normal number, and zero."""
    k = rng.randint(20, 1200)
    base = rng.choice([2, 10])
    value = Fraction(1, base**k)
    gold = rng.choice([f"{base}^{{-{k}}}", f"\\frac{{1}}{{{base}^{{{k}}}}}"])
    roll = rng.random()
    if roll < 0.35:
        return Pair("tiny", gold, "0", False)
    if roll < 0.7:
        return Pair("tiny", gold, f"\\frac{{1}}{{{base}^{{{k}}}}}", True)
    other = Fraction(1, base ** (k + 1))
    return Pair("tiny", gold, f"{base}^{{-{k + 1}}}", value == other)


def family_overflow(rng: random.Random) -> Pair:
    """Intermediate values beyond a double's range: 2^{1100}/2^{1000}, \\sqrt{10^{600}}."""
    shape = rng.randrange(4)
    if shape == 0:
        a = rng.randint(1030, 3000)
        b = a - rng.randint(1, 300)
        e = a - b + rng.choice([0, 0, 1, -1])
        return Pair(
            "overflow",
            f"2^{{{e}}}",
            f"\\frac{{2^{{{a}}}}}{{2^{{{b}}}}}",
            2**e == Fraction(2**a, 2**b),
        )
    if shape == 1:
        k = rng.randint(160, 2000)
        j = k + rng.choice([0, 0, 1])
        radicand = 10 ** (2 * j)
        root = math.isqrt(radicand)
        equal = root * root == radicand and root == 10**k
        return Pair("overflow", f"10^{{{k}}}", f"\\sqrt{{10^{{{2 * j}}}}}", equal)
    if shape == 2:
        k = rng.randint(320, 1500)
        d = rng.choice([0, 0, 1])
        # (10^k + d) * 10^{-k} against 1
        value = Fraction(10**k + d, 10**k)
        return Pair("overflow", "1", f"(10^{{{k}}}+{d})\\cdot 10^{{-{k}}}", value == 1)
    k = rng.randint(100, 600)
    m = 2 * k + rng.choice([0, 0, 1])
    return Pair("overflow", f"4^{{{k}}}", f"2^{{{m}}}", 4**k == 2**m)


def family_rationals(rng: random.Random) -> Pair:
    """Fractions and decimals, equal or a tiny step apart."""
    q = Fraction(rng.randint(-(10**6), 10**6), rng.choice([1, 2, 3, 4, 7, 8, 25, 125, 1024, 999]))
    gold = _spell_rational(rng, q)
    roll = rng.random()
    if roll < 0.5:
        return Pair("rationals", gold, _spell_rational(rng, q), True)
    step = Fraction(1, 10 ** rng.randint(1, 30))
    other = q + step * rng.choice([1, -1])
    return Pair("rationals", gold, _spell_rational(rng, other), other == q)


def _sympy() -> Any:
    import sympy

    return sympy


def _is_zero(expr: Any) -> bool:
    sp = _sympy()
    return bool(sp.expand(sp.radsimp(expr)) == 0)


def family_radicals(rng: random.Random) -> Pair:
    """Square and cube roots: other spellings of one value, and values 10^{-k} apart."""
    sp = _sympy()
    a, b = rng.randint(1, 30), rng.choice([2, 3, 5, 6, 7, 10, 11, 13, 15, 17, 19, 21])
    shape = rng.randrange(6)
    if shape == 0:  # a\sqrt{b} against \sqrt{a^2 b (+1)}
        c = a * a * b + rng.choice([0, 0, 1, -1])
        gold, g = f"{a}\\sqrt{{{b}}}", a * sp.sqrt(b)
        answer, v = f"\\sqrt{{{c}}}", sp.sqrt(c)
    elif shape == 1:  # \sqrt{b} against \sqrt{b} + 10^{-k}
        k = rng.randint(8, 40)
        gold, g = f"\\sqrt{{{b}}}", sp.sqrt(b)
        if rng.random() < 0.5:
            answer, v = f"\\sqrt{{{b}}}+10^{{-{k}}}", sp.sqrt(b) + sp.Rational(1, 10**k)
        else:
            answer, v = f"\\sqrt{{{b}}}+\\frac{{{a}}}{{{a}}}-1", sp.sqrt(b)
    elif shape == 2:  # \sqrt{m^2+1} against m (within 1/(2m) of it)
        m = 10 ** rng.randint(4, 12)
        d = rng.choice([0, 1])
        gold, g = str(m), sp.Integer(m)
        answer, v = f"\\sqrt{{{m * m + d}}}", sp.sqrt(m * m + d)
    elif shape == 3:  # rationalized denominators
        n = rng.choice([2, 3, 5, 7])
        if rng.random() < 0.5:
            gold, g = f"\\frac{{1}}{{1+\\sqrt{{{n}}}}}", 1 / (1 + sp.sqrt(n))
            d = rng.choice([0, 0, 1])
            answer = f"\\frac{{\\sqrt{{{n}}}-1}}{{{n - 1 + d}}}"
            v = (sp.sqrt(n) - 1) / (n - 1 + d)
        else:
            gold, g = f"\\frac{{{a}}}{{\\sqrt{{{n}}}}}", sp.Integer(a) / sp.sqrt(n)
            d = rng.choice([0, 0, 1])
            answer, v = f"\\frac{{{a + d}\\sqrt{{{n}}}}}{{{n}}}", (a + d) * sp.sqrt(n) / n
    elif shape == 4:  # cube roots
        p = rng.choice([2, 3, 5])
        c = p * rng.choice([1, 8, 27])
        gold, g = f"\\sqrt[3]{{{c}}}", sp.cbrt(c)
        r = round(c ** (1 / 3) / p ** (1 / 3))
        r += rng.choice([0, 0, 1])
        answer, v = f"{r}\\sqrt[3]{{{p}}}", r * sp.cbrt(p)
    else:  # sums of radicals, in another order and grouping
        c = rng.choice([2, 3, 5, 7])
        gold, g = f"\\sqrt{{{b}}}+\\sqrt{{{c}}}", sp.sqrt(b) + sp.sqrt(c)
        e = rng.choice([0, 0, 1])
        answer, v = f"\\sqrt{{{c + e}}}+\\sqrt{{{b}}}", sp.sqrt(c + e) + sp.sqrt(b)
    return Pair("radicals", gold, answer, _is_zero(g - v))


def family_pi(rng: random.Random) -> Pair:
    """Multiples and powers of pi, tiny multiples of pi, and decimals near pi."""
    sp = _sympy()
    shape = rng.randrange(4)
    if shape == 0:
        k = rng.randint(10, 300)
        return Pair("pi", "0", f"\\frac{{\\pi}}{{10^{{{k}}}}}", False)
    if shape == 1:
        p, q = rng.randint(1, 20), rng.randint(1, 12)
        d = rng.choice([0, 0, 1])
        g = sp.Rational(p, q) * sp.pi
        v = sp.Rational(p + d, q) * sp.pi
        return Pair(
            "pi", f"\\frac{{{p}\\pi}}{{{q}}}", f"\\frac{{{p + d}}}{{{q}}}\\pi", _is_zero(g - v)
        )
    if shape == 2:
        k = rng.randint(2, 6)
        d = rng.choice([0, 0, 1])
        g, v = sp.pi**k, sp.pi ** (k + d)
        return Pair("pi", f"\\pi^{{{k}}}", f"\\pi^{{{k + d}}}", _is_zero(g - v))
    digits = "3.14159265358979323846264338327950"[: rng.randint(4, 30)]
    return Pair("pi", "\\pi", digits, False)  # no decimal is pi


def family_decimals_vs_irrationals(rng: random.Random) -> Pair:
    """A terminating decimal is never an irrational number, however many digits it has."""
    b = rng.choice([2, 3, 5, 6, 7, 10])
    value = math.sqrt(b)
    places = rng.randint(1, 15)
    return Pair("decimals_vs_irrationals", f"\\sqrt{{{b}}}", f"{value:.{places}f}", False)


def _poly_latex(coefficients: list[int]) -> str:
    """LaTeX of the polynomial with these coefficients (constant term first)."""
    terms: list[str] = []
    for power in range(len(coefficients) - 1, -1, -1):
        c = coefficients[power]
        if c == 0:
            continue
        body = "" if power == 0 else "x" if power == 1 else f"x^{{{power}}}"
        digits = str(abs(c)) if (abs(c) != 1 or power == 0) else ""
        sign = "-" if c < 0 else "+"
        terms.append(f"{sign}{digits}{body}")
    text = "".join(terms) or "0"
    return text[1:] if text.startswith("+") else text


def _times(a: list[int], b: list[int]) -> list[int]:
    """Product of two polynomials given by integer coefficients (constant term first)."""
    out = [0] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i + j] += x * y
    return out


def _trimmed(c: list[int]) -> list[int]:
    while len(c) > 1 and c[-1] == 0:
        c = c[:-1]
    return c


def family_polynomials(rng: random.Random) -> Pair:
    """Polynomials and rational functions: factored against expanded, and high degrees + 1.

    Truth from integer coefficient arithmetic: two polynomials are equal when their
    coefficients are; ``(N (x+c) + d) / (x+c)`` is the polynomial ``N`` exactly when the
    polynomial ``N (x+c) + d - N (x+c)``, that is ``d``, is zero.
    """
    shape = rng.randrange(3)
    if shape == 0:
        p, n = rng.randint(-9, 9), rng.randint(2, 6)
        expanded = [math.comb(n, i) * p ** (n - i) for i in range(n + 1)]
        d = rng.choice([0, 0, 1])
        other = [expanded[0] + d, *expanded[1:]]
        sign = f"{p:+d}" if p else ""
        return Pair("polynomials", f"(x{sign})^{{{n}}}", _poly_latex(other), other == expanded)
    if shape == 1:
        n = rng.randint(20, 200)
        d = rng.choice([0, 1])
        return Pair("polynomials", f"x^{{{n}}}", f"x^{{{n}}}+{d}" if d else f"x^{{{n}}}", d == 0)
    degree = rng.randint(1, 6)
    numerator = [rng.randint(-9, 9) for _ in range(degree)] + [rng.randint(1, 9)]
    c = rng.randint(1, 9)
    d = rng.choice([0, 0, 1])
    product = _times(numerator, [c, 1])
    product[0] += d
    answer = f"\\frac{{{_poly_latex(product)}}}{{x+{c}}}"
    difference = _trimmed([a - b for a, b in zip(product, _times(numerator, [c, 1]), strict=True)])
    return Pair("polynomials", _poly_latex(numerator), answer, difference == [0])


def _random_constant(rng: random.Random, sp: Any, depth: int = 0) -> Any:
    """A random constant built from rationals, square and cube roots and pi."""
    roll = rng.random() if depth else 1.0
    if depth >= 3 or roll < 0.25:
        return sp.Rational(rng.randint(-12, 12), rng.randint(1, 6))
    if roll < 0.45:
        return rng.randint(1, 5) * sp.sqrt(rng.randint(2, 30))
    if roll < 0.5:
        return sp.cbrt(rng.choice([2, 3, 4, 16, 54]))
    if roll < 0.6:
        return sp.pi
    left = _random_constant(rng, sp, depth + 1)
    right = _random_constant(rng, sp, depth + 1)
    op = rng.randrange(4)
    if op == 0:
        return left + right
    if op == 1:
        return left - right
    if op == 2:
        return left * right
    return left / right if right != 0 else left


def family_printed_by_sympy(rng: random.Random) -> Pair:
    """Random constants spelled by sympy's own LaTeX printer, against their expanded or
    rationalized form, or against the same plus 10^{-k}."""
    sp = _sympy()
    expr = _random_constant(rng, sp)
    other = rng.choice([sp.together, sp.factor_terms, lambda e: sp.expand(sp.radsimp(e))])(expr)
    if rng.random() < 0.5:
        other = other + sp.Rational(rng.choice([1, -1]), 10 ** rng.randint(6, 30))
    style = rng.choice([None, "dot", "times"])
    return Pair(
        "printed_by_sympy",
        sp.latex(expr),
        sp.latex(other, mul_symbol=style),
        _is_zero(expr - other),
    )


def family_huge(rng: random.Random) -> Pair:
    """Power towers: far beyond any float, never equal to an ordinary number."""
    base = rng.randint(2, 9)
    tower = f"{base}^{{{base}^{{{base}^{{{base}}}}}}}"
    return Pair("huge", str(rng.randint(-(10**6), 10**6)), tower, False)


def _element(rng: random.Random) -> tuple[str, Fraction]:
    q = Fraction(rng.randint(-50, 50), rng.choice([1, 1, 2, 3, 4]))
    return _spell_rational(rng, q), q


def family_structured(rng: random.Random) -> Pair:
    """Ordered pairs and tuples, sets, intervals: element by element, exact."""
    shape = rng.randrange(3)
    n = rng.randint(2, 5) if shape != 2 else 2
    items = [_element(rng) for _ in range(n)]
    values = [v for _, v in items]
    if shape == 0:  # tuples: order matters
        order = list(range(n))
        if rng.random() < 0.5:
            rng.shuffle(order)
        other = [values[i] for i in order]
        gold = "(" + ", ".join(t for t, _ in items) + ")"
        answer = "(" + ", ".join(_spell_rational(rng, v) for v in other) + ")"
        return Pair("structured", gold, answer, other == values)
    if shape == 1:  # sets: order does not
        other = list(values)
        rng.shuffle(other)
        if rng.random() < 0.4:
            other[0] += rng.choice([1, Fraction(1, 10**20)])
        gold = "\\{" + ", ".join(t for t, _ in items) + "\\}"
        answer = "\\{" + ", ".join(_spell_rational(rng, v) for v in other) + "\\}"
        return Pair("structured", gold, answer, set(other) == set(values))
    low, high = sorted(values)
    if low == high:
        high += 1
    brackets = rng.choice(["()", "[]", "[)", "(]"])
    other = rng.choice(["()", "[]", "[)", "(]"]) if rng.random() < 0.5 else brackets
    gold = f"{brackets[0]}{_spell_rational(rng, low)}, {_spell_rational(rng, high)}{brackets[1]}"
    answer = f"{other[0]}{_spell_rational(rng, low)}, {_spell_rational(rng, high)}{other[1]}"
    return Pair("structured", gold, answer, brackets == other)


FAMILIES: tuple[Callable[[random.Random], Pair], ...] = (
    family_big_integers,
    family_tiny,
    family_overflow,
    family_rationals,
    family_radicals,
    family_pi,
    family_decimals_vs_irrationals,
    family_polynomials,
    family_huge,
    family_structured,
    family_printed_by_sympy,
)


def generate(count: int, seed: int = 0) -> list[Pair]:
    """``count`` pairs, the families in turn, each pair also in swapped order half the time."""
    rng = random.Random(seed)
    pairs: list[Pair] = []
    while len(pairs) < count:
        for family in FAMILIES:
            pair = family(rng)
            if rng.random() < 0.5:
                pair = Pair(pair.family, pair.answer, pair.gold, pair.equal)
            pairs.append(pair)
    return pairs[:count]


@dataclass
class Tally:
    """Verdicts of the fast path against the truth, per family."""

    decided: Counter[str]
    declined: Counter[str]
    wrong: list[tuple[Pair, bool]]
    equal_decided: Counter[str]
    unequal_decided: Counter[str]


def check(pairs: list[Pair]) -> Tally:
    """Run the fast path on every pair and count where it decides, declines, or is wrong."""
    from rewardrouter.rewards.math.equivalence import quick_verdict

    tally = Tally(Counter(), Counter(), [], Counter(), Counter())
    for pair in pairs:
        verdict = quick_verdict(pair.answer, pair.gold)
        if verdict is None:
            tally.declined[pair.family] += 1
            continue
        tally.decided[pair.family] += 1
        (tally.equal_decided if pair.equal else tally.unequal_decided)[pair.family] += 1
        if verdict != pair.equal:
            tally.wrong.append((pair, verdict))
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    pairs = generate(args.pairs, args.seed)
    generated = time.perf_counter() - start
    start = time.perf_counter()
    tally = check(pairs)
    checked = time.perf_counter() - start
    print(f"{len(pairs):,} pairs (seed {args.seed}); truth computed in {generated:.1f} s, "
          f"fast path in {checked:.1f} s\n")  # fmt: skip
    print(f"{'family':<26}{'pairs':>8}{'decided':>9}{'equal':>8}{'unequal':>9}{'wrong':>7}")
    wrong = Counter(p.family for p, _ in tally.wrong)
    for family in sorted({p.family for p in pairs}):
        total = tally.decided[family] + tally.declined[family]
        print(
            f"{family:<26}{total:>8,}{tally.decided[family] / total:>9.0%}"
            f"{tally.equal_decided[family]:>8,}{tally.unequal_decided[family]:>9,}"
            f"{wrong[family]:>7}"
        )
    decided = sum(tally.decided.values())
    print(f"\ndecided {decided:,} of {len(pairs):,}; verdicts contradicting the truth: "
          f"{len(tally.wrong)}")  # fmt: skip
    for pair, verdict in tally.wrong[:10]:
        print(f"  {pair.family}: {pair.gold!r} vs {pair.answer!r}: truth {pair.equal}, "
              f"fast path {verdict}")  # fmt: skip
    return 1 if tally.wrong else 0


if __name__ == "__main__":
    sys.exit(main())
