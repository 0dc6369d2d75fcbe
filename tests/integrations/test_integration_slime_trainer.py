"""slime's own code around rewardrouter's hooks, from a slime checkout (see ``rr_checkouts``).

Every test here reaches rewardrouter through slime: its reward entry points (``async_rm``,
``batched_async_rm`` of ``slime.rollout.rm_hub``, which load ``--custom-rm-path`` and await
it), its rollout logging (``log_rollout_data``, which calls ``--custom-rollout-log-function-path``
and then computes slime's own metrics from every sample's reward), its dynamic sampling filter,
its ``load_function`` for ``--custom-reward-post-process-path``, and its plugin contract suite
(``tests/plugin_contracts``, run as slime's CI runs it, once per launch line of the README). vime
keeps slime's reward contract, so these are vime's tests too.

The samples are slime's own ``Sample``; the config is the shipped ``conf/router/mixed.yaml``,
whose judge route (``on_error: skip``) points at a port where nothing listens. The experiment
tracker is the one stand-in: slime's ``logging_utils`` imports ``wandb``, and a module that
records what ``wandb.log`` receives takes its place, so that the metrics slime would send are
read back.
"""

from __future__ import annotations

import ast
import asyncio
import os
import re
import socket
import subprocess
import sys
import types
import warnings
from argparse import Namespace
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rr_checkouts import SLIME, checkout
from rr_frameworks import trainer_args

from rewardrouter import ConfigError, RewardRouterWarning, SampleError
from rewardrouter.integrations import _metrics
from rewardrouter.integrations._router_cache import close_shared

pytestmark = pytest.mark.slow  # a long file: `make test` starts it first

HOOKS = "rewardrouter.integrations.slime"
GSM8K, JUDGED = "openai/gsm8k", "HuggingFaceH4/ultrafeedback_binarized"
SQUAD = "rajpurkar/squad"


class Tracker(types.ModuleType):
    """Stands in for ``wandb``: keeps each dict slime logs."""

    def __init__(self) -> None:
        super().__init__("wandb")
        self.logged: list[dict[str, Any]] = []

    def log(self, metrics: dict[str, Any]) -> None:
        self.logged.append(dict(metrics))


TRACKER = Tracker()


@pytest.fixture(scope="module")
def slime_root() -> Path:
    return checkout(SLIME)


@pytest.fixture(autouse=True)
def slime(slime_root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[types.SimpleNamespace]:
    """slime's modules, imported from the checkout."""
    monkeypatch.syspath_prepend(str(slime_root))
    monkeypatch.setitem(sys.modules, "wandb", TRACKER)
    monkeypatch.setattr(_metrics, "WARNINGS", Counter())
    monkeypatch.setattr(_metrics, "_emitted", set())
    monkeypatch.setattr(_metrics, "_counted", set())
    monkeypatch.delenv("REWARDROUTER_CONFIG", raising=False)
    monkeypatch.delenv("REWARDROUTER_OVERRIDES", raising=False)
    monkeypatch.setenv("JUDGE_URL", f"http://127.0.0.1:{closed_port()}/v1")
    TRACKER.logged.clear()
    # slime is no package: imported from the checkout, unknown to type checkers
    from slime.observability.rollout_metrics import (  # type: ignore[import-not-found]
        log_rollout_data,
    )
    from slime.rollout.filter_hub.dynamic_sampling_filters import (  # type: ignore[import-not-found]
        check_reward_nonzero_std,
    )
    from slime.rollout.rm_hub import async_rm, batched_async_rm  # type: ignore[import-not-found]
    from slime.utils.misc import load_function  # type: ignore[import-not-found]
    from slime.utils.types import Sample  # type: ignore[import-not-found]

    yield types.SimpleNamespace(
        Sample=Sample,
        async_rm=async_rm,
        batched_async_rm=batched_async_rm,
        log_rollout_data=log_rollout_data,
        check_reward_nonzero_std=check_reward_nonzero_std,
        load_function=load_function,
    )
    close_shared()


def closed_port() -> int:
    """A loopback port where nothing listens (the judge server that is not there)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def slime_args(group_rm: bool, **fields: Any) -> Namespace:
    """slime's ``args`` for the launch lines of the README (``--custom-config-path`` has put
    ``rewardrouter_config`` on it), with what slime's logging reads."""
    slime = {"use_wandb": True, "use_tensorboard": False}
    return trainer_args(HOOKS, group_rm, **{**slime, **fields})


def groups(slime: Any) -> list[list[Any]]:
    """Two prompt groups as slime's rollout hands them over: math (one right answer, one
    wrong) and judged answers (the judge is unreachable)."""
    sample = slime.Sample

    def make(group: int, index: int, prompt: str, response: str, label: str, data: str) -> Any:
        return sample(
            group_index=group,
            index=index,
            prompt=prompt,
            response=response,
            response_length=len(response.split()),
            label=label,
            status=sample.Status.COMPLETED,
            metadata={"dataset": data},
        )

    return [
        [
            make(0, 0, "What is 6 * 7?", "6 * 7 = \\boxed{42}", "42", GSM8K),
            make(0, 1, "What is 6 * 7?", "\\boxed{41}", "42", GSM8K),
        ],
        [
            make(1, 2, "Write a haiku.", "Old pond, a frog leaps", "", JUDGED),
            make(1, 3, "Write a haiku.", "haiku", "", JUDGED),
        ],
    ]


def score_as_slime(slime: Any, args: Namespace, batch: list[list[Any]]) -> list[Any]:
    """What slime's rollout does: with --group-rm, ``batched_async_rm`` per prompt group, else
    ``async_rm`` per sample; each reward stored in ``sample.reward``. The flat batch back."""

    async def run() -> None:
        for group in batch:
            if args.group_rm:
                rewards = await slime.batched_async_rm(args, group)
            else:
                rewards = [await slime.async_rm(args, sample) for sample in group]
            for sample, reward in zip(group, rewards, strict=True):
                sample.reward = reward

    asyncio.run(run())
    return [sample for group in batch for sample in group]


# -- item: no None to slime ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("group_rm", "reward_key"),
    [
        pytest.param(False, None, id="custom_rm"),
        pytest.param(True, None, id="batched_custom_rm_group_rm"),
        pytest.param(True, "score", id="batched_custom_rm_reward_key"),
    ],
)
def test_slime_logs_a_rollout_whose_judge_is_unreachable(
    slime: Any, group_rm: bool, reward_key: str | None
) -> None:
    args = slime_args(group_rm, reward_key=reward_key)
    samples = score_as_slime(slime, args, groups(slime))
    values = [s.get_reward_value(args) for s in samples]  # what slime reads
    assert values[:2] == [pytest.approx(1.1), pytest.approx(0.1)]
    assert values[2:] == [0.0, 0.0]  # missing_reward.value, not None
    assert [s.remove_sample for s in samples] == [False, False, True, True]  # slime's mask
    assert [s.metadata["rewardrouter"]["status"] for s in samples] == ["ok", "ok", "error", "error"]

    slime.log_rollout_data(7, args, samples, {"rollout/source": 1.0}, 2.5)  # slime's own logging

    assert args.logged_rollout_id == 7
    [logged] = TRACKER.logged
    assert logged["rollout/step"] == 7
    assert logged["rollout/zero_std/count_0.0"] == 1  # slime's metric over the filled group
    assert logged["rollout/source"] == 1.0
    assert logged["rewardrouter/status/ok"] == 0.5
    assert logged["rewardrouter/status/error"] == 0.5  # the real status, not a 0.0 "ok"
    assert logged["rewardrouter/filled"] == 0.5
    assert logged["rewardrouter/judged/count"] == 2.0
    assert "rewardrouter/judged/reward" not in logged  # a filled value is no reward
    assert logged["rewardrouter/gsm8k/reward"] == pytest.approx(0.6)
    assert logged["rewardrouter/groups"] == 1.0  # the judged group has no reward to compare


def test_post_process_leaves_filled_samples_out_of_their_group(slime: Any) -> None:
    args = slime_args(True)
    samples = score_as_slime(slime, args, groups(slime))
    hook = slime.load_function(args.custom_reward_post_process_path)
    raw, advantages = hook(args, samples)  # as slime's rollout manager calls it
    assert raw == [pytest.approx(1.1), pytest.approx(0.1), 0.0, 0.0]
    assert advantages[2:] == [0.0, 0.0]
    assert advantages[0] == pytest.approx(-advantages[1]) and advantages[0] > 0.5


def test_dynamic_sampling_filter_reads_filled_rewards(slime: Any) -> None:
    args = slime_args(True)
    batch = groups(slime)
    score_as_slime(slime, args, batch)
    kept = [slime.check_reward_nonzero_std(args, group) for group in batch]
    assert [bool(k.keep) for k in kept] == [True, False]
    assert kept[1].reason == "zero_std_0.0"


def test_missing_reward_is_declared_in_the_config(slime: Any) -> None:
    args = slime_args(
        True, rewardrouter_overrides=["missing_reward.value=-1.0", "missing_reward.mask=false"]
    )
    samples = score_as_slime(slime, args, groups(slime))
    assert [s.reward for s in samples[2:]] == [-1.0, -1.0]
    assert [s.remove_sample for s in samples] == [False] * 4
    slime.log_rollout_data(0, args, samples, {}, 1.0)
    [logged] = TRACKER.logged
    assert logged["rollout/zero_std/count_-1.0"] == 1
    raw, advantages = slime.load_function(args.custom_reward_post_process_path)(args, samples)
    assert raw[2:] == [-1.0, -1.0] and advantages[2:] == [0.0, 0.0]


# -- item: the command line's checks, through slime ----------------------------------------------


def test_a_group_index_shared_by_two_prompts_is_counted_once_per_batch(slime: Any) -> None:
    """Two data files that each numbered their groups from 0: the haiku answers join group 0."""
    args = slime_args(True)
    batch = groups(slime)
    for sample in batch[1]:
        sample.group_index = 0
    samples = score_as_slime(slime, args, batch)
    with pytest.warns(UserWarning, match=r"prompt group 0 holds answers to another"):
        slime.log_rollout_data(1, args, samples, {}, 1.0)
    slime.load_function(args.custom_reward_post_process_path)(args, samples)  # same batch
    [logged] = TRACKER.logged
    assert logged["rewardrouter/warnings/mixed_prompt_group"] == 1.0
    assert _metrics.WARNINGS["mixed_prompt_group"] == 1


#: (two groups that one group_index joined: (prompt, [(response, label)], dataset) each, the
#: warning, or None where one group is legitimate). The prompts read the same, so only the
#: labels or the datasets tell the files apart; before, such a group was normalized as one,
#: with no warning.
SAME_PROMPT = "<image> Which animal is in the picture?"
JOINED = [
    pytest.param(
        (SAME_PROMPT, [("cat", "cat"), ("a dog", "cat")], SQUAD),
        (SAME_PROMPT, [("dog", "dog"), ("a cat", "dog")], SQUAD),
        r"sample 2: prompt group 0 holds answers to another label: 'dog' here, 'cat' at "
        r"sample 0; GRPO would compare answers to different questions\. Give each prompt its "
        r"own group_index \(.*offset each file's group_index past the previous file's\)",
        id="labels_differ",
    ),
    pytest.param(
        (SAME_PROMPT, [("cat", "cat"), ("a dog", "cat")], SQUAD),
        (SAME_PROMPT, [("cat", "cat"), ("dog", "cat")], "rajpurkar/squad_v2"),
        r"sample 2: prompt group 0 holds answers to another dataset: dataset='rajpurkar/squad_v2' "
        r"here, dataset='rajpurkar/squad' at sample 0",
        id="datasets_differ",
    ),
    pytest.param(
        (SAME_PROMPT, [("cat", ["cat", "kitten"]), ("a dog", ["cat", "kitten"])], SQUAD),
        (SAME_PROMPT, [("kitten", ["cat", "kitten"]), ("dog", ["cat", "kitten"])], SQUAD),
        None,
        id="equal_list_labels_are_one_group",
    ),
]


@pytest.mark.parametrize(("first", "second", "warned"), JOINED)
def test_a_group_index_shared_by_answers_to_other_labels_or_datasets_is_counted(
    slime: Any, first: Any, second: Any, warned: str | None
) -> None:
    args = slime_args(
        True, rewardrouter_overrides=["routes.squad.match=[rajpurkar/squad, rajpurkar/squad_v2]"]
    )
    index = iter(range(4))
    batch = [
        [
            slime.Sample(
                group_index=0,
                index=next(index),
                prompt=prompt,
                response=response,
                label=label,
                status=slime.Sample.Status.COMPLETED,
                metadata={"dataset": data},
            )
            for response, label in answers
        ]
        for prompt, answers, data in (first, second)
    ]
    samples = score_as_slime(slime, args, batch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        slime.log_rollout_data(1, args, samples, {}, 1.0)
        slime.load_function(args.custom_reward_post_process_path)(args, samples)  # same batch
    said = [str(w.message) for w in caught if issubclass(w.category, RewardRouterWarning)]
    [logged] = TRACKER.logged
    if warned is None:
        assert said == [] and "rewardrouter/warnings/mixed_prompt_group" not in logged
    else:
        [message] = said
        assert re.search(warned, message), message
        assert logged["rewardrouter/warnings/mixed_prompt_group"] == 1.0


#: (post_process override, what slime gets): a chain that ends in no advantage stage is
#: refused where slime's rollout manager calls the hook; before, slime took the raw rewards as
#: advantages, unsaid. `{kind: none}` says so on purpose.
CHAINS = [
    pytest.param("post_process=[]", "but the config has none", id="no_post_process"),
    pytest.param(
        "post_process=[{kind: clip, max: 1.0}]",
        r"but its last stage is `clip`",
        id="ends_in_a_shaping_stage",
    ),
    pytest.param("post_process=[{kind: none}]", None, id="none_says_raw_rewards"),
]


def rollout_manager_post_process(slime_root: Path, slime: Any) -> Any:
    """``RolloutManager._post_process_rewards`` of the checkout's ``slime/ray/rollout.py``,
    compiled alone (the module imports sglang): how slime's trainer calls the hook."""
    path = slime_root / "slime" / "ray" / "rollout.py"
    tree = ast.parse(path.read_text(), str(path))
    [method] = [
        node
        for klass in tree.body
        if isinstance(klass, ast.ClassDef) and klass.name == "RolloutManager"
        for node in klass.body
        if isinstance(node, ast.FunctionDef) and node.name == "_post_process_rewards"
    ]
    namespace: dict[str, Any] = {"Sample": slime.Sample}
    exec(compile(ast.Module(body=[method], type_ignores=[]), str(path), "exec"), namespace)
    return namespace["_post_process_rewards"]


@pytest.mark.parametrize(("chain", "refused"), CHAINS)
def test_a_chain_without_an_advantage_stage_is_refused_where_slime_calls_the_hook(
    slime: Any, slime_root: Path, chain: str, refused: str | None
) -> None:
    args = slime_args(True, rewardrouter_overrides=[chain])
    samples = score_as_slime(slime, args, groups(slime))
    manager = Namespace(
        args=args,
        custom_reward_post_process_func=slime.load_function(args.custom_reward_post_process_path),
    )
    post_process = rollout_manager_post_process(slime_root, slime)
    if refused is None:
        raw, advantages = post_process(manager, samples)
        assert advantages == raw == [pytest.approx(1.1), pytest.approx(0.1), 0.0, 0.0]
        return
    with pytest.raises(ConfigError) as stopped:
        post_process(manager, samples)
    message = str(stopped.value)
    assert re.search(refused, message)
    assert (
        "post_process: --custom-reward-post-process-path rewardrouter.integrations.slime" in message
    )
    assert "or with `- {kind: none}` to train on the shaped rewards as they are" in message
    assert "drop --custom-reward-post-process-path to keep slime's own normalization" in message


def test_a_batch_without_group_index_that_is_not_whole_groups_is_counted(slime: Any) -> None:
    args = slime_args(True)
    samples = score_as_slime(slime, args, groups(slime))[:3]  # one answer was filtered out
    for sample in samples:
        sample.group_index = None
    with pytest.warns(UserWarning, match=r"the batch holds 3 samples, not n_samples_per_prompt"):
        slime.load_function(args.custom_reward_post_process_path)(args, samples)
    assert _metrics.WARNINGS["one_prompt_group"] == 1


def test_group_by_position_over_an_incomplete_group_is_refused_before_the_chain(
    slime: Any,
) -> None:
    overrides = ["post_process=[{kind: grpo, group_by: position, n_samples_per_prompt: 2}]"]
    args = slime_args(True, rewardrouter_overrides=overrides)
    samples = score_as_slime(slime, args, groups(slime))[:3]
    with pytest.raises(
        SampleError, match=r"sample 2: post_process\[0\] \(grpo\) groups by position"
    ):
        slime.load_function(args.custom_reward_post_process_path)(args, samples)


def test_samples_without_labels_whose_graders_did_not_apply_are_counted(slime: Any) -> None:
    """slime read the labels from a column the data does not have: every label is None."""
    args = slime_args(False)
    batch = groups(slime)[:1]
    for sample in batch[0]:
        sample.label = None
    with pytest.warns(UserWarning, match=r"--label-key"):
        samples = score_as_slime(slime, args, batch)
    slime.log_rollout_data(2, args, samples, {}, 1.0)
    [logged] = TRACKER.logged
    assert logged["rewardrouter/warnings/label_missing"] == 2.0


# -- slime's agent sessions: TrajectoryManager's samples ----------------------------------------

QUESTION, ANSWER = "What is 6 * 7?", "6 * 7 = \\boxed{42}"


def agent_session(**finish: Any) -> list[Any]:
    """One agent session through slime's own ``OpenAIAdapter`` (its ``TrajectoryManager``
    records the turn) and ``finish_session(sid, base_sample=..., **finish)``: the training
    samples slime's agent rollout hands on."""
    from rr_tiny_llama import bpe_tokenizer
    from slime.agent.adapters.openai import OpenAIAdapter  # type: ignore[import-not-found]
    from slime.agent.trajectory import TurnRecord  # type: ignore[import-not-found]
    from slime.utils.types import Sample  # type: ignore[import-not-found]

    tokenizer = bpe_tokenizer(
        [QUESTION, ANSWER],
        vocab_size=300,
        special_tokens=["<pad>", "</s>"],
        pad="<pad>",
        eos="</s>",
    )

    def ids(text: str) -> list[int]:
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])

    adapter = OpenAIAdapter(tokenizer=tokenizer, sglang_url="http://127.0.0.1:1")
    adapter.open_session("sid")
    adapter.manager.record_turn(
        "sid",
        turn=TurnRecord(prompt_ids=ids(QUESTION), output_ids=ids(ANSWER), finish_reason="stop"),
        prompt_messages=[{"role": "user", "content": QUESTION}],
        response_message={"role": "assistant", "content": ANSWER},
    )
    base = Sample(index=0, group_index=0, prompt=QUESTION, label="42", metadata={"dataset": GSM8K})
    return list(asyncio.run(adapter.finish_session("sid", base_sample=base, **finish)))


#: (finish_session's arguments, --group-rm, the training reward, agent_reward_preset counted).
#: With its default reward 0.0 the session's samples were never scored, silently.
AGENT = [
    pytest.param({}, True, 0.0, 1, id="default_reward_group_rm"),
    pytest.param({}, False, 0.0, 1, id="default_reward_per_sample"),
    pytest.param(
        {"reward": None, "extra_metadata": {"dataset": GSM8K}}, False, 1.1, 0, id="reward_none"
    ),
    pytest.param({"reward": 1.0}, True, 1.0, 0, id="a_reward_of_your_own"),
]


@pytest.mark.parametrize(("finish", "group_rm", "reward", "counted"), AGENT)
def test_an_agent_sessions_preset_rewards_are_named_never_scored_silently(
    slime: Any,
    slime_root: Path,
    finish: dict[str, Any],
    group_rm: bool,
    reward: float,
    counted: int,
) -> None:
    args = slime_args(group_rm)
    samples = agent_session(**finish)
    assert [s.response for s in samples] == [ANSWER]

    async def rollout() -> None:  # slime's generate_and_rm: score what has no reward yet
        if group_rm:
            rewards = await slime.batched_async_rm(args, samples)
            for sample, value in zip(samples, rewards, strict=True):
                sample.reward = value
        for sample in samples:
            if sample.reward is None:
                sample.reward = await slime.async_rm(args, sample)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(rollout())
        manager = Namespace(
            args=args,
            custom_reward_post_process_func=slime.load_function(
                args.custom_reward_post_process_path
            ),
        )
        rollout_manager_post_process(slime_root, slime)(manager, samples)
        slime.log_rollout_data(5, args, samples, {}, 1.0)
    assert [s.get_reward_value(args) for s in samples] == [pytest.approx(reward)]
    said = [str(w.message) for w in caught if issubclass(w.category, RewardRouterWarning)]
    [logged] = TRACKER.logged
    assert logged.get("rewardrouter/warnings/agent_reward_preset", 0.0) == counted
    if counted:
        [message] = said
        assert message.startswith(
            "1 sample(s) built by slime's agent TrajectoryManager (their metadata holds "
            "truncated, use_tool, ill_formed) came with reward 0.0 already set"
        )
        assert "call finish_session(..., reward=None)" in message
        assert "extra_metadata={'dataset': base_sample.metadata['dataset']}" in message
    else:
        assert said == []


# -- slime's plugin contract suite, once per README launch line ----------------------------------

#: (launch line of the README, the SLIME_CONTRACT_* variables it sets). vime takes the same.
LAUNCHES = {
    "custom_rm": {"CUSTOM_RM_PATH": f"{HOOKS}.custom_rm"},
    "batched_custom_rm --group-rm": {
        "CUSTOM_RM_PATH": f"{HOOKS}.batched_custom_rm",
        "GROUP_RM": "1",
    },
}
#: Hooks every launch line names besides the reward hook.
ALWAYS = {
    "CUSTOM_REWARD_POST_PROCESS_PATH": f"{HOOKS}.post_process_rewards",
    "CUSTOM_ROLLOUT_LOG_FUNCTION_PATH": f"{HOOKS}.log_rollout",
}
#: The suite's tests that load a rewardrouter function (the others test slime's own defaults).
CALLING_REWARDROUTER = (
    "test_plugin_path_loading_contracts.py::test_custom_rm_path_aligns_with_expected_format",
    "test_plugin_runtime_hook_contracts.py::test_runtime_hook_path_aligns_with_expected_format"
    "[custom_reward_post_process]",
    "test_plugin_runtime_hook_contracts.py::test_runtime_hook_path_aligns_with_expected_format"
    "[custom_rollout_log]",
)


@pytest.mark.parametrize("launch", list(LAUNCHES))
def test_slime_plugin_contracts_pass_for_each_launch_line(
    launch: str, slime_root: Path, tmp_path: Path
) -> None:
    config = tmp_path / "router.yaml"
    config.write_text(  # slime's contract samples name no dataset
        "default_route: any\n"
        "routes: {any: {rewards: {correct: {kind: exact_match}}}}\n"
        "post_process: [{kind: grpo}]\n"
    )
    env = {
        **os.environ,
        "REWARDROUTER_CONFIG": str(config),
        **{f"SLIME_CONTRACT_{k}": v for k, v in {**LAUNCHES[launch], **ALWAYS}.items()},
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rA",
            "-p",
            "no:cacheprovider",
            "tests/plugin_contracts",
        ],
        cwd=slime_root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    passed = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("PASSED ")]
    assert len(passed) == 36
    for test in CALLING_REWARDROUTER:
        assert f"tests/plugin_contracts/{test}" in passed
