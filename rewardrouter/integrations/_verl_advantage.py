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

:func:`estimator_problems` lists what a config holds that this estimator cannot run: no advantage
stage at the end of ``post_process``, a global stage that reads a field verl's advantage step does
not carry (``truncation_penalty``: verl has no truncation flags), or ``group_by: position`` (verl's
trainer reorders rows, ``uid`` names each row's prompt). The launch check of :mod:`._verl_launch`
runs it when verl starts, and :func:`compute_advantage` again at every step.
"""

from __future__ import annotations

import logging
import weakref
from typing import Any

import numpy as np
import torch
from torch import Tensor

from rewardrouter.checks import no_advantage_stage
from rewardrouter.errors import ConfigError, Problem
from rewardrouter.integrations._router_cache import shared_router
from rewardrouter.integrations._source import config_source
from rewardrouter.integrations.route_shaping import NEEDS as STAGE_NEEDS
from rewardrouter.router import Router
from rewardrouter.shape.batch import MissingInputError

#: The name verl's ``algorithm.adv_estimator`` selects this estimator by.
ESTIMATOR_NAME = "rewardrouter"

#: The per-row fields verl's advantage step gives global stages (lengths are the mask's sums).
CARRIED = frozenset({"response_length", "group_index"})

log = logging.getLogger("rewardrouter.verl")


def group_ids(index: Any, device: torch.device) -> Tensor:
    """One integer per row for verl's ``uid`` values (strings or numbers), on ``device``."""
    _, inverse = np.unique(np.asarray(index), return_inverse=True)
    return torch.as_tensor(inverse.reshape(-1), dtype=torch.int64, device=device)


#: :func:`estimator_problems` of each router checked: the advantage step runs every step.
_checked: weakref.WeakKeyDictionary[Router, tuple[Problem, ...]] = weakref.WeakKeyDictionary()


def estimator_problems(router: Router) -> list[Problem]:
    """Every reason ``router``'s ``post_process`` cannot run as verl's estimator (empty: it can).

    Each problem names its YAML path, what was found, and the fix. Checked once per router.
    """
    found = _checked.get(router)
    if found is None:
        found = _checked[router] = tuple(_problems(router))
    return list(found)


def _problems(router: Router) -> list[Problem]:
    processor = router.post_processor
    estimator = processor.estimator
    problems: list[Problem] = []
    missing = no_advantage_stage(
        router.config,
        "algorithm.adv_estimator=rewardrouter",
        "drop `algorithm.adv_estimator=rewardrouter` to keep one of verl's own estimators",
    )
    if missing is not None:
        problems.append(missing)
    for stage in processor.stages:
        need = STAGE_NEEDS.get(stage.config.kind)
        if need is not None and need not in CARRIED:
            problems.append(
                Problem(
                    stage.where,
                    f"`{stage.config.kind}` needs each row's `{need}`, which verl's advantage "
                    f"step does not carry (it has the token rewards, the response mask and uid)",
                    "remove the stage; `overlong_penalty` works (each row's length is its "
                    "response mask's sum)",
                )
            )
    if estimator is not None and estimator.group_by == "position":
        problems.append(
            Problem(
                f"post_process[{len(processor.stages)}].group_by",
                "`group_by: position` takes consecutive rows as a prompt group, but verl's "
                "trainer reorders rows (trainer.balance_batch) and names each row's prompt by "
                "its uid",
                "remove `group_by` and `n_samples_per_prompt`: the estimator groups rows by uid",
            )
        )
    return problems


def compute_advantage(
    token_level_rewards: Tensor,
    response_mask: Tensor,
    index: Any = None,
    config: Any = None,
    **_: Any,
) -> tuple[Tensor, Tensor]:
    """verl's estimator contract: ``(advantages, returns)``, both rows x tokens.

    ``config`` is verl's ``algorithm`` config; ``index`` its ``uid`` array. Raises
    :class:`~rewardrouter.ConfigError` listing :func:`estimator_problems` when there are any.
    """
    source = config_source(config, "algorithm")
    router = shared_router(source)
    problems = estimator_problems(router)
    if problems:
        raise ConfigError(problems, source.path)
    if index is None:
        raise ValueError(
            "verl passed no `uid` index to the rewardrouter advantage estimator; it needs each "
            "row's prompt id to form groups"
        )
    scores = token_level_rewards.sum(dim=-1)
    groups = group_ids(index, scores.device)
    try:
        out = router.post_processor.process(
            scores, group_index=groups, response_length=response_mask.sum(dim=-1), check=True
        )
    except MissingInputError as exc:  # a custom stage that reads what verl does not carry
        raise ConfigError(
            [Problem("post_process", f"{exc} (verl's advantage step carries only lengths)")],
            source.path,
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
