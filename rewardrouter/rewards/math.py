"""``math``: final-answer grading with math-verify, cheap comparisons first."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from rewardrouter.rewards.boxes import final_answer
from rewardrouter.rewards.equivalence import answers_match, free_form_match
from rewardrouter.rewards.labels import label_texts
from rewardrouter.rewards.registry import BoxedAnswer, builtin

# How much of the end of an unboxed response math-verify's own extraction reads.
_FALLBACK_TAIL = 2000


@builtin("math", cpu_heavy=True)
def math_answer(
    response: str,
    label: Any,
    metadata: Mapping[str, Any],
    *,
    extract: Literal["boxed", "any"] = "boxed",
) -> float | None:
    """1.0 when the response's last ``\\boxed{}`` equals the label mathematically, else 0.0.

    Contract: the answer is the content of the last complete ``\\boxed{}`` / ``\\fbox{}`` (several
    boxes: the last counts). With ``extract: any`` a response without a box is read as
    math-verify reads it (``final answer is``, ``Answer:``, the last LaTeX or number of its last
    2,000 characters); with the default ``boxed`` it scores 0.0. A box left open (the response was
    cut mid-answer) scores 0.0 either way, never an earlier box. The label may be a number, LaTeX,
    contain ``\\boxed{}``, or be a list of acceptable answers. Comparison is math-verify's verdict
    (``0.5`` = ``\\frac{1}{2}`` = ``\\dfrac12``, sets, intervals, units, ``1{,}000``), reached by
    exact and numeric checks where they decide and math-verify where they cannot (see
    :mod:`~rewardrouter.rewards.equivalence`; a trailing ``%`` is ignored on both sides). Answers
    over 1,000 characters score 0.0. ``None`` when the label is missing or blank. Under
    ``boxed_math`` the router hands over the box's content and it is graded as the answer.
    CPU-heavy: math-verify's own SIGALRM timeouts are off; the executor's deadline bounds it.
    """
    golds = label_texts(label)
    if golds is None:
        return None
    if isinstance(response, BoxedAnswer):
        return float(answers_match(response, golds))
    answer = final_answer(response)
    if answer is not None:
        return float(answers_match(answer, golds))
    if extract == "any" and "\\boxed" not in response and "\\fbox" not in response:
        return float(free_form_match(response[-_FALLBACK_TAIL:], golds))
    return 0.0
