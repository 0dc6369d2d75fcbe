"""When to try a request again: jittered exponential backoff and the ``Retry-After`` header."""

from __future__ import annotations

import math
import random
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime


def retryable(status: int) -> bool:
    """5xx (overloaded, restarting) and 429 (rate limited) are retried; other 4xx are final."""
    return status == 429 or status >= 500


def backoff_delay(attempt: int, base: float, cap: float, rng: random.Random) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (0-based).

    ``min(cap, base * 2**attempt)``, of which the upper half is random ("equal jitter"): clients
    that failed together do not retry together, and the wait still grows with every attempt.

    >>> 0.2 <= backoff_delay(1, 0.2, 10.0, random.Random(0)) <= 0.4
    True
    """
    ceiling = min(cap, base * 2.0 ** min(attempt, 62))
    return ceiling / 2 + rng.uniform(0, ceiling / 2)


def retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds that a ``Retry-After`` header asks for: delay-seconds or an HTTP date.

    ``None`` when the header is absent or unreadable; a date in the past gives ``0``.

    >>> retry_after("2"), retry_after("0.25"), retry_after("soon")
    (2.0, 0.25, None)
    """
    if value is None:
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        seconds = (when - (now or datetime.now(timezone.utc))).total_seconds()
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)
