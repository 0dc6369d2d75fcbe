"""Overrides that would create a route or a reward term by accident.

``routes.gsm8kk.rewards.correct.kind=math`` (a typo'd route) or
``routes.gsm8k.rewards.corect.kind=exact_match`` (a typo'd term) are valid configs: the first adds
a route that matches no data, the second a third term with weight 1. Hydra's own rule decides:
a plain ``key=value`` changes what exists, ``+key=value`` adds. A plain override may set any
field of an existing route or term (even one its YAML leaves to the default), but naming a route
or a term that does not exist is refused with a "did you mean"; ``+routes.new...`` adds one on
purpose.

>>> [str(p) for p in created_names({"gsm8k": {"rewards": {"correct": {}}}},
...                                ["routes.gsm8k.rewards.corect.kind"])]  # doctest: +ELLIPSIS
["routes.gsm8k.rewards.corect: the override routes.gsm8k.rewards.corect.kind=... creates ...
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from omegaconf import DictConfig, OmegaConf

from rewardrouter.errors import Problem, did_you_mean


def existing_routes(cfg: DictConfig) -> dict[str, Any]:
    """The ``routes`` mapping of a config before the overrides (interpolations unresolved)."""
    routes = cfg.get("routes")
    if not isinstance(routes, DictConfig):
        return {}
    return {str(k): v for k, v in OmegaConf.to_container(routes, resolve=False).items()}  # type: ignore[union-attr]


def created_names(routes: Mapping[str, Any], keys: Iterable[str]) -> list[Problem]:
    """A problem for each plain override key that names a route, or a term of an existing
    route, that ``routes`` (the config before the overrides) does not have."""
    problems: list[Problem] = []
    seen: set[str] = set()
    for key in keys:
        parts = key.split(".")
        if parts[0] != "routes" or len(parts) < 2:
            continue
        route = parts[1]
        if route not in routes:
            where, name, known, what = f"routes.{route}", route, list(routes), "route"
        elif len(parts) >= 4 and parts[2] == "rewards":
            terms = (routes[route] or {}).get("rewards") or {}
            if parts[3] in terms:
                continue
            where, name, known, what = (
                f"routes.{route}.rewards.{parts[3]}",
                parts[3],
                list(terms),
                "term",
            )
        else:
            continue
        if where in seen:
            continue
        seen.add(where)
        close = did_you_mean(name, known)
        problems.append(
            Problem(
                where,
                f"the override {key}=... creates a new {what} {name!r} "
                f"({what}s: {', '.join(known) or 'none'})",
                f"{close + ' ' if close else ''}(to add a {what} on purpose, write +{key}=...)",
            )
        )
    return problems


def split_dotlist(overrides: Sequence[str]) -> tuple[list[str], list[str]]:
    """``key=value`` overrides with Hydra's prefixes read: the dotlist OmegaConf merges (``+``
    and ``++`` dropped) and the keys of the plain ones (checked by :func:`created_names`)."""
    dotlist: list[str] = []
    plain: list[str] = []
    for override in overrides:
        body = override.lstrip("+")
        if body == override:
            plain.append(override.partition("=")[0].strip())
        dotlist.append(body)
    return dotlist, plain
