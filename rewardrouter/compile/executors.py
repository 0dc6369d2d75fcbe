"""Where each term's calls run: resolve ``executor: auto`` and check that the choice can work.

``auto`` sends CPU-heavy built-ins (``math``, ``dapo``, ...) to worker processes, where a deadline
can kill them; async functions run inline on the event loop; other plain functions run on
threads. Checked here, at compile time:

- ``process`` and ``ray`` need a plain ``def`` that a worker can import by name: not ``async``,
  not a lambda, a closure or a function defined inside another function;
- ``ray`` needs Ray installed (``pip install 'rewardrouter[ray]'``); it is not imported here;
- ``thread`` needs a plain ``def`` (an async function has nothing to block on a thread).

>>> choose_executor(resolve_builtin("exact_match", {}), "auto")
'thread'
"""

from __future__ import annotations

import importlib.util
import pickle
import sys
from collections.abc import Iterable

from rewardrouter.compile.resolve import RewardFn
from rewardrouter.compile.routes import CompiledRoute, Executor
from rewardrouter.config.models import ExecutorSetting
from rewardrouter.errors import Problem
from rewardrouter.rewards import BuiltinReward


def choose_executor(fn: RewardFn, setting: ExecutorSetting) -> Executor:
    """The executor ``setting`` means for ``fn`` (``auto`` resolved)."""
    if setting != "auto":
        return setting
    if fn.cpu_heavy and not fn.is_async:
        return "process"
    return "inline" if fn.is_async else "thread"


def _unpicklable(fn: RewardFn) -> str | None:
    """Why a worker process could not receive ``fn`` by reference, or None if it can."""
    obj = fn.fn
    qualname = getattr(obj, "__qualname__", "")
    if "<lambda>" in qualname:
        return "it is a lambda"
    if "<locals>" in qualname:
        return "it is defined inside another function"
    if getattr(obj, "__module__", None) == "__main__" and not hasattr(
        sys.modules.get("__main__"), "__file__"
    ):
        return "it is defined in an interactive session, which worker processes cannot import"
    try:
        pickle.loads(pickle.dumps(obj))
    except Exception as exc:
        return f"pickling it fails ({type(exc).__name__}: {exc})"
    return None


#: Where each executor that needs a picklable function runs it, for the problem's message.
_WORKERS = {"process": "a worker process", "ray": "a Ray actor"}


def executor_problems(fn: RewardFn, executor: Executor, where: str) -> list[Problem]:
    """What makes ``executor`` impossible for ``fn``; ``where`` is the term's YAML path."""
    path = f"{where}.executor"
    problems: list[Problem] = []
    if executor == "ray" and importlib.util.find_spec("ray") is None:
        problems.append(
            Problem(
                path,
                "executor 'ray' needs Ray, which is not installed",
                "pip install 'rewardrouter[ray]' (or use `executor: process` on one machine)",
            )
        )
    if executor in ("process", "thread", "ray") and fn.is_async:
        problems.append(
            Problem(
                path,
                f"{fn.name} is an async function; executor {executor!r} runs plain functions",
                "remove `executor` (async functions run inline on the event loop), or make it "
                "a plain `def`",
            )
        )
    elif executor in _WORKERS:
        reason = _unpicklable(fn)
        if reason is not None:
            problems.append(
                Problem(
                    path,
                    f"{fn.name} cannot run in {_WORKERS[executor]}: {reason}",
                    "define it at the top level of a module (a top-level callable class "
                    "works too), or use `executor: thread`",
                )
            )
    return problems


def worker_modules(routes: Iterable[CompiledRoute]) -> list[str]:
    """Modules that worker processes and Ray actors import once at start-up: those of every
    ``process`` and ``ray`` term."""
    modules: dict[str, None] = {}
    for route in routes:
        for term in route.terms:
            if term.executor not in _WORKERS:
                continue
            obj = term.fn.fn
            if isinstance(obj, BuiltinReward):
                obj = obj.spec.grade
            module = getattr(obj, "__module__", None) or type(obj).__module__
            if module != "__main__":
                modules[module] = None
    return list(modules)
