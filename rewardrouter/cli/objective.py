"""The job's objective: one number for a Hydra sweeper (see :class:`ObjectiveConfig`)."""

from __future__ import annotations

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
    config: ObjectiveConfig, rows: Sequence[dict[str, Any]], results: Sequence[RewardResult]
) -> float:
    """The value of ``config.name`` over the job's rows; NaN when nothing could be measured."""
    rewards = [r.reward for r in results]
    if config.name == "mean_reward":
        values = [r for r in rewards if r is not None]
        return sum(values) / len(values) if values else float("nan")
    if config.name == "agreement":
        pairs = [
            (reward, row[config.column])
            for row, reward in zip(rows, rewards, strict=True)
            if row.get(config.column) is not None
        ]
        if not pairs:
            return float("nan")
        agree = sum(
            reward is not None and abs(reward - float(expected)) <= config.tolerance
            for reward, expected in pairs
        )
        return agree / len(pairs)
    groups = [members for members in prompt_groups(rows).values() if len(members) >= 2]
    if not groups:
        return float("nan")
    informative = sum(not is_constant([rewards[i] for i in members]) for members in groups)
    return informative / len(groups)
