"""The built-in shaping stages: ``clip``, ``scale``, ``overlong_penalty``, ``truncation_penalty``
and ``quantize``.

Each is a pure function ``(stage, rewards, batch, where) -> Tensor`` on float64 rewards: it
returns a new tensor and leaves ``rewards`` alone. ``where`` is the stage's YAML path, for
error messages.

Example::

    >>> import torch
    >>> from rewardrouter.config.stages import OverlongPenaltyStage
    >>> from rewardrouter.shape import ShapeBatch
    >>> from rewardrouter.shape.builtin import overlong_penalty
    >>> stage = OverlongPenaltyStage(max_len=100, buffer=20, factor=1.0)
    >>> batch = ShapeBatch(response_length=torch.tensor([50.0, 90.0, 120.0]))
    >>> overlong_penalty(stage, torch.ones(3, dtype=torch.float64), batch, "post_process[0]").tolist()
    [1.0, 0.5, 0.0]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

from rewardrouter.config.stages import (
    SHAPING_KINDS,
    ClipStage,
    OverlongPenaltyStage,
    QuantizeStage,
    ScaleStage,
    TruncationPenaltyStage,
    require_functions,
)
from rewardrouter.shape.batch import Field, ShapeBatch

if TYPE_CHECKING:
    from torch import Tensor

# Each stage imports torch when it runs: compiling a router does not need it.


def clip(stage: ClipStage, rewards: Tensor, batch: ShapeBatch, where: str) -> Tensor:
    """Clamp into ``[stage.min, stage.max]``."""
    if stage.min is None and stage.max is None:
        return rewards.clone()
    return rewards.clamp(min=stage.min, max=stage.max)


def scale(stage: ScaleStage, rewards: Tensor, batch: ShapeBatch, where: str) -> Tensor:
    """``r * mul + add``, or the linear map taking ``source`` onto ``target``."""
    if stage.source is None or stage.target is None:
        return rewards * stage.mul + stage.add
    (s0, s1), (t0, t1) = stage.source, stage.target
    return (rewards - s0) * ((t1 - t0) / (s1 - s0)) + t0


def overlong_penalty(
    stage: OverlongPenaltyStage, rewards: Tensor, batch: ShapeBatch, where: str
) -> Tensor:
    """Add DAPO's soft penalty: 0 up to ``max_len - buffer``, linear to ``-factor`` at ``max_len``."""
    import torch

    length = batch.require("response_length", stage=where).to(rewards)
    if stage.buffer == 0:
        return rewards - torch.where(length > stage.max_len, stage.factor, 0.0)
    excess = (length - (stage.max_len - stage.buffer)) / stage.buffer
    return rewards - excess.clamp(min=0.0, max=1.0) * stage.factor


def truncation_penalty(
    stage: TruncationPenaltyStage, rewards: Tensor, batch: ShapeBatch, where: str
) -> Tensor:
    """Truncated samples: reward times ``factor``, or ``value``; others unchanged."""
    import torch

    truncated = batch.require("truncated", stage=where).to(device=rewards.device, dtype=torch.bool)
    if stage.factor is not None:
        return torch.where(truncated, rewards * stage.factor, rewards)
    assert stage.value is not None  # the model holds exactly one of the two
    return torch.where(truncated, stage.value, rewards)


def quantize(stage: QuantizeStage, rewards: Tensor, batch: ShapeBatch, where: str) -> Tensor:
    """Nearest multiple of ``step`` (ties to even), e.g. step 0.5: 0.74 → 0.5, 0.75 → 1.0."""
    return (rewards / stage.step).round() * stage.step


BuiltinStage: TypeAlias = "Callable[[Any, Tensor, ShapeBatch, str], Tensor]"

#: Per-sample fields a built-in stage reads besides the rewards, which every sample must then
#: carry (``truncated`` is always known: it comes from the status).
STAGE_INPUTS: dict[str, tuple[Field, ...]] = {"overlong_penalty": ("response_length",)}

BUILTIN_STAGES: dict[str, BuiltinStage] = {
    "clip": clip,
    "scale": scale,
    "overlong_penalty": overlong_penalty,
    "truncation_penalty": truncation_penalty,
    "quantize": quantize,
}
# `custom` stages carry their own function (resolved when the router compiles).
require_functions(SHAPING_KINDS - {"custom"}, BUILTIN_STAGES, __name__)
