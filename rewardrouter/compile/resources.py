"""Kinds whose reward callable owns a resource, and the per-router holder of those resources.

Most built-in kinds are pure graders. A *resource kind* (``remote``: an HTTP connection pool) is
different: its term's ``kwargs`` are settings, validated when the router compiles, and its
callable is built once per router with those settings and shares resources with its siblings
(every ``remote`` term of a router uses one connection pool). The router closes the resources
when it closes.

A resource kind lives in its own module, imported only when a config names the kind, which
provides ``Settings`` (a pydantic model for ``kwargs``) and
``build(settings, resources) -> Bound``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

R = TypeVar("R")


@dataclass(frozen=True)
class ResourceKind:
    """A registered resource kind: its name and the module that builds it."""

    name: str
    module: str
    summary: str


RESOURCE_KINDS: dict[str, ResourceKind] = {
    "remote": ResourceKind(
        "remote",
        "rewardrouter.remote.kind",
        "POST each sample (or route group) to a reward server; settings under kwargs",
    ),
    "code": ResourceKind(
        "code",
        "rewardrouter.rewards.code.kind",
        "run the response's program against the label's tests, locally or on SandboxFusion",
    ),
    "judge": ResourceKind(
        "judge",
        "rewardrouter.rewards.judge.kind",
        "an LLM judge on an OpenAI-compatible chat endpoint: rubric template, score parser",
    ),
    "ifeval": ResourceKind(
        "ifeval",
        "rewardrouter.rewards.ifeval",
        "IFEval instructions checked by lm-eval's registry, strict or loose",
    ),
}


@dataclass(frozen=True)
class Bound:
    """What a resource kind's ``build`` returns: an async callable and how the router calls it.

    ``fn(args, sample)`` in single mode, ``fn(args, samples)`` in group mode; ``name`` names it in
    messages (it must not contain credentials).
    """

    fn: Callable[..., Any]
    mode: Literal["single", "group"]
    name: str


@runtime_checkable
class Closeable(Protocol):
    def close(self) -> None: ...


class Resources:
    """Objects shared by the reward callables of one router, closed with the router.

    >>> resources = Resources()
    >>> pool = resources.get(SessionPool, SessionPool)   # one per router, made on first use
    >>> resources.close()                               # closes everything that has close()
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
