"""Import objects by dotted path and read their signatures: the helpers that resolving reward
functions, custom shaping stages and worker start-up share.

Every failure is a :class:`ResolveError` whose message says what was found and whose ``hint``
says what to do; callers add the YAML path.

>>> import_path("json.dumps").__name__
'dumps'
>>> module_allowed("my_rewards.math.grade", ("my_rewards",))
True
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import pkgutil
import re
import traceback
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

from rewardrouter.errors import Problem, did_you_mean


class ResolveError(Exception):
    """Why a function could not be resolved; ``hint`` says what to do."""

    def __init__(
        self, message: str, hint: str | None = None, problems: tuple[Problem, ...] = ()
    ) -> None:
        super().__init__(message)
        self.hint = hint
        self.problems = problems  # several problems, paths relative to the term (kwargs.url)


def _module_suggestions(name: str) -> str | None:
    """A "did you mean" among the sibling modules of the missing module ``name``."""
    parent, _, _ = name.rpartition(".")
    if parent:
        try:
            search = getattr(importlib.import_module(parent), "__path__", [])
        except Exception:
            return None
        candidates = [f"{parent}.{m.name}" for m in pkgutil.iter_modules(search)]
    else:
        candidates = [m.name for m in pkgutil.iter_modules() if not m.name.startswith("_")]
    return did_you_mean(name, candidates)


def import_path(path: str) -> Callable[..., Any]:
    """The object named by ``pkg.module.fn`` or ``pkg.module:fn``; raises :class:`ResolveError`."""
    if ":" in path:
        module_name, _, attr = path.partition(":")
    else:
        module_name, _, attr = path.rpartition(".")
    if not module_name:
        raise ResolveError(
            f"{path!r} names no module", "write the full import path: package.module.function"
        )
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (
            module_name == exc.name or module_name.startswith(exc.name + ".")
        ):
            hint = _module_suggestions(exc.name) or (
                "check the spelling, and that the module is installed or on PYTHONPATH"
            )
            raise ResolveError(f"module {exc.name!r} not found (from {path!r})", hint) from None
        raise ResolveError(
            f"importing {module_name!r} failed: it imports {exc.name!r}, which is not installed",
            f"install {exc.name!r} in this environment",
        ) from None
    except SystemExit as exc:  # sys.exit() at import would end the process that compiles
        raise ResolveError(
            f"importing {module_name!r} called sys.exit({exc.code!r}){_raised_at(exc)}",
            "a module that a config names must not exit when it is imported: move that code "
            'under `if __name__ == "__main__":`',
        ) from None
    except Exception as exc:
        raise ResolveError(
            f"importing {module_name!r} raised {type(exc).__name__}: {exc}{_raised_at(exc)}",
            "fix the error in that module; it must import cleanly",
        ) from None
    if not hasattr(module, attr):
        public = [n for n in dir(module) if not n.startswith("_")]
        raise ResolveError(
            f"module {module_name!r} has no attribute {attr!r}",
            did_you_mean(attr, public)
            or f"it defines: {', '.join(public[:12]) or 'nothing public'}",
        )
    obj = getattr(module, attr)
    if not callable(obj):
        raise ResolveError(f"{path!r} is a {type(obj).__name__}, not a function")
    return obj  # type: ignore[no-any-return]


def _raised_at(exc: BaseException) -> str:
    """`` (my_rewards.py:12)``: where ``exc`` was raised, or nothing when unknown."""
    frames = traceback.extract_tb(exc.__traceback__)
    return f" ({frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno})" if frames else ""


def read_signature(fn: Callable[..., Any], name: str) -> inspect.Signature:
    """``fn``'s signature; :class:`ResolveError` naming ``name`` when it cannot be read, or when
    ``fn`` is a class (calling it would build an instance, not compute a value)."""
    if inspect.isclass(fn):
        module, _, cls = name.replace(":", ".").rpartition(".")
        instance = re.sub(r"(?<!^)(?=[A-Z])", "_", cls).lower()
        callable_instances = "__call__" in {n for c in fn.__mro__[:-1] for n in vars(c)}
        raise ResolveError(
            f"{name} is a class, not a function: calling it would build an instance of "
            f"{cls} instead of computing a value",
            (
                f"create one instance at module level (`{instance} = {cls}(...)` in {module}) "
                f"and name that: {module}.{instance}"
                if callable_instances
                else f"name the function that computes the value ({module}.<function>)"
            ),
        )
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        raise ResolveError(f"cannot read the signature of {name}") from None


def positional_params(sig: inspect.Signature) -> list[inspect.Parameter]:
    """The parameters that may be passed by position."""
    return [
        p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]


def takes_varargs(sig: inspect.Signature) -> bool:
    return any(p.kind is p.VAR_POSITIONAL for p in sig.parameters.values())


def is_async(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` returns an awaitable (async functions and async callable classes)."""
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004  (callable class instances)
    return call is not None and inspect.iscoroutinefunction(call)


def check_kwargs(sig: inspect.Signature, fixed: int, kwargs: Mapping[str, Any], name: str) -> None:
    """Raise :class:`ResolveError` unless ``kwargs`` bind after the first ``fixed`` parameters:
    an unknown key (with "did you mean") or a required keyword left unset."""
    params = list(sig.parameters.values())[fixed:]
    takes_var_kw = any(p.kind is p.VAR_KEYWORD for p in params)
    accepted = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    for key in kwargs:
        if key not in accepted and not takes_var_kw:
            raise ResolveError(
                f"kwargs.{key}: {name} takes no argument {key!r} (signature {name + str(sig)})",
                did_you_mean(key, accepted)
                or (f"it accepts: {', '.join(accepted)}" if accepted else "it takes no kwargs"),
            )
    missing = [
        p.name
        for p in params
        if p.default is p.empty
        and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        and p.name not in kwargs
    ]
    if missing:
        raise ResolveError(
            f"{name} requires {', '.join(repr(m) for m in missing)}, which kwargs does not set",
            f"add them under kwargs: ({name + str(sig)})",
        )


_SPELLED_BOOLS = frozenset({"true", "false", "yes", "no", "on", "off", "1", "0"})
_UNQUOTE = (
    "write the value unquoted in YAML; a value read from an environment variable is a string "
    "until decoded: ${oc.decode:${oc.env:NAME}}"
)


def _fits(hint: Any, value: Any) -> bool | None:
    """Whether ``value`` fits a parameter annotated ``hint``; None for an annotation that is not
    checked (anything but ``bool``, ``int``, ``float``, ``str``, ``Literal`` and their unions)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        verdicts = [_fits(arg, value) for arg in typing.get_args(hint)]
        return None if None in verdicts else any(verdicts)
    if origin is Literal:
        return any(value == a and type(value) is type(a) for a in typing.get_args(hint))
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if hint is type(None):
        return value is None
    return None


def _expected(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_expected(arg) for arg in typing.get_args(hint))
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(hint))
    names = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
    return names.get(hint, "null" if hint is type(None) else str(hint))


def _what_to_do(hint: Any, value: Any) -> str | None:
    """A "did you mean" among a ``Literal``'s values (any case first), or how to write a
    boolean or a number that arrived as a string."""
    if not isinstance(value, str):
        return None
    allowed = [
        str(a)
        for arg in (*typing.get_args(hint), hint)
        if typing.get_origin(arg) is Literal
        for a in typing.get_args(arg)
    ]
    same = [a for a in allowed if a.lower() == value.strip().lower()]
    if same:
        return f"did you mean {same[0]!r}?"
    close = did_you_mean(value, allowed)
    if close is not None:
        return close
    types_ = {hint, *typing.get_args(hint)}
    if bool in types_ and value.strip().lower() in _SPELLED_BOOLS:
        return _UNQUOTE
    if types_ & {int, float}:
        with contextlib.suppress(ValueError):
            float(value)
            return _UNQUOTE
    return None


def check_values(fn: Callable[..., Any], kwargs: Mapping[str, Any], name: str) -> None:
    """Raise :class:`ResolveError` listing every value in ``kwargs`` that does not fit its
    parameter's annotation in ``fn``: a mode spelled in another case (``extract: Any``), a
    boolean written as a string (``case_sensitive: "false"``, as an environment interpolation
    gives it), a number as a string. Each problem's path is ``kwargs.<name>``; annotations
    other than ``bool``, ``int``, ``float``, ``str``, ``Literal`` and their unions are not
    checked.

    >>> def grade(response, label, metadata, *, extract: Literal["boxed", "any"] = "boxed"): ...
    >>> try:
    ...     check_values(grade, {"extract": "Any"}, "built-in 'math'")
    ... except ResolveError as exc:
    ...     print(exc.problems[0])
    kwargs.extract: built-in 'math' got extract='Any'; expected one of 'boxed', 'any'
        did you mean 'any'?
    """
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # an annotation naming what its module does not define: not checked
        return
    problems = []
    for key, value in kwargs.items():
        if key in hints and _fits(hints[key], value) is False:
            hint = hints[key]
            shown = f"{value!r} (a string)" if isinstance(value, str) else repr(value)
            message = f"{name} got {key}={shown}; expected {_expected(hint)}"
            if isinstance(value, str) and typing.get_origin(hint) is Literal:
                message = f"{name} got {key}={value!r}; expected {_expected(hint)}"
            problems.append(Problem(f"kwargs.{key}", message, _what_to_do(hint, value)))
    if problems:
        first = problems[0]
        raise ResolveError(f"{first.path}: {first.message}", first.hint, problems=tuple(problems))


def module_allowed(path: str, allowed: tuple[str, ...]) -> bool:
    """Whether the module of ``path`` lies under one of the ``allowed`` module prefixes."""
    module = path.partition(":")[0] if ":" in path else path.rpartition(".")[0]
    return _under(module, allowed)


def _under(module: str, prefixes: Iterable[str]) -> bool:
    return any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes)


#: What data may name inside rewardrouter itself: the trainers' hooks, not its machinery.
OWN_NAMEABLE = ("rewardrouter.integrations",)


def defined_in(obj: Any) -> str:
    """The module that defined ``obj`` (a function or class; for an instance, its class)."""
    module = getattr(obj, "__module__", None)
    return module if isinstance(module, str) else type(obj).__module__


def data_refusal(
    path: str, obj: Any, allowed: tuple[str, ...], functions: tuple[str, ...]
) -> ResolveError | None:
    """Why a *sample* may not name ``obj``, found at ``path``; None if it may.

    It may if ``path`` is listed in ``functions``, or if ``obj`` was *defined* under an
    ``allowed`` module — not merely imported into one (``my_rewards.Popen`` is
    ``subprocess.Popen``) — and, inside rewardrouter itself, only among the trainers' hooks.
    """
    if path in functions:
        return None
    origin = defined_in(obj)
    if not _under(origin, allowed):
        return ResolveError(
            f"{path!r} is {origin}.{getattr(obj, '__qualname__', type(obj).__qualname__)}, "
            f"which its module imports from outside allowed_modules {list(allowed)}; data may "
            f"name only functions defined in those modules",
            "name the function where it is defined, or list this path under "
            "`allowed_functions` if you trust data to call it",
        )
    if _under(origin, ("rewardrouter",)) and not _under(origin, OWN_NAMEABLE):
        return ResolveError(
            f"{path!r} is part of rewardrouter's machinery ({origin}); data may name only "
            f"rewardrouter's trainer hooks ({', '.join(OWN_NAMEABLE)}) and, by `rm_type`, "
            f"its graders",
            "set `rm_type` to a built-in kind instead",
        )
    return None


def import_quietly(modules: Iterable[str]) -> None:
    """Import ``modules`` ahead of their first use, ignoring failures.

    Worker processes and Ray actors import their reward modules when they start, so that no
    call pays for an import under its deadline. A module that fails here fails again in the task
    that needs it, which reports the failure where it belongs.
    """
    for module in modules:
        with contextlib.suppress(Exception, SystemExit):  # SystemExit: sys.exit() at import
            importlib.import_module(module)


def lazy_exports(namespace: dict[str, Any], homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` (PEP 562) for the package whose globals are ``namespace``:
    it imports each public name from its home module on first access (``homes``: name → dotted
    module) and keeps it in ``namespace``. Importing the package then costs nothing, and a name
    costs its own module only: ``import rewardrouter`` imports neither torch nor pydantic nor
    the graders. The package lists the same imports under ``if TYPE_CHECKING:`` for type
    checkers.

    >>> import types
    >>> shelf = types.ModuleType("shelf")
    >>> shelf.__getattr__ = lazy_exports(vars(shelf), {"dumps": "json"})
    >>> shelf.dumps.__module__, "dumps" in vars(shelf)
    ('json', True)
    """
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = namespace[name] = getattr(importlib.import_module(home), name)
        return value

    return __getattr__
