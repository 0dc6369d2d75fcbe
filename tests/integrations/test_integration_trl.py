"""TRL contract: the reward function called the way ``GRPOTrainer`` calls it, and a real step.

TRL calls each reward function as ``fn(prompts=..., completions=..., completion_ids=...,
trainer_state=..., log_extra=..., log_metric=..., **columns)`` with every other dataset column
repeated per completion, awaits it when it is an async callable, logs it under ``__name__``, and
reads ``None`` as "not applicable". The config is the shipped ``examples/trl`` one (route by the
``dataset`` column) with its own reward module; the last test runs one ``GRPOTrainer`` step of the
example's trainer offline on a tiny random model.
"""

from __future__ import annotations

import os

# huggingface_hub reads this once, when first imported: no test here may reach the network.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import asyncio
import pickle
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from rr_frameworks import shaped_route_config
from rr_tiny_llama import CPU_RUN, bpe_tokenizer, tiny_llama

from rewardrouter import ConfigError, load_config
from rewardrouter.integrations._router_cache import close_shared
from rewardrouter.integrations.trl import (
    AsyncRouterReward,
    RouterReward,
    completion_text,
    reward_function,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "trl"
ROUTER = EXAMPLE / "router.yaml"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.syspath_prepend(str(EXAMPLE))  # trl_rewards, as train_grpo.py arranges
    yield
    close_shared()


class Logs:
    """Stands in for the trainer's ``log_extra`` / ``log_metric`` bound methods."""

    def __init__(self) -> None:
        self.extra: dict[str, list[Any]] = {}
        self.metrics: dict[str, list[float]] = {}

    def log_extra(self, column: str, values: list[Any]) -> None:
        self.extra.setdefault(column, []).extend(values)

    def log_metric(self, name: str, value: float) -> None:
        self.metrics.setdefault(name, []).append(value)


def trl_call(
    prompts: list[Any], completions: list[Any], logs: Logs | None = None, **columns: list[Any]
) -> dict[str, Any]:
    """The keyword arguments GRPOTrainer passes (columns already repeated per completion)."""
    logs = logs or Logs()
    return {
        "prompts": prompts,
        "completions": completions,
        "completion_ids": [[1, 2, 3] for _ in completions],
        "trainer_state": SimpleNamespace(global_step=3),
        "log_extra": logs.log_extra,
        "log_metric": logs.log_metric,
        **columns,
    }


def brevity(text: str) -> float:
    return max(0.0, 1.0 - len(text) / 200)


# Two generations for each of three prompts; columns repeated per completion, as TRL does.
PROMPTS = ["7 * 6?"] * 2 + ["Capital of Kenya?"] * 2 + ["8 + 8?"] * 2
COMPLETIONS = ["\\boxed{42}", "\\boxed{41}", "Nairobi, Kenya", "Nairobi", "\\boxed{16}", "16"]
COLUMNS = {
    "solution": ["42", "42", "nairobi,kenya", "nairobi,kenya", "", ""],
    "dataset": ["math", "math", "capitals", "capitals", "math", "math"],
}
EXPECTED = [
    1.0,
    0.0,
    1.0 + 0.1 * brevity("Nairobi, Kenya"),
    0.5 + 0.1 * brevity("Nairobi"),
    None,  # a math row without a solution: boxed_exact_match does not apply
    None,
]


#: A call as TRL's tool loop writes it: no id, the arguments an object; its result names the tool.
LOOKUP = {"type": "function", "function": {"name": "lookup", "arguments": {"q": "x"}}}


def conversational(text: str) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": text}]


@pytest.mark.parametrize(
    "completions",
    [
        pytest.param(COMPLETIONS, id="standard"),
        pytest.param([conversational(c) for c in COMPLETIONS], id="conversational"),
        pytest.param(
            [
                [
                    {"role": "assistant", "content": "thinking", "tool_calls": [LOOKUP]},
                    {"role": "tool", "name": "lookup", "content": "ignored"},
                    {"role": "assistant", "content": [{"type": "text", "text": c}]},
                ]
                for c in COMPLETIONS
            ],
            id="tool_turns_and_content_parts",
        ),
    ],
)
def test_sync_reward_routes_each_row_by_its_dataset_column(completions: list[Any]) -> None:
    reward = reward_function(ROUTER)
    logs = Logs()
    out = reward(**trl_call(PROMPTS, completions, logs, **COLUMNS))
    assert out == [pytest.approx(e) if e is not None else None for e in EXPECTED]
    assert logs.extra["rewardrouter_route"] == COLUMNS["dataset"]
    assert logs.metrics["rewardrouter/math/reward"] == [0.5]
    assert logs.metrics["rewardrouter/capitals/reward"] == [pytest.approx(sum(EXPECTED[2:4]) / 2)]


def test_metrics_break_rewards_down_by_route_term_status_and_group() -> None:
    logs = Logs()
    reward_function(ROUTER)(**trl_call(PROMPTS, COMPLETIONS, logs, **COLUMNS))
    assert logs.extra["rewardrouter_status"] == ["ok"] * 4 + ["skipped"] * 2
    metrics = {name: values[0] for name, values in logs.metrics.items()}
    assert metrics == {
        "rewardrouter/math/count": 4.0,
        "rewardrouter/math/reward": 0.5,
        "rewardrouter/math/correct": 0.5,
        "rewardrouter/capitals/count": 2.0,
        "rewardrouter/capitals/reward": pytest.approx(sum(EXPECTED[2:4]) / 2),
        "rewardrouter/capitals/coverage": 0.75,
        "rewardrouter/capitals/brevity": pytest.approx(
            (brevity(COMPLETIONS[2]) + brevity(COMPLETIONS[3])) / 2
        ),
        "rewardrouter/status/ok": pytest.approx(4 / 6),
        "rewardrouter/status/skipped": pytest.approx(2 / 6),
        "rewardrouter/groups": 2.0,  # the third prompt's completions have no reward
        "rewardrouter/constant_groups": 0.0,
    }


@pytest.mark.parametrize(
    ("stage", "expected"),
    [
        pytest.param("{kind: clip, max: 1.0}", [1.0, 0.0], id="clip"),
        # completion_ids hold 3 tokens each: past max_len 2, the full penalty applies
        pytest.param(
            "{kind: overlong_penalty, max_len: 2, buffer: 0}", [0.3333, -1.0], id="lengths"
        ),
    ],
)
def test_route_shaping_applies_to_trl_rewards(
    tmp_path: Path, stage: str, expected: list[float]
) -> None:
    reward = reward_function(shaped_route_config(tmp_path, stage))
    out = reward(
        **trl_call(["q", "q"], ["Paris", "Rome"], solution=["Paris", "Paris"], dataset=["qa", "qa"])
    )
    assert out == pytest.approx(expected)


def test_route_stages_trl_cannot_feed_are_refused(tmp_path: Path) -> None:
    reward = reward_function(
        shaped_route_config(tmp_path, "{kind: truncation_penalty, value: 0.0}")
    )
    with pytest.raises(ConfigError, match=r"routes\.qa\.shaping\[0\]: `truncation_penalty` needs"):
        reward(**trl_call(["q"], ["Paris"], solution=["Paris"], dataset=["qa"]))


def test_async_reward_is_awaited_and_agrees() -> None:
    reward = reward_function(ROUTER, asynchronous=True)
    assert isinstance(reward, AsyncRouterReward)
    out = asyncio.run(reward(**trl_call(PROMPTS, COMPLETIONS, **COLUMNS)))
    assert out == [pytest.approx(e) if e is not None else None for e in EXPECTED]


@pytest.mark.parametrize(
    ("asynchronous", "is_async"),
    [pytest.param(False, False, id="sync"), pytest.param(True, True, id="async")],
)
def test_trl_sees_the_name_and_the_kind(asynchronous: bool, is_async: bool) -> None:
    trainer_utils = pytest.importorskip("trl.trainer.utils")
    reward = reward_function(ROUTER, name="routed", asynchronous=asynchronous)
    assert trainer_utils.get_callable_name(reward) == "routed"
    assert trainer_utils.is_async_callable(reward) is is_async


@pytest.mark.parametrize(
    "reward",
    [
        pytest.param(reward_function(ROUTER, name="r1"), id="sync"),
        pytest.param(reward_function(ROUTER, asynchronous=True), id="async"),
        pytest.param(reward_function(load_config(ROUTER)), id="from_a_config_object"),
    ],
)
def test_pickles_before_and_after_use(reward: RouterReward | AsyncRouterReward) -> None:
    copy = pickle.loads(pickle.dumps(reward))
    assert type(copy) is type(reward) and copy.__name__ == reward.__name__
    if isinstance(reward, RouterReward):
        reward(**trl_call(PROMPTS[:1], COMPLETIONS[:1], **{k: v[:1] for k, v in COLUMNS.items()}))
    assert pickle.loads(pickle.dumps(reward)).__name__ == reward.__name__


def _score_in_child(reward: RouterReward) -> list[float | None]:
    columns = {k: v[:4] for k, v in COLUMNS.items()}
    return reward(prompts=PROMPTS[:4], completions=COMPLETIONS[:4], **columns)


def test_scores_in_another_process() -> None:
    """What async GRPO does with reward functions: pickle them into a spawned worker."""
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        out = pool.submit(_score_in_child, reward_function(ROUTER)).result(timeout=120)
    assert out == pytest.approx(EXPECTED[:4])


def test_overrides_change_the_yaml() -> None:
    reward = reward_function(ROUTER, overrides=["routes.capitals.rewards.brevity.weight=0"])
    out = reward(
        **trl_call(PROMPTS[2:4], COMPLETIONS[2:4], **{k: v[2:4] for k, v in COLUMNS.items()})
    )
    assert out == [1.0, 0.5]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        pytest.param(
            lambda: reward_function("missing/router.yaml"),
            r"reward_function: router config 'missing/router\.yaml' not found",
            id="config_not_found",
        ),
        pytest.param(
            lambda: reward_function(ROUTER, route_column="task"),
            r"route_column 'task' is not one of the config's route_by fields \['dataset'\]",
            id="route_column_not_in_route_by",
        ),
    ],
)
def test_config_problems_raise_at_the_first_call(make: Any, message: str) -> None:
    reward = make()  # building the reward never fails: TRL may build it in another process
    with pytest.raises(ConfigError, match=message):
        reward(**trl_call(PROMPTS, COMPLETIONS, **COLUMNS))


def test_overrides_need_a_path() -> None:
    with pytest.raises(TypeError, match="load_config"):
        reward_function(load_config(ROUTER), overrides=["route_by=[x]"])


@pytest.mark.parametrize(
    ("completion", "text"),
    [
        pytest.param("plain", "plain", id="string"),
        pytest.param([], "", id="empty_conversation"),
        pytest.param([{"role": "user", "content": "q"}], "q", id="no_assistant_turn"),
        pytest.param([{"role": "assistant", "content": None}], "", id="no_content"),
    ],
)
def test_completion_text(completion: Any, text: str) -> None:
    assert completion_text(completion) == text


# -- one real GRPOTrainer step ------------------------------------------------------------------


class Recording:
    """Wraps a reward function and keeps what TRL passed in and got back."""

    def __init__(self, inner: RouterReward | AsyncRouterReward) -> None:
        self.inner = inner
        self.__name__ = inner.__name__
        self.calls: list[tuple[dict[str, Any], list[float | None]]] = []


class RecordingSync(Recording):
    def __call__(self, **kwargs: Any) -> list[float | None]:
        out = self.inner(**kwargs)
        assert isinstance(out, list)
        self.calls.append((kwargs, out))
        return out


class RecordingAsync(Recording):
    async def __call__(self, **kwargs: Any) -> list[float | None]:
        assert isinstance(self.inner, AsyncRouterReward)
        out = await self.inner(**kwargs)
        self.calls.append((kwargs, out))
        return out


def tiny_model_and_tokenizer(texts: list[str]) -> tuple[Any, Any]:
    """A randomly initialised one-layer Llama and a byte-level BPE tokenizer trained on ``texts``."""
    tokenizer = bpe_tokenizer(
        texts, vocab_size=300, special_tokens=["<pad>", "<eos>"], pad="<pad>", eos="<eos>"
    )
    return tiny_llama(tokenizer), tokenizer


def expected_reward(completion: str, solution: str, dataset: str) -> float | None:
    """The example router's rewards, recomputed without the router."""
    import trl_rewards

    row = SimpleNamespace(response=completion, label=solution)
    if dataset == "math":
        box = completion.rpartition("\\boxed{")[2].partition("}")[0]
        return float("\\boxed{" in completion and box.strip() == solution)
    coverage = trl_rewards.keyword_coverage(None, row)
    return (coverage or 0.0) + 0.1 * trl_rewards.brevity(None, row, budget=200)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("asynchronous", "recording"),
    [pytest.param(False, RecordingSync, id="sync"), pytest.param(True, RecordingAsync, id="async")],
)
def test_grpo_trainer_step_with_routed_rewards(
    tmp_path: Path, asynchronous: bool, recording: type[Recording]
) -> None:
    """One offline GRPO step of the example's trainer on its two datasets."""
    pytest.importorskip("trl")
    started = time.monotonic()
    import train_grpo
    from datasets import Dataset

    model, tokenizer = tiny_model_and_tokenizer([row["prompt"] for row in train_grpo.ROWS] * 4)
    trainer = train_grpo.build_trainer(
        model,
        tmp_path,
        processing_class=tokenizer,
        # one prompt per dataset: every batch of two prompts holds both
        dataset=Dataset.from_list([train_grpo.ROWS[0], train_grpo.ROWS[2]]),
        asynchronous=asynchronous,
        max_steps=1,
        per_device_train_batch_size=4,  # a multiple of num_generations
        num_generations=2,
        max_completion_length=8,
        **CPU_RUN,
    )
    record = recording(trainer.reward_funcs[0])  # same kind, same name: TRL calls it the same way
    trainer.reward_funcs[0] = record
    trainer.train()

    assert len(record.calls) == 1
    kwargs, rewards = record.calls[0]
    datasets = kwargs["dataset"]
    assert len(rewards) == 4 and sorted(set(datasets)) == ["capitals", "math"]
    texts = [completion_text(c) for c in kwargs["completions"]]
    expected = [
        expected_reward(text, solution, dataset)
        for text, solution, dataset in zip(texts, kwargs["solution"], datasets, strict=True)
    ]
    assert rewards == pytest.approx(expected)
    logged = trainer.state.log_history[0]
    assert logged["rewards/rewardrouter/mean"] == pytest.approx(sum(rewards) / 4, abs=1e-6)
    assert {f"rewardrouter/{d}/reward" for d in datasets} <= set(logged)
    assert time.monotonic() - started < 60


# -- the example's command line, trained for a few steps on the CPU ---------------------------

CPU_STEPS = 3


@pytest.mark.slow
def test_example_script_trains_on_the_cpu_and_logs_route_term_status_metrics(
    tmp_path: Path,
) -> None:
    """``train_grpo.py`` as a user runs it on a machine without a GPU (TRL's bf16 default is
    replaced by float32 there), for a few steps on a tiny model saved from a config here (no
    download); every step logs the routes it scored, their terms and the statuses."""
    pytest.importorskip("trl")
    import torch

    if torch.cuda.is_available():
        pytest.skip("checks the CPU default; this machine has a CUDA GPU")
    import train_grpo

    model, tokenizer = tiny_model_and_tokenizer([row["prompt"] for row in train_grpo.ROWS] * 4)
    folder = tmp_path / "tiny-llama"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    started = time.monotonic()
    trainer = train_grpo.main(
        [
            f"--model={folder}",
            f"--output-dir={tmp_path / 'out'}",
            f"--max-steps={CPU_STEPS}",
            "--num-generations=2",
            "--batch-size=8",  # four prompts a step: both datasets, seeded
            "--max-completion-length=8",
            "--seed=0",
        ]
    )
    seconds = time.monotonic() - started

    assert trainer.args.bf16 is False and trainer.model.device.type == "cpu"
    steps = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert [entry["step"] for entry in steps] == list(range(1, CPU_STEPS + 1))
    terms = {"math": {"correct"}, "capitals": {"coverage", "brevity"}}
    seen: set[str] = set()
    for entry in steps:
        routes = {key.split("/")[1] for key in entry if key.endswith("/count")} - {"status"}
        assert routes and routes <= terms.keys(), entry
        assert sum(entry[f"rewardrouter/{r}/count"] for r in routes) == 8  # the step's batch
        seen |= routes
        for route in routes:
            expected = {f"rewardrouter/{route}/{name}" for name in {"reward", *terms[route]}}
            assert expected <= set(entry), (route, entry)
        statuses = {k: v for k, v in entry.items() if k.startswith("rewardrouter/status/")}
        assert statuses and sum(statuses.values()) == pytest.approx(1.0), entry
        assert set(statuses) <= {f"rewardrouter/status/{s}" for s in ("ok", "skipped")}
        assert "rewards/rewardrouter/mean" in entry
    assert seen == {"math", "capitals"}
    assert seconds < 60, f"{CPU_STEPS} CPU steps took {seconds:.1f} s"


# -- the command line's label checks, in the reward function -----------------------------------


@pytest.mark.parametrize(
    ("label_column", "columns", "message"),
    [
        # the example's data keeps its answers in `answer`: every label would be None and the
        # format bonus alone would rank the answers
        pytest.param(
            "solution",
            {"answer": ["42", "42"], "dataset": ["math", "math"]},
            r"label_column: reads `label` from column 'solution', which the rows TRL passes do "
            r"not have \(columns: answer, dataset\)\n.*label_column=<column>",
            id="answers_under_another_name",
        ),
        pytest.param(
            "solutoin",
            {"solution": ["42", "42"], "dataset": ["math", "math"]},
            r"did you mean 'solution'\?",
            id="typo",
        ),
    ],
)
def test_a_label_column_that_trl_does_not_pass_is_refused(
    label_column: str, columns: dict[str, list[str]], message: str
) -> None:
    reward = reward_function(ROUTER, label_column=label_column)
    with pytest.raises(ConfigError, match=message):
        reward(**trl_call(["7 * 6?"] * 2, ["\\boxed{42}", "\\boxed{41}"], None, **columns))


def test_data_without_reference_answers_takes_label_column_none() -> None:
    reward = reward_function(ROUTER, label_column=None)
    out = reward(**trl_call(["7 * 6?"], ["\\boxed{42}"], dataset=["math"]))
    assert out == [None]  # nothing to compare with: not applicable, and no error


def test_rows_with_a_null_label_whose_graders_did_not_apply_are_a_counted_metric() -> None:
    logs = Logs()
    columns: dict[str, list[Any]] = {"solution": ["42", None], "dataset": ["math", "math"]}
    with pytest.warns(UserWarning, match=r"the dataset column 'solution' \(label_column\)"):
        out = reward_function(ROUTER)(
            **trl_call(["7 * 6?"] * 2, ["\\boxed{42}", "\\boxed{42}"], logs, **columns)
        )
    assert out == [1.0, None]
    assert logs.metrics["rewardrouter/warnings/label_missing"] == [1.0]


@pytest.mark.slow
def test_grpo_trainer_refuses_a_label_column_its_dataset_lacks(tmp_path: Path) -> None:
    """Through GRPOTrainer's own step: the first reward call stops the run with the columns."""
    pytest.importorskip("trl")
    from datasets import Dataset
    from trl.trainer.grpo_config import GRPOConfig
    from trl.trainer.grpo_trainer import GRPOTrainer

    rows = [
        {"prompt": "What is 7 * 6?", "answer": "42", "dataset": "math"},
        {"prompt": "Name the capital of Kenya.", "answer": "nairobi", "dataset": "capitals"},
    ]
    model, tokenizer = tiny_model_and_tokenizer([row["prompt"] for row in rows] * 4)
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=reward_function(ROUTER, label_column="solution"),
        args=GRPOConfig(
            output_dir=str(tmp_path),
            max_steps=1,
            per_device_train_batch_size=4,
            num_generations=2,
            max_completion_length=8,
            **CPU_RUN,
        ),
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
    )
    with pytest.raises(ConfigError, match=r"column 'solution'.*\(columns: .*answer"):
        trainer.train()
