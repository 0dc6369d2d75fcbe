"""Group means and squared deviations in float64, exact for constant groups.

The float32 mean of sixteen rewards of 0.3 is not 0.3, so the usual ``x - mean`` leaves every
member of that constant group a same-sign residue, which normalization by a tiny std then blows
up. Here a constant group's centered rewards are **exactly 0.0**, by construction:

* rewards that have at most 24 significant bits (float32, float16, bfloat16 inputs) are summed in
  float64, where ``n`` copies of ``v`` add up to exactly ``n * v`` for any group below 2**29
  members; the mean is then exactly ``v`` and ``v - mean`` is 0.
* other rewards (float64, integers) are centered twice: after the first pass the members of a
  constant group all hold the same small residue ``d = v - mean``, which is a small integer
  multiple of the last place of ``v`` (Sterbenz: ``v - mean`` is exact), so ``n`` copies of it
  add up exactly and the second pass removes it to exactly 0. For other groups the second pass
  is the classic correction that makes the float64 mean accurate to the last bits.

Rewards so large that a group's sum or squared deviations overflow float64 (beyond about
``1.3e154``) are multiplied by a power of two first — exactly, no bit is lost — so that the
largest is about ``2**500``; ``scale`` records the factor, and the estimators divide it out.

Example::

    >>> import torch
    >>> from rewardrouter.advantage import group_moments, segments_by_index
    >>> seg = segments_by_index(torch.zeros(16, dtype=torch.int64))
    >>> m = group_moments(torch.full((16,), 0.3), seg)
    >>> bool((m.centered == 0).all())
    True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from rewardrouter.advantage import cpu
from rewardrouter.advantage.segments import Segments

# Dtypes whose values carry at most 24 significant bits: one float64 pass is exact (see above).
_NARROW = frozenset({torch.float32, torch.float16, torch.bfloat16})


@dataclass(frozen=True)
class GroupMoments:
    """Per-sample centered rewards and per-slot statistics of one batch.

    ``centered`` (float64, one per sample) is the reward minus its group's mean, exactly 0.0 in
    every group whose valid members are equal and for every invalid sample. ``means`` and
    ``sq_dev`` (sum of squared deviations) hold one float64 per slot of ``segments``.
    ``centered`` and ``scratch`` (a float64 buffer of the same size) are fresh: whoever consumes
    the moments may overwrite them, which saves allocating per-sample buffers.
    """

    segments: Segments
    centered: Tensor
    scratch: Tensor
    means: Tensor
    sq_dev: Tensor
    #: The power of two the rewards were multiplied by before centering (1.0 but for rewards
    #: whose squares overflow float64): ``centered``, ``means`` and ``sq_dev`` are of the
    #: scaled rewards.
    scale: float = 1.0

    @property
    def sizes(self) -> Tensor:
        """Valid members per slot (float64)."""
        return self.segments.sizes

    def group_std(self) -> Tensor:
        """Unbiased (``n - 1``) std per slot; 0 for slots with fewer than two members."""
        # Below two members the squared deviations are exactly 0, and so is 0 / 1.
        return cpu.sqrt_(self.sq_dev.div((self.sizes - 1).clamp_(min=1)))

    def batch_std(self) -> Tensor:
        """Unbiased std of the valid rewards over the whole batch (0-dim; 0 below two)."""
        n = self.sizes
        total = n.sum()
        grand_mean = (n * self.means).sum() / total.clamp(min=1)
        # Chan et al.: within-group plus between-group squared deviations.
        squares = self.sq_dev.sum() + (n * (self.means - grand_mean).square()).sum()
        return cpu.sqrt_(torch.where(total > 1, squares / (total - 1), 0.0))

    def centered_batch_std(self) -> Tensor:
        """Unbiased std of ``centered`` over the valid samples (0-dim; 0 below two).

        ``centered`` sums to zero within every group, hence over the batch, so its squared
        deviations are the group ``sq_dev`` summed.
        """
        total = self.sizes.sum()
        return cpu.sqrt_(torch.where(total > 1, self.sq_dev.sum() / (total - 1), 0.0))


def group_moments(rewards: Tensor, segments: Segments) -> GroupMoments:
    """Center ``rewards`` on their group means (see the module docstring for exactness).

    Raises :class:`ValueError` naming the first offending sample when a valid reward is NaN or
    infinite.
    """
    moments = _moments(rewards, cpu.cast(rewards, torch.float64), segments, 1.0)
    if moments is None:  # finite rewards whose sums or squares overflow: scale them down
        x = cpu.cast(rewards, torch.float64)
        if segments.valid is not None:
            x.masked_fill_(~segments.valid, 0.0)
        low, high = (abs(float(v)) for v in torch.aminmax(x))
        scale = math.ldexp(1.0, 500 - math.frexp(max(low, high))[1])
        moments = _moments(rewards, x.mul_(scale), segments, scale)
        assert moments is not None  # the largest is now below 2**500
    return moments


def _moments(
    rewards: Tensor, centered: Tensor, segments: Segments, scale: float
) -> GroupMoments | None:
    """The moments of ``centered`` (``rewards`` in float64, times ``scale``, fresh); None if a
    group's sum or squared deviations overflow."""
    if segments.valid is not None:
        centered.masked_fill_(~segments.valid, 0.0)
    means = _mean(segments.sum(centered), segments.sizes)
    if not _finite(means):
        _check_rewards(rewards, segments)
        return None
    scratch = segments.gather(means)
    centered.sub_(scratch)
    if rewards.dtype not in _NARROW:
        shift = _mean(segments.sum(centered), segments.sizes)
        centered.sub_(segments.gather(shift, out=scratch))
        means = means + shift
    sq_dev = segments.sum(torch.mul(centered, centered, out=scratch))
    if not _finite(sq_dev):
        return None
    return GroupMoments(segments, centered, scratch, means, sq_dev, scale)


def _mean(sums: Tensor, sizes: Tensor) -> Tensor:
    """``sums / sizes`` in place of ``sums``; empty slots have sum 0 and mean 0."""
    return sums.div_(sizes.clamp(min=1))


def _finite(values: Tensor) -> bool:
    return math.isfinite(float(values.sum())) or bool(torch.isfinite(values).all())


def _check_rewards(rewards: Tensor, segments: Segments) -> None:
    """Raise :class:`ValueError` for the first valid reward that is NaN or infinite."""
    bad = ~torch.isfinite(rewards)
    if segments.valid is not None:
        bad &= segments.valid
    where = bad.nonzero()
    if where.numel():
        i = int(where[0, 0])
        raise ValueError(
            f"reward of sample {i} is {float(rewards[i])}; advantages need finite rewards "
            f"(mark a missing reward invalid instead of NaN)"
        )
