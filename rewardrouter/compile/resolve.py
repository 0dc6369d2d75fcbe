"""Resolve a reward term's function: a built-in kind, a resource kind or an import path, with
its calling convention (async or not, one sample or a group) read from its signature."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from rewardrouter.compile.conventions import (
    AsyncTRLStyle,
    AsyncVerlStyle,
    Convention,
    TRLStyle,
    VerlStyle,
    recognize,
    unknown_kwargs,
)
from rewardrouter.config.problems import problems_from_validation
from rewardrouter.errors import Problem, did_you_mean
from rewardrouter.introspect import (
    ResolveError,
    check_kwargs,
    check_values,
    import_path,
    is_async,
    positional_params,
    read_signature,
    takes_varargs,
)
from rewardrouter.rewards import (
    BuiltinReward,
    Resources,
    kind_names,
    lookup,
    resource,
)

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
    # A built-in or resource kind: its every input but the response is checked or set by the
    # config, so a failure not marked as the setup's is the response's (never the batch's).
    builtin: bool = False


ModeSetting = Literal["auto", "lenient", "single", "group", "trl", "verl"]


def inspect_function(
    fn: Callable[..., Any], name: str, kwargs: Mapping[str, Any], mode: ModeSetting
) -> RewardFn:
    """Read how to call ``fn``: async or sync, single or group, and whether ``kwargs`` bind.

    ``auto`` reads the mode from the second parameter's name (``sample`` / ``samples``) and
    refuses other names; ``lenient`` (for functions named by data) takes single mode then.
    Both recognize functions written for TRL or verl (:mod:`.conventions`), which ``trl`` and
    ``verl`` declare.
    """
    sig = read_signature(fn, name)
    convention: Convention | None = None
    if mode == "trl" or mode == "verl":
        convention = mode
    elif mode in ("auto", "lenient"):
        convention = recognize(sig)
    if convention is not None:
        return _foreign(fn, sig, name, kwargs, convention)
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


def _foreign(
    fn: Callable[..., Any],
    sig: inspect.Signature,
    name: str,
    kwargs: Mapping[str, Any],
    convention: Convention,
) -> RewardFn:
    """``fn``, written for TRL or verl, wrapped in an adapter of its convention."""
    unknown = unknown_kwargs(sig, kwargs)
    if unknown:
        raise ResolveError(
            f"kwargs.{unknown[0]}: {name} takes no argument {unknown[0]!r} "
            f"(signature {name + str(sig)})",
            did_you_mean(unknown[0], sig.parameters) or "remove it from kwargs",
        )
    asynchronous = is_async(fn)
    if convention == "verl":
        missing = [p for p in ("solution_str", "ground_truth") if p not in sig.parameters]
        if missing:
            raise ResolveError(
                f"{name} is declared `mode: verl` but has no parameter {missing[0]!r} "
                f"(signature {name + str(sig)})",
                "verl calls compute_score(data_source, solution_str, ground_truth, extra_info)",
            )
        adapter: Any = AsyncVerlStyle(fn) if asynchronous else VerlStyle(fn)
        return RewardFn(name=name, fn=adapter, mode="single", is_async=asynchronous)
    if "completions" not in sig.parameters:
        raise ResolveError(
            f"{name} is declared `mode: trl` but has no parameter 'completions' "
            f"(signature {name + str(sig)})",
            "TRL calls reward functions as fn(prompts=..., completions=..., **columns)",
        )
    kind = AsyncTRLStyle if asynchronous else TRLStyle
    return RewardFn(name=name, fn=kind(fn, kwargs, name), mode="group", is_async=asynchronous)


def resolve_builtin(kind: str, kwargs: Mapping[str, Any]) -> RewardFn:
    """The :class:`RewardFn` of built-in ``kind``; raises :class:`ResolveError` if unknown."""
    if resource(kind) is not None:
        raise ResolveError(
            f"kind {kind!r} needs settings under `kwargs`, so only a route term can name it",
            "declare it as a term of a route, and route these samples there",
        )
    reward: BuiltinReward | None = lookup(kind)
    if reward is None:
        kinds = kind_names()
        raise ResolveError(
            f"unknown built-in kind {kind!r}",
            did_you_mean(kind, kinds)
            or f"known kinds: {', '.join(kinds)}; or name a function with `path:`",
        )
    spec = reward.spec
    check_kwargs(inspect.signature(spec.grade), 3, kwargs, f"built-in {kind!r}")
    check_values(spec.grade, kwargs, f"built-in {kind!r}")
    return RewardFn(
        name=kind,
        fn=reward,
        mode="single",
        is_async=asyncio.iscoroutinefunction(spec.grade),
        cpu_heavy=spec.cpu_heavy,
        returns_dict=spec.returns == "dict",
        dict_keys=spec.keys,
        builtin=True,
    )


def resolve_resource(
    kind: str, kwargs: Mapping[str, Any], mode: ModeSetting, resources: Resources
) -> RewardFn:
    """The :class:`RewardFn` of resource kind ``kind``, built with the settings in ``kwargs``."""
    spec = resource(kind)
    assert spec is not None, f"{kind!r} is no resource kind"
    if mode != "auto":
        message = f"kind {kind!r} takes its mode from its settings, not from `mode: {mode}`"
        hint = "remove `mode` (for a remote term, `kwargs.batch: true` posts route groups)"
        raise ResolveError(message, hint, problems=(Problem("mode", message, hint),))
    try:
        settings = spec.settings.model_validate(dict(kwargs))
    except ValidationError as exc:
        found = problems_from_validation(exc, dict(kwargs), spec.settings, ["kwargs"])
        raise ResolveError(f"invalid settings for kind {kind!r}", problems=tuple(found)) from None
    try:
        bound = spec.build(settings, resources)
    except ModuleNotFoundError as exc:
        raise ResolveError(
            f"kind {kind!r} needs {exc.name!r}, which is not installed",
            f"pip install {exc.name}",
        ) from None
    return RewardFn(
        name=bound.name,
        fn=bound.fn,
        mode=bound.mode,
        is_async=is_async(bound.fn),
        cpu_heavy=bound.cpu_heavy,
        returns_dict=True if bound.keys else None,
        dict_keys=bound.keys,
        binding=hashlib.sha256(settings.model_dump_json().encode()).hexdigest()[:16],
        builtin=True,
    )


def resolve_path(path: str, kwargs: Mapping[str, Any], mode: ModeSetting) -> RewardFn:
    """The :class:`RewardFn` of the function at import ``path``."""
    return inspect_function(import_path(path), path, kwargs, mode)
