"""verl contract: ``compute_score`` called the way verl's reward managers call it.

verl wraps the function named by ``custom_reward_function.path/name`` so that every call gets
``reward_kwargs`` merged into its keyword arguments; the naive and dapo managers call it per row
with ``data_source=, solution_str=, ground_truth=, extra_info=``, the batch manager once with
``data_sources=, solution_strs=, ground_truths=, extra_infos=`` (numpy object arrays for the
non-tensor columns), the asynchronous reward loop from executor threads or by awaiting it. A dict
result must hold ``score``, and every row the same keys (verl logs each key as a column). The
config is the shipped ``examples/verl`` one, with its own reward module.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rewardrouter.integrations.verl as verl_module
from rewardrouter import ConfigError
from rewardrouter.integrations._router_cache import close_shared
from rewardrouter.integrations.verl import compute_score, compute_score_async

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "verl"
REWARD_KWARGS = {"rewardrouter_config": str(EXAMPLE / "router.yaml")}


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("REWARDROUTER_CONFIG", raising=False)
    monkeypatch.syspath_prepend(str(EXAMPLE))
    yield
    close_shared()


def _call_with_kwargs(raw_fn: Callable[..., Any], extra: dict[str, Any], **kwargs: Any) -> Any:
    """What verl's ``get_custom_reward_fn`` wraps the function in: reward_kwargs win."""
    return raw_fn(**{**kwargs, **extra})


def verl_wrapped(fn: Callable[..., Any] = compute_score) -> Callable[..., Any]:
    return partial(_call_with_kwargs, fn, REWARD_KWARGS)


def extra_info(**fields: Any) -> dict[str, Any]:
    """A row's extra_info as the naive manager hands it over (it adds two fields)."""
    return {"index": 0, "split": "train", "num_turns": None, "rollout_reward_scores": {}, **fields}


ROWS = [
    pytest.param("openai/gsm8k", "so #### 72", "72", extra_info(), 1.0, id="gsm8k_right"),
    pytest.param("openai/gsm8k", "#### 1,200.", "1200", extra_info(), 1.0, id="gsm8k_commas"),
    pytest.param("openai/gsm8k", "#### 70", "72", extra_info(), 0.1, id="gsm8k_wrong_format_ok"),
    pytest.param("openai/gsm8k", "72", "72", extra_info(), 0.0, id="gsm8k_no_answer"),
    pytest.param("lighteval/MATH", "\\boxed{\\frac12}", "\\frac12", None, 1.0, id="math_boxed"),
    pytest.param("rajpurkar/squad", "Paris.", "paris", extra_info(), 1.0, id="squad"),
    pytest.param(
        "rajpurkar/squad",
        "\\boxed{Paris}",
        "Paris",
        extra_info(rm_type="boxed_exact_match"),
        1.0,
        id="extra_info_rm_type_overrides_the_route",
    ),
]


@pytest.mark.parametrize(("source", "solution", "truth", "extra", "expected"), ROWS)
def test_single_row_as_the_naive_manager_calls_it(
    source: str, solution: str, truth: str, extra: dict[str, Any] | None, expected: float
) -> None:
    result = verl_wrapped()(
        data_source=source, solution_str=solution, ground_truth=truth, extra_info=extra
    )
    assert result == {"score": pytest.approx(expected), "scored": 1.0}


def test_single_row_positional() -> None:
    result = compute_score("openai/gsm8k", "#### 72", "72", None, **REWARD_KWARGS)
    assert result == {"score": 1.0, "scored": 1.0}


def batch_columns() -> dict[str, Any]:
    """The batch manager's arguments: numpy object arrays for the non-tensor columns."""
    rows = [p.values for p in ROWS]
    return {
        "data_sources": np.array([r[0] for r in rows], dtype=object),
        "solution_strs": [r[1] for r in rows],
        "ground_truths": [r[2] for r in rows],
        "extra_infos": np.array([r[3] or {} for r in rows], dtype=object),
    }


def test_batch_as_the_batch_manager_calls_it() -> None:
    results = verl_wrapped()(**batch_columns())
    assert [r["score"] for r in results] == pytest.approx([p.values[4] for p in ROWS])
    assert {tuple(sorted(r)) for r in results} == {("score", "scored")}


def test_batch_positional() -> None:
    columns = batch_columns()
    results = compute_score(*columns.values(), **REWARD_KWARGS)
    assert isinstance(results, list)
    assert [r["score"] for r in results] == pytest.approx([p.values[4] for p in ROWS])


def test_rows_nothing_applies_to_score_zero_and_say_so() -> None:
    """exact_match is not applicable without a label: verl gets 0.0, and scored 0.0 tells."""
    results = verl_wrapped()(
        data_sources=["rajpurkar/squad", "rajpurkar/squad"],
        solution_strs=["Paris", "Paris"],
        ground_truths=[None, "Paris"],
        extra_infos=[{}, {}],
    )
    assert results == [{"score": 0.0, "scored": 0.0}, {"score": 1.0, "scored": 1.0}]


def test_awaited_by_the_reward_loop() -> None:
    call = verl_wrapped(compute_score_async)
    result = asyncio.run(
        call(
            data_source="openai/gsm8k",
            solution_str="#### 72",
            ground_truth="72",
            extra_info=extra_info(),
            reward_router_address=None,  # what the reward loop adds for generative RMs
            reward_model_tokenizer=None,
        )
    )
    assert result == {"score": 1.0, "scored": 1.0}


def test_called_from_many_executor_threads_at_once() -> None:
    call = verl_wrapped()
    with ThreadPoolExecutor(max_workers=8) as pool:
        futures = [
            pool.submit(
                call, data_source="openai/gsm8k", solution_str=f"#### {n}", ground_truth="7"
            )
            for n in range(32)
        ]
        scores = [f.result()["score"] for f in futures]
    assert scores == [1.0 if n == 7 else 0.1 for n in range(32)]


def test_loaded_from_its_file_like_older_verl_does() -> None:
    """``custom_reward_function.path=<file>``: verl execs the file under a made-up module name."""
    spec = importlib.util.spec_from_file_location("custom_module_123", verl_module.__file__)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    loaded = partial(_call_with_kwargs, module.compute_score, REWARD_KWARGS)
    assert loaded(data_source="openai/gsm8k", solution_str="#### 72", ground_truth="72") == {
        "score": 1.0,
        "scored": 1.0,
    }


def test_config_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REWARDROUTER_CONFIG", REWARD_KWARGS["rewardrouter_config"])
    monkeypatch.setenv("REWARDROUTER_OVERRIDES", "routes.gsm8k.rewards.correct.weight=2")
    assert compute_score("openai/gsm8k", "#### 72", "72") == {"score": 2.0, "scored": 1.0}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({}, r"reward_kwargs\.rewardrouter_config.*REWARDROUTER_CONFIG", id="unset"),
        pytest.param(
            {"rewardrouter_config": "nowhere.yaml"},
            r"reward_kwargs\.rewardrouter_config: router config 'nowhere\.yaml' not found",
            id="missing_file",
        ),
    ],
)
def test_config_problems_raise_from_the_call(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        compute_score("openai/gsm8k", "#### 72", "72", None, **kwargs)
