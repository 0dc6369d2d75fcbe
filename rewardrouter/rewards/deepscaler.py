"""``deepscaler``: the boxed answer after the reasoning, as DeepScaleR grades it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rewardrouter.outcome import UNDECIDED, Undecided
from rewardrouter.rewards.boxes import final_answer
from rewardrouter.rewards.labels import label_texts
from rewardrouter.rewards.math.equivalence import answers_match, decided_match
from rewardrouter.rewards.registry import BoxedAnswer, builtin
from rewardrouter.rewards.thinking import THINK_END

RESPONSE_MARKER = "###Response"


def _solution(response: str) -> str | None:
    """The text after the last ``</think>`` or else ``###Response``; None without either."""
    for marker in (THINK_END, RESPONSE_MARKER):
        _, found, tail = response.rpartition(marker)
        if found:
            return tail
    return None


def _deepscaler(response: str, label: Any, *, exact: bool) -> float | Undecided | None:
    golds = label_texts(label)
    if golds is None:
        return None
    if isinstance(response, BoxedAnswer):
        answer: str | None = response
    else:
        solution = _solution(response)
        answer = final_answer(solution) if solution is not None else None
    if answer is None:
        return 0.0
    matched = decided_match(answer, golds) if exact else answers_match(answer, golds)
    return UNDECIDED if matched is None else float(matched)


def deepscaler_quick(
    response: str, label: Any, metadata: Mapping[str, Any]
) -> float | Undecided | None:
    """``deepscaler`` without math-verify: the reward where the exact rules decide, else
    UNDECIDED."""
    return _deepscaler(response, label, exact=True)


@builtin("deepscaler", cpu_heavy=True, quick=deepscaler_quick)
def deepscaler(response: str, label: Any, metadata: Mapping[str, Any]) -> float | None:
    """1.0 when the last ``\\boxed{}`` after the reasoning equals the label, else 0.0.

    Contract: the solution is the text after the last ``</think>`` (else after the last
    ``###Response``); a response with neither marker — the model never finished thinking — scores
    0.0, as does a solution without a complete ``\\boxed{}``. The box's content is compared with
    each label entry (a label holding ``\\boxed{}`` is unboxed) by
    :func:`~rewardrouter.rewards.math.equivalence.answers_match`, as ``math`` compares. Under ``boxed_deepscaler`` the router hands over the last box's content and it is graded
    as the answer, with no marker required. ``None`` when the label is missing or blank.
    """
    reward = _deepscaler(response, label, exact=False)
    assert not isinstance(reward, Undecided)
    return reward
