"""The per-route report of a job: the terminal table and the ``summary.json`` content."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rewardrouter.cli.objective import is_constant, prompt_groups
from rewardrouter.results import RewardResult

#: The row of samples that reached no route (aborted, or already carrying a reward).
NOT_SCORED = "(not scored)"

STATUSES = ("ok", "skipped", "kept", "aborted", "error", "timeout", "invalid")


@dataclass
class RouteStats:
    """Rewards, status counts and constant prompt groups of one route.

    ``rewards`` are the rewards as scored; ``shaped`` what the advantage stage received (the
    same when no shaping ran). ``not_applied`` counts samples scored ``ok`` with at least one
    term that returned None; ``constant_groups`` counts prompt groups whose shaped rewards are
    all equal, as the advantage check does.
    """

    route: str
    rewards: list[float] = field(default_factory=list)
    shaped: list[float] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)
    not_applied: int = 0
    groups: int = 0
    constant_groups: int = 0

    @property
    def count(self) -> int:
        return sum(self.statuses.values())

    @property
    def mean(self) -> float | None:
        return mean_std(self.rewards)[0]

    @property
    def std(self) -> float | None:
        return mean_std(self.rewards)[1]

    def as_dict(self) -> dict[str, Any]:
        return {
            "route": self.route,
            "count": self.count,
            "mean": self.mean,
            "std": self.std,
            "statuses": dict(self.statuses),
            "terms_not_applied": self.not_applied,
            "groups": self.groups,
            "constant_groups": self.constant_groups,
        }


def mean_std(values: Sequence[float]) -> tuple[float | None, float | None]:
    """Mean and population std, finite for any finite inputs (1e308 included: computed on
    values scaled by the largest magnitude); ``(None, None)`` for no values."""
    if not values:
        return None, None
    scale = max(abs(v) for v in values) or 1.0
    scaled = [v / scale for v in values]
    mean = math.fsum(scaled) / len(scaled)
    var = math.fsum((v - mean) ** 2 for v in scaled) / len(scaled)
    return mean * scale, math.sqrt(var) * scale


def route_stats(
    rows: Sequence[dict[str, Any]],
    results: Sequence[RewardResult],
    shaped: Sequence[float | None] | None = None,
) -> list[RouteStats]:
    """One :class:`RouteStats` per route (:data:`NOT_SCORED` for samples never routed), by name.

    ``results`` may cover a prefix of ``rows`` (a job that stopped early); ``shaped`` holds the
    rewards after shaping (default: the rewards). A prompt group (rows sharing
    ``group_index``) counts for the route of its first routed row.
    """
    shaped = [r.reward for r in results] if shaped is None else shaped
    stats: dict[str, RouteStats] = defaultdict(lambda: RouteStats(""))
    for result, value in zip(results, shaped, strict=True):
        entry = stats[result.route or NOT_SCORED]
        entry.route = result.route or NOT_SCORED
        entry.statuses[result.status] += 1
        if result.reward is not None:
            entry.rewards.append(result.reward)
        if value is not None:
            entry.shaped.append(value)
        if result.status == "ok" and None in result.terms.values():
            entry.not_applied += 1
    for members in prompt_groups(rows[: len(results)]).values():
        routed = [route for i in members if (route := results[i].route) is not None]
        if len(members) < 2 or not routed:
            continue
        entry = stats[routed[0]]
        entry.groups += 1
        entry.constant_groups += is_constant([shaped[i] for i in members])
    return [stats[name] for name in sorted(stats)]


def json_safe(value: float | None) -> float | None:
    """``value``, or None where it is not finite: strict JSON has no NaN."""
    return value if value is None or math.isfinite(value) else None


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def summary_table(stats: Sequence[RouteStats], title: str = "rewards per route") -> Table:
    table = Table(
        title=title,
        caption="groups: prompt groups (group_index) seen; constant: those whose answers all got "
        "the same (shaped) reward, so GRPO learns nothing from them"
        + (
            "; term n/a: rows where a term returned None, so the other terms alone gave the reward"
            if any(st.not_applied for st in stats)
            else ""
        )
        + (
            f"; {NOT_SCORED}: rows that reached no route, by status (an aborted rollout gets no "
            "reward)"
            if any(st.route == NOT_SCORED for st in stats)
            else ""
        ),
    )
    for column in ("route", "n", "mean", "std"):
        table.add_column(column, justify="left" if column == "route" else "right")
    shown = [s for s in STATUSES if any(st.statuses[s] for st in stats)]
    for status in shown:
        table.add_column(status, justify="right")
    not_applied = any(st.not_applied for st in stats)
    if not_applied:
        table.add_column("term n/a", justify="right", style="yellow")
    table.add_column("groups", justify="right")
    table.add_column("constant", justify="right")
    for st in stats:
        table.add_row(
            escape(st.route),
            str(st.count),
            _fmt(st.mean),
            _fmt(st.std),
            *(str(st.statuses[s]) for s in shown),
            *([str(st.not_applied)] if not_applied else []),
            str(st.groups),
            str(st.constant_groups),
        )
    return table


def print_summary(stats: Sequence[RouteStats], console: Console | None = None) -> None:
    (console or Console()).print(summary_table(stats))
