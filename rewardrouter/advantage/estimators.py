"""Group advantage estimators: ``grpo``, ``rloo``, ``reinforce_pp_baseline`` and ``none``.

Every estimator works on float64 rewards centered on their group means
(:func:`~rewardrouter.advantage.moments.group_moments`), so that:

* a **constant group** (all valid members equal, whatever the value, size or output dtype) gets
  advantage exactly 0.0;
* a **singleton group** (one valid member) gets 0: with no sibling there is no baseline;
* a **zero-std group** gets 0 under ``grpo`` (``std: group``) rather than ``0 / eps``;
* an **invalid sample** (``valid`` False: reward None, skipped or failed) is left out of every
  statistic and gets 0.

Standard deviations are unbiased (divide by ``n - 1``), as slime, verl and TRL compute them:
a group of two rewards ``a != b`` gets ``±1/sqrt(2)`` (minus a hair for ``eps``) under ``grpo``.

Example::

    >>> import torch
    >>> from rewardrouter.advantage import group_advantages
    >>> from rewardrouter.config.stages import GRPOStage
    >>> group_advantages(torch.tensor([1.0, 0.0, 0.3, 0.3]), torch.tensor([0, 0, 1, 1]),
    ...                  GRPOStage(device="cpu")).tolist()
    [0.7071057558059692, -0.7071057558059692, 0.0, 0.0]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from rewardrouter.advantage import cpu
from rewardrouter.advantage.device import resolve_device
from rewardrouter.advantage.moments import GroupMoments, group_moments
from rewardrouter.advantage.segments import Segments, segments_by_index, segments_by_position
from rewardrouter.config.stages import (
    ADVANTAGE_KINDS,
    AdvantageStage,
    GRPOStage,
    NoAdvantageStage,
    ReinforcePPBaselineStage,
    RLOOStage,
    require_functions,
)

OUTPUT_DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16}


def grpo(stage: GRPOStage, moments: GroupMoments) -> Tensor:
    """``(r - group mean) / (std + eps)``; ``std`` scope ``group``, ``batch``, or ``none`` (Dr.GRPO)."""
    if stage.std == "none":
        return torch.full((), 1 / moments.scale, dtype=torch.float64, device=moments.means.device)
    std = moments.group_std() if stage.std == "group" else moments.batch_std()
    return _inverse(std, stage.eps * moments.scale)


def rloo(stage: RLOOStage, moments: GroupMoments) -> Tensor:
    """``r - mean of the other members`` = ``n / (n - 1) * (r - group mean)``."""
    n = moments.sizes
    return torch.where(n > 1, n / (n - 1), 0.0).div_(moments.scale)


def reinforce_pp_baseline(stage: ReinforcePPBaselineStage, moments: GroupMoments) -> Tensor:
    """REINFORCE++ with baseline: ``r - group mean``, divided by its batch std (+ ``eps``).

    The group-centered rewards average to zero over the batch by construction, so whitening only
    rescales them (at sample level; token-level whitening is the trainer's business). Not
    subtracting that zero keeps constant groups at exactly 0.
    """
    return _inverse(moments.centered_batch_std(), stage.eps * moments.scale)


# Every estimator is "centered reward times a factor": the factor per slot, or one for the batch.
_FACTORS: dict[str, Callable[[Any, GroupMoments], Tensor]] = {
    "grpo": grpo,
    "rloo": rloo,
    "reinforce_pp_baseline": reinforce_pp_baseline,
}
# `none` passes rewards through (see group_advantages); every other kind needs its factor.
require_functions(ADVANTAGE_KINDS - {"none"}, _FACTORS, __name__)


def group_advantages(
    rewards: Tensor,
    group_ids: Tensor | None = None,
    stage: AdvantageStage | None = None,
    *,
    valid: Tensor | None = None,
) -> Tensor:
    """Advantages of a flat batch of rewards under the estimator ``stage`` (default: GRPO).

    ``rewards`` is 1-D (any real dtype). ``group_ids`` holds one integer per sample (any values,
    any order, any group sizes); it must be ``None`` when ``stage.group_by`` is ``position``
    (``stage.n_samples_per_prompt`` consecutive samples per group). ``valid`` (bool) marks
    samples that carry a reward; the others may hold anything (NaN) and get 0.

    The computation runs in float64 on ``stage.device`` (see :func:`resolve_device`); the result
    has dtype ``stage.dtype`` and lives on the device ``rewards`` came from, so CUDA tensors
    stay on the GPU. See the module docstring for the policies.

    >>> group_advantages(torch.full((16,), 0.3), torch.zeros(16, dtype=torch.long)).abs().max()
    tensor(0.)
    """
    stage = GRPOStage() if stage is None else stage
    _check_shapes(rewards, group_ids, valid)
    device = resolve_device(stage.device, rewards)
    x = rewards.detach().to(device)  # advantages are targets: no gradient flows through them
    mask = None if valid is None else valid.to(device=device, dtype=torch.bool)
    out_dtype = OUTPUT_DTYPES[stage.dtype]
    if isinstance(stage, NoAdvantageStage):
        out = x.to(torch.float64, copy=True)
        if mask is not None:
            out.masked_fill_(~mask, 0.0)
        return _in_range(out.to(device=rewards.device, dtype=out_dtype), stage)
    moments = group_moments(x, _segments(stage, group_ids, mask, x.numel(), device))
    factor = _FACTORS[stage.kind](stage, moments)
    if factor.dim():
        factor = moments.segments.gather(factor, out=moments.scratch)
    out = cpu.multiply(moments.centered, factor, out_dtype).to(rewards.device)
    # Normalized advantages are at most sqrt(n - 1) in size; only the others can overflow.
    return out if _normalized(stage) else _in_range(out, stage)


def _normalized(stage: AdvantageStage) -> bool:
    return isinstance(stage, ReinforcePPBaselineStage) or (
        isinstance(stage, GRPOStage) and stage.std != "none"
    )


def _in_range(advantages: Tensor, stage: AdvantageStage) -> Tensor:
    """``advantages``, unless one is beyond the range of its dtype: then a ValueError."""
    if bool(torch.isfinite(advantages).all()):
        return advantages
    i = int((~torch.isfinite(advantages)).nonzero()[0, 0])
    raise ValueError(
        f"the advantage of sample {i} is beyond the range of {stage.dtype} "
        f"({float(advantages[i])}): the rewards are too large for unnormalized advantages; "
        f"set `dtype: float64` on the `{stage.kind}` stage, or add a `scale` stage before it"
    )


def _segments(
    stage: AdvantageStage,
    group_ids: Tensor | None,
    valid: Tensor | None,
    n: int,
    device: torch.device,
) -> Segments:
    if stage.group_by == "position":
        if group_ids is not None:
            raise ValueError("group_by: position takes no group ids; pass group_ids=None")
        assert stage.n_samples_per_prompt is not None  # the model validates this
        return segments_by_position(n, stage.n_samples_per_prompt, device=device, valid=valid)
    if group_ids is None:
        raise ValueError(
            "group_by: index needs group ids (one per sample); pass them, or set "
            "`group_by: position` with `n_samples_per_prompt`"
        )
    return segments_by_index(group_ids.to(device), valid)


def _inverse(std: Tensor, eps: float) -> Tensor:
    """``1 / (std + eps)`` where that is finite and ``std > 0``, else 0 (the zero-std policy)."""
    inverse = std.add(eps).reciprocal_().masked_fill_(std == 0, 0.0)
    # A batch std is NaN or infinite when the rewards' squares overflow float64.
    return inverse.nan_to_num_(nan=0.0, posinf=0.0)


def _check_shapes(rewards: Tensor, group_ids: Tensor | None, valid: Tensor | None) -> None:
    if rewards.dim() != 1:
        raise ValueError(f"rewards must be 1-D (one per sample), got shape {tuple(rewards.shape)}")
    for name, other in (("group_ids", group_ids), ("valid", valid)):
        if other is not None and other.shape != rewards.shape:
            raise ValueError(
                f"{name} has shape {tuple(other.shape)} but rewards has {tuple(rewards.shape)}"
            )
