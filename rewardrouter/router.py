"""The compiled router and :func:`compile_router`, which builds it: route, batch per route group,
execute, assemble results, post-process."""

from __future__ import annotations

import asyncio
import reprlib
import threading
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from math import inf
from types import TracebackType
from typing import Any, Literal, TypeVar, cast

from rewardrouter.compile.compiler import compile_routes, data_route_factory
from rewardrouter.compile.executors import worker_modules
from rewardrouter.compile.routes import CompiledRoute
from rewardrouter.config.load import validate
from rewardrouter.config.models import RouterConfig
from rewardrouter.errors import ConfigError, RoutingError, SampleError, listed
from rewardrouter.execute.executor import Call, Setup
from rewardrouter.execute.registry import Executors
from rewardrouter.outcome import InvalidReturn, Outcome, to_value
from rewardrouter.results import RewardResult, ScoreBatch
from rewardrouter.rewards import Resources
from rewardrouter.route.assemble import Triage, assemble
from rewardrouter.route.groups import RouteGroup, plan_groups
from rewardrouter.route.precedence import Decision, Resolver, Unroutable, raise_unroutable
from rewardrouter.sample import (
    SampleInput,
    SampleLike,
    as_sample,
    group_index_problem,
    status_of,
)
from rewardrouter.shape.batch import Field, MissingInputError
from rewardrouter.shape.processor import PostProcessor, PostProcessResult, compile_post_process
from rewardrouter.trajectory import Parsed, run_reading

T = TypeVar("T")

ABORTED = "aborted sample: not scored"
NO_RESPONSE = (
    "`response` is missing or null; give every scored sample the model's answer as a string "
    '(an empty answer is "")'
)


def response_problem(response: object) -> str | None:
    """Why ``response`` cannot be scored (missing, or neither text nor a conversation), or
    ``None``. A conversation's own shape is checked per sample when it is read."""
    if isinstance(response, str | list):
        return None
    if response is None:
        return NO_RESPONSE
    return (
        f"`response` is {type(response).__name__} {reprlib.repr(response)}, neither text nor a "
        "conversation; give the model's answer as a string, or a conversation as a list of chat "
        "messages (`{role, content}` objects)"
    )


def compile_router(config: RouterConfig | Mapping[str, Any]) -> Router:
    """Compile a validated config (or plain data) into a :class:`Router`.

    Every built-in kind and import path is resolved and every signature checked here, before any
    sample is scored; all problems are raised together as one :class:`ConfigError`.
    """
    if not isinstance(config, RouterConfig):
        config = validate(config, RouterConfig)
    resources = Resources()
    routes, problems = compile_routes(config, resources)
    post_processor = None
    if config.post_process or any(route.shaping for route in config.routes.values()):
        post_processor, post_problems = compile_post_process(
            {name: route.shaping for name, route in config.routes.items()}, config.post_process
        )
        problems += post_problems
    if problems:
        resources.close()
        raise ConfigError(problems)
    return Router(config, routes, resources, post_processor)


class Router:
    """A compiled reward router. Build it with :func:`rewardrouter.compile_router`.

    >>> from rewardrouter import load_config
    >>> router = compile_router(load_config("conf/router/default.yaml"))
    >>> results = router.score_sync([{"response": "42", "label": "42",
    ...                                "metadata": {"dataset": "gsm8k"}}])
    >>> results[0].reward, results[0].route
    (1.0, 'exact')
    >>> router.close()

    A router owns a thread pool (and, with the process executor, worker processes; with
    ``remote`` terms, a connection pool): close it, or use it as a context manager, when done.
    """

    def __init__(
        self,
        config: RouterConfig,
        routes: Mapping[str, CompiledRoute],
        resources: Resources | None = None,
        post_processor: PostProcessor | None = None,
    ) -> None:
        self.config = config
        self.routes = dict(routes)
        self.resources = resources if resources is not None else Resources()
        self._post_processor = post_processor
        self.resolver = Resolver(
            self.routes,
            tuple(config.route_by),
            config.default_route,
            tuple(config.allowed_modules),
            data_route_factory(config),
            tuple(config.allowed_functions),
        )
        self.executors = Executors(Setup(config, tuple(worker_modules(self.routes.values()))))
        # Worker processes must not outlive a router that was never closed.
        weakref.finalize(self, self.executors.close)

    # -- life cycle -------------------------------------------------------------------------

    def close(self) -> None:
        """Free the router's threads, workers and connection pools. Idempotent."""
        self.executors.close()
        self.resources.close()

    def __enter__(self) -> Router:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- routing ---------------------------------------------------------------------------

    def decide(self, sample: SampleInput) -> Decision:
        """Which route scores ``sample`` and why (raises :class:`RoutingError` if none)."""
        try:
            return self.resolver.decide(as_sample(sample))
        except Unroutable as exc:
            raise_unroutable([(0, str(exc))])

    # -- scoring ---------------------------------------------------------------------------

    async def score(
        self,
        samples: Iterable[SampleInput],
        *,
        args: Any = None,
        evaluation: bool = False,
        route: str | None = None,
        failures: Literal["raise", "record"] = "raise",
    ) -> ScoreBatch:
        """Score ``samples``; one :class:`RewardResult` per sample, in input order.

        Aborted samples are not scored (status ``aborted``); samples that carry a reward keep it
        (status ``kept``) unless the config says ``rescore: true``. ``args`` is handed to every
        reward function as its first argument (a trainer's argument namespace, or None).
        ``evaluation`` picks each term's ``eval_key``. ``route`` sends every sample to that route,
        bypassing precedence (for hand-scored examples). ``failures="record"`` records a failed
        call of an ``on_error: raise`` term as its status (reward None) instead of raising, so
        that a caller can keep what the rest of the batch scored. The returned
        :class:`ScoreBatch` is a sequence of results; its ``rewards`` reads the training values
        alone, its ``warnings`` what was counted but not raised, its ``failures`` the samples
        recorded instead of raised.

        Raises :class:`RoutingError` listing every sample that no route accepts or that has no
        ``response``, before any reward function runs.
        """
        self.executors.check_open()
        one_sample_given(samples, "score")
        views = [as_sample(s, i) for i, s in enumerate(samples)]
        triage = self._classify(views, evaluation, route)
        groups = plan_groups(list(triage.routed.values()))
        parsed = Parsed()  # each conversation validated once, however many terms read it
        outcomes = await asyncio.gather(
            *(self._run(group, views, args, parsed) for group in groups)
        )
        return assemble(triage, groups, outcomes, evaluation, record=failures == "record")

    def _classify(self, views: Sequence[SampleLike], evaluation: bool, route: str | None) -> Triage:
        """Settle aborted samples and those that carry a reward; route every other one."""
        triage = Triage([None] * len(views))
        decisions, routed, settled = triage.decisions, triage.routed, triage.settled
        unroutable: list[tuple[int, str]] = []
        rescore = self.config.rescore
        decide = self.resolver.decide if route is None else self._forced(route)
        for i, sample in enumerate(views):
            status = getattr(sample, "status", None)
            if status is not None and status != "completed" and status_of(sample) == "aborted":
                settled[i] = RewardResult(None, "aborted", error_message=ABORTED)
                continue
            preset = getattr(sample, "reward", None)
            if preset is not None and not rescore:
                settled[i] = self._kept(i, preset, evaluation)
                continue
            problem = response_problem(getattr(sample, "response", None))
            if problem is not None:
                unroutable.append((i, problem))
                continue
            try:
                decision = decisions[i] = decide(sample)
            except Unroutable as exc:
                unroutable.append((i, str(exc)))
                continue
            bucket = routed.get(decision.route.name)  # inline: this loop runs once per sample
            if bucket is None:
                bucket = routed[decision.route.name] = (decision.route, [])
            bucket[1].append(i)
        if unroutable:
            raise_unroutable(unroutable)
        return triage

    def _kept(self, index: int, preset: Any, evaluation: bool) -> RewardResult:
        """The result of a sample that arrived with a reward (``None``: it has none)."""
        key = self.config.eval_reward_key if evaluation else None
        try:
            value = to_value(preset, key or self.config.reward_key)
        except InvalidReturn as exc:
            raise SampleError(
                f"sample {index} carries a reward that cannot be read: it {exc}; set "
                f"`reward_key` (and `eval_reward_key`) to the entry that is the training value, "
                f"or clear the reward and set `rescore: true` to score it again"
            ) from None
        return RewardResult(value, "kept", raw=preset)

    async def _run(
        self, group: RouteGroup, views: Sequence[SampleLike], args: Any, parsed: Parsed
    ) -> Sequence[Outcome]:
        """The outcomes of ``group``'s calls on its executor, one per member."""
        members = [views[i] for i in group.indices]
        term = group.term  # every member shares the call key: executor, timeout and reads
        call = Call(term.fn, args, term.kwargs, term.timeout, term.call_key)

        def run(seen: list[SampleLike]) -> Awaitable[Sequence[Outcome]]:
            return self.executors.run(term.executor, call, seen)

        return await run_reading(members, term.reads, self.config.trajectory, run, parsed)

    @property
    def post_processor(self) -> PostProcessor:
        """The compiled shaping and advantage chain (compiled on first use if not given)."""
        if self._post_processor is None:
            self._post_processor = PostProcessor.compile(
                {name: route.shaping for name, route in self.routes.items()},
                self.config.post_process,
            )
        return self._post_processor

    def post_process(
        self,
        samples: Sequence[SampleInput],
        results: Sequence[RewardResult] | None = None,
        processor: PostProcessor | None = None,
    ) -> PostProcessResult:
        """Shaping stages, then the advantage stage, over one batch (slime's hook shape).

        Rewards come from ``results`` (what :meth:`score` returned for ``samples``) or else from
        each sample's ``reward`` (a dict reward gives its ``reward_key`` entry). Each sample's
        route (for route shaping) comes from ``results`` or the precedence rules, its group
        from ``group_index``, and ``response_length`` / ``truncated`` from the sample. Samples
        without a reward stay out of group statistics and get advantage 0. ``processor`` runs
        another chain on the same inputs (``explain`` uses it to show each stage's output).
        torch is imported here, by the advantage stage, and only when it needs it (see
        :mod:`rewardrouter.advantage.host`).
        """
        views = [as_sample(s, i) for i, s in enumerate(samples)]
        if results is not None and len(results) != len(views):
            raise ValueError(f"{len(results)} results for {len(views)} samples")
        if results is not None:
            rewards = [r.reward for r in results]
            routes = [r.route for r in results]
        else:
            rewards = [
                self._kept(i, getattr(s, "reward", None), False).reward for i, s in enumerate(views)
            ]
            routes = [self._route_name(s) for s in views]
        chain = processor or self.post_processor
        problems = input_problems(views, chain.required_inputs())
        if problems:
            raise SampleError(listed(problems, "cannot be post-processed"))
        groups = [getattr(s, "group_index", None) for s in views]
        lengths = [getattr(s, "response_length", None) for s in views]
        if None not in groups and not all(type(g) is int for g in groups):
            groups = [int(cast("float", g)) for g in groups]  # integral floats, checked above
        try:
            return chain(
                rewards,
                routes=routes,
                group_index=None if None in groups else cast("list[int]", groups),
                response_length=None if None in lengths else cast("list[float]", lengths),
                truncated=[status_of(s) == "truncated" for s in views],
            )
        except MissingInputError as exc:
            raise SampleError(str(exc)) from None

    def check(
        self, samples: Sequence[SampleInput], *, post_process: bool = True
    ) -> list[tuple[int, str]]:
        """What would stop :meth:`score` or :meth:`post_process` on ``samples``, found without
        calling any reward function: a sample that no route accepts or that has no
        ``response``, a reward it carries that cannot be read, and (unless ``post_process`` is
        false) a field the post-processing reads (``group_index``, ``response_length``) that a
        sample lacks or holds in a form it cannot use.

        One ``(sample index, message)`` per problem, in sample order; ``[]`` when none. The
        command line runs it on the whole input before the first paid call.
        """
        problems: list[tuple[int, str]] = []
        views: list[tuple[int, SampleLike]] = []
        for i, sample in enumerate(samples):
            try:
                views.append((i, as_sample(sample, i)))
            except RoutingError as exc:  # a dict whose metadata is not a mapping
                problems.append((i, str(exc).partition(": ")[2]))
        for i, view in views:
            preset = getattr(view, "reward", None)
            if status_of(view) == "aborted":
                continue
            if preset is not None and not self.config.rescore:
                try:
                    self._kept(i, preset, False)
                except SampleError as exc:
                    problems.append((i, str(exc).removeprefix(f"sample {i} ")))
            elif (problem := response_problem(getattr(view, "response", None))) is not None:
                problems.append((i, problem))
            else:
                try:
                    self.resolver.decide(view)
                except Unroutable as exc:
                    problems.append((i, str(exc)))
        chain = self._post_processor if post_process else None
        if chain is not None:
            found = input_problems([v for _, v in views], chain.required_inputs())
            problems += [(views[j][0], why) for j, why in found]
        return sorted(problems, key=lambda p: p[0])

    def _route_name(self, sample: SampleLike) -> str | None:
        try:
            return self.resolver.decide(sample).route.name
        except Unroutable:
            return None

    def _forced(self, route: str) -> Callable[[Any], Decision]:
        if route not in self.routes:
            raise RoutingError(
                f"route {route!r} does not exist (routes: {', '.join(self.routes) or 'none'})"
            )
        decision = Decision(self.routes[route], "route", f"route {route!r} was asked for")
        return lambda sample: decision

    def score_sync(
        self,
        samples: Iterable[SampleInput],
        *,
        args: Any = None,
        evaluation: bool = False,
        route: str | None = None,
        failures: Literal["raise", "record"] = "raise",
    ) -> ScoreBatch:
        """:meth:`score` for synchronous callers (also inside a running event loop's thread)."""
        one_sample_given(samples, "score_sync")
        return run_sync(
            self.score(samples, args=args, evaluation=evaluation, route=route, failures=failures)
        )


def one_sample_given(samples: object, method: str) -> None:
    """Raise :class:`RoutingError` when ``samples`` is one sample (a dict, a string, a sample
    object), not a list of them: iterating it would score its keys or characters as samples."""
    if isinstance(samples, Mapping):
        found = f"one dict (keys: {', '.join(map(str, samples)) or 'none'})"
    elif isinstance(samples, str | bytes):
        found = f"a {type(samples).__name__} {samples[:40]!r}"
    elif hasattr(samples, "response") and not isinstance(samples, Iterable):
        found = f"one {type(samples).__name__} object"
    else:
        return
    raise RoutingError(
        f"{method}(samples): got {found}; expected a list of samples; wrap one sample in a "
        f"list: router.{method}([sample])"
    )


def input_problems(
    views: Sequence[SampleLike], needs: Mapping[Field, str]
) -> list[tuple[int, str]]:
    """Samples lacking a per-sample field that a post-processing stage reads (``needs``: field
    → the stage), or holding one it cannot use: ``(position in views, message)`` pairs."""
    problems: list[tuple[int, str]] = []
    for name, stage in needs.items():
        values = [getattr(s, name, None) for s in views]
        if name == "group_index" and all(type(v) is int and -(2**63) <= v < 2**63 for v in values):
            continue  # the common case, checked without a call per sample
        for i, value in enumerate(values):
            if value is None:
                what = "groups by it" if name == "group_index" else "reads it"
                fix = (
                    "give every sample its prompt group's group_index, or set "
                    "`group_by: position` with `n_samples_per_prompt`"
                    if name == "group_index"
                    else f"give every sample its {name}"
                )
                problems.append((i, f"no {name}, but {stage} {what}; {fix}"))
            elif name == "group_index" and (why := group_index_problem(value)) is not None:
                problems.append((i, f"group_index {why}; number each prompt group with an integer"))
            elif name == "response_length" and not (
                isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < inf
            ):
                problems.append(
                    (i, f"response_length must be a non-negative number, found {value!r}")
                )
    return problems


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from synchronous code, even if this thread runs a loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, name="rewardrouter-sync")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]
