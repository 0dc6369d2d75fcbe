"""``kind: verifiers`` against verifiers' own scoring.

The tasksets are the environments verifiers publishes in its repository (``reverse_text``,
``alphabet_sort``, ``gsm8k``: a checkout, see ``tests/rr_checkouts.py``), with verifiers' own
plugging (``config.task.rewards`` weights, a plugged reward, its built-in ``reference`` judge on a
loopback model server). Each rollout is written as verifiers' rollouts are (its message graph,
``graph.prepare_turn(...).commit``), saved in a run folder with its trace store, and re-scored by
verifiers' own offline scoring (``vf-replay``'s ``run_replay``); the same rollouts as samples (a
prompt, a response as text or messages, a label, metadata) go through the router. Every named
reward's score and weight, and the weighted sum, must be equal.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from rr_verifiers import environments, judge_app, judge_config

import rewardrouter
from rewardrouter.errors import ConfigError, RewardError

REVERSE = "reverse_text"
SORT = "alphabet_sort"


def _trace(task_type: type[Any], data: Any, messages: list[dict[str, Any]]) -> Any:
    """A verifiers trace of ``task``'s rollout whose messages are ``messages`` (each assistant
    message a model turn), built with verifiers' message graph as its interception does."""
    import verifiers.v1 as vf
    from pydantic import TypeAdapter
    from verifiers.v1 import graph

    task = task_type(data)
    trace = vf.Trace(
        task=vf.TraceTask(type=task_type.__name__, data=data, key=task.key, hash=task.hash),
        agent=vf.AgentInfo(config=vf.AgentConfig()),
    )
    typed = TypeAdapter(vf.Messages).validate_python(messages)
    for i, message in enumerate(typed):
        if message.role == "assistant":
            reply = vf.Response(
                id=f"turn-{i}", created=0, model="policy", message=message, finish_reason="stop"
            )
            graph.prepare_turn(trace, typed[:i]).commit(reply)
    trace.ok = trace.is_completed = True
    return trace


def _replayed(taskset: str, config: dict[str, Any], traces: list[Any], tmp: Path) -> list[Any]:
    """verifiers' ``vf-replay`` on a run folder holding ``traces``: their re-scored traces."""
    from verifiers.v1.cli.output import write_config
    from verifiers.v1.cli.replay import run_replay
    from verifiers.v1.configs.cli.replay import ReplayConfig
    from verifiers.v1.utils.trace_store import append_trace

    source, out = tmp / "run", tmp / "replay"
    replay = ReplayConfig.model_validate(
        {"taskset": {"id": taskset, **config}, "rich": False, "output_dir": str(out)}
    )
    write_config(replay, source, "eval.json")
    (source / "traces.jsonl").write_text("")

    async def run() -> list[Any]:
        lock = asyncio.Lock()
        for trace in traces:
            await append_trace(source, trace, lock)
        return await run_replay(replay, source, out)

    return asyncio.run(run())


def _compare(route: dict[str, Any], samples: list[dict[str, Any]], replayed: list[Any]) -> None:
    from rewardrouter.rewards.verifiers.kind import VerifiersReward
    from rewardrouter.rewards.verifiers.settings import VerifiersSettings

    term = route["rewards"]["env"]
    settings = VerifiersSettings.model_validate(term["kwargs"])
    weights = VerifiersReward(settings).weights
    with rewardrouter.compile_router({"default_route": "env", "routes": {"env": route}}) as router:
        results = router.score_sync(samples)
    for sample, result, trace in zip(samples, results, replayed, strict=True):
        theirs = {name: reward.score for name, reward in trace.rewards.items()}
        assert result.status == "ok", result.error_message
        assert result.raw == {"score": trace.reward, **theirs}, sample
        assert result.reward == pytest.approx(trace.reward, abs=0, rel=0)
        assert weights == {name: reward.weight for name, reward in trace.rewards.items()}


def test_reverse_text_rewards_weights_and_judge_equal_verifiers_replay(
    tmp_path: Path, servers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = environments(REVERSE)
    monkeypatch.syspath_prepend(str(root / REVERSE))
    from reverse_text.taskset import ReverseTextData, ReverseTextTask

    judge = servers.app(judge_app())
    config = {
        "task": {
            "rewards": {
                "lcs": {"weight": 0.5},  # the environment's own reward, reweighted
                "brevity": {"fn": "rr_verifiers:brevity", "weight": 0.25},
            },
            "judges": [judge_config(judge.url("/v1"), 2.0)],
        }
    }
    prompt, answer = "hello world", "dlrow olleh"
    replies = [
        "<reversed_text>dlrow olleh</reversed_text>",  # right: every signal
        "<reversed_text>dlrow olle</reversed_text>",  # nearly: a partial LCS, the judge says no
        "dlrow olleh",  # no tags: LCS 0, the judge still finds the answer
        "<reversed_text>dlrow olleh</reversed_text> (reversed character by character, as asked)",
        "",  # nothing: the judge is not asked, every score 0
    ]
    system = "Reverse the text character-by-character. Put your answer in <reversed_text> tags."
    data = ReverseTextData(prompt=prompt, system_prompt=system, answer=answer)
    traces = [
        _trace(
            ReverseTextTask,
            data,
            [
                {"role": "system", "content": system},
                {"role": "user", "content": prompt},
                {"role": "assistant", "content": reply},
            ],
        )
        for reply in replies
    ]
    replayed = _replayed("reverse-text", config, traces, tmp_path)
    samples: list[dict[str, Any]] = [
        {
            "prompt": prompt,
            "response": reply,
            "label": answer,
            "metadata": {"system_prompt": system},
        }
        for reply in replies[:-1]
    ]
    # The last rollout arrives as a conversation (the trajectory a multi-turn trainer hands over).
    samples.append(
        {
            "prompt": prompt,
            "response": [{"role": "assistant", "content": replies[-1]}],
            "label": answer,
            "metadata": {"system_prompt": system},
        }
    )
    term = {
        "kind": "verifiers",
        "key": "score",
        "kwargs": {"taskset": "reverse-text", "config": config},
    }
    _compare({"rewards": {"env": term}}, samples, replayed)
    assert [t.reward for t in replayed] == pytest.approx([2.5, 0.4762, 2.25, 2.5, 0.25], abs=1e-4)


def test_alphabet_sort_multi_turn_conversation_equals_verifiers_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = environments(SORT)
    monkeypatch.syspath_prepend(str(root / SORT))
    from alphabet_sort.taskset import AlphabetSortTask, AlphabetSortTaskData

    info = {
        "user_turns": ["Sort by FIRST name: Zoe, Adam", "Now add: Bea"],
        "ground_truths": [["Adam", "Zoe"], ["Adam", "Bea // new name!", "Zoe"]],
        "num_turns": 2,
    }
    second = [
        "<combined_alphabetical_sorted>\nAdam\nBea // new name!\nZoe\n</combined_alphabetical_sorted>",
        "<combined_alphabetical_sorted>\nBea // new name!\nAdam\nZoe\n</combined_alphabetical_sorted>",
        "I will not sort these.",
    ]
    conversations = [
        [
            {"role": "user", "content": info["user_turns"][0]},
            {
                "role": "assistant",
                "content": "<alphabetical_sorted>\nAdam\nZoe\n</alphabetical_sorted>",
            },
            {"role": "user", "content": info["user_turns"][1]},
            {"role": "assistant", "content": reply},
        ]
        for reply in second
    ]
    data = AlphabetSortTaskData(prompt=None, info=info)
    traces = [_trace(AlphabetSortTask, data, messages) for messages in conversations]
    replayed = _replayed("alphabet-sort", {}, traces, tmp_path)
    samples = [
        {"prompt": "", "response": messages, "metadata": {"info": info}}
        for messages in conversations
    ]
    kwargs = {"taskset": "alphabet-sort", "label_field": None}
    term = {"kind": "verifiers", "key": "score", "kwargs": kwargs}
    _compare({"rewards": {"env": term}}, samples, replayed)
    assert replayed[0].reward == 1.0 and 0 < replayed[1].reward < 1


@pytest.mark.parametrize(
    ("kwargs", "found"),
    [
        pytest.param(
            {"taskset": "reverse-txet"},
            "no verifiers taskset 'reverse-txet' is installed",
            id="unknown_taskset_id",
        ),
        pytest.param(
            {"taskset": "json:dumps"},
            "is function",
            id="import_path_not_a_taskset",
        ),
        pytest.param(
            {"taskset": "reverse-text", "config": {"dataset_nme": "x"}},
            "kwargs.config.dataset_nme",
            id="taskset_config_typo",
        ),
        pytest.param(
            {"taskset": "reverse-text", "label_field": "answr"},
            "has no field 'answr'",
            id="label_field_not_in_task_data",
        ),
        pytest.param(
            {"taskset": "gsm8k"},
            "'correct' of GSM8KTask",
            id="reward_needs_the_runtime",
        ),
        pytest.param(
            {"taskset": "gsm8k", "skip_runtime_rewards": True},
            "has no reward or judge",
            id="nothing_left_without_the_runtime",
        ),
        pytest.param(
            {
                "taskset": "reverse-text",
                "config": {"task": {"rewards": {"x": {"fn": "nowhere:f"}}}},
            },
            "does not build",
            id="plugged_reward_does_not_import",
        ),
    ],
)
def test_a_taskset_that_cannot_score_is_a_compile_error(
    kwargs: dict[str, Any], found: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = environments(REVERSE, "gsm8k")
    for name in (REVERSE, "gsm8k"):
        monkeypatch.syspath_prepend(str(root / name))
    term = {"kind": "verifiers", "key": "score", "kwargs": kwargs}
    with pytest.raises(ConfigError) as caught:
        rewardrouter.compile_router({"routes": {"env": {"rewards": {"v": term}}}})
    message = str(caught.value)
    assert "routes.env.rewards.v" in message and found in message, message


def test_whose_fault_each_failure_is(servers: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reward raising on the response: that sample's error, under on_error: raise too; a row
    without the task's field: the dataset's; a judge that cannot be reached: the setup's."""
    root = environments(REVERSE)
    monkeypatch.syspath_prepend(str(root / REVERSE))
    plugged = {"task": {"rewards": {"fragile": {"fn": "rr_verifiers:fragile"}}}}
    term = {
        "kind": "verifiers",
        "key": "score",
        "kwargs": {"taskset": "reverse-text", "config": plugged},
    }
    with rewardrouter.compile_router(
        {"default_route": "r", "routes": {"r": {"rewards": {"v": term}}}}
    ) as router:
        results = router.score_sync(
            [
                {"prompt": "ab", "response": "<reversed_text>ba</reversed_text>", "label": "ba"},
                {"prompt": "ab", "response": "boom", "label": "ba"},
            ]
        )
    assert results[0].raw == {"score": 1.5, "lcs": 1.0, "fragile": 0.5}
    assert results[1].status == "error" and "boom" in (results[1].error_message or "")
    assert results[1].fault == "sample"

    unreachable = {"task": {"judges": [judge_config("http://127.0.0.1:9/v1", 1.0)]}}
    term = {
        "kind": "verifiers",
        "key": "score",
        "kwargs": {"taskset": "reverse-text", "config": unreachable},
    }
    with rewardrouter.compile_router(
        {"default_route": "r", "routes": {"r": {"rewards": {"v": term}}}}
    ) as router:
        with pytest.raises(RewardError, match="JudgeUnavailable"):
            router.score_sync([{"prompt": "ab", "response": "ba", "label": "ba"}])
        unlabelled = router.score_sync([{"prompt": "ab", "response": "ba"}])
        assert unlabelled[0].terms == {"v": None}  # as every kind: no label, not applicable

    root = environments(SORT)
    monkeypatch.syspath_prepend(str(root / SORT))
    sort = {
        "kind": "verifiers",
        "key": "score",
        "kwargs": {"taskset": "alphabet-sort", "label_field": None},
    }
    with (
        rewardrouter.compile_router(
            {"default_route": "s", "routes": {"s": {"rewards": {"v": sort}}}}
        ) as router,
        pytest.raises(
            RewardError,
            match=r"TaskDataError: the sample does not make an? AlphabetSortTaskData: info",
        ),
    ):
        router.score_sync([{"prompt": "", "response": "Adam"}])  # its row carries no info
