"""Which route scores a sample (the manual's routing page), first match wins.

1. ``sample.custom_rm_path`` (slime/vime), ``sample.reward_spec.custom_rm_path`` (miles) or
   ``metadata.custom_rm_path`` — only for modules under ``allowed_modules``;
2. ``reward_spec.rm_type`` / ``metadata.rm_type`` — a built-in kind;
3. the route whose ``match`` holds ``metadata[f]`` for the first field ``f`` of ``route_by``
   that matches;
4. ``default_route``; otherwise the sample cannot be routed (an error, never a silent 0).

Dataset strings match ignoring case and surrounding whitespace (:func:`match_key`): a
``dataset`` column of ``" GSM8K"`` reaches the route that matches ``gsm8k``, and the decision's
reason says so. Two strings of the config that differ only so are refused when compiling (they
would be one dataset), so normalizing never picks between routes. Field *names* in
``route_by`` are exact; a sample that carries one in another case (``Dataset``) or at the top
level instead of in ``metadata`` (verl's ``data_source``) is told so when it cannot be routed;
when ``default_route`` takes it instead, its decision carries the fix (:attr:`Decision.misplaced`)
and the batch counts it as a warning (``misplaced_route_field``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, NoReturn

from rewardrouter.compile.routes import CompiledRoute, match_key
from rewardrouter.errors import RoutingError, did_you_mean, listed
from rewardrouter.introspect import ResolveError, module_allowed
from rewardrouter.sample import SampleLike, metadata_of, spec_field

Level = Literal["custom_rm_path", "rm_type", "route", "default_route"]

#: Failed names of data-named functions kept (with their message) for the next sample that
#: gives them; older ones are resolved again when they come back.
FAILURES_KEPT = 256


@dataclass(frozen=True)
class Decision:
    """The route a sample goes to, the precedence level that chose it, and why.

    ``misplaced`` is set when ``default_route`` took a sample that carries a route_by field
    where routing does not read it (:class:`Misplaced`, without the value): likely not the
    route meant, so the batch counts it (:class:`~rewardrouter.results.ScoreWarning`).
    """

    route: CompiledRoute
    level: Level
    reason: str
    misplaced: str | None = None

    @property
    def route_name(self) -> str:
        return self.route.name

    @property
    def first_term(self) -> str:
        return self.route.terms[0].name


class Unroutable(Exception):
    """A sample that no precedence level accepts; the message says why and what to do."""


@dataclass(frozen=True)
class Misplaced:
    """A route_by field ``name`` that a sample carries where routing does not read it: as
    metadata key ``key`` in another case (``Dataset``), or at the top level of the row
    (``top_level``: verl's ``data_source`` layout).

    >>> print(Misplaced("dataset", "Dataset", "gsm8k").text())
    metadata has 'Dataset' = 'gsm8k', but route_by fields are read by exact name — rename the field to 'dataset', or add 'Dataset' to `route_by`
    """

    name: str
    key: str
    value: Any
    top_level: bool = False

    def text(self, value: bool = True) -> str:
        """What was found and the fix; ``value=False`` leaves the value out (the same text for
        every sample that carries the field so, as a counted warning reads)."""
        shown = f" = {self.value!r}" if value else ""
        if self.top_level:
            return (
                f"{self.key!r}{shown} is a top-level field of the sample, and routing reads "
                f"route_by fields from `metadata` — move it into the row's metadata "
                f'({{"metadata": {{"{self.name}": ...}}}})'
            )
        return (
            f"metadata has {self.key!r}{shown}, but route_by fields are read by exact name — "
            f"rename the field to {self.name!r}, or add {self.key!r} to `route_by`"
        )


class Resolver:
    """Applies the precedence rules; data-named functions are resolved once and cached."""

    def __init__(
        self,
        routes: Mapping[str, CompiledRoute],
        route_by: tuple[str, ...],
        default_route: str | None,
        allowed_modules: tuple[str, ...],
        data_route: Callable[[Literal["custom_rm_path", "rm_type"], str], CompiledRoute],
        allowed_functions: tuple[str, ...] = (),
    ) -> None:
        self._routes = routes
        self._route_by = route_by
        self._default = (
            Decision(routes[default_route], "default_route", "no route_by field matched a route")
            if default_route is not None
            else None
        )
        self._allowed = allowed_modules
        self._functions = allowed_functions
        self._data_route = data_route
        # match_key(dataset) → the route and the dataset string as the config writes it.
        self._table: dict[str, tuple[CompiledRoute, str]] = {}
        for route in routes.values():
            for dataset in (route.name, *route.match):
                self._table.setdefault(match_key(dataset), (route, dataset))
        # Names that data gave: those that resolve (a finite set: functions that exist), and
        # the latest failures, bounded — a stream of made-up names must not grow memory.
        self._cache: dict[tuple[str, str], CompiledRoute] = {}
        self._failed: OrderedDict[tuple[str, str], ResolveError] = OrderedDict()
        # Per route_by field, in order: the decision for each dataset string seen there.
        self._by_value: tuple[tuple[str, dict[str, Decision]], ...] = tuple(
            (name, {}) for name in route_by
        )

    @property
    def datasets(self) -> list[str]:
        return sorted(dataset for _, dataset in self._table.values())

    def _named(self, level: Literal["custom_rm_path", "rm_type"], name: str) -> CompiledRoute:
        key = (level, name)
        route = self._cache.get(key)
        if route is not None:
            return route
        failure = self._failed.get(key)
        if failure is None:
            try:
                route = self._cache[key] = self._data_route(level, name)
                return route
            except ResolveError as exc:
                failure = exc.with_traceback(None)  # kept: not with the frames it came from
            if len(self._failed) >= FAILURES_KEPT:
                self._failed.popitem(last=False)
        self._failed[key] = failure
        self._failed.move_to_end(key)
        hint = f"; {failure.hint}" if failure.hint else ""
        raise Unroutable(f"{level} {name!r}: {failure}{hint}")

    def decide(self, sample: SampleLike) -> Decision:
        """The :class:`Decision` for ``sample``; raises :class:`Unroutable`."""
        metadata = getattr(sample, "metadata", None)
        if type(metadata) is not dict:
            metadata = metadata_of(sample)
        spec = getattr(sample, "reward_spec", None)
        named = (
            getattr(sample, "custom_rm_path", None)
            or spec is not None
            or "custom_rm_path" in metadata
            or "rm_type" in metadata
        )
        if named:
            decision = self._named_decision(sample, metadata, spec)
            if decision is not None:
                return decision
        for name, seen in self._by_value:
            value = metadata.get(name)
            if value is not None:
                decision = seen.get(value) if type(value) is str else None
                if decision is None:
                    found = self._table.get(match_key(str(value)))
                    if found is None:
                        continue
                    route, dataset = found
                    reason = f"metadata.{name} = {value!r}"
                    if dataset != str(value):
                        reason += f" (matches {dataset!r}: case and surrounding spaces ignored)"
                    decision = Decision(route, "route", reason)
                    if type(value) is str:
                        seen[value] = decision
                return decision
        if self._default is not None:
            if any(name in metadata for name in self._route_by):
                return self._default
            # No route_by field at all: one in another case or at the top level is named in the
            # reason (`explain` shows it), since the default route is then likely not meant.
            misplaced = self._misplaced(sample, metadata)
            if misplaced is None:
                return self._default
            reason = f"{self._default.reason}; {misplaced.text()}"
            return Decision(self._default.route, "default_route", reason, misplaced.text(False))
        misplaced = self._misplaced(sample, metadata)
        raise Unroutable(self._no_route(metadata) + (f"; {misplaced.text()}" if misplaced else ""))

    def _named_decision(
        self, sample: SampleLike, metadata: Mapping[str, Any], spec: Any
    ) -> Decision | None:
        """Levels 1 and 2: a function or built-in that the sample itself names."""
        for where, path in (
            ("sample.custom_rm_path", getattr(sample, "custom_rm_path", None)),
            ("reward_spec.custom_rm_path", spec_field(spec, "custom_rm_path")),
            ("metadata.custom_rm_path", metadata.get("custom_rm_path")),
        ):
            if path:
                if not (module_allowed(str(path), self._allowed) or path in self._functions):
                    raise Unroutable(
                        f"{where} {path!r} is outside allowed_modules {list(self._allowed)}; "
                        f"data may only name functions defined in those modules — add its "
                        f"module to `allowed_modules` (or the path to `allowed_functions`) if "
                        f"you trust this data"
                    )
                route = self._named("custom_rm_path", str(path))
                return Decision(route, "custom_rm_path", f"{where} = {path!r}")
        for where, kind in (
            ("reward_spec.rm_type", spec_field(spec, "rm_type")),
            ("metadata.rm_type", metadata.get("rm_type")),
        ):
            if kind:
                route = self._named("rm_type", str(kind))
                return Decision(route, "rm_type", f"{where} = {kind!r}")
        return None

    def _no_route(self, metadata: Mapping[str, Any]) -> str:
        shown = ", ".join(f"{name}={metadata.get(name)!r}" for name in self._route_by)
        if not self._routes:
            return (
                f"no route matched ({shown}): the config defines no routes (`routes:` is "
                f"empty) — add a route with the rewards for this dataset, or pass the router "
                f"YAML that has them"
            )
        values = [str(metadata[n]) for n in self._route_by if metadata.get(n) is not None]
        close = next((h for v in values if (h := did_you_mean(v, self.datasets))), None)
        return (
            f"no route matched ({shown}) and default_route is null; known dataset strings: "
            f"{', '.join(self.datasets) or 'none'}"
            + (f"; {close}" if close else "")
            + " — add the value to a route's `match:`, or set `default_route`"
        )

    def _misplaced(self, sample: SampleLike, metadata: Mapping[str, Any]) -> Misplaced | None:
        """A route_by field that the sample carries, but not where routing reads it: in
        ``metadata`` under another case (``Dataset``), or at the top level of the row (verl's
        ``data_source`` layout), in any case."""
        extra = getattr(sample, "extra", None)
        top = extra if isinstance(extra, Mapping) else {}
        folded = {key.casefold(): key for key in metadata if isinstance(key, str)}
        top_folded = {key.casefold(): key for key in top if isinstance(key, str)}
        for name in self._route_by:
            if name in metadata:
                continue
            other = folded.get(name.casefold())
            if other is not None:
                return Misplaced(name, other, metadata[other])
            at_top = name if name in top else top_folded.get(name.casefold())
            if at_top is not None and top[at_top] is not None:
                return Misplaced(name, at_top, top[at_top], top_level=True)
        return None


def raise_unroutable(failures: list[tuple[int, str]]) -> NoReturn:
    """One :class:`RoutingError` listing (up to ten of) the samples that no route accepts or
    that have no response."""
    raise RoutingError(listed(failures, "cannot be scored"))
