"""The advantage stage on the CPU with NumPy alone, for a batch given as Python lists.

A process that has not imported torch (the command line, a fresh rollout worker) should not
import it, about 1.5 s of CPU, to compute the advantages of a few thousand rewards. For the
estimators whose every step is an elementwise IEEE operation or an in-order segment sum,
``grpo`` with ``std: group`` or ``std: none`` (Dr.GRPO), ``rloo`` and ``none``, NumPy gives the
bits that the torch path gives on the CPU:

* ``numpy.bincount`` adds weights in input order, as ``torch.bincount`` does; the torch path
  sums a batch in one chunk below :data:`~.kernels.SPLIT_FROM` samples (see :mod:`.cpu`), and
  larger batches are left to it;
* additions, subtractions, divisions and square roots are correctly rounded in both (the torch
  path takes its square roots from :func:`.cpu.sqrt_`, as torch's own is not on every CPU);
* the float64 products are rounded to the output dtype once, by
  :func:`~.kernels.rounded_product`, the kernel the torch path's :func:`.cpu.multiply` runs too.

A group std is the group's squared deviations (a segment sum) over ``max(n - 1, 1)``, its
square root, and the factor ``1 / (std + eps)``, or 0 where the std is 0 (the zero-std policy:
singletons, constant groups); a constant group's centered rewards are exactly 0, so its
advantages are too. A batch std (``grpo`` with ``std: batch``, ``reinforce_pp_baseline``) is a
reduction over the slots whose order torch decides, so those run on torch.
:func:`host_advantages` answers ``None`` for them and for everything else the torch path must
decide: ``bfloat16`` output, a batch of :data:`~.kernels.SPLIT_FROM` samples or more, an empty
batch, and every batch it would refuse or rescale (a NaN or infinite reward, rewards whose
squares overflow float64, ids it rejects), so that its errors and its scaling stay the only ones.

Example::

    >>> from rewardrouter.advantage.host import host_advantages
    >>> from rewardrouter.config.stages import RLOOStage
    >>> advantages, found = host_advantages([1.0, 0.0, 0.3, 0.3], [0, 0, 1, 1], RLOOStage())
    >>> advantages
    [1.0, -1.0, 0.0, 0.0]
    >>> found
    ConstantGroups(groups=1, max_abs_advantage=0.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np
import numpy.typing as npt

from rewardrouter.advantage.checks import ConstantGroups
from rewardrouter.advantage.kernels import SPLIT_FROM, rounded_product, slot_shift
from rewardrouter.config.stages import AdvantageStage, GRPOStage, NoAdvantageStage, RLOOStage

_OUTPUT_DTYPES: dict[str, type[np.floating]] = {"float32": np.float32, "float64": np.float64}

Floats = npt.NDArray[np.float64]


def handles(stage: AdvantageStage | None, samples: int) -> bool:
    """Whether :func:`host_advantages` can serve ``stage`` on a batch of ``samples`` (the
    device aside: the caller asks :func:`.device.runs_on_cpu`)."""
    if not 0 < samples < SPLIT_FROM:
        return False
    if stage is None:
        return True
    if isinstance(stage, GRPOStage):
        supported = stage.std != "batch"  # torch orders a batch std's sum (module docstring)
    else:
        supported = isinstance(stage, RLOOStage | NoAdvantageStage)
    return supported and stage.dtype in _OUTPUT_DTYPES


def host_advantages(
    rewards: Sequence[float | None],
    group_index: Sequence[int] | None,
    stage: AdvantageStage | None,
) -> tuple[list[float], ConstantGroups | None] | None:
    """The advantages of ``rewards`` (``None``: no reward, advantage 0) and the constant-group
    check, bit for bit as the torch path computes them on the CPU; ``None`` when that path must
    run instead (see the module docstring). Without a stage the rewards pass through.
    """
    if not handles(stage, len(rewards)):
        return None
    valid = np.array([r is not None for r in rewards], dtype=np.bool_)
    x = np.array([0.0 if r is None else float(r) for r in rewards], dtype=np.float64)
    if stage is None:
        return x.tolist(), None
    if not np.isfinite(x).all():
        return None  # the torch path names the sample
    ids = _group_ids(stage, group_index, len(rewards))
    if ids is None:
        return None
    slots, sizes = _slots(ids, valid)
    if isinstance(stage, NoAdvantageStage):
        with np.errstate(over="ignore"):  # an infinity is checked for next
            out = x.astype(_OUTPUT_DTYPES[stage.dtype])
        if not np.isfinite(out).all():
            return None  # beyond the output dtype: the torch path raises
    else:
        moments = _centered(x, ids, slots, sizes)
        if moments is None:
            return None
        centered, sq_dev = moments
        factor = _factor(stage, sizes, sq_dev)
        out = np.empty(x.shape, dtype=_OUTPUT_DTYPES[stage.dtype])
        rounded_product(centered, factor if factor.ndim == 0 else factor[ids], out)
        if not np.isfinite(out).all():
            return None
    return out.tolist(), _constant_groups(x, ids, slots, sizes, valid, out)


def _group_ids(
    stage: AdvantageStage, group_index: Sequence[int] | None, n: int
) -> npt.NDArray[np.int64] | None:
    """One group id per sample: from ``group_index``, or by position; ``None`` where the torch
    path raises (no ids, a batch that is not a multiple of the group size, ids beyond int64)."""
    if stage.group_by == "position":
        assert stage.n_samples_per_prompt is not None  # the model validates this
        if group_index is not None or n % stage.n_samples_per_prompt:
            return None
        return np.arange(n, dtype=np.int64) // stage.n_samples_per_prompt
    if group_index is None:
        return None
    try:
        ids = np.array(group_index, dtype=np.int64)
    except (OverflowError, TypeError, ValueError):
        return None
    shift = slot_shift(int(ids.min()), int(ids.max()), n)
    if shift is None:
        return np.unique(ids, return_inverse=True)[1].reshape(-1)
    return ids - shift if shift else ids


def _slots(ids: npt.NDArray[np.int64], valid: npt.NDArray[np.bool_]) -> tuple[int, Floats]:
    """Move the invalid samples into one extra slot of size 0 (in place); the slot count and
    the valid members per slot."""
    slots = int(ids.max()) + 1
    if valid.all():
        return slots, np.bincount(ids, minlength=slots).astype(np.float64)
    ids[~valid] = slots
    sizes = np.bincount(ids, minlength=slots + 1).astype(np.float64)
    sizes[-1] = 0.0
    return slots + 1, sizes


def _centered(
    x: Floats, ids: npt.NDArray[np.int64], slots: int, sizes: Floats
) -> tuple[Floats, Floats] | None:
    """``x`` (0.0 where there is no reward) minus its group means, centered twice
    (:mod:`.moments` explains why a constant group ends at exactly 0), and the squared
    deviations per slot; ``None`` when a sum overflows (the torch path rescales)."""
    divisor = np.maximum(sizes, 1.0)
    means = np.bincount(ids, x, slots) / divisor
    if not np.isfinite(means).all():
        return None
    centered = x - means[ids]
    shift = np.bincount(ids, centered, slots) / divisor
    centered -= shift[ids]
    with np.errstate(over="ignore"):  # the torch path rescales such rewards
        # float64 with float weights (numpy's stubs say int)
        sq_dev = cast(Floats, np.bincount(ids, centered * centered, slots))
    return (centered, sq_dev) if np.isfinite(sq_dev).all() else None


def _factor(stage: AdvantageStage, sizes: Floats, sq_dev: Floats) -> Floats:
    """What the centered rewards are multiplied by: one per slot, or one for the batch."""
    if isinstance(stage, RLOOStage):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(sizes > 1, sizes / (sizes - 1), 0.0)
    assert isinstance(stage, GRPOStage) and stage.std != "batch"  # see handles()
    if stage.std == "none":
        return np.array(1.0)
    # The torch path's group_std and _inverse, step for step. A std that is not 0 is at least
    # the square root of the least double (about 2e-162), so its inverse is finite.
    std = np.sqrt(sq_dev / np.maximum(sizes - 1.0, 1.0))
    with np.errstate(divide="ignore"):  # eps 0 and std 0: set to 0 next
        inverse = 1.0 / (std + stage.eps)
    inverse[std == 0.0] = 0.0
    return inverse


def _constant_groups(
    x: Floats,
    ids: npt.NDArray[np.int64],
    slots: int,
    sizes: Floats,
    valid: npt.NDArray[np.bool_],
    advantages: npt.NDArray[np.floating],
) -> ConstantGroups:
    """:func:`.checks.constant_groups` on the same batch: a group is constant when every valid
    member equals one of them (equality is exact, so any member serves as the reference)."""
    reference = np.zeros(slots)
    reference[ids] = x
    differs = np.bincount(ids, x != reference[ids], slots) > 0
    constant = ~differs & (sizes > 1)
    members = constant[ids] & valid
    largest = np.abs(advantages.astype(np.float64), where=members, out=np.zeros(len(x))).max()
    return ConstantGroups(int(constant.sum()), float(largest))
