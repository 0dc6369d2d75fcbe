"""The check users run on every batch: constant groups must get zero advantages.

Example::

    >>> import torch
    >>> from rewardrouter.advantage import constant_groups, group_advantages
    >>> rewards = torch.tensor([0.3, 0.3, 1.0, 0.0])
    >>> groups = torch.tensor([5, 5, 9, 9])
    >>> constant_groups(rewards, groups, group_advantages(rewards, groups))
    ConstantGroups(groups=1, max_abs_advantage=0.0)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from torch import Tensor


class ConstantGroups(NamedTuple):
    """How many groups (of two or more valid members) hold one reward value, and the largest
    absolute advantage any of their valid members received (0.0 when there are none).
    """

    groups: int
    max_abs_advantage: float

    @property
    def all_zero(self) -> bool:
        """True when every constant group got exactly zero advantages."""
        return self.max_abs_advantage == 0.0


def constant_groups(
    rewards: Tensor, group_ids: Tensor, advantages: Tensor, *, valid: Tensor | None = None
) -> ConstantGroups:
    """Find the groups whose valid rewards are all equal and measure their advantages.

    One pass of segment minima and maxima on the device of ``rewards``; ``group_ids`` follow
    the rules of :func:`~rewardrouter.advantage.group_advantages` (any ids, any order).
    """
    import torch  # here: ConstantGroups is also the answer of the torch-free host path

    from rewardrouter.advantage.segments import segments_by_index

    seg = segments_by_index(group_ids.to(rewards.device), valid)
    x = rewards.to(torch.float64)
    lo = torch.full((seg.slots,), torch.inf, dtype=torch.float64, device=x.device)
    hi = torch.full((seg.slots,), -torch.inf, dtype=torch.float64, device=x.device)
    lo.scatter_reduce_(0, seg.ids, x, "amin")
    hi.scatter_reduce_(0, seg.ids, x, "amax")
    constant = (lo == hi) & (seg.sizes > 1)
    members = seg.gather(constant)
    if seg.valid is not None:
        members &= seg.valid
    adv = advantages.to(device=x.device, dtype=torch.float64).abs().masked_fill_(~members, 0.0)
    return ConstantGroups(int(constant.sum()), float(adv.max()) if adv.numel() else 0.0)
