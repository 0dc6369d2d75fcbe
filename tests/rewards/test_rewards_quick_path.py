"""Quick paths: CPU-heavy built-ins decide in the router's process what their exact checks can.

Only samples the exact checks leave to math-verify travel to worker processes; a batch they
decide entirely starts no worker at all. The rewards are those of the full grader, in order.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from rewardrouter.rewards import BUILTINS
from rewardrouter.rewards.registry import UNDECIDED, BuiltinReward

ROUTER = {
    "routes": {"math": {"match": ["math"], "rewards": {"correct": {"kind": "math", "timeout": 60}}}}
}
# An equation is read by math-verify only; the others by the exact checks.
EQUATION = ("\\boxed{x-2y+4=0}", "y=\\frac{x}{2}+2")


def _sample(response: str, label: str) -> SimpleNamespace:
    return SimpleNamespace(response=response, label=label, metadata={"dataset": "math"})


QUICK = [
    # decided here: right, wrong, and structured answers
    pytest.param("math", "\\boxed{\\frac{1}{2}}", "0.5", 1.0, id="math_right"),
    pytest.param("math", "\\boxed{(4, 3)}", "(3, 4)", 0.0, id="math_wrong_pair"),
    pytest.param("boxed_math", "so \\boxed{x > 2}", "(2, \\infty)", 1.0, id="boxed_math"),
    pytest.param("deepscaler", "<think>.</think>\\boxed{7}", "7", 1.0, id="deepscaler"),
    pytest.param("math", "no box here", "7", 0.0, id="no_box"),
    # left to math-verify
    pytest.param("math", *EQUATION, UNDECIDED, id="equation_undecided"),
    pytest.param(
        "deepscaler",
        "<think>.</think>" + EQUATION[0],
        EQUATION[1],
        UNDECIDED,
        id="deepscaler_undecided",
    ),
]


@pytest.mark.parametrize(("kind", "response", "label", "expected"), QUICK)
def test_quick_paths_decide_or_step_aside(
    kind: str, response: str, label: str, expected: Any
) -> None:
    name = kind.removeprefix("boxed_")
    reward = BuiltinReward(name, boxed=kind != name)
    assert reward.has_quick
    assert reward.quick(None, _sample(response, label)) == expected
    if expected is not UNDECIDED:  # the quick path agrees with the full grader
        assert reward(None, _sample(response, label)) == expected


def test_dapo_quick_path_returns_the_full_dict() -> None:
    reward = BuiltinReward("dapo")
    decided = reward.quick(None, _sample("Answer: **3**", "3"))
    assert decided == {"score": 1.0, "acc": True, "pred": "3"}
    assert reward.quick(None, _sample("Answer: x-2y+4=0", EQUATION[1])) is UNDECIDED


def test_graders_without_a_quick_path_leave_everything_undecided() -> None:
    assert BUILTINS["gpqa"].quick is None
    assert BuiltinReward("gpqa").quick(None, _sample("Answer: C", "C")) is UNDECIDED


def test_a_batch_the_exact_checks_decide_starts_no_worker(make_router: Any) -> None:
    router = make_router(ROUTER)
    samples = [_sample("\\boxed{(3,4)}", "(3, 4)"), _sample("\\boxed{5}", "6")]
    results = asyncio.run(router.score(samples))
    assert [r.reward for r in results] == [1.0, 0.0]
    assert router.executors.started("process") is None  # no worker process was ever needed


def test_undecided_samples_go_to_workers_and_come_back_in_order(make_router: Any) -> None:
    router = make_router(ROUTER)
    samples = [
        _sample("\\boxed{(3,4)}", "(3, 4)"),
        _sample(*EQUATION),  # math-verify, in a worker
        _sample("\\boxed{5}", "6"),
        _sample("\\boxed{2x+4y-3=1}", EQUATION[1]),  # math-verify: unequal
    ]
    results = asyncio.run(router.score(samples))
    assert [r.reward for r in results] == [1.0, 1.0, 0.0, 0.0]
    started = router.executors.started("process")
    assert started is not None and started.pids  # the two equations went to workers
