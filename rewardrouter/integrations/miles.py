"""miles: slime's hooks, with each sample's ``reward_spec`` honoured by the router.

Launch flags::

    --custom-rm-path rewardrouter.integrations.miles.custom_rm
    --custom-reward-post-process-path rewardrouter.integrations.miles.post_process_rewards
    --custom-config-path rewardrouter.yaml    # holds `rewardrouter_config: /abs/path/router.yaml`

Everything in :mod:`rewardrouter.integrations.slime` holds. miles' ``Sample.reward_spec``
(``rm_type``, ``custom_rm_path``; set per LoRA adapter in multi-LoRA runs) takes part in the
router's precedence: ``reward_spec.custom_rm_path`` (under ``allowed_modules``) before
``reward_spec.rm_type`` before ``metadata.rm_type`` before the routes. miles calls a sample's
``reward_spec.custom_rm_path`` itself when it scores single samples (no ``--group-rm``); with
``--group-rm`` the router dispatches it, batched with the other samples of its route group.
The post-process hook groups by ``group_index``, as miles' own normalization does.
"""

from __future__ import annotations

from rewardrouter.integrations.slime import batched_custom_rm, custom_rm, post_process_rewards

__all__ = ["batched_custom_rm", "custom_rm", "post_process_rewards"]
