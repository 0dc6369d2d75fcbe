"""verl contract, judged by verl 0.9.1 itself: its config, its loader, its reward loop, its trainer.

Every launch line here is composed from verl's own Hydra config tree; the reward function is
loaded by verl's ``get_custom_reward_fn`` (which merges ``reward_kwargs`` into each call); the
reward loop test runs verl's ``RewardLoopManager`` with its Ray ``RewardLoopWorker`` s and the
``naive`` manager on a local Ray; the estimator runs through verl's ``compute_advantage``.
Rewards are compared row by row with the router's own. The config is the shipped
``examples/verl`` one, with its own reward module: every YAML in that folder goes through the
README's launch line, ``main_ppo``'s own config validation (up to where it starts Ray and asks
for GPUs), the reward loop and ``compute_advantage``, one after the other. Launch lines naming
a config the hooks cannot run are stopped by ``python -m verl.trainer.main_ppo`` itself, when
verl loads rewardrouter's plugin.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import os
import re
import subprocess
import sys
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest
import torch
import verl
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig
from rr_frameworks import shaped_route_config
from rr_tiny_llama import bpe_tokenizer
from verl import DataProto
from verl.trainer.ppo.core_algos import (
    AdvantageEstimator,
    compute_grpo_outcome_advantage,
    compute_rloo_outcome_advantage,
    get_adv_estimator_fn,
)
from verl.trainer.ppo.ray_trainer import compute_advantage
from verl.trainer.ppo.reward import get_custom_reward_fn
from verl.trainer.ppo.utils import need_critic, need_reference_policy
from verl.utils.config import validate_config
from verl.utils.device import auto_set_device

from rewardrouter import ConfigError, Sample, compile_router, load_config
from rewardrouter.advantage import group_advantages
from rewardrouter.config.stages import AdvantageStage, GRPOStage, RLOOStage
from rewardrouter.integrations._router_cache import close_shared
from rewardrouter.integrations._verl_launch import launch_problems, layout_problems
from rewardrouter.integrations.verl import compute_score

pytestmark = pytest.mark.slow  # a long file: `make test` starts it first

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "verl"
ROUTER = EXAMPLE / "router.yaml"
#: Every router config shipped with the verl example.
EXAMPLE_CONFIGS = sorted(EXAMPLE.glob("*.yaml"))
VERL_CONFIG = Path(verl.__file__).parent / "trainer" / "config"
FUNCTION = [
    "reward.custom_reward_function.path=pkg://rewardrouter.integrations.verl",
    "reward.custom_reward_function.name=compute_score",
    f"+reward.custom_reward_function.reward_kwargs.rewardrouter_config={ROUTER}",
]

#: The same lines in the layout of verl before 0.9.
LEGACY = [re.sub(r"^(\+?)reward\.", r"\1", o) for o in FUNCTION]

#: The settings a real launch adds for ``main_ppo``'s validation ("data, model, rollout and
#: trainer settings as usual"): batch sizes that divide, one GPU.
TRAINING = [
    "data.train_batch_size=8",
    "actor_rollout_ref.rollout.n=4",
    "actor_rollout_ref.actor.ppo_mini_batch_size=8",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2",
    "trainer.n_gpus_per_node=1",
]


def function_line(config: Path | str) -> list[str]:
    """The reward-function overrides of the README, naming ``config``."""
    return [
        *FUNCTION[:2],
        f"+reward.custom_reward_function.reward_kwargs.rewardrouter_config={config}",
    ]


def with_verls_grpo(config: Path | str) -> list[str]:
    """The reward function of the README, naming ``config``, with verl's own GRPO."""
    return [*function_line(config), "algorithm.adv_estimator=grpo"]


def estimator_line(config: Path | str) -> list[str]:
    """The estimator overrides of the README, naming ``config``."""
    return ["algorithm.adv_estimator=rewardrouter", f"+algorithm.rewardrouter_config={config}"]


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("REWARDROUTER_CONFIG", raising=False)
    monkeypatch.syspath_prepend(str(EXAMPLE))
    yield
    close_shared()


def verl_config(*overrides: str) -> DictConfig:
    """verl's ``ppo_trainer`` config with ``overrides``, composed as ``main_ppo`` composes it."""
    with initialize_config_dir(config_dir=str(VERL_CONFIG), version_base=None):
        return compose("ppo_trainer", overrides=list(overrides))


def validate_as_main_ppo(config: DictConfig) -> None:
    """What ``verl.trainer.main_ppo.main`` runs on its composed config before ``run_ppo`` starts
    Ray and asks for GPUs: its device choice and ``validate_config``, with main_ppo's arguments
    (the functions main_ppo imports)."""
    auto_set_device(config)
    with warnings.catch_warnings():  # verl notes that it disables the critic for non-GAE ones
        warnings.simplefilter("ignore", UserWarning)
        use_critic = need_critic(config)
    validate_config(
        config=config, use_reference_policy=need_reference_policy(config), use_critic=use_critic
    )


@pytest.fixture(scope="module")
def loaded() -> Any:
    """``compute_score`` as verl's own loader hands it to the reward managers."""
    return get_custom_reward_fn(verl_config(*FUNCTION))


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
TERMS = ["gsm8k/correct", "math/correct", "squad/correct"]
COLUMNS = {
    "score",
    "scored",
    "route",
    "status",
    *(f"status/{s}" for s in ("skipped", "error", "timeout", "invalid")),
    *TERMS,
}


@pytest.mark.parametrize(("source", "solution", "truth", "extra", "expected"), ROWS)
def test_rows_loaded_by_verl_score_as_the_router(
    loaded: Any,
    source: str,
    solution: str,
    truth: str,
    extra: dict[str, Any] | None,
    expected: float,
) -> None:
    result = loaded(data_source=source, solution_str=solution, ground_truth=truth, extra_info=extra)
    assert set(result) == COLUMNS
    assert result["score"] == pytest.approx(expected)
    assert (result["scored"], result["status"]) == (1.0, "ok")


def test_extra_info_names_route_status_and_terms(loaded: Any) -> None:
    right = loaded(data_source="openai/gsm8k", solution_str="#### 72", ground_truth="72")
    assert right == {
        "score": 1.0,
        "scored": 1.0,
        "route": "gsm8k",
        "status": "ok",
        "status/skipped": 0.0,
        "status/error": 0.0,
        "status/timeout": 0.0,
        "status/invalid": 0.0,
        "gsm8k/correct": 1.0,
        "math/correct": None,
        "squad/correct": None,
    }
    by_type = loaded(
        data_source="rajpurkar/squad",
        solution_str="\\boxed{Paris}",
        ground_truth="Paris",
        extra_info={"rm_type": "boxed_exact_match"},
    )
    assert set(by_type) == set(right)  # verl stacks every row's keys into one column each
    assert by_type["route"] == "rm_type:boxed_exact_match"


def test_rows_nothing_applies_to_score_zero_and_say_so(loaded: Any) -> None:
    """exact_match is not applicable without a label: verl gets 0.0, and the columns tell."""
    result = loaded(data_source="rajpurkar/squad", solution_str="Paris", ground_truth=None)
    assert (result["score"], result["scored"], result["status"]) == (0.0, 0.0, "skipped")
    assert result["status/skipped"] == 1.0


def test_batch_form_of_older_verl(loaded: Any) -> None:
    """Older verl's ``batch`` manager: one call, numpy object arrays for non-tensor columns."""
    rows = [p.values for p in ROWS]
    results = loaded(
        data_sources=np.array([r[0] for r in rows], dtype=object),
        solution_strs=[r[1] for r in rows],
        ground_truths=[r[2] for r in rows],
        extra_infos=np.array([r[3] or {} for r in rows], dtype=object),
    )
    assert [r["score"] for r in results] == pytest.approx([r[4] for r in rows])


def test_awaited_by_the_reward_loop() -> None:
    config = verl_config(
        *FUNCTION[:1], "reward.custom_reward_function.name=compute_score_async", *FUNCTION[2:]
    )
    loaded = get_custom_reward_fn(config)
    result = asyncio.run(
        loaded(
            data_source="openai/gsm8k",
            solution_str="#### 72",
            ground_truth="72",
            extra_info=extra_info(),
            reward_router_address=None,  # what the reward loop adds for generative RMs
            reward_model_tokenizer=None,
        )
    )
    assert result["score"] == 1.0


def test_called_from_many_executor_threads_at_once(loaded: Any) -> None:
    with ThreadPoolExecutor(max_workers=8) as pool:
        futures = [
            pool.submit(
                loaded, data_source="openai/gsm8k", solution_str=f"#### {n}", ground_truth="7"
            )
            for n in range(32)
        ]
        scores = [f.result()["score"] for f in futures]
    assert scores == [1.0 if n == 7 else 0.1 for n in range(32)]


def test_loaded_by_file_path_as_verl_allows() -> None:
    """``path=<file>``: verl execs the file under a made-up module name."""
    import rewardrouter.integrations.verl as module

    config = verl_config(f"reward.custom_reward_function.path={module.__file__}", *FUNCTION[1:])
    loaded = get_custom_reward_fn(config)
    assert (
        loaded(data_source="openai/gsm8k", solution_str="#### 72", ground_truth="72")["score"]
        == 1.0
    )


def test_config_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REWARDROUTER_CONFIG", str(ROUTER))
    monkeypatch.setenv("REWARDROUTER_OVERRIDES", "routes.gsm8k.rewards.correct.weight=2")
    loaded = get_custom_reward_fn(verl_config(*FUNCTION[:2]))
    assert (
        loaded(data_source="openai/gsm8k", solution_str="#### 72", ground_truth="72")["score"]
        == 2.0
    )


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


# -- route shaping ---------------------------------------------------------------------------


def test_route_shaping_applies_to_the_reward(tmp_path: Path) -> None:
    config = shaped_route_config(tmp_path, "{kind: clip, max: 1.0}", "data_source")
    result = compute_score("qa", "Paris", "Paris", None, rewardrouter_config=str(config))
    assert result["score"] == 1.0  # 1.3333 before the route's clip
    assert (result["qa/correct"], result["qa/bonus"]) == (1.0, 1.0)  # terms stay raw


@pytest.mark.parametrize(
    ("stage", "message"),
    [
        pytest.param(
            "{kind: overlong_penalty, max_len: 8, buffer: 2}",
            r"routes\.qa\.shaping\[0\]: `overlong_penalty` needs each sample's `response_length`",
            id="needs_lengths",
        ),
        pytest.param(
            "{kind: custom, path: rr_stagefns.add_bonus}",
            r"routes\.qa\.shaping\[0\]: a custom stage .* verl scores one row per call",
            id="custom_sees_one_row",
        ),
    ],
)
def test_route_stages_verl_cannot_feed_are_refused(
    tmp_path: Path, stage: str, message: str
) -> None:
    config = shaped_route_config(tmp_path, stage, "data_source")
    with pytest.raises(ConfigError, match=message):
        compute_score("qa", "Paris", "Paris", None, rewardrouter_config=str(config))


# -- launch lines ----------------------------------------------------------------------------


def readme_overrides(readme: Path) -> list[str]:
    """The Hydra overrides of the first ``main_ppo`` block of ``readme``, paths made real."""
    block = re.search(r"```bash[^\n]*\n(.*?main_ppo.*?)```", readme.read_text(), re.S)
    assert block is not None, f"{readme} has no main_ppo launch block"
    words = block.group(1).replace("\\\n", " ").split()
    return [
        w.replace("/abs/path/examples/verl/", f"{EXAMPLE}/").replace("/abs/path/", f"{EXAMPLE}/")
        for w in words
        if re.match(r"^\+{0,2}[a-z_]+(\.\w+)+=", w)
    ]


@pytest.mark.parametrize(
    "readme",
    [ROOT / "README.md", ROOT / "docs" / "trainers.md", EXAMPLE / "README.md"],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_readme_launch_lines_are_what_verl_reads(readme: Path) -> None:
    overrides = readme_overrides(readme)
    assert launch_problems(overrides) == []
    config = verl_config(*overrides)
    assert config.reward.custom_reward_function.path == "pkg://rewardrouter.integrations.verl"
    loaded = get_custom_reward_fn(config)
    assert (
        loaded(data_source="openai/gsm8k", solution_str="#### 72", ground_truth="72")["score"]
        == 1.0
    )
    if "algorithm.adv_estimator=rewardrouter" in overrides:
        assert get_adv_estimator_fn(config.algorithm.adv_estimator) is not None


def test_the_older_layout_is_ignored_by_verl_and_refused_by_rewardrouter() -> None:
    legacy = LEGACY
    config = verl_config(*legacy)  # verl's Hydra accepts the keys ...
    assert get_custom_reward_fn(config) is None  # ... and its loader never reads them
    assert [p.path for p in layout_problems(legacy)] == [
        "custom_reward_function.path",
        "custom_reward_function.name",
        "custom_reward_function.reward_kwargs.rewardrouter_config",
    ]


# -- configs the hooks cannot run, refused when verl starts --------------------------------------

#: Router configs each hook refuses: (YAML, the launch line for it, what the refusal says).
REFUSED = [
    pytest.param(
        "routes: {}\n",
        estimator_line,
        r"algorithm\.rewardrouter_config -> .*router\.yaml, post_process: .*the config has none: "
        r"the trainer would take the raw rewards as advantages, unsaid\n"
        r".*end post_process with an advantage stage, .* or with `- \{kind: none\}`",
        id="estimator_without_post_process",
    ),
    pytest.param(
        "routes: {}\npost_process: [{kind: clip, max: 1.0}]\n",
        estimator_line,
        r", post_process: .*but its last stage is `clip`",
        id="post_process_ending_in_a_shaping_stage",
    ),
    pytest.param(
        "routes: {}\npost_process: [{kind: truncation_penalty, factor: 0.5}, {kind: grpo}]\n",
        estimator_line,
        r", post_process\[0\]: `truncation_penalty` needs each row's `truncated`, which verl's "
        r"advantage step does not carry",
        id="truncation_flags_verl_does_not_carry",
    ),
    pytest.param(
        "routes: {}\npost_process: [{kind: grpo, group_by: position, n_samples_per_prompt: 2}]\n",
        estimator_line,
        r", post_process\[0\]\.group_by: `group_by: position` .* reorders rows",
        id="prompt_groups_by_position",
    ),
    pytest.param(
        "route_by: [data_source]\nroutes:\n  qa:\n    rewards: {correct: {kind: exact_match}}\n"
        "    shaping: [{kind: overlong_penalty, max_len: 8, buffer: 2}]\n",
        with_verls_grpo,
        r"reward_kwargs\.rewardrouter_config -> .*, routes\.qa\.shaping\[0\]: "
        r"`overlong_penalty` needs each sample's `response_length`",
        id="route_stage_the_reward_function_cannot_feed",
    ),
    pytest.param(
        "routes:\n  gsm8k:\n    rewards: {correct: {path: verl_rewardz.hash_answer}}\n",
        with_verls_grpo,
        r", routes\.gsm8k\.rewards\.correct\.path: module 'verl_rewardz' not found",
        id="reward_module_not_found",
    ),
    pytest.param(
        "route_by: [dataset]\nroutes:\n  qa:\n    rewards: {correct: {kind: exact_match}}\n",
        with_verls_grpo,
        r"reward_kwargs\.rewardrouter_config -> .*, route_by: verl's compute_score gives each "
        r"row's dataset as 'data_source'",
        id="route_by_without_data_source",
    ),
]


@pytest.mark.parametrize(("yaml", "line", "message"), REFUSED)
def test_configs_the_hooks_cannot_run_are_refused_at_launch(
    tmp_path: Path, yaml: str, line: Any, message: str
) -> None:
    config = tmp_path / "router.yaml"
    config.write_text(yaml)
    overrides = [*line(config), *TRAINING]
    validate_as_main_ppo(verl_config(*overrides))  # verl's own validation lets them through
    problems = launch_problems(overrides)
    assert len(problems) == 1
    assert re.search(message, str(problems[0]), re.S), str(problems[0])


@pytest.mark.parametrize(("yaml", "line", "message"), REFUSED[:4])
def test_the_estimator_refuses_the_same_configs_at_its_step(
    tmp_path: Path, yaml: str, line: Any, message: str
) -> None:
    """A config that reaches the trainer another way (a ``--config-name`` file) still stops at
    the first advantage step, with the same problems."""
    config = tmp_path / "router.yaml"
    config.write_text(yaml)
    path = message.split(", ", 1)[1]
    with pytest.raises(ConfigError, match=path):
        estimate(config, advantage_batch([1.0, 0.0], ["u", "u"], [2, 2]))


def test_every_problem_of_both_hooks_at_once(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    reward = shaped_route_config(
        tmp_path / "a", "{kind: truncation_penalty, factor: 0.5}", "data_source"
    )
    estimator = tmp_path / "b" / "router.yaml"
    estimator.write_text(
        "routes: {}\npost_process:\n  - {kind: truncation_penalty, factor: 0.5}\n"
        "  - {kind: grpo, group_by: position, n_samples_per_prompt: 2}\n"
    )
    problems = launch_problems([*function_line(reward), *estimator_line(estimator)])
    assert [p.path.rsplit(", ", 1)[1] for p in problems] == [
        "routes.qa.shaping[0]",
        "post_process[0]",
        "post_process[1].group_by",
    ]


@pytest.mark.parametrize(
    ("overrides", "environment", "found"),
    [
        pytest.param(
            ["algorithm.adv_estimator=rewardrouter"],
            None,
            [r"\+algorithm\.rewardrouter_config: no router config was given"],
            id="estimator_without_a_config",
        ),
        pytest.param(
            ["algorithm.adv_estimator=rewardrouter"], ROUTER, [], id="config_from_the_environment"
        ),
        pytest.param(
            ["algorithm.adv_estimator=rewardrouter", "--config-name=my_ppo"],
            None,
            [],
            id="config_may_come_from_a_config_file",
        ),
        pytest.param(
            estimator_line("nowhere.yaml"),
            ROUTER,
            [r"algorithm\.rewardrouter_config: router config 'nowhere\.yaml' not found"],
            id="missing_file_though_the_environment_names_one",
        ),
        pytest.param(
            [*function_line(ROUTER), "algorithm.adv_estimator=grpo"],
            None,
            [],
            id="verls_own_estimator_reads_no_router_config",
        ),
        pytest.param(
            [
                f"reward.custom_reward_function.path={compute_score.__code__.co_filename}",
                *function_line("nowhere.yaml")[1:],
                "algorithm.adv_estimator=grpo",
            ],
            None,
            [r"reward_kwargs\.rewardrouter_config: router config 'nowhere\.yaml' not found"],
            id="the_hook_named_by_its_file",
        ),
        pytest.param(
            [
                "reward.custom_reward_function.path=/home/me/rewardrouter_tools/score.py",
                "reward.custom_reward_function.name=my_score",
                "algorithm.adv_estimator=grpo",
            ],
            None,
            [],
            id="a_function_of_your_own_is_not_checked",
        ),
        pytest.param(
            estimator_line("${reward.custom_reward_function.reward_kwargs.rewardrouter_config}"),
            None,
            [],
            id="interpolation_left_to_the_hook",
        ),
    ],
)
def test_where_the_launch_check_finds_router_configs(
    monkeypatch: pytest.MonkeyPatch,
    overrides: list[str],
    environment: Path | None,
    found: list[str],
) -> None:
    if environment is not None:
        monkeypatch.setenv("REWARDROUTER_CONFIG", str(environment))
    problems = launch_problems(overrides)
    assert len(problems) == len(found), problems
    for problem, pattern in zip(problems, found, strict=True):
        assert re.search(pattern, str(problem)), str(problem)


def run_python(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(EXAMPLE), *sys.path])}
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=240, env=env
    )


def test_verl_stops_at_import_when_launched_with_the_older_layout() -> None:
    """The ``verl.plugins`` entry point loads rewardrouter when verl is imported: the launch
    process stops before Ray starts, with the fix."""
    legacy = LEGACY
    done = run_python("-c", f"import sys; sys.argv = ['-m', *{legacy!r}]; import verl")
    assert done.returncode != 0
    assert "write `reward.custom_reward_function.path=pkg://rewardrouter.integrations.verl`" in (
        done.stderr
    )


def test_main_ppo_stops_at_start_on_a_config_the_estimator_cannot_run(tmp_path: Path) -> None:
    """verl's own entry point, the README's line: the plugin stops it before Hydra's job runs."""
    config = tmp_path / "router.yaml"
    config.write_text(ROUTER.read_text().split("post_process:")[0])  # the example as it was
    line = [*function_line(config), *estimator_line(config), *TRAINING, "--cfg", "job"]
    refused = run_python("-m", "verl.trainer.main_ppo", *line)
    assert refused.returncode != 0
    assert "error: verl launch line (1 problem)" in refused.stderr
    assert "post_process: algorithm.adv_estimator=rewardrouter computes" in refused.stderr
    assert "end post_process with an advantage stage" in refused.stderr
    shipped = [*function_line(ROUTER), *estimator_line(ROUTER), *TRAINING, "--cfg", "job"]
    accepted = run_python("-m", "verl.trainer.main_ppo", *shipped)
    assert accepted.returncode == 0, accepted.stderr[-2000:]
    assert f"rewardrouter_config: {ROUTER}" in accepted.stdout


def test_launcher_checks_then_runs_main_ppo_unchanged() -> None:
    legacy = run_python("-m", "rewardrouter.integrations.verl", "reward_model.reward_manager=batch")
    assert legacy.returncode == 2
    assert "verl >= 0.9 has no reward manager 'batch'" in legacy.stderr
    overrides = readme_overrides(EXAMPLE / "README.md")
    shown = run_python("-m", "rewardrouter.integrations.verl", *overrides, "--cfg", "job")
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "path: pkg://rewardrouter.integrations.verl" in shown.stdout  # main_ppo's own compose


# -- an example config from the launch line to the advantages ---------------------------------

#: The reward loop's rows: ROWS, a wrong MATH answer, and each row's prompt group (verl's uid):
#: the gsm8k group has four different rewards, math two, squad is constant.
LOOP_ROWS: list[tuple[str, str, str, dict[str, Any]]] = [
    cast(tuple[str, str, str, dict[str, Any]], (*p.values[:3], p.values[3] or {})) for p in ROWS
] + [("lighteval/MATH", "\\boxed{2}", "\\frac12", {})]
UIDS = ["gsm8k"] * 4 + ["math", "squad", "squad", "math"]


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A byte-level BPE tokenizer saved where verl's workers load it (no network)."""
    path = tmp_path_factory.mktemp("tokenizer")
    bpe_tokenizer(
        [str(r[1]) for r in LOOP_ROWS],
        vocab_size=400,
        special_tokens=["<pad>", "</s>"],
        pad="<pad>",
        eos="</s>",
    ).save_pretrained(path)
    return path


def reward_loop_batch(
    tokenizer: Any, rows: list[tuple[str, str, str, dict[str, Any]]]
) -> DataProto:
    """What verl's rollout hands the reward loop: left-padded prompts, right-padded responses."""
    n, prompt_len = len(rows), 2
    encoded = [tokenizer.encode(r[1]) for r in rows]
    response_len = max(len(ids) for ids in encoded)
    pad = tokenizer.pad_token_id
    prompts = torch.full((n, prompt_len), pad)
    responses = torch.full((n, response_len), pad)
    mask = torch.zeros((n, prompt_len + response_len), dtype=torch.long)
    mask[:, prompt_len - 1] = 1
    for i, ids in enumerate(encoded):
        responses[i, : len(ids)] = torch.tensor(ids)
        mask[i, prompt_len : prompt_len + len(ids)] = 1
    return DataProto.from_dict(
        tensors={"prompts": prompts, "responses": responses, "attention_mask": mask},
        non_tensors={
            "data_source": np.array([r[0] for r in rows], dtype=object),
            "reward_model": np.array([{"ground_truth": r[2]} for r in rows], dtype=object),
            "extra_info": np.array([r[3] for r in rows], dtype=object),
        },
    )


def run_reward_loop(config: DictConfig, batch: DataProto) -> DataProto:
    """verl's RewardLoopManager, its Ray RewardLoopWorkers and the naive manager, on local Ray."""
    import ray
    from verl.experimental.reward_loop import RewardLoopManager

    path = os.pathsep.join([str(EXAMPLE), *sys.path])
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": path}},
    )
    try:
        out: DataProto = RewardLoopManager(config).compute_rm_score(batch)
        return out
    finally:
        ray.shutdown()


@pytest.mark.parametrize("router_config", EXAMPLE_CONFIGS, ids=lambda p: p.name)
def test_example_config_from_the_launch_line_to_the_advantages(
    router_config: Path, tokenizer_dir: Path
) -> None:
    """The README's launch line naming the shipped config, through verl as a launch goes: the
    plugin's launch check, Hydra's compose and main_ppo's validation, the reward loop on Ray,
    then the trainer's advantage step on the loop's scores."""
    from transformers import AutoTokenizer

    line = [
        o.replace(str(ROUTER), str(router_config)) for o in readme_overrides(EXAMPLE / "README.md")
    ]
    assert "algorithm.adv_estimator=rewardrouter" in line
    assert launch_problems(line) == []
    config = verl_config(
        *line, *TRAINING, f"actor_rollout_ref.model.path={tokenizer_dir}", "reward.num_workers=2"
    )
    validate_as_main_ppo(config)

    batch = reward_loop_batch(AutoTokenizer.from_pretrained(tokenizer_dir), LOOP_ROWS)
    out = run_reward_loop(config, batch)
    samples = [
        Sample(response=r[1], label=r[2], metadata={**r[3], "data_source": r[0]}) for r in LOOP_ROWS
    ]
    with compile_router(load_config(router_config)) as router:
        expected = list(router.score_sync(samples))
        rewards = [r.reward for r in expected]
        lengths = batch.batch["attention_mask"][:, 2:].sum(dim=-1).tolist()
        groups = [sorted(set(UIDS)).index(u) for u in UIDS]
        chain = router.post_processor(rewards, group_index=groups, response_length=lengths)
    assert out.batch["rm_scores"].sum(dim=-1).tolist() == pytest.approx(rewards, rel=1e-6)
    assert out.non_tensor_batch["route"].tolist() == [r.route for r in expected]
    assert set(out.meta_info["reward_extra_keys"]) == COLUMNS

    # the trainer's advantage step (no KL in the reward: token_level_rewards = the scores)
    batch = batch.union(out)
    batch.batch["token_level_rewards"] = batch.batch["rm_scores"]
    batch.non_tensor_batch["uid"] = np.array(UIDS, dtype=object)
    ours = compute_advantage(
        batch, adv_estimator=config.algorithm.adv_estimator, config=config.algorithm
    ).batch["advantages"]
    mask = batch.batch["response_mask"]  # verl's compute_response_mask made it
    assert (ours == ours[:, :1] * mask).all()  # one advantage per row, over its response tokens
    assert ours[:, 0].tolist() == pytest.approx(chain.advantages, abs=1e-6)
    assert ours[[5, 6], 0].tolist() == [0.0, 0.0]  # the constant squad group: exactly 0
    estimator = router.config.post_process[-1]
    if isinstance(estimator, GRPOStage) and estimator.std == "group":
        theirs = compute_advantage(
            batch.select(deepcopy=True),
            adv_estimator=AdvantageEstimator.GRPO,
            config=config.algorithm,
        ).batch["advantages"]
        torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-6)  # verl's own GRPO


# -- the advantage estimator through verl's compute_advantage --------------------------------


def advantage_batch(rewards: list[float], uids: list[str], lengths: list[int]) -> DataProto:
    """Rows x tokens, the score on each row's last response token, as verl's reward step."""
    width = max(lengths)
    mask = torch.zeros((len(rewards), width), dtype=torch.float32)
    token_rewards = torch.zeros((len(rewards), width), dtype=torch.float32)
    for i, (reward, length) in enumerate(zip(rewards, lengths, strict=True)):
        mask[i, :length] = 1
        token_rewards[i, length - 1] = reward
    return DataProto.from_dict(
        tensors={"token_level_rewards": token_rewards, "response_mask": mask},
        non_tensors={"uid": np.array(uids, dtype=object)},
    )


@functools.cache
def _estimator_config() -> DictConfig:
    """verl's config composed with the estimator's overrides, its router config a placeholder."""
    return verl_config("algorithm.adv_estimator=rewardrouter", "+algorithm.rewardrouter_config=-")


def estimate(config_path: Path, batch: DataProto) -> torch.Tensor:
    """The advantages of ``batch`` from verl's compute_advantage with the README's estimator
    overrides naming ``config_path`` (composed once: the path is one string value in it)."""
    config = copy.deepcopy(_estimator_config())
    config.algorithm.rewardrouter_config = str(config_path)
    out = compute_advantage(
        batch, adv_estimator=config.algorithm.adv_estimator, config=config.algorithm
    )
    return out.batch["advantages"]


def test_estimator_is_registered_with_verl_on_import() -> None:
    import rewardrouter.integrations.verl as module

    assert get_adv_estimator_fn("rewardrouter") is module.compute_advantage


def test_estimator_exact_zero_for_constant_groups_uneven_groups_by_uid(tmp_path: Path) -> None:
    config = tmp_path / "router.yaml"
    config.write_text("routes: {}\npost_process: [{kind: grpo}]\n")
    rewards = [0.3] * 5 + [7.3] * 16 + [1.0, 0.0, 0.5] + [2.0]
    uids = ["a"] * 5 + ["b"] * 16 + ["c", "d", "c"] + ["d"]  # c: 2 rows, d: 2 rows, interleaved
    lengths = [3] * len(rewards)
    batch = advantage_batch(rewards, uids, lengths)
    advantages = estimate(config, batch)
    assert advantages.device == batch.batch["token_level_rewards"].device
    per_row = advantages[:, 0]
    assert per_row[:21].abs().max().item() == 0.0  # float32 rewards, constant groups: exactly 0
    ids = torch.tensor([ord(u) for u in uids])
    reference = group_advantages(torch.tensor(rewards, dtype=torch.float32), ids)
    assert per_row.tolist() == reference.tolist()
    assert (advantages == per_row[:, None] * batch.batch["response_mask"]).all()


def test_the_estimator_checks_its_config_once_per_router(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rewardrouter.integrations import _verl_advantage

    checked: list[Any] = []
    check = _verl_advantage._problems
    monkeypatch.setattr(
        _verl_advantage, "_problems", lambda router: checked.append(router) or check(router)
    )
    config = tmp_path / "router.yaml"
    config.write_text("routes: {}\npost_process: [{kind: grpo}]\n")
    for _ in range(3):  # three advantage steps
        estimate(config, advantage_batch([1.0, 0.0], ["u", "u"], [2, 2]))
    assert len(checked) == 1


def test_estimator_runs_the_global_shaping_with_each_rows_length(tmp_path: Path) -> None:
    config = tmp_path / "router.yaml"
    config.write_text(
        "routes: {}\n"
        "post_process:\n"
        "  - {kind: overlong_penalty, max_len: 4, buffer: 0, factor: 1.0}\n"
        "  - {kind: grpo, std: none}\n"
    )
    advantages = estimate(config, advantage_batch([1.0, 1.0], ["u", "u"], [3, 6]))
    assert advantages[:, 0].tolist() == [0.5, -0.5]  # the long answer lost 1.0 to the penalty


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        pytest.param(
            GRPOStage(device="cpu"),
            lambda r, m, i: compute_grpo_outcome_advantage(r, m, i, 1e-6, True),
            id="grpo",
        ),
        pytest.param(
            GRPOStage(device="cpu", std="none"),
            lambda r, m, i: compute_grpo_outcome_advantage(r, m, i, 1e-6, False),
            id="dr_grpo",
        ),
        pytest.param(RLOOStage(device="cpu"), compute_rloo_outcome_advantage, id="rloo"),
    ],
)
def test_estimators_equal_verls_own_on_groups_of_two_or_more(
    seed: int, ours: AdvantageStage, theirs: Any
) -> None:
    # verl's own GRPO, Dr.GRPO and RLOO functions on the same shuffled batch; groups of one are
    # left out (verl scores a lone answer reward / (1 + eps), rewardrouter gives it 0)
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 17, size=6)
    index = rng.permutation(np.repeat(np.arange(len(sizes)), sizes))
    rewards = (
        torch.from_numpy(rng.normal(size=len(index))).float()
        if seed % 2
        else torch.from_numpy(rng.integers(0, 3, size=len(index)) * 0.5).float()  # ties
    )
    token_level = torch.zeros(len(index), 3)
    token_level[:, -1] = rewards
    mask = torch.ones(len(index), 3)
    expected, _ = theirs(token_level, mask, index)
    got = group_advantages(rewards, torch.from_numpy(index), ours)
    torch.testing.assert_close(got, expected[:, 0], rtol=1e-5, atol=1e-6)
