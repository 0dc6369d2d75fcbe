"""miles: slime's hooks, with each sample's ``reward_spec`` honoured and miles' grouping rules.

Launch flags::

    --custom-rm-path rewardrouter.integrations.miles.custom_rm
    --custom-reward-post-process-path rewardrouter.integrations.miles.post_process_rewards
    --custom-rollout-log-function-path rewardrouter.integrations.miles.log_rollout   # metrics
    --custom-config-path rewardrouter.yaml    # holds `rewardrouter_config: /abs/path/router.yaml`

Everything in :mod:`rewardrouter.integrations.slime` holds. miles' ``Sample.reward_spec``
(``rm_type``, ``custom_rm_path``; set per LoRA adapter in multi-LoRA runs) takes part in the
router's precedence: ``reward_spec.custom_rm_path`` (under ``allowed_modules``) before
``reward_spec.rm_type`` before ``metadata.rm_type`` before the routes. miles calls a sample's
``reward_spec.custom_rm_path`` itself when it scores single samples (no ``--group-rm``); with
``--group-rm`` the router dispatches it, batched with the other samples of its route group.

The post-process hook normalizes as miles' own normalization does, with the router's chain:
one reward per rollout (samples sharing ``rollout_id``, else ``index``; siblings with different
rewards are refused), prompt groups per LoRA adapter by ``group_index`` (or
``prompt_group_sizes`` when a caller passes them), slime's position rule without
``group_index``, and the shaped rewards unrounded (float64) when the chain ends in ``none``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rewardrouter.integrations.slime import (
    batched_custom_rm,
    custom_rm,
    hand_rollout_metrics,
    run_post_process,
)

__all__ = ["batched_custom_rm", "custom_rm", "log_rollout", "post_process_rewards"]


def post_process_rewards(
    args: Any, samples: Sequence[Any], prompt_group_sizes: Sequence[int] | None = None
) -> tuple[list[float], list[float]]:
    """miles' ``--custom-reward-post-process-path`` hook: ``(raw_rewards, advantages)``.

    miles calls it as ``fn(args, samples)``; ``prompt_group_sizes`` (the multi-LoRA batch
    metadata of that name) may be passed by callers that have it.
    """
    return run_post_process(args, samples, "miles", prompt_group_sizes)


def log_rollout(
    rollout_id: int,
    args: Any,
    samples: Sequence[Any],
    rollout_extra_metrics: dict[str, Any] | None,
    rollout_time: float,
) -> bool:
    """``--custom-rollout-log-function-path``: the router's figures, grouped as miles groups,
    added to the rollout's metrics (returns False: miles' own logging still runs)."""
    return hand_rollout_metrics(rollout_id, args, samples, rollout_extra_metrics, "miles")
