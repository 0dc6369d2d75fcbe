"""Compiled shaping stages and running a chain of them in declared order.

Example::

    >>> import torch
    >>> from rewardrouter.config.stages import ClipStage
    >>> from rewardrouter.shape import ShapeBatch, compile_stage
    >>> stage, problems = compile_stage(ClipStage(min=0.0, max=1.0), "post_process[0]")
    >>> stage(torch.tensor([-0.5, 0.5, 2.0], dtype=torch.float64), ShapeBatch()).tolist()
    [0.0, 0.5, 1.0]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from rewardrouter.config.stages import ADVANTAGE_KINDS, CustomStage, PostProcessStage
from rewardrouter.errors import Problem, RewardError
from rewardrouter.shape.batch import ShapeBatch
from rewardrouter.shape.builtin import BUILTIN_STAGES
from rewardrouter.shape.custom import resolve_custom

if TYPE_CHECKING:
    from torch import Tensor


@dataclass(frozen=True)
class CompiledStage:
    """One shaping stage ready to run: its config, its YAML path and, for ``custom``, the
    resolved function.

    Calling it maps float64 ``rewards`` (with ``batch`` aligned to them) to a new float64
    tensor of the same shape on the same device.
    """

    config: PostProcessStage
    where: str
    custom: Callable[..., Any] | None = None

    def __call__(self, rewards: Tensor, batch: ShapeBatch) -> Tensor:
        if self.custom is None:
            return BUILTIN_STAGES[self.config.kind](self.config, rewards, batch, self.where)
        return self._call_custom(self.custom, rewards, batch)

    def _call_custom(self, fn: Callable[..., Any], rewards: Tensor, batch: ShapeBatch) -> Tensor:
        import torch

        assert isinstance(self.config, CustomStage)
        name = f"{self.where} ({self.config.path})"
        try:
            returned = fn(rewards, batch, **self.config.kwargs)
            out = (
                None
                if returned is None
                else torch.as_tensor(returned, dtype=torch.float64, device=rewards.device)
            )
        except Exception as exc:
            raise RewardError(
                f"custom stage {name} raised {type(exc).__name__}: {exc}",
                route=batch.route,
                function=self.config.path,
            ) from exc
        if out is None:  # torch would say it "could not infer dtype of NoneType"
            raise RewardError(
                f"custom stage {name} returned None; a stage returns the shaped rewards, one "
                f"per reward: end it with `return rewards` (or the tensor it computed), since "
                f"changing `rewards` in place does not return it",
                route=batch.route,
                function=self.config.path,
            )
        if out.shape != rewards.shape:
            raise RewardError(
                f"custom stage {name} returned shape {tuple(out.shape)} for rewards of shape "
                f"{tuple(rewards.shape)}; return one value per reward, in order",
                route=batch.route,
                function=self.config.path,
            )
        bad = (~torch.isfinite(out)).nonzero()
        if bad.numel():
            i = int(bad[0, 0])
            sample = i if batch.index is None else int(batch.index[i])
            raise RewardError(
                f"custom stage {name} returned {float(out[i])} for sample {sample}; "
                f"stages must return finite rewards",
                index=sample,
                route=batch.route,
                function=self.config.path,
            )
        return out


def compile_stage(
    stage: PostProcessStage, where: str
) -> tuple[CompiledStage | None, list[Problem]]:
    """Check one shaping stage (resolve and check a custom one); problems carry ``where``."""
    if stage.kind in ADVANTAGE_KINDS:
        return None, [
            Problem(
                f"{where}.kind",
                f"`{stage.kind}` is an advantage estimator, not a shaping stage",
                "put it last in `post_process`",
            )
        ]
    if isinstance(stage, CustomStage):
        fn, problems = resolve_custom(stage, where)
        return (None, problems) if fn is None else (CompiledStage(stage, where, fn), [])
    return CompiledStage(stage, where), []


def run_stages(
    stages: Sequence[CompiledStage],
    rewards: Tensor,
    batch: ShapeBatch,
    mask: Tensor | None = None,
    route: str | None = None,
) -> None:
    """Apply ``stages`` in order to the entries of ``rewards`` where ``mask`` holds (all when
    ``None``), writing the results back into ``rewards``.
    """
    if mask is None:
        selected, sub_batch = rewards, replace(batch, route=route)
    elif bool(mask.any()):
        selected, sub_batch = rewards[mask], batch.select(mask, route)
    else:
        return
    for stage in stages:
        selected = stage(selected, sub_batch)
    if mask is None:
        rewards.copy_(selected)
    else:
        rewards[mask] = selected
