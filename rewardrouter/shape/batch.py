"""What a shaping stage may read besides the rewards.

Example::

    >>> import torch
    >>> from rewardrouter.shape import ShapeBatch
    >>> batch = ShapeBatch(response_length=torch.tensor([10.0, 900.0]))
    >>> batch.require("response_length", stage="post_process[0]").tolist()
    [10.0, 900.0]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from torch import Tensor

Field = Literal["response_length", "truncated", "group_index"]


class MissingInputError(ValueError):
    """A stage needs a per-sample field that the batch does not carry."""


@dataclass(frozen=True)
class ShapeBatch:
    """Per-sample fields aligned with the rewards a stage receives (same length and order).

    ``response_length`` (float64, tokens), ``truncated`` (bool: the sample's status is
    ``truncated``) and ``group_index`` (int64) are ``None`` when the samples do not carry them.
    ``index`` (int64) holds each sample's position in the whole batch; ``route`` names the route
    whose shaping runs, ``None`` for global ``post_process`` stages.
    """

    response_length: Tensor | None = None
    truncated: Tensor | None = None
    group_index: Tensor | None = None
    index: Tensor | None = None
    route: str | None = None

    def require(self, name: Field, *, stage: str) -> Tensor:
        """The field ``name``; raises :class:`MissingInputError` naming ``stage`` when absent."""
        value: Tensor | None = getattr(self, name)
        if value is None:
            raise MissingInputError(
                f"{stage} needs `{name}` for every sample, but the samples carry none; "
                f"pass {name} to the post-processor (slime/miles samples have it)"
            )
        return value

    def select(self, mask: Tensor, route: str | None) -> ShapeBatch:
        """The fields of the samples where ``mask`` is true, for ``route``."""
        return ShapeBatch(
            response_length=None if self.response_length is None else self.response_length[mask],
            truncated=None if self.truncated is None else self.truncated[mask],
            group_index=None if self.group_index is None else self.group_index[mask],
            index=None if self.index is None else self.index[mask],
            route=route,
        )
