"""The job's objective: one number for a Hydra sweeper (see :class:`ObjectiveConfig`)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from rewardrouter.config.job import ObjectiveConfig
from rewardrouter.results import RewardResult


def prompt_groups(rows: Sequence[dict[str, Any]]) -> dict[Any, list[int]]:
    """Row indices per ``group_index`` (rows without one are left out)."""
    groups: dict[Any, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        if row.get("group_index") is not None:
            groups[row["group_index"]].append(i)
    return dict(groups)


def is_constant(rewards: Sequence[float | None]) -> bool:
    """A group of two or more set rewards that are all equal: no signal for GRPO."""
    values = [r for r in rewards if r is not None]
    return len(values) >= 2 and all(v == values[0] for v in values)


def objective(
    config: ObjectiveConfig,
    rows: Sequence[dict[str, Any]],
    results: Sequence[RewardResult],
    shaped: Sequence[float | None] | None = None,
) -> float:
    """The value of ``config.name`` over the job's scored rows (``results`` may cover a prefix of
    ``rows``); NaN when nothing could be measured. ``informative_groups`` reads ``shaped``, the
    rewards the advantage stage received (default: the rewards)."""
    rows = rows[: len(results)]
    rewards = [r.reward for r in results]
    if config.name == "mean_reward":
        values = [r for r in rewards if r is not None]
        return math.fsum(v / len(values) for v in values) if values else float("nan")
    if config.needs_column:
        pairs = [
            (reward, float(row[config.column]))
            for row, reward in zip(rows, rewards, strict=True)
            if row.get(config.column) is not None
        ]
        if not pairs:
            return float("nan")
        if config.name == "abs_error":
            return math.fsum(abs((r or 0.0) - e) for r, e in pairs) / len(pairs)
        agree = sum(r is not None and abs(r - e) <= config.tolerance for r, e in pairs)
        return agree / len(pairs)
    groups = [members for members in prompt_groups(rows).values() if len(members) >= 2]
    if not groups:
        return float("nan")
    seen = rewards if shaped is None else shaped
    informative = sum(not is_constant([seen[i] for i in members]) for members in groups)
    return informative / len(groups)


def column_problems(
    config: ObjectiveConfig, rows: Sequence[dict[str, Any]]
) -> list[tuple[int, str]]:
    """Rows whose hand-scored ``column`` (read by ``agreement`` and ``abs_error``) is not a
    finite number or null: ``(row index, message)``, found before anything is scored."""
    if not config.needs_column:
        return []
    problems = []
    for i, row in enumerate(rows):
        value = row.get(config.column)
        if value is None:
            continue
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            problems.append(
                (
                    i,
                    f"`{config.column}` (objective.column, read by {config.name}) must be a "
                    f"finite number or null, found {value!r}",
                )
            )
    return problems
