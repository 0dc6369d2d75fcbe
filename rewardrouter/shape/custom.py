"""Resolve a ``custom`` shaping stage and check its signature when the router compiles.

The contract (see :class:`~rewardrouter.config.stages.CustomStage`)::

    def my_stage(rewards: Tensor, batch: ShapeBatch, *, floor: float = 0.0) -> Tensor:
        return rewards.clamp(min=floor)

configured as ``{kind: custom, path: my_pkg.stages.my_stage, kwargs: {floor: -1.0}}``. Import
paths resolve and kwargs bind exactly as for reward functions (one resolver serves both); a
problem is reported with its YAML path instead of surfacing at the first batch.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from rewardrouter._errors import Problem
from rewardrouter.config.stages import CustomStage

_CONTRACT = "a custom stage is `fn(rewards: Tensor, batch: ShapeBatch, **kwargs) -> Tensor`"


def resolve_custom(
    stage: CustomStage, where: str
) -> tuple[Callable[..., Any] | None, list[Problem]]:
    """Import ``stage.path`` and check that ``fn(rewards, batch, **stage.kwargs)`` binds.

    Returns the function and no problems, or ``None`` and the problem found, located at the
    stage's YAML path ``where`` (``.path`` for import problems).
    """
    # Imported here, not at the top: the compile package imports this one to build routers.
    from rewardrouter.compile.functions import (
        ResolveError,
        _check_kwargs,
        _is_async,
        import_path,
    )

    try:
        fn = import_path(stage.path)
    except ResolveError as exc:
        return None, [Problem(f"{where}.path", str(exc), exc.hint)]
    if _is_async(fn):
        return None, [
            Problem(
                f"{where}.path",
                f"{stage.path} is async; shaping stages run synchronously in the post-process hook",
                "make it a plain `def`: it works on tensors, there is nothing to await",
            )
        ]
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None, [Problem(f"{where}.path", f"cannot read the signature of {stage.path}")]
    params = sig.parameters.values()
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) < 2 and not any(p.kind is p.VAR_POSITIONAL for p in params):
        return None, [
            Problem(
                f"{where}.path",
                f"{stage.path}{sig} does not take the two arguments (rewards, batch)",
                _CONTRACT,
            )
        ]
    try:
        _check_kwargs(sig, min(2, len(positional)), stage.kwargs, stage.path)
    except ResolveError as exc:
        return None, [Problem(where, str(exc), exc.hint)]
    return fn, []
