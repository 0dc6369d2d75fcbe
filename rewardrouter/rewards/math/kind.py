"""``math``: final-answer grading, exact rules first and math-verify for the rest."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from rewardrouter.outcome import UNDECIDED, Undecided
from rewardrouter.rewards.boxes import final_run, joined
from rewardrouter.rewards.labels import label_texts
from rewardrouter.rewards.math.equivalence import answers_match, decided_match, free_form_match
from rewardrouter.rewards.registry import BoxedAnswer, builtin
from rewardrouter.rewards.statements import first_number, stated_answer
from rewardrouter.rewards.thinking import after_thinking

# How much of the end of an unboxed response math-verify's own extraction reads.
_FALLBACK_TAIL = 2000


def _math(response: str, label: Any, extract: str, *, exact: bool) -> float | Undecided | None:
    """The ``math`` reward; ``exact``: without math-verify (:data:`UNDECIDED` where it is needed)."""
    golds = label_texts(label)
    if golds is None:
        return None

    def judged(answer: str) -> float | Undecided:
        matched = decided_match(answer, golds) if exact else answers_match(answer, golds)
        return UNDECIDED if matched is None else float(matched)

    def read_freely(text: str) -> float | Undecided:
        return UNDECIDED if exact else float(free_form_match(text, golds))

    if isinstance(response, BoxedAnswer):
        return judged(response)
    response = after_thinking(response)  # a box in the thinking is not the answer
    run = final_run(response)
    if extract == "any":
        if run is None and ("\\boxed" in response or "\\fbox" in response):
            return 0.0  # cut off inside its last box
        tail = response[-_FALLBACK_TAIL:]
        stated = stated_answer(tail)
        if stated is not None and (run is None or len(response) - len(tail) + stated[1] > run[1]):
            # what the statement says, where the exact rules read it; a statement they cannot
            # read ("I hope the answer is right") leaves an earlier box the answer, and without
            # one math-verify reads the statement as free text ("Answer: Jane left 3 hours ago.")
            matched = decided_match(stated[0], golds)
            if matched is None and (number := first_number(stated[0])) is not None:
                matched = decided_match(number, golds)  # words: the value they start with
            if matched is not None:
                return float(matched)
            if run is None:
                return read_freely(tail[stated[1] :])
        if run is None:
            return read_freely(tail)
    return 0.0 if run is None else judged(joined(run[0]))


def math_quick(
    response: str,
    label: Any,
    metadata: Mapping[str, Any],
    *,
    extract: Literal["boxed", "any"] = "boxed",
) -> float | Undecided | None:
    """``math`` without math-verify: the reward where the exact rules decide, else UNDECIDED."""
    return _math(response, label, extract, exact=True)


@builtin("math", cpu_heavy=True, quick=math_quick)
def math_answer(
    response: str,
    label: Any,
    metadata: Mapping[str, Any],
    *,
    extract: Literal["boxed", "any"] = "boxed",
) -> float | None:
    """1.0 when the response's final answer equals the label mathematically, else 0.0.

    Contract: read after the last ``</think>`` (the whole response without one), the answer is
    the content of the last complete ``\\boxed{}`` / ``\\fbox{}``, or of the last run of boxes
    joined by connectors only (``\\boxed{2} and \\boxed{3}`` answers "2, 3"); see
    :mod:`~rewardrouter.rewards.boxes`. With ``extract: any`` an answer stated after
    the last box (``The final answer is $X$``, ``Answer: X``) wins over it, and a response with
    neither is read as math-verify reads it (the last LaTeX or number of its last 2,000
    characters); with the default ``boxed`` a response without a box scores 0.0. A box left open
    (the response was cut mid-answer) scores 0.0 either way, never an earlier box. The label may
    be a number, LaTeX, contain ``\\boxed{}`` (its final boxed answer counts; boxes separated by
    connectors or symbols only are one answer), be a solution or a sentence that states its
    answer (``The answer is 10000``, ``Answer: 10000``, GSM8K's ``#### 18``), a list of
    acceptable answers (also as JSON text), or verl's ``reward_model`` dict
    (:func:`~rewardrouter.rewards.labels.label_texts`); a label of another shape, or a statement
    without its answer, raises :class:`~rewardrouter.rewards.labels.LabelError` (that sample's
    error, never a 0.0). Comparison: exact where the rules of :mod:`~rewardrouter.rewards.math.equivalence` decide (numbers, radicals, sets, tuples,
    intervals, inequalities, matrices, percentages, units), math-verify's verdict elsewhere.
    An answer over 1,000 characters scores 0.0 unless it is the label's very text (no final
    answer is that long, and reading one could take minutes). ``None`` when the label is missing
    or blank. Under
    ``boxed_math`` the router hands over the box's content and it is graded as the answer.
    CPU-heavy: math-verify's own SIGALRM timeouts are off; the executor's deadline bounds it.
    """
    reward = _math(response, label, extract, exact=False)
    assert not isinstance(reward, Undecided)
    return reward
