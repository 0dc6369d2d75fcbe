"""Format rewards: ``think_format`` and ``boxed_format`` check shape, not correctness."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rewardrouter.rewards.registry import builtin, last_boxed
from rewardrouter.rewards.thinking import THINK_END, after_thinking

THINK_START = "<think>"


@builtin("think_format", boxable=False)
def think_format(
    response: str, label: Any, metadata: Mapping[str, Any], *, opened_by_prompt: bool = False
) -> float:
    """1.0 for one well-formed ``<think>…</think>`` block followed by an answer, else 0.0.

    Contract: the response must start (after whitespace) with ``<think>``, contain exactly one
    ``<think>`` and one ``</think>`` with non-blank reasoning between them, and non-blank text
    after ``</think>``. With ``opened_by_prompt`` (chat templates that end the prompt with
    ``<think>``) the response must instead contain no ``<think>`` and exactly one ``</think>``,
    with non-blank text on both sides. The label is ignored; an empty or cut-off response (no
    ``</think>`` yet) scores 0.0.
    """
    if response.count(THINK_END) != 1:
        return 0.0
    reasoning, _, answer = response.partition(THINK_END)
    if opened_by_prompt:
        ok = THINK_START not in response
    else:
        stripped = reasoning.lstrip()
        ok = stripped.startswith(THINK_START) and response.count(THINK_START) == 1
        reasoning = stripped[len(THINK_START) :]
    return float(ok and bool(reasoning.strip()) and bool(answer.strip()))


@builtin("boxed_format", boxable=False)
def boxed_format(response: str, label: Any, metadata: Mapping[str, Any]) -> float:
    """1.0 when the answer holds a complete, non-empty ``\\boxed{}``, else 0.0.

    Contract: looks after the last ``</think>`` (the whole response without one) for a
    ``\\boxed{...}`` or ``\\fbox{...}`` whose braces close and whose content is not blank; a box
    cut off mid-answer does not count. The label is ignored; an empty response scores 0.0.
    """
    answer = last_boxed(after_thinking(response))
    return float(answer is not None and bool(answer.strip()))
