"""Custom rewards for the slime example: one single-sample, one group reward.

slime's convention holds: reward functions are ``async def fn(args, sample)`` or, for group
rewards, ``async def fn(args, samples)``; the router detects which from the parameter name.
"""

from __future__ import annotations

from typing import Any


async def think_format(args: Any, sample: Any) -> dict[str, float]:
    """``score`` 1.0 when the response closes its ``<think>`` block before answering.

    ``closed`` tells whether a ``</think>`` appears at all (a second value a config may train
    or evaluate on with ``key`` / ``eval_key``).
    """
    head, closed, answer = sample.response.partition("</think>")
    good = bool(closed) and head.lstrip().startswith("<think>") and bool(answer.strip())
    return {"score": float(good), "closed": float(bool(closed))}


async def shortest_in_group(args: Any, samples: list[Any]) -> list[float]:
    """1.0 for the shortest response of its prompt group (``group_index``), else 0.0.

    The router calls this once per batch with every sample of its route, so it groups them
    itself; samples of other routes never reach it.
    """
    shortest: dict[Any, int] = {}
    for sample in samples:
        size = len(sample.response)
        shortest[sample.group_index] = min(size, shortest.get(sample.group_index, size))
    return [float(len(s.response) == shortest[s.group_index]) for s in samples]
