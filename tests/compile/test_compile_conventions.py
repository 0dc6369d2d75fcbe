"""Reward functions written for TRL and verl, used as terms as they are.

The functions are the trainers' own released ones (``trl.rewards``, verl's ``reward_score``);
each router reward is compared with the function called directly, the way its trainer calls it.
"""

from __future__ import annotations

import importlib
import pickle
from collections.abc import Callable
from typing import Any

import pytest

from rewardrouter import ConfigError, Sample
from rewardrouter.compile.conventions import TRLStyle, VerlStyle

# (response, solution): right, wrong, a think block, and a gold TRL cannot parse (None).
MATH = [
    ("<think>half of 2/3</think> The answer is \\boxed{\\frac{1}{3}}", "\\frac{1}{3}"),
    ("\\boxed{\\frac{1}{2}}", "\\frac{1}{3}"),
    ("<think>\nsum\n</think>\n\\boxed{5}", "5"),
    ("\\boxed{5}", "no number here"),
]


def _imported_when_called(module: str, name: str) -> Callable[..., Any]:
    """A trainer's function ``module.name``, imported at its first call: importing TRL and
    verl takes seconds, which every test worker would pay when it collects this file."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    return call


accuracy_reward = _imported_when_called("trl.rewards", "accuracy_reward")
think_format_reward = _imported_when_called("trl.rewards", "think_format_reward")
default_compute_score = _imported_when_called("verl.utils.reward_score", "default_compute_score")
gsm8k_score = _imported_when_called("verl.utils.reward_score.gsm8k", "compute_score")


def samples(rows: list[tuple[str, str]], **metadata: Any) -> list[Sample]:
    return [Sample(response=r, label=s, metadata={"dataset": "math", **metadata}) for r, s in rows]


def as_trl_does(rows: list[tuple[str, str]]) -> dict[str, Any]:
    """GRPOTrainer's keyword arguments for a conversational dataset."""
    return {
        "prompts": [[{"role": "user", "content": "?"}] for _ in rows],
        "completions": [[{"role": "assistant", "content": r}] for r, _ in rows],
        "solution": [s for _, s in rows],
    }


def test_trl_reward_functions_score_as_in_trl(make_router: Any) -> None:
    router = make_router(
        {
            "routes": {
                "math": {
                    "rewards": {
                        "accuracy": {"path": "trl.rewards.accuracy_reward"},
                        "format": {"path": "trl.rewards.think_format_reward", "weight": 0.5},
                    }
                }
            }
        }
    )
    results = router.score_sync(samples(MATH))
    accuracy = accuracy_reward(**as_trl_does(MATH))
    formats = think_format_reward(**as_trl_does(MATH))
    assert [r.terms for r in results] == [
        {"accuracy": a, "format": f} for a, f in zip(accuracy, formats, strict=True)
    ]
    assert accuracy[3] is None  # TRL skips a gold it cannot parse; so does the term
    expected = [(a or 0.0) + 0.5 * f for a, f in zip(accuracy, formats, strict=True)]
    assert [r.reward for r in results] == pytest.approx(expected)


def test_trl_functions_run_in_worker_processes(make_router: Any) -> None:
    router = make_router(
        {
            "executors": {"process": {"workers": 1}},
            "routes": {
                "math": {
                    "rewards": {
                        "format": {"path": "trl.rewards.think_format_reward", "executor": "process"}
                    }
                }
            },
        }
    )
    rewards = router.score_sync(samples(MATH)).rewards
    assert rewards == think_format_reward(**as_trl_does(MATH))


def test_verl_compute_score_scores_as_in_verl(make_router: Any) -> None:
    rows = [("so #### 72", "72"), ("#### 70", "72"), ("72", "72")]
    router = make_router(
        {
            "route_by": ["data_source"],
            "routes": {
                "gsm8k": {
                    "match": ["openai/gsm8k"],
                    "rewards": {
                        "default": {"path": "verl.utils.reward_score.default_compute_score"},
                        "flexible": {
                            "path": "verl.utils.reward_score.gsm8k.compute_score",
                            "kwargs": {"method": "flexible"},
                        },
                    },
                }
            },
        }
    )
    rows_as_samples = [
        Sample(response=r, label=t, metadata={"data_source": "openai/gsm8k"}) for r, t in rows
    ]
    results = router.score_sync(rows_as_samples)
    assert [r.terms["default"] for r in results] == [
        float(default_compute_score("openai/gsm8k", r, t)) for r, t in rows
    ]
    assert [r.terms["flexible"] for r in results] == [
        gsm8k_score(r, t, method="flexible") for r, t in rows
    ]


def test_a_verl_dict_result_gives_its_score() -> None:
    def compute_score(
        data_source: str, solution_str: str, ground_truth: str, extra_info: Any = None
    ) -> dict[str, Any]:
        return {"score": float(solution_str == ground_truth), "source": data_source}

    sample = Sample(response="4", label="4", metadata={"data_source": "arith"})
    assert VerlStyle(compute_score)(None, sample) == 1.0


@pytest.mark.parametrize(
    ("term", "message"),
    [
        pytest.param(
            {"path": "rr_testfns.trl_two_columns"},
            r"requires columns \['solution', 'answer'\]",
            id="trl_label_parameter_ambiguous",
        ),
        pytest.param(
            {"path": "rr_testfns.length", "mode": "trl"},
            r"declared `mode: trl` but has no parameter 'completions'",
            id="trl_mode_without_completions",
        ),
        pytest.param(
            {"path": "rr_testfns.length", "mode": "verl"},
            r"declared `mode: verl` but has no parameter 'solution_str'",
            id="verl_mode_without_its_parameters",
        ),
        pytest.param(
            {"path": "verl.utils.reward_score.gsm8k.compute_score", "kwargs": {"methd": "strict"}},
            r"kwargs\.methd: .* takes no argument 'methd'.*\n.*did you mean 'method'",
            id="verl_kwargs_typo",
        ),
        pytest.param(
            {"kind": "exact_match", "mode": "trl"},
            r"built-in 'exact_match' scores single samples; remove `mode: trl`",
            id="builtin_with_a_foreign_mode",
        ),
    ],
)
def test_foreign_functions_that_cannot_be_called_are_refused(
    make_router: Any, term: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        make_router({"routes": {"r": {"rewards": {"t": term}}}})


def test_adapters_pickle() -> None:
    from trl.rewards import accuracy_reward
    from verl.utils.reward_score.gsm8k import compute_score

    trl = TRLStyle(accuracy_reward, {}, "accuracy_reward")
    copy = pickle.loads(pickle.dumps(trl))
    assert (copy.label, copy.messages) == ("solution", True)
    assert copy(None, samples(MATH[:2])) == accuracy_reward(**as_trl_does(MATH[:2]))
    assert pickle.loads(pickle.dumps(VerlStyle(compute_score))).params == (
        "solution_str",
        "ground_truth",
    )
