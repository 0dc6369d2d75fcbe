"""verl's ``algorithm.adv_estimator=rewardrouter``: the router config's advantage chain in verl.

verl computes advantages in its trainer process from ``token_level_rewards`` (rows x tokens,
on the trainer's device), the ``response_mask`` and each row's prompt id ``uid``. This estimator
sums each row's token rewards (verl puts the score on the last response token), runs the config's
global ``post_process`` shaping stages (each row's response length is its mask's sum) and its
advantage stage, grouping rows by ``uid`` (uneven groups welcome; constant groups get exactly
0), and broadcasts the advantage over the row's response tokens, all on the device the rewards
live on. Route shaping ran already, in the reward function.

The router config comes from ``+algorithm.rewardrouter_config=/abs/path/router.yaml`` (overrides:
``+algorithm.rewardrouter_overrides``) or the ``REWARDROUTER_CONFIG`` environment variable of
the trainer process.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import torch
from torch import Tensor

from rewardrouter.errors import ConfigError, Problem
from rewardrouter.integrations._router_cache import shared_router
from rewardrouter.integrations._source import config_source
from rewardrouter.shape.batch import MissingInputError

#: The name verl's ``algorithm.adv_estimator`` selects this estimator by.
ESTIMATOR_NAME = "rewardrouter"

log = logging.getLogger("rewardrouter.verl")


def group_ids(index: Any, device: torch.device) -> Tensor:
    """One integer per row for verl's ``uid`` values (strings or numbers), on ``device``."""
    _, inverse = np.unique(np.asarray(index), return_inverse=True)
    return torch.as_tensor(inverse.reshape(-1), dtype=torch.int64, device=device)


def compute_advantage(
    token_level_rewards: Tensor,
    response_mask: Tensor,
    index: Any = None,
    config: Any = None,
    **_: Any,
) -> tuple[Tensor, Tensor]:
    """verl's estimator contract: ``(advantages, returns)``, both rows x tokens.

    ``config`` is verl's ``algorithm`` config; ``index`` its ``uid`` array.
    """
    router = shared_router(config_source(config, "algorithm"))
    processor = router.post_processor
    if processor.estimator is None:
        raise ConfigError(
            [
                Problem(
                    "post_process",
                    "algorithm.adv_estimator=rewardrouter, but the router config's post_process "
                    "ends in no advantage stage",
                    "end post_process with `grpo`, `rloo`, `reinforce_pp_baseline`, or `none` "
                    "to train on the shaped rewards as they are",
                )
            ]
        )
    if index is None:
        raise ValueError(
            "verl passed no `uid` index to the rewardrouter advantage estimator; it needs each "
            "row's prompt id to form groups"
        )
    scores = token_level_rewards.sum(dim=-1)
    groups = group_ids(index, scores.device)
    try:
        out = processor.process(
            scores, group_index=groups, response_length=response_mask.sum(dim=-1), check=True
        )
    except MissingInputError as exc:
        raise ConfigError(
            [Problem("post_process", f"{exc} (verl's advantage step carries only lengths)")]
        ) from None
    _log_groups(groups, out.constant_groups)
    advantages = out.advantages.to(token_level_rewards.dtype).unsqueeze(-1) * response_mask
    return advantages, advantages


def _log_groups(groups: Tensor, constant: Any) -> None:
    if constant is None or not log.isEnabledFor(logging.INFO):
        return
    sized = int((torch.bincount(groups) > 1).sum())
    fraction = constant.groups / sized if sized else 0.0
    log.info(
        "rewardrouter/groups=%d rewardrouter/constant_groups=%.4f (advantage exactly 0: %s)",
        sized,
        fraction,
        constant.all_zero,
    )


def register() -> bool:
    """Register :func:`compute_advantage` in verl's registry under :data:`ESTIMATOR_NAME`.

    Returns False when verl is not installed. Registering again (the module loaded twice, e.g.
    by file path) keeps the first registration.
    """
    try:
        from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, register_adv_est
    except ImportError:
        return False
    if ESTIMATOR_NAME not in ADV_ESTIMATOR_REGISTRY:
        register_adv_est(ESTIMATOR_NAME)(compute_advantage)
    return True
