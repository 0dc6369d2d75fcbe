"""The executor interface: where the calls of one route group run, and what each executor accepts.

An executor is a class with a compile-time check and a run method::

    class Echo(Executor):
        async def run(self, call: Call, samples: Sequence[SampleLike]) -> Sequence[Outcome]:
            return [Outcome(call.callee.fn(call.args, s, **call.kwargs)) for s in samples]

and one line in :data:`~rewardrouter.execute.registry.EXECUTORS` (or
:func:`~rewardrouter.execute.registry.register_executor`) makes ``executor: echo`` a valid
setting of a reward term. A router makes each executor it needs once, on first use, with a
:class:`Setup`, and closes it when the router closes.

An executor with settings of its own names their pydantic model as ``settings_model``; a router
config then sets them under ``executors.<name>`` (``executors: {echo: {prefix: ">"}}``), the
compiler checks them against the model with every other problem, and the executor reads them
validated, defaults filled in, as ``self.setup.settings_as(EchoSettings)``.

The contract of :meth:`Executor.run`:

- single mode (``call.group`` false): one :class:`Outcome` per sample, in order;
- group mode: exactly one outcome, of ``call.callee.fn(call.args, samples, **call.kwargs)``;
- every call under ``call.timeout`` seconds; a failure, an overrun or a bad return is an
  outcome (``error``, ``timeout``), never an exception — only a router that is closed or an
  executor that cannot start at all raises (:class:`~rewardrouter.errors.RewardRouterError`).
"""

from __future__ import annotations

import pickle
import sys
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, ClassVar, Literal, Protocol, TypeVar

from pydantic import BaseModel

from rewardrouter.config.models import DEFAULT_TIMEOUT, RouterConfig
from rewardrouter.errors import Problem, RewardRouterError
from rewardrouter.outcome import Outcome
from rewardrouter.sample import SampleLike

Mode = Literal["single", "group"]


class Callee(Protocol):
    """What an executor reads of a resolved reward function
    (:class:`~rewardrouter.compile.resolve.RewardFn` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def fn(self) -> Callable[..., Any]: ...

    @property
    def mode(self) -> Mode: ...

    @property
    def is_async(self) -> bool: ...


@dataclass(frozen=True)
class Call:
    """The calls of one route group: ``callee`` with ``args`` and ``kwargs``, each under
    ``timeout`` seconds. ``key`` names the call (its route group's call key), so that an
    executor can learn per function how long calls take."""

    callee: Callee
    args: Any
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT
    key: Hashable = None

    @property
    def group(self) -> bool:
        """Whether the function takes the whole group in one call."""
        return self.callee.mode == "group"


S = TypeVar("S", bound=BaseModel)


@dataclass(frozen=True)
class Setup:
    """What a router makes an executor with: its config (``max_concurrency``, ``timeout``, ...),
    the modules that workers import when they start (those of every function an executor with
    ``ships_functions`` runs) and the executor's own ``settings``, validated from
    ``executors.<name>`` (None for an executor without a ``settings_model``)."""

    config: RouterConfig
    modules: tuple[str, ...] = ()
    settings: BaseModel | None = None

    def settings_as(self, model: type[S]) -> S:
        """The executor's settings as ``model``: those given, or the model's defaults."""
        if self.settings is None:
            return model()
        if not isinstance(self.settings, model):
            raise TypeError(f"expected settings of type {model.__name__}, got {self.settings!r}")
        return self.settings


#: What every executor raises once its router has been closed.
CLOSED = "this router is closed; compile a new one"


def closed() -> RewardRouterError:
    """The error of a call on a router that has been closed."""
    return RewardRouterError(CLOSED)


class Executor:
    """Base class of every executor; see the module docstring for the contract.

    ``ships_functions`` executors run calls in other processes, which import the function by
    reference: the compiler checks that it pickles, and workers import its module at start.
    ``runs_async`` says whether the executor can await an ``async def`` function.
    """

    ships_functions: ClassVar[bool] = False
    runs_async: ClassVar[bool] = False
    #: The model of the executor's settings (``executors.<name>`` of a router config); None
    #: when it takes none.
    settings_model: ClassVar[type[BaseModel] | None] = None
    #: Where a function runs, for compile-time messages ("a worker process").
    where: ClassVar[str] = "this executor"

    def __init__(self, setup: Setup) -> None:
        self.setup = setup

    @classmethod
    def check(cls, name: str, callee: Callee, path: str) -> list[Problem]:
        """Compile time: why ``callee`` cannot run on executor ``name`` (registered under that
        name); ``path`` is the YAML path of the term's ``executor`` setting."""
        if callee.is_async and not cls.runs_async:
            return [
                Problem(
                    path,
                    f"{callee.name} is an async function; executor {name!r} runs plain functions",
                    "remove `executor` (async functions run inline on the event loop), or make "
                    "it a plain `def`",
                )
            ]
        reason = unshippable(callee.fn) if cls.ships_functions else None
        if reason is None:
            return []
        return [
            Problem(
                path,
                f"{callee.name} cannot run in {cls.where}: {reason}",
                "define it at the top level of a module that the script imports (a top-level "
                "callable class works too), or use `executor: thread`",
            )
        ]

    async def run(self, call: Call, samples: Sequence[SampleLike]) -> Sequence[Outcome]:
        """The outcomes of ``call`` on ``samples`` (never empty); see the module docstring."""
        raise NotImplementedError

    def close(self) -> None:
        """Free what the executor holds (threads, processes, actors). Idempotent."""


def unshippable(obj: Callable[..., Any]) -> str | None:
    """Why another process could not receive ``obj`` by reference, or None if it can."""
    qualname = getattr(obj, "__qualname__", "")
    if "<lambda>" in qualname:
        return "it is a lambda"
    if "<locals>" in qualname:
        return "it is defined inside another function"
    if getattr(obj, "__module__", None) == "__main__":
        if not hasattr(sys.modules.get("__main__"), "__file__"):
            return "it is defined in an interactive session, which worker processes cannot import"
        return (
            "it is defined in the script being run (`__main__`), which worker processes never "
            "import (the script would start over in each of them)"
        )
    try:
        pickle.loads(pickle.dumps(obj))
    except Exception as exc:
        return f"pickling it fails ({type(exc).__name__}: {exc})"
    return None


def in_process(
    call: Call, samples: Sequence[SampleLike]
) -> tuple[Callable[[Any], Any], Sequence[Any]]:
    """The one-argument callable and the items of ``call`` for executors that call the function
    in this process: one item per sample, or the whole group as one item."""
    fn = partial(call.callee.fn, call.args, **call.kwargs)
    return fn, [list(samples)] if call.group else samples
