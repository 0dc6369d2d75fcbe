"""Where each term's calls run: resolve ``executor: auto`` and check that the choice can work.

``auto`` sends CPU-heavy built-ins (``math``, ``dapo``, ...) and resource kinds (``ifeval``) to
worker processes, where a deadline can kill them; async functions run inline on the event loop,
and so do the light built-ins (``gpqa``, ``f1``, ``exact_match``, ...): pure graders whose time
is linear in their input, for which a hand-off to a thread would cost more than the call; other
plain functions run on threads. Any other setting names an executor of
:data:`~rewardrouter.execute.registry.EXECUTORS`, whose own check runs here, at compile time
(``process`` and ``ray`` need a plain ``def`` that a worker can import by name; ``ray`` needs
Ray installed; ``thread`` needs a plain ``def``).

>>> from rewardrouter.compile.resolve import resolve_builtin
>>> choose_executor(resolve_builtin("exact_match", {}), "auto")
'inline'
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import ValidationError

from rewardrouter.compile.resolve import RewardFn
from rewardrouter.compile.routes import CompiledRoute
from rewardrouter.config.models import RouterConfig
from rewardrouter.config.problems import problems_from_validation
from rewardrouter.errors import Problem, did_you_mean
from rewardrouter.execute.registry import EXECUTORS, settings_of
from rewardrouter.rewards import BuiltinReward


def choose_executor(fn: RewardFn, setting: str) -> str:
    """The executor ``setting`` means for ``fn`` (``auto`` resolved)."""
    if setting != "auto":
        return setting
    if fn.cpu_heavy and not fn.is_async:
        return "process"
    return "inline" if fn.is_async or isinstance(fn.fn, BuiltinReward) else "thread"


def executor_problems(fn: RewardFn, executor: str, where: str) -> list[Problem]:
    """What makes ``executor`` impossible for ``fn``; ``where`` is the term's YAML path."""
    path = f"{where}.executor"
    kind = EXECUTORS.get(executor)
    if kind is None:
        names = ["auto", *EXECUTORS]
        return [
            Problem(
                path,
                f"unknown executor {executor!r}",
                did_you_mean(executor, names) or f"expected one of: {', '.join(names)}",
            )
        ]
    return kind.check(executor, fn, path)


def settings_problems(config: RouterConfig) -> list[Problem]:
    """What is wrong with ``executors:``: an executor name that is not registered, settings for
    an executor that takes none, settings that its ``settings_model`` refuses (each at its YAML
    path, ``executors.<name>.<field>``)."""
    problems: list[Problem] = []
    for name, given in config.executors.items():
        path = f"executors.{name}"
        executor = EXECUTORS.get(name)
        if executor is None:
            names = [n for n, e in EXECUTORS.items() if e.settings_model is not None]
            hint = did_you_mean(name, list(EXECUTORS)) or (
                f"executors with settings: {', '.join(names)}" if names else None
            )
            problems.append(Problem(path, f"unknown executor {name!r}", hint))
        elif executor.settings_model is None:
            problems.append(
                Problem(path, f"executor {name!r} takes no settings", f"remove `{path}`")
            )
        else:
            try:
                settings_of(name, config)
            except ValidationError as exc:
                problems += problems_from_validation(
                    exc, given, executor.settings_model, ["executors", name]
                )
    return problems


def worker_modules(routes: Iterable[CompiledRoute]) -> list[str]:
    """Modules that worker processes and Ray actors import once at start-up: those of every term
    whose executor ships functions to other processes, and those its callable names in
    ``worker_imports`` (imports that would otherwise take seconds of its first call's deadline)."""
    modules: dict[str, None] = {}
    for route in routes:
        for term in route.terms:
            if not EXECUTORS[term.executor].ships_functions:
                continue
            obj = term.fn.fn
            if isinstance(obj, BuiltinReward):
                obj = obj.spec.grade
            module = getattr(obj, "__module__", None) or type(obj).__module__
            if module != "__main__":
                modules[module] = None
            modules.update(dict.fromkeys(getattr(obj, "worker_imports", ())))
    return list(modules)
