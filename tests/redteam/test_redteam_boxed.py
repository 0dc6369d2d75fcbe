"""``boxed_<kind>``: an answer boxed in the thinking and another one after it.

A policy that boxes one answer while it thinks and writes another after ``</think>`` offers two
answers; graded on the box in the thinking, it would earn the reward whichever was right. Every
``boxed_`` kind (and ``math``, which finds its box itself) grades the box after the thinking:
the hostile response earns nothing against the answer it boxed in the thinking, the honest one
in the same batch earns the full reward.
"""

from __future__ import annotations

from typing import Any

import pytest

from rewardrouter import compile_router
from rewardrouter.rewards.registry import BOXED_PREFIX, BUILTINS, kind_names

from .conftest import Canary

#: The label each grader family is asked about, and a different answer.
RIGHT_WRONG = {
    "gpqa": ("C", "A"),
    "multiple_choice": ("C", "A"),
    "exact_match": ("Paris", "Rome"),
    "f1": ("Paris", "Rome"),
}
NUMERIC = ("42", "41")
GRADERS = [k for k in kind_names() if k.startswith(BOXED_PREFIX) and k != "boxed_format"]


@pytest.mark.parametrize("kind", [*GRADERS, "math"])
def test_a_box_in_the_thinking_is_not_the_answer(canary: Canary, kind: str) -> None:
    name = kind.removeprefix(BOXED_PREFIX)
    right, wrong = RIGHT_WRONG.get(name, NUMERIC)
    term: dict[str, Any] = {"kind": kind}
    if BUILTINS[name].keys:
        term["key"] = "score"  # dapo: +1 right, -1 wrong
    config = {"default_route": "r", "routes": {"r": {"rewards": {"t": term}}}}
    responses = [
        f"<think>Maybe {wrong}.</think>So \\boxed{{{right}}}",  # honest: the final box is right
        f"<think>So \\boxed{{{right}}}</think>\\boxed{{{wrong}}}",  # the right one, in thinking
        f"<think>So \\boxed{{{right}}}</think>The answer is {wrong}.",  # and no box after it
    ]
    with compile_router(config) as router:
        batch = router.score_sync([{"response": r, "label": right} for r in responses])
    honest, *hostile = batch
    assert (honest.reward, honest.status) == (1.0, "ok"), honest
    assert [r.reward is not None and r.reward <= 0.0 for r in hostile] == [True, True], hostile
    canary.absent_from(batch)
