"""Group advantages: exact, vectorized, on the GPU when there is one.

``group_advantages(rewards, group_ids, stage)`` turns a flat batch of rewards into advantages
(``grpo``, ``rloo``, ``reinforce_pp_baseline``, ``none``); ``constant_groups`` checks that groups
with a single reward value got exactly zero.

Importing this package does not import torch: each name is imported from its module on first
use, so that a batch the NumPy path serves (:mod:`.host`) never loads torch.

Example::

    >>> import torch
    >>> from rewardrouter.advantage import group_advantages
    >>> group_advantages(torch.full((16,), 0.3), torch.zeros(16, dtype=torch.long)).abs().max()
    tensor(0.)
"""

from typing import TYPE_CHECKING

from rewardrouter.introspect import lazy_exports

if TYPE_CHECKING:
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

__getattr__ = lazy_exports(
    globals(),
    {
        "ConstantGroups": "rewardrouter.advantage.checks",
        "constant_groups": "rewardrouter.advantage.checks",
        "device_problem": "rewardrouter.advantage.device",
        "resolve_device": "rewardrouter.advantage.device",
        "OUTPUT_DTYPES": "rewardrouter.advantage.estimators",
        "group_advantages": "rewardrouter.advantage.estimators",
        "GroupMoments": "rewardrouter.advantage.moments",
        "group_moments": "rewardrouter.advantage.moments",
        "Segments": "rewardrouter.advantage.segments",
        "segments_by_index": "rewardrouter.advantage.segments",
        "segments_by_position": "rewardrouter.advantage.segments",
    },
)
