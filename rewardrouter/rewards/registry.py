"""The registry of built-in reward kinds.

A built-in is a *grader*: a pure, top-level function ``grade(response, label, metadata, **kwargs)``
returning a float, a dict (then ``keys`` lists its entries and a term must name one with
``key:``), or ``None`` ("not applicable"). The router calls it through :class:`BuiltinReward`, a
picklable top-level callable with the ``(args, sample, **kwargs)`` shape every reward function has,
so built-ins and user functions travel through one dispatch path (and across process
boundaries).

Every grader whose ``boxable`` is true also exists as ``boxed_<name>``: the grader sees only the
content of the response's last ``\\boxed{...}`` (an empty string when there is none), handed over
as a :class:`BoxedAnswer`. A grader that extracts an answer itself (``math`` looks for the last
``\\boxed{}``, ``dapo`` for ``Answer:``) checks for that type and grades the content as the answer
instead of searching it again, so ``boxed_math`` scores what ``math`` scores.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

Grade = Callable[..., Any]

BOXED_PREFIX = "boxed_"


@dataclass(frozen=True)
class Builtin:
    """A registered grader and what the router needs to know about it."""

    name: str
    grade: Grade
    returns: Literal["float", "dict"] = "float"
    keys: tuple[str, ...] = ()
    cpu_heavy: bool = False
    boxable: bool = True
    summary: str = ""


BUILTINS: dict[str, Builtin] = {}


def builtin(
    name: str,
    *,
    returns: Literal["float", "dict"] = "float",
    keys: tuple[str, ...] = (),
    cpu_heavy: bool = False,
    boxable: bool = True,
) -> Callable[[Grade], Grade]:
    """Register ``grade`` as the built-in kind ``name``; its docstring's first line is the summary."""

    def register(grade: Grade) -> Grade:
        if name in BUILTINS:
            raise RuntimeError(f"built-in reward {name!r} registered twice")
        if returns == "dict" and not keys:
            raise RuntimeError(f"built-in {name!r} returns a dict but declares no keys")
        summary = (grade.__doc__ or "").strip().splitlines()[0] if grade.__doc__ else ""
        BUILTINS[name] = Builtin(name, grade, returns, keys, cpu_heavy, boxable, summary)
        return grade

    return register


def last_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` (or ``\\fbox{...}``) in ``text``, braces balanced.

    ``None`` when there is none, or when the last one is cut off before its closing brace (a
    truncated answer is not silently replaced by an earlier one).
    """
    start = max(text.rfind("\\boxed"), text.rfind("\\fbox"))
    if start == -1:
        return None
    marker = "\\boxed" if text.startswith("\\boxed", start) else "\\fbox"
    i = text.find("{", start)
    if i == -1 or text[start + len(marker) : i].strip():
        return None
    depth = 0
    for j in range(i, len(text)):
        char = text[j]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1 : j]
    return None


class BoxedAnswer(str):
    """The content of a response's last ``\\boxed{}``, already extracted for a ``boxed_`` kind.

    A plain ``str`` in every other respect; graders that do their own answer extraction treat a
    ``BoxedAnswer`` as the extracted answer (``""`` when the response had no complete box).
    """

    __slots__ = ()


class BuiltinReward:
    """``(args, sample, **kwargs)`` adapter around a grader; picklable (holds only names)."""

    __slots__ = ("boxed", "name")

    def __init__(self, name: str, boxed: bool = False) -> None:
        self.name = name
        self.boxed = boxed

    @property
    def spec(self) -> Builtin:
        return BUILTINS[self.name]

    @property
    def kind(self) -> str:
        return f"{BOXED_PREFIX}{self.name}" if self.boxed else self.name

    def __call__(self, args: Any, sample: Any, **kwargs: Any) -> Any:
        response: str = sample.response or ""
        if self.boxed:
            response = BoxedAnswer(last_boxed(response) or "")
        metadata: Mapping[str, Any] = sample.metadata or {}
        return BUILTINS[self.name].grade(response, sample.label, metadata, **kwargs)

    def __getstate__(self) -> tuple[str, bool]:
        return (self.name, self.boxed)

    def __setstate__(self, state: tuple[str, bool]) -> None:
        self.name, self.boxed = state

    def __repr__(self) -> str:
        return f"BuiltinReward({self.kind!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BuiltinReward) and (self.name, self.boxed) == (
            other.name,
            other.boxed,
        )

    def __hash__(self) -> int:
        return hash((self.name, self.boxed))


def lookup(kind: str) -> BuiltinReward | None:
    """The callable for built-in ``kind`` (``boxed_`` prefix included), or None if unknown."""
    if kind in BUILTINS:
        return BuiltinReward(kind)
    if kind.startswith(BOXED_PREFIX):
        base = BUILTINS.get(kind[len(BOXED_PREFIX) :])
        if base is not None and base.boxable:
            return BuiltinReward(base.name, boxed=True)
    return None


def known_kinds() -> list[str]:
    """Every kind a config may name, boxed variants included."""
    kinds = list(BUILTINS)
    kinds += [f"{BOXED_PREFIX}{b.name}" for b in BUILTINS.values() if b.boxable]
    return sorted(kinds)
