"""Resolve reward functions (import paths and built-ins) and read their signatures."""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import inspect
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from rewardrouter._errors import Problem
from rewardrouter.compile.resources import RESOURCE_KINDS, Resources
from rewardrouter.config._errors import did_you_mean, problems_from_validation
from rewardrouter.rewards import BUILTINS, BuiltinReward, known_kinds, lookup

Mode = Literal["single", "group"]


@dataclass(frozen=True)
class RewardFn:
    """A resolved reward function and how to call it.

    ``fn`` is always called as ``fn(args, sample, **kwargs)`` (single) or
    ``fn(args, samples, **kwargs)`` (group); ``is_async`` says whether the result is awaited.
    """

    name: str
    fn: Callable[..., Any]
    mode: Mode
    is_async: bool
    cpu_heavy: bool = False
    returns_dict: bool | None = None  # None: unknown (user functions)
    dict_keys: tuple[str, ...] = ()
    # Resource kinds: a digest of the settings ``fn`` was built with. Its kwargs were consumed
    # then (calls pass none), so this, not the kwargs, tells two such terms' calls apart. A
    # digest, because settings may hold what reprs must not show (a URL's password, headers).
    binding: str | None = None


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
    except Exception as exc:
        raise ResolveError(
            f"importing {module_name!r} raised {type(exc).__name__}: {exc}",
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


def read_signature(fn: Callable[..., Any], name: str) -> inspect.Signature:
    """``fn``'s signature; :class:`ResolveError` naming ``name`` when it cannot be read."""
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


ModeSetting = Literal["auto", "lenient", "single", "group"]


def inspect_function(
    fn: Callable[..., Any], name: str, kwargs: Mapping[str, Any], mode: ModeSetting
) -> RewardFn:
    """Read how to call ``fn``: async or sync, single or group, and whether ``kwargs`` bind.

    ``auto`` reads the mode from the second parameter's name (``sample`` / ``samples``) and
    refuses other names; ``lenient`` (for functions named by data) takes single mode then.
    """
    sig = read_signature(fn, name)
    positional = positional_params(sig)
    if len(positional) < 2 and not takes_varargs(sig):
        raise ResolveError(
            f"{name} takes {len(positional)} positional argument(s); a reward function takes "
            f"(args, sample, **kwargs) or (args, samples, **kwargs) (signature {name + str(sig)})",
            "add the missing parameters; `args` is the trainer's argument namespace (may be unused)",
        )
    resolved: Mode
    if mode in ("single", "group"):
        resolved = mode
    else:
        second = positional[1].name if len(positional) >= 2 else ""
        if second == "samples":
            resolved = "group"
        elif second == "sample" or mode == "lenient":
            resolved = "single"
        else:
            raise ResolveError(
                f"cannot tell whether {name} scores one sample or a group: its second parameter "
                f"is {second!r} (signature {name + str(sig)})",
                "name it `sample` or `samples`, or set `mode: single` / `mode: group` on the term",
            )
    check_kwargs(sig, min(2, len(positional)), kwargs, name)
    return RewardFn(name=name, fn=fn, mode=resolved, is_async=is_async(fn))


def resolve_builtin(kind: str, kwargs: Mapping[str, Any]) -> RewardFn:
    """The :class:`RewardFn` of built-in ``kind``; raises :class:`ResolveError` if unknown."""
    if kind in RESOURCE_KINDS:
        raise ResolveError(
            f"kind {kind!r} needs settings under `kwargs`, so only a route term can name it",
            "declare it as a term of a route, and route these samples there",
        )
    reward: BuiltinReward | None = lookup(kind)
    if reward is None:
        kinds = sorted([*known_kinds(), *RESOURCE_KINDS])
        raise ResolveError(
            f"unknown built-in kind {kind!r}",
            did_you_mean(kind, kinds)
            or f"known kinds: {', '.join(kinds)}; or name a function with `path:`",
        )
    spec = BUILTINS[reward.name]
    check_kwargs(inspect.signature(spec.grade), 3, kwargs, f"built-in {kind!r}")
    return RewardFn(
        name=kind,
        fn=reward,
        mode="single",
        is_async=asyncio.iscoroutinefunction(spec.grade),
        cpu_heavy=spec.cpu_heavy,
        returns_dict=spec.returns == "dict",
        dict_keys=spec.keys,
    )


def resolve_resource(
    kind: str, kwargs: Mapping[str, Any], mode: ModeSetting, resources: Resources
) -> RewardFn:
    """The :class:`RewardFn` of resource kind ``kind``, built with the settings in ``kwargs``."""
    spec = RESOURCE_KINDS[kind]
    if mode != "auto":
        message = f"kind {kind!r} takes its mode from its settings, not from `mode: {mode}`"
        hint = "remove `mode` (for a remote term, `kwargs.batch: true` posts route groups)"
        raise ResolveError(message, hint, problems=(Problem("mode", message, hint),))
    try:
        module = importlib.import_module(spec.module)
    except ModuleNotFoundError as exc:
        raise ResolveError(
            f"kind {kind!r} needs {exc.name!r}, which is not installed",
            f"pip install {exc.name}",
        ) from None
    try:
        settings = module.Settings.model_validate(dict(kwargs))
    except ValidationError as exc:
        found = problems_from_validation(exc, dict(kwargs), module.Settings, ["kwargs"])
        raise ResolveError(f"invalid settings for kind {kind!r}", problems=tuple(found)) from None
    bound = module.build(settings, resources)
    return RewardFn(
        name=bound.name,
        fn=bound.fn,
        mode=bound.mode,
        is_async=True,
        binding=hashlib.sha256(settings.model_dump_json().encode()).hexdigest()[:16],
    )


def resolve_path(path: str, kwargs: Mapping[str, Any], mode: ModeSetting) -> RewardFn:
    """The :class:`RewardFn` of the function at import ``path``."""
    return inspect_function(import_path(path), path, kwargs, mode)


def module_allowed(path: str, allowed: tuple[str, ...]) -> bool:
    """Whether the module of ``path`` lies under one of the ``allowed`` module prefixes."""
    module = path.partition(":")[0] if ":" in path else path.rpartition(".")[0]
    return any(module == prefix or module.startswith(prefix + ".") for prefix in allowed)
