"""The registry of reward kinds: every name a term may give as ``kind:``.

Two sorts of kind share one namespace (a name is registered once, as one or the other):

- a *grader* (:data:`BUILTINS`, registered with :func:`builtin`), pure and stateless;
- a *resource kind* (:data:`RESOURCE_KINDS`, registered with :func:`resource_kind`), whose
  callable owns a resource shared per router (``remote``: an HTTP connection pool) and whose
  term's ``kwargs`` are settings, validated when the router compiles.

:func:`kind_names` lists them all. A grader is a pure, top-level function ``grade(response, label, metadata, **kwargs)``
returning a float, a dict (then ``keys`` lists its entries and a term must name one with
``key:``), or ``None`` ("not applicable"). The router calls it through :class:`BuiltinReward`, a
picklable top-level callable with the ``(args, sample, **kwargs)`` shape every reward function has,
so built-ins and user functions travel through one dispatch path (and across process
boundaries).

Every grader whose ``boxable`` is true also exists as ``boxed_<name>``: the grader sees only the
content of the last ``\\boxed{...}`` after the response's thinking (an empty string when there is
none), handed over as a :class:`BoxedAnswer`. A grader that extracts an answer itself (``math``
looks for the last ``\\boxed{}``, ``dapo`` for ``Answer:``) checks for that type and grades the
content as the answer instead of searching it again, so ``boxed_math`` scores what ``math``
scores.

A CPU-heavy grader may also register a *quick* path: the same grader restricted to work whose
time is bounded (``math`` without math-verify). It returns the reward when it can decide it, and
:data:`UNDECIDED` otherwise. The router runs it in its own process first and sends only the
undecided samples to worker processes, so a batch whose answers the exact checks decide never
pays for a worker's hand-off (or start-up).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, cast, runtime_checkable

from rewardrouter.outcome import UNDECIDED
from rewardrouter.rewards.thinking import after_thinking

if TYPE_CHECKING:
    from pydantic import BaseModel

    from rewardrouter.sample import SampleLike

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
    quick: Grade | None = None


BUILTINS: dict[str, Builtin] = {}

#: The module whose import registers each kind. A kind is loaded when a config names it (or a
#: worker process meets it), so a router pays for the graders it uses alone: its imports
#: (sympy, jsonschema, lm-eval's checks, an HTTP client) come with the kind.
KIND_MODULES: dict[str, str] = {
    **dict.fromkeys(["gpqa", "multiple_choice"], "rewardrouter.rewards.choice.kind"),
    "dapo": "rewardrouter.rewards.dapo",
    "deepscaler": "rewardrouter.rewards.deepscaler",
    "exact_match": "rewardrouter.rewards.exact",
    "f1": "rewardrouter.rewards.f1",
    **dict.fromkeys(["think_format", "boxed_format"], "rewardrouter.rewards.formats"),
    "math": "rewardrouter.rewards.math.kind",
    **dict.fromkeys(["random", "deterministic_random"], "rewardrouter.rewards.random"),
    "code": "rewardrouter.rewards.code.kind",
    "ifeval": "rewardrouter.rewards.ifeval.kind",
    "judge": "rewardrouter.rewards.judge.kind",
    "nemo_gym": "rewardrouter.rewards.nemo_gym.kind",
    "remote": "rewardrouter.rewards.remote",
    "reward_model": "rewardrouter.rewards.reward_model.kind",
    **dict.fromkeys(["tool_call_format", "tool_success"], "rewardrouter.rewards.tool_use.calls"),
    "turns": "rewardrouter.rewards.tool_use.turns",
    "verifiers": "rewardrouter.rewards.verifiers.kind",
}


def load_kind(kind: str) -> None:
    """Import the module that registers ``kind`` (``boxed_`` prefix included), once; nothing for
    a name no module registers (lookups then find nothing)."""
    name = kind if kind in KIND_MODULES else kind.removeprefix(BOXED_PREFIX)
    module = KIND_MODULES.get(name)
    if module is not None and name not in BUILTINS and name not in RESOURCE_KINDS:
        importlib.import_module(module)  # (Python's import lock: once, whatever the threads)


def load_all() -> None:
    """Register every kind (for listing them all: a "did you mean", the JSON Schema)."""
    for kind in KIND_MODULES:
        load_kind(kind)


def builtin(
    name: str,
    *,
    returns: Literal["float", "dict"] = "float",
    keys: tuple[str, ...] = (),
    cpu_heavy: bool = False,
    boxable: bool = True,
    quick: Grade | None = None,
) -> Callable[[Grade], Grade]:
    """Register ``grade`` as the built-in kind ``name``; its docstring's first line is the summary.

    ``quick``: the grader's bounded path (same signature; the reward or :data:`UNDECIDED`).
    """

    def register(grade: Grade) -> Grade:
        if name in BUILTINS or name in RESOURCE_KINDS:
            raise RuntimeError(f"built-in reward {name!r} registered twice")
        if returns == "dict" and not keys:
            raise RuntimeError(f"built-in {name!r} returns a dict but declares no keys")
        summary = (grade.__doc__ or "").strip().splitlines()[0] if grade.__doc__ else ""
        BUILTINS[name] = Builtin(name, grade, returns, keys, cpu_heavy, boxable, summary, quick)
        return grade

    return register


def last_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` (or ``\\fbox{...}``) in ``text``, braces balanced.

    ``None`` when there is none, or when the last one is cut off before its closing brace (a
    truncated answer is not silently replaced by an earlier one).
    """
    box = boxed_at(text, last_box_start(text, len(text)))
    return box[0] if box is not None else None


def last_box_start(text: str, end: int) -> int:
    """Where the last ``\\boxed`` or ``\\fbox`` starting before ``end`` starts; -1 if none."""
    return max(text.rfind("\\boxed", 0, end), text.rfind("\\fbox", 0, end))


def boxed_at(text: str, start: int) -> tuple[str, int] | None:
    """The content of the box starting at ``start`` and the index after its closing brace; None
    when there is no box there or its braces do not close."""
    if start < 0:
        return None
    marker = 6 if text.startswith("\\boxed", start) else 5
    i = text.find("{", start)
    if i == -1 or text[start + marker : i].strip():
        return None
    close = text.find("}", i)
    if close != -1 and text.find("{", i + 1, close) == -1:
        return text[i + 1 : close], close + 1  # no nested braces: the first closing one ends it
    depth = 0
    for j in range(i, len(text)):
        char = text[j]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1 : j], j + 1
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
        return _builtin(self.name)

    @property
    def kind(self) -> str:
        return f"{BOXED_PREFIX}{self.name}" if self.boxed else self.name

    def _inputs(self, sample: SampleLike) -> tuple[str, Mapping[str, Any]]:
        # A conversation reaches a grader as the text its term reads (rewardrouter.trajectory).
        response = cast("str", sample.response or "")
        if self.boxed:
            response = BoxedAnswer(last_boxed(after_thinking(response)) or "")
        return response, sample.metadata or {}

    def __call__(self, args: Any, sample: SampleLike, **kwargs: Any) -> Any:
        response, metadata = self._inputs(sample)
        return _builtin(self.name).grade(response, sample.label, metadata, **kwargs)

    @property
    def has_quick(self) -> bool:
        """Whether the grader has a bounded quick path (see the module docstring)."""
        return _builtin(self.name).quick is not None

    def quick(self, args: Any, sample: SampleLike, **kwargs: Any) -> Any:
        """The reward when the grader's quick path decides it, else :data:`UNDECIDED`."""
        grade = _builtin(self.name).quick
        if grade is None:
            return UNDECIDED
        response, metadata = self._inputs(sample)
        return grade(response, sample.label, metadata, **kwargs)

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


def _builtin(name: str) -> Builtin:
    """The registered grader ``name``, its module imported first where it is not yet (a worker
    process that unpickled a :class:`BuiltinReward`)."""
    found = BUILTINS.get(name)
    if found is None:
        load_kind(name)
        found = BUILTINS[name]
    return found


def resource(kind: str) -> ResourceKind | None:
    """The resource kind ``kind`` (its module imported on first use), or None if it is none."""
    load_kind(kind)
    return RESOURCE_KINDS.get(kind)


def lookup(kind: str) -> BuiltinReward | None:
    """The callable for built-in ``kind`` (``boxed_`` prefix included), or None if unknown."""
    load_kind(kind)
    if kind in BUILTINS:
        return BuiltinReward(kind)
    if kind.startswith(BOXED_PREFIX):
        base = BUILTINS.get(kind[len(BOXED_PREFIX) :])
        if base is not None and base.boxable:
            return BuiltinReward(base.name, boxed=True)
    return None


def known_kinds() -> list[str]:
    """Every kind a config may name, boxed variants included."""
    load_all()
    kinds = list(BUILTINS)
    kinds += [f"{BOXED_PREFIX}{b.name}" for b in BUILTINS.values() if b.boxable]
    return sorted(kinds)


def kind_names() -> list[str]:
    """Every name a term may give as ``kind:``: graders, their boxed variants, resource kinds."""
    return sorted([*known_kinds(), *RESOURCE_KINDS])  # (known_kinds loads them all)


# -- resource kinds ------------------------------------------------------------------------------

R = TypeVar("R")


@runtime_checkable
class Closeable(Protocol):
    def close(self) -> None: ...


class Resources:
    """Objects shared by the reward callables of one router, closed with the router.

    >>> resources = Resources()
    >>> resources.get("pool", list) is resources.get("pool", list)   # made once per router
    True
    >>> resources.close()                                           # closes what has close()
    """

    def __init__(self) -> None:
        self._items: dict[Hashable, Any] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, make: Callable[[], R]) -> R:
        """The object stored under ``key``, made by ``make()`` the first time."""
        with self._lock:
            if key not in self._items:
                self._items[key] = make()
            return self._items[key]  # type: ignore[no-any-return]

    def close(self) -> None:
        """Close every held object that can be closed. Idempotent."""
        with self._lock:
            items = list(self._items.values())
            self._items.clear()
        for item in items:
            if isinstance(item, Closeable):
                item.close()


@runtime_checkable
class Budgeted(Protocol):
    """A reward callable whose worst case per call it can tell from its settings: checked
    against the term's timeout when the router compiles, so that budgets set beside each other
    (a sandbox's per-test timeout, the term's deadline) are shown to compose before a run."""

    def fits(self, seconds: float) -> tuple[str, str] | None:
        """None when every call's worst case fits in ``seconds`` (the term's timeout), else
        ``(what does not fit, with the numbers; what to change)``."""


@dataclass(frozen=True)
class Bound:
    """What a resource kind's ``build`` returns: its callable and how the router calls it.

    ``fn(args, sample)`` in single mode, ``fn(args, samples)`` in group mode; ``name`` names it in
    messages (it must not contain credentials). ``cpu_heavy``: ``fn`` is a plain ``def`` that
    pickles by reference (a top-level callable class), and ``executor: auto`` runs it in worker
    processes, where a deadline can stop it (``ifeval``: regexes that a response can stall).
    ``keys``: the entries of the dict ``fn`` returns (then a term must name one with ``key:``,
    checked when the router compiles); empty when it returns a number.
    """

    fn: Callable[..., Any]
    mode: Literal["single", "group"]
    name: str
    cpu_heavy: bool = False
    keys: tuple[str, ...] = ()


Build = Callable[[Any, Resources], Bound]


@dataclass(frozen=True)
class ResourceKind:
    """A registered resource kind: ``build(settings, resources)`` makes its callable once per
    router from the term's ``kwargs`` validated as ``settings``."""

    name: str
    settings: type[BaseModel]
    build: Build
    summary: str = ""


RESOURCE_KINDS: dict[str, ResourceKind] = {}


def resource_kind(name: str, settings: type[BaseModel]) -> Callable[[Build], Build]:
    """Register ``build`` as the resource kind ``name`` whose ``kwargs`` are ``settings``; its
    docstring's first line is the summary."""

    def register(build: Build) -> Build:
        if name in BUILTINS or name in RESOURCE_KINDS:
            raise RuntimeError(f"kind {name!r} registered twice")
        summary = (build.__doc__ or "").strip().splitlines()[0] if build.__doc__ else ""
        RESOURCE_KINDS[name] = ResourceKind(name, settings, build, summary)
        return build

    return register
