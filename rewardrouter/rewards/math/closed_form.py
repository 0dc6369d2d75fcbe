"""Exact arithmetic on closed-form answers: rationals, radicals, powers of pi and variables.

A :class:`ClosedForm` is a finite sum of terms ``q * r * pi^k * x^a * y^b ...`` with ``q`` a
rational (:class:`fractions.Fraction`), ``r`` a product of rational powers of distinct primes with
exponents in ``(0, 1)`` (``\\sqrt{2}``, ``\\sqrt[3]{12}``), ``k`` an integer and the variables'
exponents integers. Every such sum has exactly one spelling in this form, because its building
blocks are linearly independent over the rationals: real roots of distinct primes are
(Besicovitch, 1940), pi is transcendental over the algebraic numbers (Lindemann, 1882), and
variables are indeterminates. So two closed forms are equal exactly when their term dictionaries
are equal: no floating point, no tolerance, no overflow (``10^{300}+1`` is not ``10^{300}``,
``2^{-600}`` is not ``0``, ``\\frac{2^{1100}}{2^{1000}}`` is ``2^{100}``).

A :class:`Ratio` is a quotient of two closed forms (``\\frac{x^2-1}{x-1}``,
``\\frac{1}{\\pi+1}``); two ratios ``a/b`` and ``c/d`` are equal when ``a*d == c*b``, which is
exact because closed forms form an integral domain. Denominators without variables or pi are
rationalized away (``\\frac{1}{1+\\sqrt{2}}`` becomes ``\\sqrt{2}-1``).

What does not fit raises :class:`Inexpressible` (a root of a sum, a root of a variable, an
irrational power, a number too large to factor) or :class:`TooLarge` (beyond the size limits
below), and the caller leaves the verdict to another method. Nothing here is approximate except
:meth:`ClosedForm.bounds`, which returns rigorous rational bounds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from functools import lru_cache
from typing import TypeAlias

from rewardrouter.rewards.math.primes import Unfactored, factorize, integer_root

#: A product of prime powers with exponents in (0, 1): ((2, 1/2), (3, 1/3)) is 2^(1/2) * 3^(1/3).
Radical: TypeAlias = tuple[tuple[int, Fraction], ...]
#: Variables with their (non-zero, integer) exponents, sorted by name.
Powers: TypeAlias = tuple[tuple[str, int], ...]
#: One term's irrational and symbolic part: radical, power of pi, variables.
Key: TypeAlias = tuple[Radical, int, Powers]

ONE_KEY: Key = ((), 0, ())

#: Size limits: beyond them an answer is left to another method instead of being computed.
MAX_TERMS = 512
MAX_BITS = 20_000  # of any numerator or denominator
MAX_EXPONENT = 4096  # of pi or a variable, and of an integer power of a sum
# pi to 60 places, as rational bounds
_PI_DIGITS = 3141592653589793238462643383279502884197169399375105820974944
_PI_SCALE = 10**60
PI_LOW = Fraction(_PI_DIGITS, _PI_SCALE)
PI_HIGH = Fraction(_PI_DIGITS + 1, _PI_SCALE)


class Inexpressible(ArithmeticError):
    """The result is not a closed form of this module (a root of a sum, an irrational power)."""


class TooLarge(ArithmeticError):
    """The result would exceed the size limits. ``log2``, when positive, is a lower bound on the
    base-2 logarithm of a value known to be positive (set by the parser for huge powers)."""

    def __init__(self, message: str, log2: float = 0.0) -> None:
        super().__init__(message)
        self.log2 = log2


class Undefined(ArithmeticError):
    """No real value: division by zero, an even root of a negative number."""


def _check_bits(q: Fraction) -> Fraction:
    if q.numerator.bit_length() > MAX_BITS or q.denominator.bit_length() > MAX_BITS:
        raise TooLarge("a numerator or denominator beyond the size limit")
    return q


# ------------------------------------------------------------------------------- term arithmetic


def _multiply_radicals(a: Radical, b: Radical) -> tuple[Fraction, Radical]:
    """``a * b`` as a rational factor and a radical with exponents in (0, 1)."""
    if not a:
        return Fraction(1), b
    if not b:
        return Fraction(1), a
    exponents = dict(a)
    for p, e in b:
        exponents[p] = exponents.get(p, Fraction(0)) + e
    return _split_exponents(exponents)


def _split_exponents(exponents: Mapping[int, Fraction]) -> tuple[Fraction, Radical]:
    factor = Fraction(1)
    radical: list[tuple[int, Fraction]] = []
    for p, e in sorted(exponents.items()):
        whole = math.floor(e)
        if whole:
            if abs(whole) * p.bit_length() > MAX_BITS:
                raise TooLarge("a radical's power beyond the size limit")
            factor *= Fraction(p) ** whole
        rest = e - whole
        if rest:
            radical.append((p, rest))
    return factor, tuple(radical)


def _multiply_powers(a: Powers, b: Powers) -> Powers:
    if not a:
        return b
    if not b:
        return a
    exponents = dict(a)
    for name, e in b:
        exponents[name] = exponents.get(name, 0) + e
    if any(abs(e) > MAX_EXPONENT for e in exponents.values()):
        raise TooLarge("a variable's exponent beyond the size limit")
    return tuple(sorted((n, e) for n, e in exponents.items() if e))


def _multiply_keys(a: Key, b: Key) -> tuple[Fraction, Key]:
    factor, radical = _multiply_radicals(a[0], b[0])
    pi = a[1] + b[1]
    if abs(pi) > MAX_EXPONENT:
        raise TooLarge("a power of pi beyond the size limit")
    return factor, (radical, pi, _multiply_powers(a[2], b[2]))


class ClosedForm:
    """An exact sum of terms (see the module docstring); immutable, hashable, comparable."""

    __slots__ = ("_hash", "terms")

    terms: dict[Key, Fraction]

    def __init__(self, terms: Mapping[Key, Fraction] | None = None) -> None:
        self.terms = {k: v for k, v in (terms or {}).items() if v}
        if len(self.terms) > MAX_TERMS:
            raise TooLarge("more terms than the size limit")
        self._hash: int | None = None

    # constructors
    @classmethod
    def rational(cls, q: Fraction | int) -> ClosedForm:
        return cls({ONE_KEY: _check_bits(Fraction(q))})

    @classmethod
    def pi(cls) -> ClosedForm:
        return cls({((), 1, ()): Fraction(1)})

    @classmethod
    def variable(cls, name: str) -> ClosedForm:
        return cls({((), 0, ((name, 1),)): Fraction(1)})

    # queries
    def is_zero(self) -> bool:
        return not self.terms

    def as_rational(self) -> Fraction | None:
        """The value when it is rational, else None."""
        if not self.terms:
            return Fraction(0)
        if len(self.terms) == 1 and ONE_KEY in self.terms:
            return self.terms[ONE_KEY]
        return None

    def variables(self) -> frozenset[str]:
        return frozenset(name for key in self.terms for name, _ in key[2])

    def has_pi(self) -> bool:
        return any(key[1] for key in self.terms)

    def is_constant(self) -> bool:
        """No variables (radicals and pi allowed)."""
        return all(not key[2] for key in self.terms)

    # arithmetic
    def __add__(self, other: ClosedForm) -> ClosedForm:
        terms = dict(self.terms)
        for key, q in other.terms.items():
            terms[key] = _check_bits(terms.get(key, Fraction(0)) + q)
        return ClosedForm(terms)

    def __neg__(self) -> ClosedForm:
        return ClosedForm({k: -v for k, v in self.terms.items()})

    def __sub__(self, other: ClosedForm) -> ClosedForm:
        return self + (-other)

    def __mul__(self, other: ClosedForm) -> ClosedForm:
        if len(self.terms) * len(other.terms) > MAX_TERMS * 8:
            raise TooLarge("a product with too many terms")
        terms: dict[Key, Fraction] = {}
        for ka, qa in self.terms.items():
            for kb, qb in other.terms.items():
                factor, key = _multiply_keys(ka, kb)
                terms[key] = _check_bits(terms.get(key, Fraction(0)) + qa * qb * factor)
        return ClosedForm(terms)

    def scale(self, q: Fraction) -> ClosedForm:
        return ClosedForm({k: _check_bits(v * q) for k, v in self.terms.items()})

    def power(self, k: int) -> ClosedForm:
        """``self ** k`` for an integer ``k >= 0``."""
        if k < 0:
            raise ValueError("negative power of a closed form; use Ratio")
        if len(self.terms) == 1:
            ((key, q),) = self.terms.items()
            return _monomial_power(key, q, Fraction(k))
        if k > MAX_EXPONENT:
            raise TooLarge("an integer power of a sum beyond the size limit")
        result, base = ClosedForm.rational(1), self
        while k:
            if k & 1:
                result = result * base
            k >>= 1
            if k:
                base = base * base
        return result

    def inverse(self) -> ClosedForm:
        """``1 / self`` when it is a closed form: a single term, or a sum without variables and pi
        (rationalized with conjugates); raises :class:`Inexpressible` otherwise."""
        if not self.terms:
            raise Undefined("division by zero")
        if len(self.terms) == 1:
            ((key, q),) = self.terms.items()
            if key == ONE_KEY:
                return ClosedForm({ONE_KEY: 1 / q})
            return _monomial_power(key, q, Fraction(-1))
        if any(key[1] or key[2] for key in self.terms):
            raise Inexpressible("the inverse of a sum with pi or variables")
        # x = a + b * p^(1/n)-part ...: multiply by the conjugates over the largest prime's roots
        conjugate = _radical_conjugate(self)
        norm = self * conjugate  # has one prime fewer under its roots
        return conjugate * norm.inverse()

    def root(self, n: int) -> ClosedForm:
        """The real ``n``-th root of a single term without variables (odd ``n`` for negatives)."""
        if n == 1:
            return self
        if not self.terms:
            return self
        if len(self.terms) != 1:
            raise Inexpressible("a root of a sum")
        ((key, q),) = self.terms.items()
        if key[2]:
            raise Inexpressible("a root of a variable")
        return _monomial_power(key, q, Fraction(1, n))

    # comparison
    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClosedForm) and self.terms == other.terms

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self.terms.items()))
        return self._hash

    def __repr__(self) -> str:
        return f"ClosedForm({self.terms!r})"

    def bounds(self, bits: int = 64) -> tuple[Fraction, Fraction]:
        """Rigorous rational bounds ``low <= value <= high`` of a constant (no variables)."""
        low = high = Fraction(0)
        for (radical, pi, powers), q in self.terms.items():
            if powers:
                raise Inexpressible("bounds of an expression in variables")
            r_low, r_high = _radical_bounds(radical, bits)
            p_low, p_high = _pi_bounds(pi)
            t_low, t_high = r_low * p_low * q, r_high * p_high * q
            if q < 0:
                t_low, t_high = t_high, t_low
            low += t_low
            high += t_high
        return low, high


def _monomial_power(key: Key, q: Fraction, exponent: Fraction) -> ClosedForm:
    """``(q * key) ** exponent`` for a single term; a fractional exponent takes a real root."""
    radical, pi, powers = key
    n = exponent.denominator
    if q == 0:
        if exponent < 0:
            raise Undefined("division by zero")
        return ClosedForm() if exponent else ClosedForm.rational(1)
    if n > 1 and (powers or pi % n):
        raise Inexpressible("a fractional power of pi or of a variable")
    sign = 1
    if q < 0:
        if n % 2 == 0:
            raise Undefined("an even root of a negative number")
        sign = -1 if exponent.numerator % 2 else 1
        q = -q
    size = max(q.numerator.bit_length(), q.denominator.bit_length())
    if size * abs(exponent) > MAX_BITS:
        raise TooLarge("a power beyond the size limit")
    exponents: dict[int, Fraction] = {p: e * exponent for p, e in radical}
    coefficient = Fraction(sign)
    if n == 1:
        coefficient *= q**exponent.numerator
    else:
        num_root = _exact_root(q.numerator, n)
        den_root = _exact_root(q.denominator, n)
        if num_root is not None and den_root is not None:
            coefficient *= Fraction(num_root, den_root) ** exponent.numerator
        else:
            try:
                num_factors, den_factors = factorize(q.numerator), factorize(q.denominator)
            except Unfactored as exc:
                raise Inexpressible(str(exc)) from exc
            for p, e in num_factors:
                exponents[p] = exponents.get(p, Fraction(0)) + e * exponent
            for p, e in den_factors:
                exponents[p] = exponents.get(p, Fraction(0)) - e * exponent
    factor, new_radical = _split_exponents(exponents)
    new_pi = pi * exponent
    new_powers = tuple((name, e * exponent) for name, e in powers)
    if abs(new_pi) > MAX_EXPONENT or any(abs(e) > MAX_EXPONENT for _, e in new_powers):
        raise TooLarge("a power of pi or of a variable beyond the size limit")
    key = (new_radical, int(new_pi), tuple((name, int(e)) for name, e in new_powers))
    return ClosedForm({key: _check_bits(coefficient * factor)})


@lru_cache(maxsize=4096)
def _rational_root(q: Fraction, n: int) -> ClosedForm:
    """The real ``n``-th root of a rational (the closed forms are never mutated)."""
    return _monomial_power(ONE_KEY, q, Fraction(1, n)) if q else ClosedForm()


def _exact_root(n: int, k: int) -> int | None:
    r = integer_root(n, k)
    return r if r**k == n else None


def _radical_conjugate(value: ClosedForm) -> ClosedForm:
    """A non-zero ``c`` such that ``value * c`` has no roots of the largest prime under them.

    With ``p`` that prime and ``n`` the order of its roots, write ``value = f(t)``, a polynomial
    in ``t = p^(1/n)`` with coefficients free of ``p``; the product of ``f(w t)`` over the
    non-trivial ``n``-th roots of unity ``w`` is that conjugate. Only ``n = 2`` (square roots) is
    needed in practice and implemented; higher orders raise :class:`Inexpressible`.
    """
    primes = {p: e.denominator for key in value.terms for p, e in key[0]}
    p = max(primes)
    if primes[p] != 2:
        raise Inexpressible("rationalizing a denominator with roots of order above 2")
    terms: dict[Key, Fraction] = {}
    for key, q in value.terms.items():
        has_p = any(prime == p for prime, _ in key[0])
        terms[key] = -q if has_p else q
    return ClosedForm(terms)


def _radical_bounds(radical: Radical, bits: int) -> tuple[Fraction, Fraction]:
    if not radical:
        return Fraction(1), Fraction(1)
    n = math.lcm(*(e.denominator for _, e in radical))
    m = math.prod(p ** int(e * n) for p, e in radical)
    r = integer_root(m << (bits * n), n)  # floor(m^(1/n) * 2^bits)
    return Fraction(r, 1 << bits), Fraction(r + 1, 1 << bits)


def _pi_bounds(k: int) -> tuple[Fraction, Fraction]:
    if k >= 0:
        return PI_LOW**k, PI_HIGH**k
    return 1 / PI_HIGH**-k, 1 / PI_LOW**-k


# ------------------------------------------------------------------------------------- quotients


class Ratio:
    """``num / den``, two closed forms with ``den`` non-zero; see the module docstring.

    A plain rational (the common case) is also kept as ``rational``, and arithmetic on two of
    them is plain :class:`~fractions.Fraction` arithmetic.
    """

    __slots__ = ("_num", "den", "rational")

    def __init__(self, num: ClosedForm, den: ClosedForm | None = None) -> None:
        self.rational: Fraction | None = None
        if den is None or den is _ONE or den == _ONE:
            self._num: ClosedForm | None = num
            self.den = _ONE
            self.rational = num.as_rational()
            return
        if den.is_zero():
            raise Undefined("division by zero")
        try:
            # a single term, or a sum free of pi and variables: fold it into the numerator
            self._num, self.den = num * den.inverse(), _ONE
            self.rational = self._num.as_rational()
        except Inexpressible:
            self._num, self.den = num, den

    @classmethod
    def of(cls, q: Fraction | int) -> Ratio:
        value = cls.__new__(cls)
        value._num = None
        value.den = _ONE
        value.rational = _check_bits(q if isinstance(q, Fraction) else Fraction(q))
        return value

    @property
    def num(self) -> ClosedForm:
        if self._num is None:
            assert self.rational is not None
            self._num = ClosedForm.rational(self.rational)
        return self._num

    def __add__(self, other: Ratio) -> Ratio:
        if self.rational is not None and other.rational is not None:
            return Ratio.of(self.rational + other.rational)
        if self.den is other.den or self.den == other.den:
            return Ratio(self.num + other.num, self.den)
        return Ratio(self.num * other.den + other.num * self.den, self.den * other.den)

    def __neg__(self) -> Ratio:
        if self.rational is not None:
            return Ratio.of(-self.rational)
        return Ratio(-self.num, self.den)

    def __sub__(self, other: Ratio) -> Ratio:
        if self.rational is not None and other.rational is not None:
            return Ratio.of(self.rational - other.rational)
        return self + (-other)

    def __mul__(self, other: Ratio) -> Ratio:
        if self.rational is not None:
            if other.rational is not None:
                return Ratio.of(self.rational * other.rational)
            return other._scaled(self.rational)
        if other.rational is not None:
            return self._scaled(other.rational)
        if self.den is _ONE and other.den is _ONE:
            return Ratio(self.num * other.num)
        return Ratio(self.num * other.num, self.den * other.den)

    def _scaled(self, q: Fraction) -> Ratio:
        if q == 0:
            return Ratio.of(0)
        return Ratio(self.num.scale(q), None if self.den is _ONE else self.den)

    def __truediv__(self, other: Ratio) -> Ratio:
        if other.is_zero():
            raise Undefined("division by zero")
        if other.rational is not None:
            if self.rational is not None:
                return Ratio.of(self.rational / other.rational)
            return self._scaled(1 / other.rational)
        return Ratio(self.num * other.den, self.den * other.num)

    def power(self, exponent: Fraction) -> Ratio:
        """``self ** exponent``: any integer, or a fraction when numerator and denominator are
        single terms without variables."""
        q = self.rational
        if q is not None and exponent.denominator == 1:
            k = exponent.numerator
            if q == 0 and k < 0:
                raise Undefined("zero to a negative power")
            size = max(q.numerator.bit_length(), q.denominator.bit_length())
            if size * abs(k) <= MAX_BITS:
                return Ratio.of(q**k)
        if exponent.denominator == 1:
            k = exponent.numerator
            if k >= 0:
                return Ratio(self.num.power(k), self.den.power(k))
            if self.is_zero():
                raise Undefined("zero to a negative power")
            return Ratio(self.den.power(-k), self.num.power(-k))
        num, den = self.num, self.den
        if den != _ONE:
            raise Inexpressible("a fractional power of a quotient of sums")
        if len(num.terms) != 1:
            raise Inexpressible("a fractional power of a sum")
        ((key, q1),) = num.terms.items()
        return Ratio(_monomial_power(key, q1, exponent))

    def root(self, n: int) -> Ratio:
        if self.rational is not None:
            return Ratio(_rational_root(self.rational, n))
        if self.den != _ONE:
            return Ratio(self.num.root(n), self.den.root(n))
        return Ratio(self.num.root(n))

    def is_zero(self) -> bool:
        if self.rational is not None:
            return self.rational == 0
        return self.num.is_zero()

    def as_rational(self) -> Fraction | None:
        return self.rational

    def variables(self) -> frozenset[str]:
        if self.rational is not None:
            return frozenset()
        return self.num.variables() | self.den.variables()

    def is_constant(self) -> bool:
        return self.rational is not None or (self.num.is_constant() and self.den.is_constant())

    def equals(self, other: Ratio) -> bool:
        """Exact equality."""
        if self.rational is not None or other.rational is not None:
            if self.rational is not None and other.rational is not None:
                return self.rational == other.rational
            if self.den == _ONE and other.den == _ONE:
                return False  # one rational, one not (the forms are canonical)
        if self.den == other.den:
            return self.num == other.num
        return self.num * other.den == other.num * self.den

    def bounds(self, bits: int = 64) -> tuple[Fraction, Fraction]:
        """Rigorous bounds of a constant; :class:`Inexpressible` when the denominator's bounds
        straddle zero or variables occur."""
        if self.rational is not None:
            return self.rational, self.rational
        n_low, n_high = self.num.bounds(bits)
        if self.den == _ONE:
            return n_low, n_high
        d_low, d_high = self.den.bounds(bits)
        if d_low <= 0 <= d_high:
            raise Inexpressible("a denominator too close to zero to bound")
        corners = [a / b for a in (n_low, n_high) for b in (d_low, d_high)]
        return min(corners), max(corners)

    def __repr__(self) -> str:
        if self.rational is not None:
            return f"Ratio({self.rational})"
        return f"Ratio({self.num!r}, {self.den!r})"


_ONE = ClosedForm.rational(1)
