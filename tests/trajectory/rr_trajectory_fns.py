"""Reward functions that the trajectory tests name by import path."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def lengths(args: Any, samples: Sequence[Any]) -> list[float]:
    """The length of each response a group call receives; raises (failing the whole call)
    when one is not text, which no term reading text may be handed."""
    for sample in samples:
        if not isinstance(sample.response, str):
            raise TypeError(f"a {type(sample.response).__name__} response reached a text term")
    return [float(len(sample.response)) for sample in samples]


def message_count(args: Any, sample: Any) -> float:
    """How many messages the conversation a term reading ``conversation`` receives holds."""
    return float(len(sample.response.messages))
