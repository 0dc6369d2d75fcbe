"""Custom shaping stages used by the shape tests (configs name them as ``rr_stagefns.<name>``)."""

from __future__ import annotations

from typing import Any

from torch import Tensor

from rewardrouter.shape import ShapeBatch

SEEN: list[list[float]] = []
NOT_A_FUNCTION = 3


def add_bonus(rewards: Tensor, batch: ShapeBatch, *, bonus: float = 0.0) -> Tensor:
    """Add ``bonus`` to every reward."""
    return rewards + bonus


def floor_at(rewards: Tensor, batch: ShapeBatch, floor: float) -> Tensor:
    """A stage with a required kwarg."""
    return rewards.clamp(min=floor)


def record(rewards: Tensor, batch: ShapeBatch) -> Tensor:
    """Remember which rewards the stage saw."""
    SEEN.append(rewards.tolist())
    return rewards


def per_token(rewards: Tensor, batch: ShapeBatch) -> Tensor:
    """Divide by the response length (reads a batch field)."""
    return rewards / batch.require("response_length", stage="per_token")


def as_list(rewards: Tensor, batch: ShapeBatch) -> list[float]:
    """Returns a plain list, which is accepted."""
    return [r * 10 for r in rewards.tolist()]


def wrong_length(rewards: Tensor, batch: ShapeBatch) -> Tensor:
    return rewards[:1]


def makes_nan(rewards: Tensor, batch: ShapeBatch) -> Tensor:
    return rewards * float("nan")


def raises(rewards: Tensor, batch: ShapeBatch) -> Tensor:
    raise RuntimeError("boom")


def in_place(rewards: Tensor, batch: ShapeBatch) -> None:
    rewards.clamp_(min=0.0)  # changes the tensor, returns nothing


def one_argument(rewards: Tensor) -> Tensor:
    return rewards


async def asynchronous(rewards: Tensor, batch: ShapeBatch) -> Tensor:
    return rewards


def anything(*args: Any, **kwargs: Any) -> Any:
    return args[0]
