"""Exact integer arithmetic for radicals: integer roots and prime factorizations.

A radical is written in canonical form from the prime factorization of its radicand
(``\\sqrt{12}`` is ``2 \\sqrt{3}``), so :func:`factorize` must be exact and must end quickly:
trial division by the primes below 10,000, a deterministic Miller-Rabin test for what is left,
and Pollard's rho with a bounded number of steps for a cofactor with two large prime factors.
A radicand it cannot finish raises :class:`Unfactored`, and the answer is left to another
method.

>>> factorize(100000000000000000001)
((73, 1), (137, 1), (1676321, 1), (5964848081, 1))
>>> integer_root(10**600 + 1, 2) == 10**300
True
"""

from __future__ import annotations

import math
from functools import lru_cache

#: Radicands are factored by trial division up to this bound, plus a primality test on what is
#: left (deterministic below _MILLER_RABIN_LIMIT).
_TRIAL_LIMIT = 10_000
_MILLER_RABIN_LIMIT = 3_317_044_064_679_887_385_961_981
_MILLER_RABIN_BASES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41)
_RHO_BUDGET = 1 << 16


class Unfactored(ArithmeticError):
    """The number is too large to factor in the time allowed."""


def _is_probable_prime(n: int) -> bool:
    """Miller-Rabin with fixed bases: deterministic for n below _MILLER_RABIN_LIMIT."""
    if n < 2:
        return False
    for p in _MILLER_RABIN_BASES:
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d //= 2
        s += 1
    for a in _MILLER_RABIN_BASES:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def _small_primes(limit: int) -> tuple[int, ...]:
    sieve = bytearray([1]) * (limit + 1)
    sieve[0:2] = b"\x00\x00"
    for i in range(2, math.isqrt(limit) + 1):
        if sieve[i]:
            sieve[i * i :: i] = bytearray(len(range(i * i, limit + 1, i)))
    return tuple(i for i, flag in enumerate(sieve) if flag)


_PRIMES = _small_primes(_TRIAL_LIMIT)


def integer_root(n: int, k: int) -> int:
    """``floor(n ** (1/k))`` for ``n >= 0``, exactly (Newton's method on integers)."""
    if n < 2:
        return n
    if k == 1:
        return n
    if k == 2:
        return math.isqrt(n)
    x = 1 << -(-n.bit_length() // k)  # above the root
    while True:
        y = ((k - 1) * x + n // x ** (k - 1)) // k
        if y >= x:
            return x
        x = y


def _pollard_rho(n: int, budget: int) -> int | None:
    """A non-trivial factor of the odd composite ``n`` (Brent's variant), or None when
    ``budget`` steps do not find one."""
    for c in range(1, 8):
        x = y = 2
        q = 1
        factor = 1
        steps = 0
        r = 1
        while factor == 1 and steps < budget:
            x = y
            for _ in range(r):
                y = (y * y + c) % n
            k = 0
            while k < r and factor == 1:
                saved = y
                for _ in range(min(64, r - k)):
                    y = (y * y + c) % n
                    q = q * abs(x - y) % n
                factor = math.gcd(q, n)
                k += 64
                steps += 64
            r *= 2
        if factor == n:  # the batch overshot: retry one step at a time
            factor = 1
            y = saved
            while factor == 1:
                y = (y * y + c) % n
                factor = math.gcd(abs(x - y), n)
        if 1 < factor < n:
            return factor
        if steps >= budget:
            return None
    return None


def _prime_factors(n: int, budget: int) -> list[int]:
    """Prime factors of ``n`` (with repetition) that has no factor below the trial bound."""
    if n == 1:
        return []
    if n <= _TRIAL_LIMIT**2 or (n < _MILLER_RABIN_LIMIT and _is_probable_prime(n)):
        return [n]
    if n >= _MILLER_RABIN_LIMIT:
        raise Unfactored(f"cannot factor a {n.bit_length()}-bit radicand")
    factor = _pollard_rho(n, budget)
    if factor is None:
        raise Unfactored(f"cannot factor a {n.bit_length()}-bit radicand in time")
    return _prime_factors(factor, budget) + _prime_factors(n // factor, budget)


@lru_cache(maxsize=4096)
def factorize(n: int) -> tuple[tuple[int, int], ...]:
    """Prime factorization of ``n >= 1``: trial division, then Pollard's rho with a bounded
    budget; raises :class:`Unfactored` when that does not finish it (or ``n`` is too large to
    prove its factors prime)."""
    counts: dict[int, int] = {}
    for p in _PRIMES:
        if n == 1 or p * p > n:
            break
        while n % p == 0:
            n //= p
            counts[p] = counts.get(p, 0) + 1
    if n > 1:
        for k in range(n.bit_length() // 13, 1, -1):  # a perfect power of a large prime
            r = integer_root(n, k)
            if r**k == n:
                for p in _prime_factors(r, _RHO_BUDGET):
                    counts[p] = counts.get(p, 0) + k
                break
        else:
            for p in _prime_factors(n, _RHO_BUDGET):
                counts[p] = counts.get(p, 0) + 1
    return tuple(sorted(counts.items()))
