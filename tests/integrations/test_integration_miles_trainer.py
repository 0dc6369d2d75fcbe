"""miles' own code around rewardrouter's hooks, from a miles checkout (see ``rr_checkouts``).

miles' reward entry points (``async_rm`` and ``batched_async_rm`` of ``miles.rollout.rm_hub``)
load ``rewardrouter.integrations.miles.custom_rm`` / ``batched_custom_rm`` and await them; its
rollout logging (``log_rollout_data``) calls the log hook and then computes miles' own metrics
from every sample's reward (rounding those of constant groups); its ``load_function`` loads the
post-process hook. The config is the shipped ``conf/router/mixed.yaml`` with no judge listening
(``on_error: skip``). What miles logs is read back through a tracking backend of this test's,
registered the way miles' ``tracking_utils`` says backends are added.
"""

from __future__ import annotations

import asyncio
import re
import socket
import types
import warnings
from argparse import Namespace
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rr_checkouts import MILES, checkout
from rr_frameworks import trainer_args

from rewardrouter import ConfigError, RewardError, RewardRouterWarning
from rewardrouter.integrations import _metrics
from rewardrouter.integrations._router_cache import close_shared

HOOKS = "rewardrouter.integrations.miles"
GSM8K, JUDGED = "openai/gsm8k", "HuggingFaceH4/ultrafeedback_binarized"

LOGGED: list[dict[str, Any]] = []


@pytest.fixture(scope="module")
def miles_root() -> Path:
    return checkout(MILES)


@pytest.fixture(autouse=True)
def miles(miles_root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[types.SimpleNamespace]:
    """miles' modules from the checkout, with a recording tracking backend enabled."""
    monkeypatch.syspath_prepend(str(miles_root))
    monkeypatch.setattr(_metrics, "WARNINGS", Counter())
    monkeypatch.setattr(_metrics, "_emitted", set())
    monkeypatch.setattr(_metrics, "_counted", set())
    monkeypatch.delenv("REWARDROUTER_CONFIG", raising=False)
    monkeypatch.delenv("REWARDROUTER_OVERRIDES", raising=False)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        monkeypatch.setenv("JUDGE_URL", f"http://127.0.0.1:{probe.getsockname()[1]}/v1")
    # miles is no package: imported from the checkout, unknown to type checkers
    from miles.ray.rollout.metrics import log_rollout_data  # type: ignore[import-not-found]
    from miles.ray.rollout.train_data_conversion import (  # type: ignore[import-not-found]
        _post_process_rewards,
    )
    from miles.rollout.rm_hub import async_rm, batched_async_rm  # type: ignore[import-not-found]
    from miles.utils.misc import load_function  # type: ignore[import-not-found]
    from miles.utils.tracking_utils import tracking  # type: ignore[import-not-found]
    from miles.utils.tracking_utils.base import (  # type: ignore[import-not-found]
        TrackingBackend,
    )
    from miles.utils.types import RewardSpec, Sample  # type: ignore[import-not-found]

    class Recording(TrackingBackend):  # type: ignore[misc]
        def init(self, args: Any, *, primary: bool = True, **kwargs: Any) -> None:
            LOGGED.clear()

        def log(self, metrics: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
            LOGGED.append(dict(metrics))

        def finish(self) -> None:
            pass

    monkeypatch.setitem(tracking.BACKEND_REGISTRY, "rr_recording", (Recording, "rr_recording"))
    tracking.init_tracking(Namespace(rr_recording=True))
    yield types.SimpleNamespace(
        Sample=Sample,
        RewardSpec=RewardSpec,
        async_rm=async_rm,
        batched_async_rm=batched_async_rm,
        log_rollout_data=log_rollout_data,
        load_function=load_function,
        post_process_rewards=_post_process_rewards,
    )
    tracking.finish_tracking()
    close_shared()


def miles_args(group_rm: bool, **fields: Any) -> Namespace:
    """miles' ``args``: slime's, with what miles' rollout and logging read besides."""
    miles = {
        "log_passrate": False,
        "use_session_server": False,
        "ci_test": False,
        "sglang_speculative_algorithm": None,
    }
    return trainer_args(HOOKS, group_rm, **{**miles, **fields})


def scored_batch(miles: Any, args: Namespace) -> list[Any]:
    """Two prompt groups, scored through miles' reward entry points as its rollout does."""

    def make(group: int, index: int, prompt: str, response: str, label: str, data: str) -> Any:
        return miles.Sample(
            group_index=group,
            index=index,
            prompt=prompt,
            response=response,
            response_length=len(response.split()),
            label=label,
            status=miles.Sample.Status.COMPLETED,
            metadata={"dataset": data},
        )

    batch = [
        [
            make(0, 0, "What is 6 * 7?", "6 * 7 = \\boxed{42}", "42", GSM8K),
            make(0, 1, "What is 6 * 7?", "\\boxed{41}", "42", GSM8K),
        ],
        [
            make(1, 2, "Write a haiku.", "Old pond, a frog leaps", "", JUDGED),
            make(1, 3, "Write a haiku.", "haiku", "", JUDGED),
        ],
    ]

    async def run() -> None:
        for group in batch:
            if args.group_rm:
                await miles.batched_async_rm(args, group, inplace_set_reward_field=True)
            else:
                for sample in group:
                    sample.reward = await miles.async_rm(args, sample)

    asyncio.run(run())
    return [sample for group in batch for sample in group]


@pytest.mark.parametrize(
    "group_rm", [pytest.param(False, id="custom_rm"), pytest.param(True, id="batched")]
)
def test_miles_logs_a_rollout_whose_judge_is_unreachable(miles: Any, group_rm: bool) -> None:
    args = miles_args(group_rm)
    samples = scored_batch(miles, args)
    assert [s.get_reward_value(args) for s in samples][2:] == [0.0, 0.0]
    assert [s.remove_sample for s in samples] == [False, False, True, True]

    miles.log_rollout_data(4, args, samples, {}, 1.5)  # miles' own logging

    assert args.logged_rollout_id == 4
    [logged] = LOGGED
    assert logged["rollout/zero_std/count_0.0"] == 1  # miles' metric over the filled group
    assert logged["rewardrouter/status/error"] == 0.5
    assert logged["rewardrouter/filled"] == 0.5
    assert logged["rewardrouter/judged/count"] == 2.0
    raw, advantages = miles.load_function(args.custom_reward_post_process_path)(args, samples)
    assert raw[2:] == [0.0, 0.0] and advantages[2:] == [0.0, 0.0]
    assert advantages[0] == pytest.approx(-advantages[1]) and advantages[0] > 0.5


#: (post_process override, what miles gets), through miles' own ``_post_process_rewards`` with
#: the hook as ``custom_reward_post_process_func``: before, a chain without an advantage stage
#: handed miles the raw rewards as advantages, unsaid.
CHAINS = [
    pytest.param("post_process=[]", "but the config has none", id="no_post_process"),
    pytest.param(
        "post_process=[{kind: scale, mul: 2.0}]",
        "but its last stage is `scale`",
        id="ends_in_a_shaping_stage",
    ),
    pytest.param("post_process=[{kind: none}]", None, id="none_says_raw_rewards"),
]


@pytest.mark.parametrize(("chain", "refused"), CHAINS)
def test_a_chain_without_an_advantage_stage_is_refused_where_miles_calls_the_hook(
    miles: Any, chain: str, refused: str | None
) -> None:
    args = miles_args(True, rewardrouter_overrides=[chain])
    samples = scored_batch(miles, args)
    hook = miles.load_function(args.custom_reward_post_process_path)
    if refused is None:
        raw, advantages = miles.post_process_rewards(args, samples, hook)
        assert advantages == raw == [pytest.approx(1.1), pytest.approx(0.1), 0.0, 0.0]
        return
    with pytest.raises(ConfigError) as stopped:
        miles.post_process_rewards(args, samples, hook)
    message = str(stopped.value)
    assert refused in message
    assert "--custom-reward-post-process-path rewardrouter.integrations.miles" in message
    assert "drop --custom-reward-post-process-path to keep miles' own normalization" in message


#: (label, reward, status) of a right answer whose row names ``reward_spec.rm_type=f1``. A dict
#: label f1 cannot read raised out of miles' async_rm, stopping the rollout (before that, f1
#: scored the dict's text: 0.67 for a right answer); it is now that sample's counted failure.
RM_TYPE_LABELS = [
    pytest.param({"text": ["Paris"], "answer_start": [0]}, 1.0, "ok", id="squad_answers"),
    pytest.param("Paris", 1.0, "ok", id="text"),
    pytest.param({"answer": "Paris"}, 0.0, "error", id="a_dict_f1_cannot_read"),
]
GROUP_RM = [pytest.param(False, id="async_rm"), pytest.param(True, id="batched_async_rm")]


def spec_samples(miles: Any, label: Any, rm_type: str = "f1") -> list[Any]:
    """Two answers to one question, each naming ``rm_type`` in its reward_spec."""
    return [
        miles.Sample(
            group_index=0,
            index=i,
            prompt="Capital of France?",
            response=response,
            label=label,
            status=miles.Sample.Status.COMPLETED,
            metadata={"dataset": "rajpurkar/squad"},
            reward_spec=miles.RewardSpec(rm_type=rm_type),
        )
        for i, response in enumerate(["Paris", "Lyon"])
    ]


async def miles_scores(miles: Any, args: Namespace, samples: list[Any]) -> None:
    """miles' reward entry points, as its rollout calls them."""
    if args.group_rm:
        await miles.batched_async_rm(args, samples, inplace_set_reward_field=True)
    else:
        for sample in samples:
            sample.reward = await miles.async_rm(args, sample)


@pytest.mark.parametrize("group_rm", GROUP_RM)
@pytest.mark.parametrize(("label", "reward", "status"), RM_TYPE_LABELS)
def test_a_label_the_named_built_in_cannot_read_is_that_samples_counted_failure(
    miles: Any, group_rm: bool, label: Any, reward: float, status: str
) -> None:
    args = miles_args(group_rm)
    samples = spec_samples(miles, label)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(miles_scores(miles, args, samples))
    right = samples[0]
    assert right.get_reward_value(args) == reward
    assert right.metadata["rewardrouter"]["status"] == status
    assert right.remove_sample == (status != "ok")  # left out of the loss
    said = [str(w.message) for w in caught if w.category is RewardRouterWarning]
    if status == "ok":
        assert said == [] and _metrics.WARNINGS["rm_type_data_fault"] == 0
        return
    assert _metrics.WARNINGS["rm_type_data_fault"] == 2  # both answers
    [message] = said
    assert message.startswith(
        "sample 0 names the built-in 'f1' (rm_type), which refused its data: f1: LabelError: "
        "label is a dict with keys 'answer'"
    )
    assert "launch with --label-key <the column that holds the reference answers>" in message
    assert "on rm_type:f1" not in message  # no on_error a config could set
    miles.log_rollout_data(3, args, samples, {}, 1.0)
    [logged] = LOGGED
    assert logged["rewardrouter/status/error"] == 1.0
    assert logged["rewardrouter/warnings/rm_type_data_fault"] == 2.0


@pytest.mark.parametrize("group_rm", GROUP_RM)
def test_a_failure_of_a_function_the_config_names_still_stops_under_raise(
    miles: Any, group_rm: bool
) -> None:
    args = miles_args(
        group_rm, rewardrouter_overrides=["+routes.squad.rewards.own={path: rr_testfns.raises}"]
    )
    samples = spec_samples(miles, "Paris")
    for sample in samples:
        sample.reward_spec = None  # routed by dataset to the config's squad route
    with pytest.raises(RewardError, match=r"sample 0, route 'squad'.*ValueError: cannot score"):
        asyncio.run(miles_scores(miles, args, samples))


#: (the second file's answers to the same prompt, the warning): two files joined, each
#: numbering its prompt groups from 0, so one group_index holds answers to two questions.
JOINED = [
    pytest.param(
        [("\\boxed{41}", "41"), ("\\boxed{40}", "41")],
        GSM8K,
        r"sample 2: prompt group 0 holds answers to another label: '41' here, '42' at sample 0",
        id="labels_differ",
    ),
    pytest.param(
        [("\\boxed{42}", "42"), ("\\boxed{40}", "42")],
        "openai/gsm8k_copy",
        r"sample 2: prompt group 0 holds answers to another dataset: "
        r"dataset='openai/gsm8k_copy' here, dataset='openai/gsm8k' at sample 0",
        id="datasets_differ",
    ),
]


@pytest.mark.parametrize(("second", "dataset", "warned"), JOINED)
def test_a_group_index_shared_by_answers_to_other_labels_or_datasets_is_counted(
    miles: Any, second: list[tuple[str, str]], dataset: str, warned: str
) -> None:
    """Through miles' own reward entry point, rollout logging and hook loader: the joined group
    is named, counted in what miles logs, and normalized as the one group it claims to be."""
    args = miles_args(
        True, rewardrouter_overrides=[f"routes.gsm8k.match=[{GSM8K}, openai/gsm8k_copy]"]
    )
    first = [("6 * 7 = \\boxed{42}", "42"), ("\\boxed{41}", "42")]
    samples = [
        miles.Sample(
            group_index=0,
            index=i,
            prompt="What is 6 * 7?",
            response=response,
            response_length=len(response.split()),
            label=label,
            status=miles.Sample.Status.COMPLETED,
            metadata={"dataset": data},
        )
        for i, (response, label, data) in enumerate(
            [(r, lb, GSM8K) for r, lb in first] + [(r, lb, dataset) for r, lb in second]
        )
    ]
    asyncio.run(miles.batched_async_rm(args, samples, inplace_set_reward_field=True))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        miles.log_rollout_data(1, args, samples, {}, 1.0)
        miles.load_function(args.custom_reward_post_process_path)(args, samples)  # same batch
    said = [str(w.message) for w in caught if issubclass(w.category, RewardRouterWarning)]
    assert [m for m in said if re.search(warned, m)], said
    [logged] = LOGGED
    assert logged["rewardrouter/warnings/mixed_prompt_group"] == 1.0
