"""Did a test pass? Printed output and return values compared with what the label expects.

Printed output, ``compare: tokens`` (the default, what competitive-programming judges accept):
the same whitespace-separated tokens, where two numeric tokens are equal within
``tolerance`` (absolute or relative), so ``0.5`` matches ``0.50000``. ``compare: lines``: the
same lines once trailing whitespace and trailing blank lines are dropped.

>>> same_output("3 \\n0.50000\\n", "3\\n0.5", "tokens", 1e-6)
True
>>> same_output("1 2\\n", "1\\n2\\n", "lines", 1e-6)
False
>>> same_value([1.0, "a"], [1, "a"], 1e-9)
True
"""

from __future__ import annotations

import math
from typing import Any, Literal

Compare = Literal["tokens", "lines"]


def _close(a: float, b: float, tolerance: float) -> bool:
    return a == b or math.isclose(a, b, rel_tol=tolerance, abs_tol=tolerance)


def _number(token: str) -> float | None:
    try:
        value = float(token)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


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
    for a, b in zip(got_tokens, want_tokens, strict=True):
        if a == b:
            continue
        x, y = _number(a), _number(b)
        if x is None or y is None or not _close(x, y, tolerance):
            return False
    return True


def same_value(got: Any, want: Any, tolerance: float) -> bool:
    """Whether a returned value (decoded from JSON) equals the expected one, floats within
    ``tolerance``; lists and tuples alike (JSON has only lists)."""
    if isinstance(got, bool) or isinstance(want, bool):
        return got is want if isinstance(got, bool) and isinstance(want, bool) else False
    if isinstance(got, int | float) and isinstance(want, int | float):
        return _close(float(got), float(want), tolerance)
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
