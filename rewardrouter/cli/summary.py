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
    """Rewards, status counts and constant prompt groups of one route."""

    route: str
    rewards: list[float] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)
    groups: int = 0
    constant_groups: int = 0

    @property
    def count(self) -> int:
        return sum(self.statuses.values())

    @property
    def mean(self) -> float | None:
        return sum(self.rewards) / len(self.rewards) if self.rewards else None

    @property
    def std(self) -> float | None:
        mean = self.mean
        if mean is None:
            return None
        return math.sqrt(sum((r - mean) ** 2 for r in self.rewards) / len(self.rewards))

    def as_dict(self) -> dict[str, Any]:
        return {
            "route": self.route,
            "count": self.count,
            "mean": self.mean,
            "std": self.std,
            "statuses": dict(self.statuses),
            "groups": self.groups,
            "constant_groups": self.constant_groups,
        }


def route_stats(
    rows: Sequence[dict[str, Any]], results: Sequence[RewardResult]
) -> list[RouteStats]:
    """One :class:`RouteStats` per route (:data:`NOT_SCORED` for samples never routed), by name.

    A prompt group (rows sharing ``group_index``) counts for the route of its first routed row.
    """
    stats: dict[str, RouteStats] = defaultdict(lambda: RouteStats(""))
    for result in results:
        entry = stats[result.route or NOT_SCORED]
        entry.route = result.route or NOT_SCORED
        entry.statuses[result.status] += 1
        if result.reward is not None:
            entry.rewards.append(result.reward)
    for members in prompt_groups(rows).values():
        routed = [route for i in members if (route := results[i].route) is not None]
        if len(members) < 2 or not routed:
            continue
        entry = stats[routed[0]]
        entry.groups += 1
        entry.constant_groups += is_constant([results[i].reward for i in members])
    return [stats[name] for name in sorted(stats)]


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def summary_table(stats: Sequence[RouteStats], title: str = "rewards per route") -> Table:
    table = Table(
        title=title,
        caption="groups: prompt groups (group_index) seen; constant: those whose answers all got "
        "the same reward, so GRPO learns nothing from them",
    )
    for column in ("route", "n", "mean", "std"):
        table.add_column(column, justify="left" if column == "route" else "right")
    shown = [s for s in STATUSES if any(st.statuses[s] for st in stats)]
    for status in shown:
        table.add_column(status, justify="right")
    table.add_column("groups", justify="right")
    table.add_column("constant", justify="right")
    for st in stats:
        table.add_row(
            escape(st.route),
            str(st.count),
            _fmt(st.mean),
            _fmt(st.std),
            *(str(st.statuses[s]) for s in shown),
            str(st.groups),
            str(st.constant_groups),
        )
    return table


def print_summary(stats: Sequence[RouteStats], console: Console | None = None) -> None:
    (console or Console()).print(summary_table(stats))
