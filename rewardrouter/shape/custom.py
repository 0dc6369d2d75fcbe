"""Resolve a ``custom`` shaping stage and check its signature when the router compiles.

The contract (see :class:`~rewardrouter.config.stages.CustomStage`)::

    def my_stage(rewards: Tensor, batch: ShapeBatch, *, floor: float = 0.0) -> Tensor:
        return rewards.clamp(min=floor)

configured as ``{kind: custom, path: my_pkg.stages.my_stage, kwargs: {floor: -1.0}}``. Import
paths resolve and kwargs bind exactly as for reward functions (one resolver serves both); a
problem is reported with its YAML path instead of surfacing at the first batch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rewardrouter.config.stages import CustomStage
from rewardrouter.errors import Problem
from rewardrouter.introspect import (
    ResolveError,
    check_kwargs,
    import_path,
    is_async,
    positional_params,
    read_signature,
    takes_varargs,
)

_CONTRACT = "a custom stage is `fn(rewards: Tensor, batch: ShapeBatch, **kwargs) -> Tensor`"


def resolve_custom(
    stage: CustomStage, where: str
) -> tuple[Callable[..., Any] | None, list[Problem]]:
    """Import ``stage.path`` and check that ``fn(rewards, batch, **stage.kwargs)`` binds.

    Returns the function and no problems, or ``None`` and the problem found, located at the
    stage's YAML path ``where`` (``.path`` for import problems).
    """
    try:
        fn = import_path(stage.path)
        sig = read_signature(fn, stage.path)
    except ResolveError as exc:
        return None, [Problem(f"{where}.path", str(exc), exc.hint)]
    if is_async(fn):
        return None, [
            Problem(
                f"{where}.path",
                f"{stage.path} is async; shaping stages run synchronously in the post-process hook",
                "make it a plain `def`: it works on tensors, there is nothing to await",
            )
        ]
    positional = positional_params(sig)
    if len(positional) < 2 and not takes_varargs(sig):
        return None, [
            Problem(
                f"{where}.path",
                f"{stage.path}{sig} does not take the two arguments (rewards, batch)",
                _CONTRACT,
            )
        ]
    try:
        check_kwargs(sig, min(2, len(positional)), stage.kwargs, stage.path)
    except ResolveError as exc:
        return None, [Problem(where, str(exc), exc.hint)]
    return fn, []
