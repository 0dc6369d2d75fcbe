"""Group advantages: exact, vectorized, on the GPU when there is one.

``group_advantages(rewards, group_ids, stage)`` turns a flat batch of rewards into advantages
(``grpo``, ``rloo``, ``reinforce_pp_baseline``, ``none``); ``constant_groups`` checks that groups
with a single reward value got exactly zero.

Example::

    >>> import torch
    >>> from rewardrouter.advantage import group_advantages
    >>> group_advantages(torch.full((16,), 0.3), torch.zeros(16, dtype=torch.long)).abs().max()
    tensor(0.)
"""

from rewardrouter.advantage.checks import ConstantGroups, constant_groups
from rewardrouter.advantage.device import device_problem, resolve_device
from rewardrouter.advantage.estimators import OUTPUT_DTYPES, group_advantages
from rewardrouter.advantage.moments import GroupMoments, group_moments
from rewardrouter.advantage.segments import Segments, segments_by_index, segments_by_position

__all__ = [
    "OUTPUT_DTYPES",
    "ConstantGroups",
    "GroupMoments",
    "Segments",
    "constant_groups",
    "device_problem",
    "group_advantages",
    "group_moments",
    "resolve_device",
    "segments_by_index",
    "segments_by_position",
]
