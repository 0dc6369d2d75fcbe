"""Sizes and durations in the code sandbox's limits: a bare number in the field's own unit, or a
string with its unit (``512MiB``, ``2s``, ``1500ms``).

A bare number far beyond what one program could use is refused with the unit it was likely
written in: ``memory_mb: 536870912`` is 512 TiB, or 512 MiB written in bytes; ``timeout: 2000``
is 33 minutes per test, or 2 s written in milliseconds. A number with its unit is taken as
written.

>>> Size("MiB", most=65536).read("512MiB"), Size("MiB", most=65536).read("1GiB")
(512, 1024)
>>> Duration(most=600).read("1500ms")
1.5
>>> Size("MiB", most=65536).read(536870912)
Traceback (most recent call last):
...
ValueError: 536,870,912 MiB is 512 TiB, more than one program could use; if the number was written in a smaller unit, write it with that unit: in KiB `512GiB`, in bytes `512MiB`
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from pydantic import BeforeValidator, WithJsonSchema

_SIZES = {
    "b": 1, "k": 1 << 10, "kb": 1000, "kib": 1 << 10, "m": 1 << 20, "mb": 1000**2,
    "mib": 1 << 20, "g": 1 << 30, "gb": 1000**3, "gib": 1 << 30, "t": 1 << 40,
    "tb": 1000**4, "tib": 1 << 40,
}  # fmt: skip
_DURATIONS = {"ms": 1e-3, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
_WITH_UNIT = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]+)\s*")


def _size_text(size: float, space: str = " ") -> str:
    """``size`` bytes in the largest binary unit that keeps it at least 1: ``512 TiB``."""
    for unit in ("TiB", "GiB", "MiB", "KiB"):
        scale = _SIZES[unit.lower()]
        if size >= scale:
            return f"{size / scale:g}{space}{unit}"
    return f"{size:g}{space}B"


def _split(value: str, units: dict[str, Any], example: str) -> tuple[float, Any]:
    found = _WITH_UNIT.fullmatch(value)
    if found is None or found[2].lower() not in units:
        raise ValueError(f"{value!r} is not a number with a unit; write it like `{example}`")
    return float(found[1]), units[found[2].lower()]


@dataclass(frozen=True)
class Size:
    """A size field counted in ``unit`` (``KiB`` or ``MiB``); a bare number above ``most`` is
    refused."""

    unit: str
    most: int

    def read(self, value: Any) -> Any:
        scale = _SIZES[self.unit.lower()]
        if isinstance(value, str):
            number, factor = _split(value, _SIZES, f"512{self.unit}")
            return math.ceil(number * factor / scale)
        if isinstance(value, int | float) and not isinstance(value, bool) and value > self.most:
            meant = [(name, _SIZES[unit]) for name, unit in (("KiB", "kib"), ("bytes", "b"))]
            guesses = ", ".join(
                f"in {name} `{_size_text(value * factor, space='')}`"
                for name, factor in meant
                if factor < scale
            )
            raise ValueError(
                f"{value:,} {self.unit} is {_size_text(value * scale)}, more than one program "
                f"could use; if the number was written in a smaller unit, write it with that "
                f"unit: {guesses}"
            )
        return value

    def annotation(self) -> tuple[Any, Any]:
        """What a pydantic field of this size carries: its reader and its JSON Schema."""
        return BeforeValidator(self.read), _schema("integer", nullable=False)


@dataclass(frozen=True)
class Duration:
    """A duration field in seconds; a bare number above ``most`` seconds is refused."""

    most: float

    def read(self, value: Any) -> Any:
        if isinstance(value, str):
            number, factor = _split(value, _DURATIONS, "2s")
            return number * factor
        if isinstance(value, int | float) and not isinstance(value, bool) and value > self.most:
            span = f"{value / 60:.3g} minutes" if value < 7200 else f"{value / 3600:.3g} hours"
            raise ValueError(
                f"{value:g} s is {span}, longer than this limit takes as a bare number "
                f"({self.most:g} s); if the number is in milliseconds, write `{value / 1000:g}s` "
                f"(a long time on purpose: write it with its unit, `{value:g}s`)"
            )
        return value

    def annotation(self, nullable: bool = False) -> tuple[Any, Any]:
        """What a pydantic field of this duration carries: its reader and its JSON Schema."""
        return BeforeValidator(self.read), _schema("number", nullable)


def _schema(kind: str, nullable: bool) -> WithJsonSchema:
    """A bare number of the field's unit, or a string with its unit (and null, if allowed)."""
    choices: list[dict[str, str]] = [
        {"type": kind},
        {"type": "string", "pattern": r"^\s*[0-9]+(\.[0-9]+)?\s*[A-Za-z]+\s*$"},
    ]
    if nullable:
        choices.append({"type": "null"})
    return WithJsonSchema({"anyOf": choices})
