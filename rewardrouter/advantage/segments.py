"""Vectorized group ("segment") operations on a flat batch of rewards.

Samples of one prompt group may sit anywhere in the batch and groups may have any size. Every
per-group statistic is one ``bincount``/``index_add`` over the whole batch, and every per-sample
read of a group statistic is one gather: no Python loop over groups or samples.

Example::

    >>> import torch
    >>> from rewardrouter.advantage import segments_by_index
    >>> seg = segments_by_index(torch.tensor([7, 3, 7, 3]))
    >>> seg.sum(torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64))[[3, 7]].tolist()
    [6.0, 4.0]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import torch
from torch import Tensor

from rewardrouter.advantage import cpu
from rewardrouter.advantage.kernels import slot_shift


@dataclass(frozen=True)
class Segments:
    """Group membership of a flat batch, as dense slot numbers.

    ``ids[i]`` (int64) is the slot of sample ``i`` and ``slots`` the number of slots. Slots may be
    empty (gaps between the caller's group ids). Samples marked invalid all share one extra slot
    whose entry in ``sizes`` is 0, so they never enter a statistic; ``valid`` is that mask, or
    ``None`` when every sample is valid. ``sizes`` (float64) counts the valid members per slot.

    On the CPU, ``bins`` holds the slots as int32 for ``bincount`` (the CPU's fastest segment
    sum, a third faster on int32) and ``host_ids`` is ``ids`` seen as a NumPy array, for
    NumPy's gather; both run split over torch's threads (see
    :mod:`~rewardrouter.advantage.cpu`). Elsewhere both are ``None``: sums use ``index_add_``
    (CUDA's ``bincount`` reads the largest id back to the host) and gathers ``take``.
    """

    ids: Tensor
    bins: Tensor | None
    slots: int
    sizes: Tensor
    valid: Tensor | None
    host_ids: npt.NDArray[np.int64] | None = field(default=None, compare=False)

    def sum(self, values: Tensor) -> Tensor:
        """Per-slot sums of the float64 per-sample ``values``."""
        if self.bins is not None:
            return cpu.segment_sum(self.bins, values, self.slots)
        return values.new_zeros(self.slots).index_add_(0, self.ids, values)

    def gather(self, per_slot: Tensor, out: Tensor | None = None) -> Tensor:
        """Each sample's entry of the per-slot float64 tensor ``per_slot`` (into ``out``, a
        contiguous float64 tensor of one entry per sample, when given)."""
        if self.host_ids is not None:
            return cpu.take(per_slot, self.host_ids, out)
        if out is None:
            return per_slot.take(self.ids)
        return torch.take(per_slot, self.ids, out=out)


def segments_by_index(group_ids: Tensor, valid: Tensor | None = None) -> Segments:
    """Segments from integer group ids in any order (any values, any group sizes).

    Ids whose range is at most a few times the batch size are used as slot numbers directly;
    others are renumbered with ``torch.unique(return_inverse=True)``.
    """
    if group_ids.dtype.is_floating_point or group_ids.dtype.is_complex:
        raise ValueError(f"group ids must be integers, got a {group_ids.dtype} tensor")
    ids = group_ids.to(torch.int64)
    n = ids.numel()
    if n == 0:
        return _finish(ids, 0, valid)
    lo, hi = (int(v) for v in torch.aminmax(ids))
    shift = slot_shift(lo, hi, n)
    if shift is None:
        unique, inverse = torch.unique(ids, return_inverse=True)
        return _finish(inverse, unique.numel(), valid)
    return _finish(ids - shift if shift else ids, hi - shift + 1, valid)


def segments_by_position(
    n: int, per_group: int, *, device: torch.device, valid: Tensor | None = None
) -> Segments:
    """Segments of ``per_group`` consecutive samples each (data without a group index).

    Raises :class:`ValueError` when ``n`` is not a multiple of ``per_group``: grouping a filtered
    batch by position would silently mix prompts.
    """
    if n % per_group:
        raise ValueError(
            f"group_by: position needs a batch size that is a multiple of n_samples_per_prompt "
            f"({per_group}); got {n} samples. Group by `group_index` when samples can be dropped"
        )
    ids = torch.arange(n, device=device).div_(per_group, rounding_mode="floor")
    return _finish(ids, n // per_group, valid)


def _finish(ids: Tensor, slots: int, valid: Tensor | None) -> Segments:
    if valid is not None and bool(valid.all()):
        valid = None
    if valid is not None:
        ids = torch.where(valid, ids, slots)
        slots += 1
    bins: Tensor | None = None
    host_ids: npt.NDArray[np.int64] | None = None
    if _uses_host_kernels(ids.device):
        bins = cpu.cast(ids, torch.int32) if slots < 2**31 else ids
        host_ids = ids.numpy(force=True)
        sizes = cpu.segment_sum(bins, None, slots).to(torch.float64)
    else:
        sizes = torch.zeros(slots, dtype=torch.float64, device=ids.device)
        sizes.index_add_(0, ids, torch.ones_like(ids, dtype=torch.float64))
    if valid is not None:
        sizes[-1] = 0.0
    return Segments(ids, bins, slots, sizes, valid, host_ids=host_ids)


def _uses_host_kernels(device: torch.device) -> bool:
    """Whether segments on ``device`` use ``bincount`` and NumPy gathers (else ``index_add_``
    and ``take``, as on a GPU)."""
    return device.type == "cpu"
