"""Read the training value out of what a reward function returned."""

from __future__ import annotations

import math
from numbers import Real
from typing import Any

from rewardrouter.errors import did_you_mean, short_repr


class InvalidReturn(Exception):
    """A return value the router cannot use; the message says what was found and expected,
    ``hint`` (when known) what to change."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


def to_value(raw: Any, key: str | None) -> float | None:
    """The float that ``raw`` stands for; ``None`` means "not applicable".

    A number (bool included) is used as it is; a dict gives its ``key`` entry. NaN, ±inf, a
    number beyond float range (``10**400``), strings and other types, a dict without ``key``
    or a dict when no key is configured are :class:`InvalidReturn`.
    """
    if type(raw) is float and raw - raw == 0.0:  # a finite float: the common case, at once
        return raw
    if raw is None:
        return None
    if isinstance(raw, dict):
        if key is None:
            raise InvalidReturn(
                f"returned a dict with keys {sorted(map(str, raw))}; set `key:` on the term "
                f"to name the training value"
            )
        if key not in raw:
            keys = sorted(map(str, raw))
            close = did_you_mean(key, keys)
            raise InvalidReturn(
                f"returned a dict without key {key!r} (keys: {keys})",
                f"{close + ' ' if close else ''}set the term's `key:` to the entry that is the "
                f"training value",
            )
        entry = raw[key]
        if isinstance(entry, dict):
            raise InvalidReturn(
                f"entry {key!r} of the returned dict is a dict: {short_repr(entry)}"
            )
        return to_value(entry, None)
    if isinstance(raw, Real) or (hasattr(raw, "__float__") and not isinstance(raw, str | bytes)):
        try:
            value = float(raw)
        except OverflowError:  # an int (or Fraction, Decimal) beyond float range, e.g. 10**400
            raise InvalidReturn(
                f"returned {short_repr(raw)}, beyond the range of a float; rewards must be finite"
            ) from None
        except (TypeError, ValueError):
            raise InvalidReturn(f"returned {short_repr(raw)}, which is not a number") from None
        if not math.isfinite(value):
            raise InvalidReturn(f"returned {value}; rewards must be finite")
        return value
    raise InvalidReturn(
        f"returned {type(raw).__name__} {short_repr(raw)}; expected a number, a dict or None"
    )
