"""Compile a config's routes: resolve every function, check every reference, collect every problem.

:func:`~rewardrouter.router.compile_router` builds a router from what this returns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from rewardrouter.compile.executors import choose_executor, executor_problems, settings_problems
from rewardrouter.compile.resolve import (
    RewardFn,
    inspect_function,
    resolve_builtin,
    resolve_path,
    resolve_resource,
)
from rewardrouter.compile.routes import BoundTerm, CompiledRoute, match_key
from rewardrouter.config.models import Reads, RewardTerm, RouterConfig
from rewardrouter.errors import Problem, did_you_mean
from rewardrouter.introspect import ResolveError, data_refusal, import_path
from rewardrouter.rewards import Resources, resource
from rewardrouter.rewards.registry import Budgeted
from rewardrouter.trajectory import DEFAULT_READS, reads_conversation


def _check_key(fn: RewardFn, term: RewardTerm, where: str) -> list[Problem]:
    """Dict-returning built-ins need ``key``; number-returning ones must not have one."""
    if fn.returns_dict is None:
        return []
    keys = ", ".join(fn.dict_keys)
    problems: list[Problem] = []
    if fn.returns_dict:
        if term.key is None:
            problems.append(
                Problem(
                    f"{where}.key",
                    f"built-in {fn.name!r} returns a dict {{{keys}}} but the term sets no `key`",
                    f"set `key: {fn.dict_keys[0]}` to train on {fn.dict_keys[0]!r}",
                )
            )
        for field, value in (("key", term.key), ("eval_key", term.eval_key)):
            if value is not None and value not in fn.dict_keys:
                problems.append(
                    Problem(
                        f"{where}.{field}",
                        f"built-in {fn.name!r} returns no entry {value!r} (entries: {keys})",
                        did_you_mean(value, fn.dict_keys),
                    )
                )
    elif term.key is not None or term.eval_key is not None:
        problems.append(
            Problem(
                f"{where}.key",
                f"built-in {fn.name!r} returns a number, so `key`/`eval_key` has nothing to pick",
                "remove `key` and `eval_key` from this term",
            )
        )
    return problems


def _zero_weights(name: str, rewards: dict[str, RewardTerm]) -> list[Problem]:
    """A route whose every term has weight 0: all its rewards would be 0.0 and every group
    constant (no advantage), while the terms column still shows values. A weight-0 term beside a
    weighted one is fine (a value logged, not trained on)."""
    if not rewards or any(term.weight != 0 for term in rewards.values()):
        return []
    only = next(iter(rewards)) if len(rewards) == 1 else None
    where = f"routes.{name}.rewards" + (f".{only}.weight" if only else "")
    terms = f"its only term {only!r}" if only else f"every term ({', '.join(rewards)})"
    return [
        Problem(
            where,
            f"weight 0 on {terms}: every reward of route {name!r} would be 0.0 and every "
            f"group constant (no training signal), though the terms column shows values",
            "give a term a nonzero weight; to log a term without training on it, keep it "
            "beside a weighted term; to leave the dataset out, drop its rows or its route",
        )
    ]


def _reads(fn: RewardFn, term: RewardTerm, where: str) -> tuple[Reads, list[Problem]]:
    """What the term's function reads of a conversation: the term's ``reads``, else the
    function's own (the whole conversation for the trajectory kinds, else the final answer)."""
    whole = reads_conversation(fn.fn)
    if term.reads is None:
        return ("conversation" if whole else DEFAULT_READS), []
    if whole and term.reads != "conversation":
        problem = Problem(
            f"{where}.reads",
            f"{fn.name!r} reads the whole conversation, not `reads: {term.reads}`",
            "remove `reads` from this term",
        )
        return "conversation", [problem]
    if term.kind is not None and not whole and term.reads == "conversation":
        problem = Problem(
            f"{where}.reads",
            f"kind {term.kind!r} grades text, so it cannot read the conversation object",
            "read `transcript` (every message as text) or `assistant_text`; `conversation` is "
            "for the trajectory kinds and functions named by `path`",
        )
        return DEFAULT_READS, [problem]
    return term.reads, []


def _resolve(term: RewardTerm, resources: Resources) -> RewardFn:
    if term.kind is not None and resource(term.kind) is not None:
        return resolve_resource(term.kind, term.kwargs, term.mode, resources)
    if term.kind is not None:
        fn = resolve_builtin(term.kind, term.kwargs)
        if term.mode not in ("auto", "single"):
            raise ResolveError(
                f"built-in {term.kind!r} scores single samples; remove `mode: {term.mode}`"
            )
        return fn
    assert term.path is not None
    return resolve_path(term.path, term.kwargs, term.mode)


def _located(exc: ResolveError, where: str, field: str) -> list[Problem]:
    """The problems of a term that did not resolve, under the term's YAML path ``where``."""
    if exc.problems:
        return [Problem(f"{where}.{p.path}", p.message, p.hint) for p in exc.problems]
    message = str(exc)
    sub = field
    if message.startswith("kwargs."):
        sub, _, message = message.partition(": ")
    return [Problem(f"{where}.{sub}", message, exc.hint)]


def compile_routes(
    config: RouterConfig, resources: Resources
) -> tuple[dict[str, CompiledRoute], list[Problem]]:
    """Every route of ``config`` with its terms' functions resolved, and every problem found
    (each with its YAML path). Resource kinds keep what they build in ``resources``."""
    problems: list[Problem] = []
    routes: dict[str, CompiledRoute] = {}
    owner: dict[str, tuple[str, str]] = {}  # match_key → (route, dataset as written)
    for name, route in config.routes.items():
        terms: list[BoundTerm] = []
        problems += _zero_weights(name, route.rewards)
        for term_name, term in route.rewards.items():
            where = f"routes.{name}.rewards.{term_name}"
            field = "kind" if term.kind is not None else "path"
            try:
                fn = _resolve(term, resources)
            except ResolveError as exc:
                problems += _located(exc, where, field)
                continue
            problems += _check_key(fn, term, where)
            reads, reads_problems = _reads(fn, term, where)
            problems += reads_problems
            executor = choose_executor(fn, term.executor)
            problems += executor_problems(fn, executor, where)
            timeout = config.timeout if term.timeout is None else term.timeout
            if isinstance(fn.fn, Budgeted) and (beyond := fn.fn.fits(timeout)) is not None:
                problems.append(Problem(f"{where}.timeout", *beyond))
            terms.append(
                BoundTerm(
                    route=name,
                    name=term_name,
                    fn=fn,
                    kwargs={} if fn.binding is not None else dict(term.kwargs),
                    weight=term.weight,
                    key=term.key,
                    eval_key=term.eval_key,
                    on_error=term.on_error,
                    where=where,
                    executor=executor,
                    timeout=timeout,
                    reads=reads,
                )
            )
        for j, dataset in enumerate((name, *route.match)):
            other = owner.get(match_key(dataset))
            if other is not None and other[0] != name:
                same = "" if other[1] == dataset else f" (as {other[1]!r})"
                problems.append(
                    Problem(
                        f"routes.{name}.match[{j - 1}]" if j else f"routes.{name}",
                        f"dataset {dataset!r} is already matched by route {other[0]!r}{same}",
                        "a dataset string may be matched by one route only, ignoring case and "
                        "surrounding whitespace; remove one of them",
                    )
                )
            owner.setdefault(match_key(dataset), (name, dataset))
        routes[name] = CompiledRoute(name, tuple(terms), tuple(route.shaping), tuple(route.match))
    if config.default_route is not None and config.default_route not in config.routes:
        problems.append(
            Problem(
                "default_route",
                f"route {config.default_route!r} does not exist "
                f"(routes: {', '.join(config.routes) or 'none'})",
                did_you_mean(config.default_route, config.routes)
                or "name one of the routes, or null",
            )
        )
    for i, module in enumerate(config.allowed_modules):
        if not all(part.isidentifier() for part in module.split(".")):
            problems.append(
                Problem(
                    f"allowed_modules[{i}]", f"{module!r} is not a module name", "e.g. my_rewards"
                )
            )
    problems += settings_problems(config)
    return routes, problems


def data_route_factory(
    config: RouterConfig,
) -> Callable[[Literal["custom_rm_path", "rm_type"], str], CompiledRoute]:
    """Builds the one-term route for a function that a *sample* names (rm_type, custom_rm_path)."""

    def build(level: Literal["custom_rm_path", "rm_type"], name: str) -> CompiledRoute:
        if level == "rm_type":
            fn = resolve_builtin(name, {})
            key = config.reward_key if fn.returns_dict else None
            eval_key = config.eval_reward_key if fn.returns_dict else None
            if fn.returns_dict and key is None:
                raise ResolveError(
                    f"built-in {name!r} returns a dict {{{', '.join(fn.dict_keys)}}}",
                    f"set `reward_key: {fn.dict_keys[0]}` in the router config",
                )
        else:
            # Data cannot say `mode:`; a second parameter named `samples` still means group mode.
            obj = import_path(name)
            refused = data_refusal(
                name, obj, tuple(config.allowed_modules), tuple(config.allowed_functions)
            )
            if refused is not None:
                raise refused
            fn = inspect_function(obj, name, {}, "lenient")
            key, eval_key = config.reward_key, config.eval_reward_key
        route = f"{level}:{name}"
        term = BoundTerm(
            route,
            name,
            fn,
            {},
            key=key,
            eval_key=eval_key,
            where=route,
            executor=choose_executor(fn, "auto"),
            timeout=config.timeout,
        )
        return CompiledRoute(route, (term,))

    return build
