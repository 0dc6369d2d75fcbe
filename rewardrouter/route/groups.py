"""Route groups: the samples that one function scores with one set of kwargs."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat

from rewardrouter.compile.routes import BoundTerm, CallKey, CompiledRoute


@dataclass
class RouteGroup:
    """Every sample that ``term``'s function scores with ``term``'s kwargs, in input order.

    Terms of different routes that name the same function and kwargs share a group, so a
    group-mode function is called once for all of them — and never with a sample whose route
    does not use it. ``terms`` holds each member's own term when the group spans several terms
    (their weights and keys may differ); ``None`` when every member's term is ``term``.
    """

    term: BoundTerm
    indices: list[int]
    terms: list[BoundTerm] | None = None

    def members(self) -> Iterable[tuple[int, BoundTerm]]:
        """``(sample index, its term)`` pairs, in input order."""
        if self.terms is None:
            return zip(self.indices, repeat(self.term))  # C-level: no Python frame per member
        return zip(self.indices, self.terms, strict=True)


def plan_groups(routed: Sequence[tuple[CompiledRoute, list[int]]]) -> list[RouteGroup]:
    """Group the term calls of routed samples by ``call_key``.

    ``routed`` pairs each route with the indices of its samples (ascending). The work is per route
    and term, not per sample, except where one call key spans several terms.
    """
    parts: dict[CallKey, list[tuple[BoundTerm, list[int]]]] = {}
    for route, indices in routed:
        for term in route.terms:
            parts.setdefault(term.call_key, []).append((term, indices))
    return [
        RouteGroup(shared[0][0], shared[0][1]) if len(shared) == 1 else _merge(shared)
        for shared in parts.values()
    ]


def _merge(shared: list[tuple[BoundTerm, list[int]]]) -> RouteGroup:
    """One group from several terms' members, back in input order."""
    if len({id(indices) for _, indices in shared}) < len(shared):
        # One route names the same call twice (e.g. two weights): a sample appears twice.
        pairs = sorted(((i, t) for t, indices in shared for i in indices), key=lambda p: p[0])
        return RouteGroup(shared[0][0], [i for i, _ in pairs], [t for _, t in pairs])
    term_of: dict[int, BoundTerm] = {}
    for term, indices in shared:
        term_of.update(dict.fromkeys(indices, term))
    merged = sorted(term_of)
    return RouteGroup(shared[0][0], merged, [term_of[i] for i in merged])
