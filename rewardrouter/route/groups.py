"""Route groups: the samples that one function scores with one set of kwargs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardrouter.compile.functions import RewardFn
from rewardrouter.compile.routes import BoundTerm, CallKey
from rewardrouter.route.precedence import Decision


@dataclass
class RouteGroup:
    """Every ``(sample index, term)`` scored by ``fn`` with ``kwargs``, in input order.

    Terms of different routes that name the same function and kwargs share a group, so a
    group-mode function is called once for all of them — and never with a sample whose route
    does not use it.
    """

    fn: RewardFn
    kwargs: Mapping[str, Any]
    members: list[tuple[int, BoundTerm]] = field(default_factory=list)


def plan_groups(decisions: Sequence[Decision | None]) -> list[RouteGroup]:
    """Group every term call of the decided samples by ``call_key``."""
    groups: dict[CallKey, RouteGroup] = {}
    for i, decision in enumerate(decisions):
        if decision is None:
            continue
        for term in decision.route.terms:
            group = groups.get(term.call_key)
            if group is None:
                group = groups[term.call_key] = RouteGroup(term.fn, term.kwargs)
            group.members.append((i, term))
    return list(groups.values())
