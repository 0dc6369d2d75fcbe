"""Did a test pass? Printed output and return values compared with what the label expects.

Printed output, ``compare: tokens`` (the default, what competitive-programming judges accept):
the same whitespace-separated tokens. Where the expected token is an integer, the printed one
must be the same integer (``007`` and ``+7`` are ``7``; ``7.0`` is 7 too, ``7.000001`` is not);
where it is any other number, the printed number may differ by ``tolerance`` (absolute or
relative), so ``0.5`` matches ``0.50000``. ``compare: lines``: the same lines once trailing
whitespace and trailing blank lines are dropped.

Return values: integers (and booleans) are compared exactly, floats within ``tolerance``.

Every comparison is a total function of what the program printed or returned: an integer of
any length, ``1e999999999``, ``nan`` or ``-0`` is equal or not, never an exception or a
conversion whose cost grows with the number's size.

>>> same_output("3 \\n0.50000\\n", "3\\n0.5", "tokens", 1e-6)
True
>>> same_output("1000000001", "1000000000", "tokens", 1e-6)
False
>>> same_output("1 2\\n", "1\\n2\\n", "lines", 1e-6)
False
>>> same_value([1.0, "a"], [1, "a"], 1e-9)
True
>>> same_value(10**400, 1e308, 1e-6)
False
"""

from __future__ import annotations

import math
import re
from typing import Any, Literal

Compare = Literal["tokens", "lines"]

_INTEGER = re.compile(r"[+-]?[0-9]+\Z")
# A decimal number as printed (no underscores, no hexadecimal, no nan/inf words).
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")


def _close(a: float, b: float, tolerance: float) -> bool:
    return a == b or math.isclose(a, b, rel_tol=tolerance, abs_tol=tolerance)


def _integer_text(token: str) -> str:
    """An integer token without its sign's ``+`` and its leading zeros (``-0`` is ``0``)."""
    negative = token.startswith("-")
    digits = token.lstrip("+-").lstrip("0") or "0"
    return "-" + digits if negative and digits != "0" else digits


def _decimal_integer_text(token: str, digits: int) -> str | None:
    """The integer a decimal token (``7.0``, ``1.5e3``) stands for, as :func:`_integer_text`
    writes it, when it is an integer of at most ``digits`` digits; else None. Read from the
    text alone: an exponent is never expanded beyond ``digits``."""
    mantissa, _, exponent_text = token.lower().partition("e")
    negative = mantissa.startswith("-")
    whole, _, fraction = mantissa.lstrip("+-").partition(".")
    significant = (whole + fraction).lstrip("0")
    if not significant:
        return "0"
    if len(exponent_text.lstrip("+-").lstrip("0")) > len(str(len(token) + digits)):
        return None  # an exponent beyond what the token's digits could bring back: not it
    exponent = int(exponent_text or "0") - len(fraction)
    trimmed = significant.rstrip("0")
    exponent += len(significant) - len(trimmed)
    if exponent < 0 or len(trimmed) + exponent > digits:
        return None
    text = trimmed + "0" * exponent
    return "-" + text if negative else text


def _same_token(got: str, want: str, tolerance: float) -> bool:
    if got == want:
        return True
    if _INTEGER.match(want):
        expected = _integer_text(want)
        if _INTEGER.match(got):
            return _integer_text(got) == expected
        if not _DECIMAL.match(got):
            return False
        return _decimal_integer_text(got, len(expected)) == expected
    if not (_DECIMAL.match(got) and _DECIMAL.match(want)):
        return False
    x, y = float(got), float(want)  # huge exponents give inf, never an exception
    return math.isfinite(x) and math.isfinite(y) and _close(x, y, tolerance)


def same_output(got: str, want: str, compare: Compare, tolerance: float) -> bool:
    """Whether printed output ``got`` matches the expected ``want``."""
    got_lines = [line.rstrip() for line in got.replace("\r\n", "\n").split("\n")]
    want_lines = [line.rstrip() for line in want.replace("\r\n", "\n").split("\n")]
    while got_lines and not got_lines[-1]:
        got_lines.pop()
    while want_lines and not want_lines[-1]:
        want_lines.pop()
    if got_lines == want_lines:
        return True
    if compare == "lines":
        return False
    got_tokens, want_tokens = got.split(), want.split()
    if len(got_tokens) != len(want_tokens):
        return False
    return all(_same_token(a, b, tolerance) for a, b in zip(got_tokens, want_tokens, strict=True))


def _same_number(got: int | float, want: int | float, tolerance: float) -> bool:
    if isinstance(want, int) or isinstance(got, int):
        if isinstance(want, int) and isinstance(got, int):
            return got == want
        if isinstance(want, int):
            return got == want  # a float equals an int only exactly (Python compares exactly)
        # an int returned where a float is expected: within tolerance, if a float can hold it
        if abs(got) > 2**1023:
            return False
        got = float(got)
    return math.isfinite(got) and math.isfinite(want) and _close(got, want, tolerance)


def same_value(got: Any, want: Any, tolerance: float) -> bool:
    """Whether a returned value (decoded from JSON) equals the expected one: integers exactly,
    floats within ``tolerance``; lists and tuples alike (JSON has only lists)."""
    if isinstance(got, bool) or isinstance(want, bool):
        return got is want if isinstance(got, bool) and isinstance(want, bool) else False
    if isinstance(got, int | float) and isinstance(want, int | float):
        if isinstance(got, float) and isinstance(want, float) and got == want:
            return True  # inf == inf
        return _same_number(got, want, tolerance)
    if isinstance(got, list | tuple) and isinstance(want, list | tuple):
        return len(got) == len(want) and all(
            same_value(a, b, tolerance) for a, b in zip(got, want, strict=True)
        )
    if isinstance(got, dict) and isinstance(want, dict):
        return got.keys() == want.keys() and all(
            same_value(got[k], want[k], tolerance) for k in got
        )
    return bool(got == want)


def same_return(got: Any, want: Any, tolerance: float) -> bool:
    """:func:`same_value`, also accepting APPS's habit of wrapping the expected return value in a
    one-element list (``outputs: [[3]]`` for a function that returns ``3``)."""
    if same_value(got, want, tolerance):
        return True
    return isinstance(want, list) and len(want) == 1 and same_value(got, want[0], tolerance)
