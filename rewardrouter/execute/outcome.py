"""The raw outcome of one reward call, before the value is read and policies apply."""

from __future__ import annotations

import traceback
from typing import Any, Literal, NamedTuple

CallStatus = Literal["ok", "error", "timeout", "invalid"]


class Outcome(NamedTuple):
    value: Any
    status: CallStatus = "ok"
    error: str | None = None


def describe_exception(exc: BaseException) -> str:
    """``"ValueError: bad input (my_rewards.py:12)"``: the cause and where it was raised."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" ({frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


def failed(exc: BaseException) -> Outcome:
    return Outcome(None, "error", describe_exception(exc))
