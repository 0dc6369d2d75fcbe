"""The checks that the command line and every trainer hook share (``rewardrouter/checks.py``).

Each check is specified on its own first, then through the command line's main job, which
refuses what a hook counts: the same finding, as loud as each caller can afford. The hooks'
side runs through the trainers' own code in ``test_integration_slime_trainer.py``,
``test_integration_trl.py`` and ``test_integration_openrlhf.py``.
"""

from __future__ import annotations

import json
from argparse import Namespace
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console

from rewardrouter import RewardResult, RouterConfig, Sample
from rewardrouter.checks import absent_column, mixed_prompt_groups, position_problem, unlabeled
from rewardrouter.cli.compose import compose_job
from rewardrouter.cli.score import run_job
from rewardrouter.errors import RewardRouterError
from rewardrouter.integrations import _metrics
from rewardrouter.integrations._checks import batch_positions


@pytest.fixture(autouse=True)
def _counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(_metrics, "WARNINGS", Counter())
    monkeypatch.setattr(_metrics, "_emitted", set())
    monkeypatch.setattr(_metrics, "_counted", set())
    yield


# -- each check ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("column", "columns", "taken", "said", "not_said"),
    [
        pytest.param("solution", ["solution", "prompt"], (), None, None, id="present"),
        pytest.param(
            "soluton", ["solution"], (), "did you mean 'solution'?", None, id="typo_suggested"
        ),
        # a column that another field reads is no suggestion for this one
        pytest.param("soluton", ["solution"], ("solution",), "give", "did you", id="taken"),
        pytest.param("answer", [], (), "(columns: none)", None, id="no_columns"),
    ],
)
def test_absent_column(
    column: str, columns: list[str], taken: tuple[str, ...], said: str | None, not_said: str | None
) -> None:
    problem = absent_column("label", column, columns, "data.columns.label", "map it", taken=taken)
    if said is None:
        assert problem is None
        return
    assert problem is not None and problem.path == "data.columns.label"
    assert said in str(problem)
    assert not_said is None or not_said not in str(problem)


def result(status: str, reward: float | None, **terms: float | None) -> RewardResult:
    return RewardResult(reward, status, "math", terms=dict(terms))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("label", "outcome", "found"),
    [
        pytest.param(None, result("skipped", None, correct=None), True, id="no_label_skipped"),
        # the format bonus alone: a wrong answer in the right format outscores a right one
        pytest.param(
            None, result("ok", 0.1, correct=None, format=1.0), True, id="no_label_bonus_alone"
        ),
        pytest.param("", result("skipped", None, correct=None), False, id="blank_label_is_data"),
        pytest.param("42", result("skipped", None, correct=None), False, id="labelled"),
        pytest.param(None, result("ok", 1.0, judge=1.0), False, id="no_label_needed"),
        pytest.param(None, result("error", None, judge=None), False, id="a_failure_is_not_it"),
        pytest.param(None, result("kept", 1.0), False, id="kept"),
    ],
)
def test_unlabeled(label: Any, outcome: RewardResult, found: bool) -> None:
    assert unlabeled([Sample(response="x", label=label)], [outcome]) == ([0] if found else [])


@pytest.mark.parametrize(
    ("rows", "groups", "found"),
    [
        pytest.param([("a", None), ("a", None)], [0, 0], [], id="one_prompt"),
        pytest.param([("a", None), ("b", None)], [0, 1], [], id="two_groups"),
        pytest.param([("a", None), ("b", None), ("b", None)], [0, 0, 0], [1], id="joined_files"),
        # siblings of one rollout (a fan-out) may carry longer prompts: the first one counts
        pytest.param([("a", 7), ("a+turn", 7), ("a", 8)], [0, 0, 0], [], id="fan_out_rollout"),
        pytest.param([("a", None), ("", None), (None, None)], [0, 0, 0], [], id="no_prompt"),
        pytest.param([("a", None), ("b", None)], [0, None], [], id="no_group"),
        pytest.param(
            [
                ([{"role": "user", "content": "a"}], None),
                ([{"role": "user", "content": "b"}], None),
            ],
            [0, 0],
            [1],
            id="chat_prompts",
        ),
    ],
)
def test_mixed_prompt_groups(
    rows: list[tuple[Any, int | None]], groups: list[int | None], found: list[int]
) -> None:
    samples = [Namespace(prompt=prompt, rollout_id=rollout) for prompt, rollout in rows]
    assert [i for i, _ in mixed_prompt_groups(samples, groups)] == found


#: (labels, datasets, group keys, samples found): answers under one prompt text whose labels or
#: datasets differ (joined files whose prompts read the same) against the shapes one prompt
#: legitimately gives.
LABELED = [
    pytest.param(["cat", "cat", "dog"], None, [0, 0, 0], [2], id="labels_differ"),
    pytest.param(["cat", "dog"], None, [0, 1], [], id="two_groups"),
    pytest.param([["a", "b"], ["a", "b"]], None, [0, 0], [], id="equal_lists"),
    pytest.param([{"x": 1}, {"x": 1}], None, [0, 0], [], id="equal_dicts"),
    pytest.param([np.array(["C", "D"]), np.array(["C", "D"])], None, [0, 0], [], id="arrays"),
    pytest.param([float("nan"), float("nan")], None, [0, 0], [], id="nan_labels"),
    pytest.param(["cat", None], None, [0, 0], [], id="a_missing_label"),
    pytest.param(["cat", ""], None, [0, 0], [], id="a_blank_label"),
    pytest.param(["cat"] * 3, ["gsm8k", "gsm8k", "math"], [0, 0, 0], [2], id="datasets_differ"),
    pytest.param(["cat", "dog"], ["gsm8k", "math"], [0, 0], [1], id="both_differ"),
    # miles with multi-LoRA: each adapter numbers its groups from 0, grouped per adapter
    pytest.param(["cat", "dog"], None, [("A", 0), ("B", 0)], [], id="adapters"),
]


@pytest.mark.parametrize(("labels", "datasets", "groups", "found"), LABELED)
def test_mixed_prompt_groups_by_label_and_dataset(
    labels: list[Any], datasets: list[str] | None, groups: list[Any], found: list[int]
) -> None:
    samples = [
        Namespace(
            prompt="<image> Which animal?",
            label=label,
            metadata={} if datasets is None else {"dataset": datasets[i]},
        )
        for i, label in enumerate(labels)
    ]
    problems = mixed_prompt_groups(samples, groups, route_by=["dataset"])
    assert [i for i, _ in problems] == found


def test_a_group_that_differs_in_several_fields_names_each() -> None:
    samples = [
        Namespace(prompt="a", label="1", metadata={"dataset": "gsm8k"}),
        Namespace(prompt="b", label="2", metadata={"dataset": "math"}),
    ]
    [(_, message)] = mixed_prompt_groups(samples, [0, 0], route_by=["dataset"])
    assert message.startswith(
        "prompt group 0 holds answers to another prompt and label and dataset: prompt 'b' here, "
        "'a' at sample 0; label '2' here, '1' at sample 0; dataset dataset='math' here, "
        "dataset='gsm8k' at sample 0; GRPO would compare answers to different questions."
    )


@pytest.mark.parametrize(
    ("stage", "n", "found"),
    [
        pytest.param({"kind": "grpo"}, 3, None, id="by_index"),
        pytest.param(
            {"kind": "grpo", "group_by": "position", "n_samples_per_prompt": 2}, 4, None, id="whole"
        ),
        pytest.param(
            {"kind": "rloo", "group_by": "position", "n_samples_per_prompt": 4}, 6, 4, id="partial"
        ),
    ],
)
def test_position_problem(stage: dict[str, Any], n: int, found: int | None) -> None:
    config = RouterConfig.model_validate({"post_process": [stage]})
    problem = position_problem(config, n)
    assert (problem[0] if problem else None) == found
    if problem:
        assert f"post_process[0] ({stage['kind']}) groups by position" in problem[1]


@pytest.mark.parametrize(
    ("args", "n", "groups", "counted"),
    [
        pytest.param({"n_samples_per_prompt": 2, "rollout_batch_size": 2}, 4, [0, 0, 1, 1], 0),
        pytest.param({"n_samples_per_prompt": 2, "rollout_batch_size": 2}, 3, [0, 0, 0], 1),
        pytest.param({"n_samples_per_prompt": 2}, 2, [0, 0], 1, id="no_batch_size"),
        pytest.param({}, 2, [0, 0], 1, id="no_group_size"),
        pytest.param({}, 1, [0], 0, id="one_sample_is_one_group"),
    ],
)
@pytest.mark.filterwarnings("ignore::rewardrouter.RewardRouterWarning")
def test_batch_positions(args: dict[str, int], n: int, groups: list[int], counted: int) -> None:
    assert batch_positions(Namespace(**args), n) == groups
    assert _metrics.WARNINGS["one_prompt_group"] == counted


@pytest.mark.filterwarnings("ignore::rewardrouter.RewardRouterWarning")
def test_a_batch_is_counted_once_though_two_hooks_check_it() -> None:
    batch = [Sample(prompt="a"), Sample(prompt="b")]
    for _ in range(2):
        batch_positions(Namespace(), 2, _metrics.batch_key(batch))
    assert _metrics.WARNINGS["one_prompt_group"] == 1
    batch_positions(Namespace(), 2, _metrics.batch_key([Sample(), Sample()]))
    assert _metrics.WARNINGS["one_prompt_group"] == 2


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(Sample, id="no_weak_reference"),  # a slotted dataclass
        pytest.param(lambda: Namespace(prompt="a"), id="weak_reference"),
    ],
)
@pytest.mark.filterwarnings("ignore::rewardrouter.RewardRouterWarning")
def test_a_new_batch_is_counted_though_it_takes_the_ids_of_a_freed_one(
    make: Callable[[], object],
) -> None:
    """CPython gives a new batch the memory, and so the ids, of a freed one."""
    for _ in range(20):
        batch = [make(), make()]
        batch_positions(Namespace(), 2, _metrics.batch_key(batch))
        del batch
    assert _metrics.WARNINGS["one_prompt_group"] == 20


# -- through the command line: refused before anything is scored ------------------------------


def job(folder: Path, rows: list[dict[str, Any]], *overrides: str) -> str:
    """The main job's output on ``rows``, as ``rewardrouter`` prints it."""
    data = folder / "data.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    console = Console(record=True, width=300)
    args = [f"data.path={data}", f"output.path={folder / 'rewards.jsonl'}", *overrides]
    try:
        run_job(compose_job(args), folder, console)
    except RewardRouterError as exc:
        console.print(f"error: {exc}")
    return " ".join(console.export_text().split())


ANSWERS = {"response": "x", "label": "x", "metadata": {"dataset": "squad"}}


def test_joined_files_that_each_number_groups_from_0_are_refused(tmp_path: Path) -> None:
    rows = [
        {**ANSWERS, "prompt": "first file's question", "group_index": 0},
        {**ANSWERS, "prompt": "first file's question", "group_index": 0},
        {**ANSWERS, "prompt": "second file's question", "group_index": 0},
        {**ANSWERS, "prompt": "second file's question", "group_index": 0},
    ]
    said = job(tmp_path, rows, "router=mixed")
    assert (
        "data.jsonl:3: prompt group 0 holds answers to another prompt: \"second file's "
        'question" here, "first file\'s question" at line 1'
    ) in said
    assert "nothing was scored" in said and not (tmp_path / "rewards.jsonl").exists()


def test_joined_files_without_prompts_are_refused_by_their_labels(tmp_path: Path) -> None:
    """Rows with no prompt column: the labels tell the two files' groups 0 apart."""
    rows = [
        {**ANSWERS, "label": "Paris", "group_index": 0},
        {**ANSWERS, "label": "Paris", "group_index": 0},
        {**ANSWERS, "label": "Rome", "group_index": 0},
        {**ANSWERS, "label": "Rome", "group_index": 0},
    ]
    said = job(tmp_path, rows, "router=mixed")
    assert (
        "data.jsonl:3: prompt group 0 holds answers to another label: 'Rome' here, 'Paris' at "
        "line 1; GRPO would compare answers to different questions. Give each prompt its own "
        "group_index"
    ) in said
    assert "nothing was scored" in said and not (tmp_path / "rewards.jsonl").exists()


def test_group_by_position_over_an_incomplete_group_is_refused_before_scoring(
    tmp_path: Path,
) -> None:
    rows = [{**ANSWERS, "prompt": "q"} for _ in range(3)]
    stage = "post_process=[{kind: grpo, group_by: position, n_samples_per_prompt: 2}]"
    said = job(tmp_path, rows, "router=mixed", stage)
    assert (
        "data.jsonl:3: post_process[0] (grpo) groups by position, 2 consecutive samples per "
        "prompt (n_samples_per_prompt), but the batch holds 3 samples: the last 1 make no "
        "whole group"
    ) in said
    assert "Traceback" not in said and not (tmp_path / "rewards.jsonl").exists()
