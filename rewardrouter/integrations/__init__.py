"""Drop-in reward hooks for RL frameworks, each configured by one router YAML.

=========  =========================================================================
framework  entry points
=========  =========================================================================
slime      :mod:`~rewardrouter.integrations.slime`: ``custom_rm``,
vime       ``batched_custom_rm``, ``post_process_rewards``, ``log_rollout``
miles      :mod:`~rewardrouter.integrations.miles`: the same, honouring ``reward_spec``
           and grouping as miles does
verl       :mod:`~rewardrouter.integrations.verl`: ``compute_score`` (single and batch),
           ``compute_score_async``, the ``rewardrouter`` advantage estimator
           (``compute_advantage``, registered with verl on import)
TRL        :mod:`~rewardrouter.integrations.trl`: ``reward_function(config, ...)``
OpenRLHF   :mod:`~rewardrouter.integrations.openrlhf`: the module file is a
           ``--reward.remote_url`` reward file (``reward_func``); ``RewardFunc`` for your own
=========  =========================================================================

Each module is imported on its own, by the path the framework is given; none needs its
framework installed (the verl module registers its estimator when verl is there). The config
comes from the framework's arguments or from the ``REWARDROUTER_CONFIG`` environment variable
(overrides: ``REWARDROUTER_OVERRIDES``), and is compiled once per process. What each trainer
logs is named in :mod:`._metrics`.
"""

from rewardrouter.integrations._source import ENV_CONFIG, ENV_OVERRIDES

__all__ = ["ENV_CONFIG", "ENV_OVERRIDES"]
