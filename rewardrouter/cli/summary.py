"""The per-route summary table printed at the end of a job."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.console import Console
from rich.table import Table

from rewardrouter.execute.result import RewardResult

STATUSES = ("ok", "skipped", "kept", "aborted", "error", "timeout", "invalid")


@dataclass
class RouteStats:
    """Count, mean and std of rewards, and status counts, for one route."""

    route: str
    rewards: list[float] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)

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


def route_stats(results: Sequence[RewardResult]) -> list[RouteStats]:
    """One :class:`RouteStats` per route (``-`` for samples never routed), sorted by name."""
    stats: dict[str, RouteStats] = defaultdict(lambda: RouteStats(""))
    for result in results:
        name = result.route or "-"
        entry = stats[name]
        entry.route = name
        entry.statuses[result.status] += 1
        if result.reward is not None:
            entry.rewards.append(result.reward)
    return [stats[name] for name in sorted(stats)]


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def summary_table(stats: Sequence[RouteStats], title: str = "rewards per route") -> Table:
    table = Table(title=title)
    table.add_column("route")
    table.add_column("n", justify="right")
    table.add_column("mean", justify="right")
    table.add_column("std", justify="right")
    shown = [s for s in STATUSES if any(st.statuses[s] for st in stats)]
    for status in shown:
        table.add_column(status, justify="right")
    for st in stats:
        table.add_row(
            st.route,
            str(st.count),
            _fmt(st.mean),
            _fmt(st.std),
            *(str(st.statuses[s]) for s in shown),
        )
    return table


def print_summary(results: Sequence[RewardResult], console: Console | None = None) -> None:
    (console or Console()).print(summary_table(route_stats(results)))
