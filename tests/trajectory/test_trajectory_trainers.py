"""Trajectories through the trainers' own data structures: TRL's conversational completions with
tool calls, verl's ToolAgentLoop run on scripted turns and its output handed to its reward
manager, slime's multi-turn ``Sample`` (and its ``TrajectoryManager``'s) and miles' scored by
their reward entry points (the loss mask untouched). Where the trainer does not hand the
conversation over, the call stops with the fix, never a reward graded on the flat text."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from rr_checkouts import MILES, SLIME, checkout
from rr_frameworks import trainer_args
from rr_tiny_llama import CPU_RUN, bpe_tokenizer, tiny_llama
from rr_trajectory import weather_tool
from test_docs import ROOT, blocks

from rewardrouter import RewardError
from rewardrouter.integrations._router_cache import close_shared
from rewardrouter.integrations.trl import reward_function

pytestmark = pytest.mark.slow  # a long file: `make test` starts it first

ROUTER = """\
route_by: [dataset, data_source]
trajectory: {messages_field: messages}
routes:
  weather:
    rewards:
      answer: {kind: exact_match}
      format:
        kind: tool_call_format
        key: score
        weight: 0.5
        kwargs:
          tools:
            - type: function
              function:
                name: get_weather
                parameters:
                  type: object
                  properties: {city: {type: string}}
                  required: [city]
      tools_worked: {kind: tool_success, weight: 0.25}
      length: {kind: turns, kwargs: {budget: 1, penalty: 0.125}}
"""


@pytest.fixture
def router_yaml(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "router.yaml"
    path.write_text(ROUTER)
    yield path
    close_shared()


@pytest.fixture
def text_router_yaml(tmp_path: Path) -> Iterator[Path]:
    """The same routes without ``messages_field``: a text response is the conversation."""
    path = tmp_path / "text-router.yaml"
    path.write_text(ROUTER.replace("trajectory: {messages_field: messages}\n", ""))
    yield path
    close_shared()


CLEAN_RUN = 1.0 + 0.5 + 0.25  # the answer, a well-formed call, a tool that worked; within budget
#: What the error says where a trainer does not hand the conversation over.
NO_MESSAGES = "but the sample's metadata has no 'messages'"
NO_RESULTS = "one assistant turn that carries no tool results"


def assistant_call(arguments: Any, call_id: str | None = "c1") -> dict[str, Any]:
    call: dict[str, Any] = {
        "type": "function",
        "function": {"name": "get_weather", "arguments": arguments},
    }
    if call_id is not None:
        call["id"] = call_id
    return {"role": "assistant", "content": "", "tool_calls": [call]}


# -- TRL ---------------------------------------------------------------------------------------
# GRPOTrainer (trl 1.16, `_tool_call_loop`) passes conversational completions as message lists:
# the assistant's call with its arguments as a dict (it calls the tool with **arguments), then
# {"role": "tool", "name": name, "content": str(result)}, where a tool that raised gives
# str({"error": message}); then the next assistant turn.

TRL_COMPLETIONS = [
    [
        assistant_call({"city": "Paris"}, call_id=None),
        {"role": "tool", "name": "get_weather", "content": "Sunny"},
        {"role": "assistant", "content": "Sunny"},
    ],
    [
        assistant_call({"town": "Paris"}, call_id=None),
        {"role": "tool", "name": "get_weather", "content": str({"error": "missing city"})},
        assistant_call({"city": "Paris"}, call_id=None),
        {"role": "tool", "name": "get_weather", "content": "Sunny"},
        {"role": "assistant", "content": "Sunny"},
    ],
    [{"role": "assistant", "content": "Rainy"}],
    [{"role": "narrator", "content": "Sunny"}],
]


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_trl_conversational_completions_with_tools(router_yaml: Path, asynchronous: bool) -> None:
    reward = reward_function(router_yaml, label_column="solution", asynchronous=asynchronous)
    logged: dict[str, list[Any]] = {}
    columns = {
        "prompts": [[{"role": "user", "content": "Weather in Paris?"}]] * 4,
        "completions": TRL_COMPLETIONS,
        "completion_ids": [[1, 2, 3]] * 4,
        "solution": ["Sunny"] * 4,
        "dataset": ["weather"] * 4,
        "log_extra": lambda column, values: logged.__setitem__(column, values),
        "log_metric": lambda name, value: None,
    }
    out = reward(**columns)
    rewards = asyncio.run(out) if asynchronous else out  # type: ignore[arg-type]
    # answer + 0.5 * format + 0.25 * tool success + turns (one call free, 0.125 each beyond)
    assert rewards == [1.0 + 0.5 + 0.25, 1.0 + 0.0 + 0.125 - 0.125, 0.0, None]
    assert logged["rewardrouter_status"] == ["ok", "ok", "ok", "error"]


def qwen3_tokenizer() -> Any:
    """A byte-level BPE tokenizer trained in memory, with Qwen3's tool-call tokens and TRL's copy
    of Qwen3's chat template, and the response schema TRL adds for that template."""
    from trl.chat_template_utils import add_response_schema, qwen3_chat_template

    tokenizer = bpe_tokenizer(
        ['{"name": "get_weather", "arguments": {"city": "Paris"}}', "Sunny", "Weather in Paris?"]
        * 4,
        vocab_size=300,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        pad="<|endoftext|>",
        eos="<|im_end|>",
    )
    tokenizer.add_tokens(
        [
            "<tool_call>",
            "</tool_call>",
            "<think>",
            "</think>",
            "<tool_response>",
            "</tool_response>",
        ]
    )
    tokenizer.chat_template = qwen3_chat_template
    return add_response_schema(tokenizer)


def test_trl_completions_parsed_by_trls_own_response_parser(router_yaml: Path) -> None:
    """Each assistant turn is what GRPOTrainer makes of the generated ids
    (``parse_response(tokenizer, ids, prefix=prompt_ids)``); a tool call TRL cannot parse stays
    text in ``content``, where the router finds it: an unreadable call, malformed for
    ``tool_call_format`` and failed for ``tool_success`` (TRL never ran it), and the final answer
    is that text."""
    from trl.chat_template_utils import parse_response

    tokenizer = qwen3_tokenizer()
    prompt = [{"role": "user", "content": "Weather in Paris?"}]
    prefix = list(tokenizer.apply_chat_template(prompt, add_generation_prompt=True)["input_ids"])

    def turn(generated: str) -> dict[str, Any]:
        return parse_response(
            tokenizer, tokenizer(generated + "<|im_end|>")["input_ids"], prefix=prefix
        )

    def tool(result: Any) -> dict[str, Any]:  # as GRPOTrainer's tool loop appends a result
        return {"role": "tool", "name": "get_weather", "content": str(result)}

    call = '<tool_call>\n{"name": "get_weather", "arguments": {"%s": "Paris"}}\n</tool_call>'
    unparsed = '<tool_call>\n{"name": "get_weather", "arguments": {"city": Paris}}\n</tool_call>'
    completions = [
        [turn(call % "city"), tool("sunny"), turn("Sunny")],
        [turn(call % "town"), tool({"error": "missing city"}), turn("Sunny")],
        [turn(unparsed)],
    ]
    assert completions[0][0]["tool_calls"][0]["function"]["arguments"] == {"city": "Paris"}
    reward = reward_function(router_yaml, label_column="solution")
    rewards = reward(
        prompts=[prompt] * 3,
        completions=completions,
        solution=["Sunny"] * 3,
        dataset=["weather"] * 3,
    )
    assert rewards == [1.0 + 0.5 + 0.25, 1.0 + 0.0 + 0.0, 0.0]


def get_weather(city: str) -> str:
    """Get the weather of a city.

    Args:
        city: The city.
    """
    return "sunny"


def model_that_calls_the_tool(tokenizer: Any, prompt: list[dict[str, Any]]) -> Any:
    """A tiny random Llama trained for a few seconds to answer ``prompt``, rendered with the
    tool as GRPOTrainer renders it, with one call of ``get_weather``."""
    model = tiny_llama(tokenizer, hidden_size=64, layers=2, heads=4, max_positions=4096)
    call = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    asked = tokenizer.apply_chat_template(prompt, tools=[get_weather], add_generation_prompt=True)
    called = tokenizer.apply_chat_template(
        [*prompt, {"role": "assistant", "content": "", "tool_calls": [call]}], tools=[get_weather]
    )
    ids = torch.tensor([called["input_ids"]])
    labels = ids.clone()
    labels[:, : len(asked["input_ids"])] = -100  # learn the answer only
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(300):
        loss = model(input_ids=ids, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if loss.item() < 0.02:
            break
    return model


def test_grpo_trainer_step_runs_the_tool_and_the_router_grades_the_trajectory(
    router_yaml: Path, tmp_path: Path
) -> None:
    """One offline GRPOTrainer step with ``tools=[get_weather]``: TRL parses the call, runs the
    tool, appends its result and generates again; the router grades what TRL hands over."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    tokenizer = qwen3_tokenizer()
    prompt = [{"role": "user", "content": "Weather in Paris?"}]
    model = model_that_calls_the_tool(tokenizer, prompt)
    calls: list[tuple[list[Any], list[float | None]]] = []
    inner = reward_function(router_yaml, label_column="solution")

    def reward(**kwargs: Any) -> list[float | None]:
        rewards = inner(**kwargs)
        calls.append((kwargs["completions"], rewards))
        return rewards

    reward.__name__ = "rewardrouter"  # type: ignore[attr-defined]
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=reward,
        processing_class=tokenizer,
        tools=[get_weather],
        train_dataset=Dataset.from_list(
            [{"prompt": prompt, "solution": "Sunny", "dataset": "weather"}] * 2
        ),
        args=GRPOConfig(
            output_dir=str(tmp_path),
            max_steps=1,
            per_device_train_batch_size=2,
            num_generations=2,
            max_completion_length=256,
            max_tool_calling_iterations=1,
            temperature=0.01,
            **CPU_RUN,
        ),
    )
    trainer.train()

    [(completions, rewards)] = calls
    assert trainer.state.log_history[0]["tools/call_frequency"] == 1.0
    for completion, got in zip(completions, rewards, strict=True):
        first, result, *_ = completion
        assert first["tool_calls"][0]["function"] == {
            "name": "get_weather",
            "arguments": {"city": "Paris"},
        }
        assert result == {"role": "tool", "name": "get_weather", "content": "sunny"}
        final = [m for m in completion if m["role"] == "assistant"][-1].get("content") or ""
        # answer (the final turn's text) + 0.5 * a well-formed call + 0.25 * a tool that worked
        assert got == pytest.approx(float(final.strip() == "Sunny") + 0.5 + 0.25)


# -- verl --------------------------------------------------------------------------------------


class CharTokenizer:
    """Decodes token ids as code points: verl's manager only decodes the response."""

    def decode(self, ids: Any, skip_special_tokens: bool = True) -> str:
        return "".join(chr(int(i)) for i in ids)


def verl_batch(output: Any, data_source: str, ground_truth: str) -> Any:
    """One agent-loop output as verl's agent loop hands it to a reward loop worker (verl 0.9.1,
    ``AgentLoopWorker._compute_score``): prompt and response ids padded into tensors, the
    dataset row's fields, ``__num_turns__`` and the output's ``extra_fields`` as
    ``tool_extra_fields``."""
    from verl import DataProto

    prompt = torch.tensor([output.prompt_ids])
    response = torch.tensor([output.response_ids])
    mask = torch.ones(1, prompt.shape[1] + response.shape[1], dtype=torch.int64)
    return DataProto.from_dict(
        tensors={"prompts": prompt, "responses": response, "attention_mask": mask},
        non_tensors={
            "data_source": np.array([data_source], dtype=object),
            "reward_model": np.array([{"ground_truth": ground_truth}], dtype=object),
            "extra_info": np.array([{"index": 0}], dtype=object),
            "__num_turns__": np.array([output.num_turns]),
            "tool_extra_fields": np.array([output.extra_fields], dtype=object),
        },
    )


def test_verl_agent_loop_output_through_its_reward_manager(router_yaml: Path) -> None:
    """An agent loop that keeps its messages in ``extra_fields`` (verl's ToolAgentLoop keeps
    ``turn_scores`` and ``tool_rewards`` there) reaches ``compute_score`` as ``extra_info``;
    ``trajectory.messages_field`` reads the conversation from it, while ``solution_str`` stays
    the decoded response verl trains on."""
    from omegaconf import OmegaConf
    from verl.experimental.agent_loop.agent_loop import AgentLoopMetrics, AgentLoopOutput
    from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager
    from verl.trainer.ppo.reward import get_custom_reward_fn

    messages = [
        {"role": "user", "content": "Weather in Paris?"},
        assistant_call('{"city": "Paris"}'),
        {"role": "tool", "tool_call_id": "c1", "content": "Sunny"},
        {"role": "assistant", "content": "Sunny"},
    ]
    text = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>Sunny'
    response_mask = [1] * 20 + [0] * (len(text) - 25) + [1] * 5
    output = AgentLoopOutput(
        prompt_ids=[ord(c) for c in "Weather in Paris?"],
        response_ids=[ord(c) for c in text],
        response_mask=response_mask,
        num_turns=4,
        metrics=AgentLoopMetrics(),
        extra_fields={"turn_scores": [], "tool_rewards": [], "messages": messages},
    )
    config = OmegaConf.create(
        {
            "reward": {
                "custom_reward_function": {
                    "path": "pkg://rewardrouter.integrations.verl",
                    "name": "compute_score",
                    "reward_kwargs": {"rewardrouter_config": str(router_yaml)},
                }
            }
        }
    )
    compute_score = get_custom_reward_fn(config)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        manager = NaiveRewardManager(config, CharTokenizer(), compute_score)
        result = loop.run_until_complete(manager.run_single(verl_batch(output, "weather", "Sunny")))
    finally:
        asyncio.set_event_loop(None)
        loop.close()
    assert result["reward_score"] == 1.0 + 0.5 + 0.25
    info = result["reward_extra_info"]
    assert (info["route"], info["status"], info["weather/format"]) == ("weather", "ok", 1.0)
    assert output.response_mask == response_mask


def docs_agent_loop(folder: Path) -> tuple[str, dict[str, Any]]:
    """The agent loop that docs/kinds/trajectories.md gives verl users, written where it can be
    imported, and the entry of verl's agent-loop config file that names it (as the page says)."""
    from omegaconf import OmegaConf

    page = blocks(ROOT / "docs" / "kinds" / "trajectories.md")
    [module] = [b for b in page if b.title == "messages_tool_agent.py"]
    [entry] = [b for b in page if b.language == "yaml" and "messages_tool_agent." in b.code]
    (folder / "messages_tool_agent.py").write_text(module.code)
    [config] = OmegaConf.to_container(OmegaConf.create(entry.code))
    return config["name"], config


def run_tool_agent(
    agent: dict[str, Any], tokenizer: Any, turns: list[str], max_assistant_turns: int = 4
) -> Any:
    """verl's agent loop ``agent`` (an agent-loop config entry) made as verl's worker makes it
    (``hydra.utils.instantiate``), run on a prompt with the ``get_weather`` tool while a scripted
    server answers each turn with the next of ``turns``; its ``AgentLoopOutput``."""
    from hydra.utils import instantiate
    from omegaconf import OmegaConf
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
    from verl.tools.function_tool import FunctionTool
    from verl.tools.schemas import OpenAIFunctionToolSchema
    from verl.workers.rollout.replica import TokenOutput

    left = iter(turns)

    class Server:
        async def generate(self, **request: Any) -> Any:
            ids = tokenizer(next(left) + "<|im_end|>", add_special_tokens=False)["input_ids"]
            return TokenOutput(token_ids=ids)

    multi_turn = {
        "max_user_turns": 4,
        "max_assistant_turns": max_assistant_turns,
        "max_parallel_calls": 1,
        "max_tool_response_length": 256,
        "tool_response_truncate_side": "right",
        "format": "hermes",
    }
    rollout = {
        "multi_turn": multi_turn,
        "prompt_length": 1024,
        "response_length": 1024,
        "full_determinism": False,
    }
    config = OmegaConf.create({"actor_rollout_ref": {"rollout": rollout}, "data": {}})
    declared = weather_tool()
    declared["function"]["description"] = "Get the weather of a city."
    tool = FunctionTool(
        "get_weather", get_weather, OpenAIFunctionToolSchema.model_validate(declared)
    )
    loop = instantiate(
        config=agent,
        trainer_config=DictConfigWrap(config=config),
        server_manager=Server(),
        tokenizer=tokenizer,
        processor=None,
        dataset_cls=None,
        data_config=DictConfigWrap(config.data),
        tools=ToolListWrap([tool]),
    )
    prompt = [{"role": "user", "content": "Weather in Paris?"}]
    return asyncio.get_event_loop().run_until_complete(loop.run({}, raw_prompt=prompt))


CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'

VERL_RUNS = [
    # (agent loop, router, turns the policy writes, max assistant turns, reward or error)
    pytest.param("tool_agent", "router_yaml", [CALL, "Sunny"], 4, NO_MESSAGES, id="stock_loop"),
    pytest.param(
        "tool_agent", "text_router_yaml", [CALL, "Sunny"], 4, NO_RESULTS, id="stock_loop_as_text"
    ),
    pytest.param("docs", "router_yaml", [CALL, "Sunny"], 4, CLEAN_RUN, id="docs_loop_clean_run"),
    # the turn limit ends the loop after the call: verl keeps no message of that turn, the docs'
    # loop keeps its text, whose call is read and has no reply: a failed call, no answer
    pytest.param("docs", "router_yaml", [CALL], 1, 0.0 + 0.5 + 0.0, id="docs_loop_cut_at_a_call"),
    # verl's parser drops a call that is not JSON, its text too, and ends the rollout: the turn
    # as written keeps it, a malformed call that no tool answered (verl's own messages: no call)
    pytest.param(
        "docs",
        "router_yaml",
        [CALL.replace('"Paris"', "Paris")],
        4,
        0.0 + 0.0 + 0.0,
        id="docs_loop_call_verl_cannot_parse",
    ),
    # verl answers a call to an undeclared tool with its own message: a failed call
    pytest.param(
        "docs",
        "router_yaml",
        [CALL.replace("get_weather", "get_forecast"), "Sunny"],
        4,
        1.0 + 0.0 + 0.0,
        id="docs_loop_call_to_no_tool",
    ),
]


@pytest.mark.parametrize(("agent", "router", "turns", "limit", "expected"), VERL_RUNS)
def test_verl_tool_agent_loop_through_its_reward_loop(
    agent: str,
    router: str,
    turns: list[str],
    limit: int,
    expected: float | str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """verl's ToolAgentLoop (or the page's subclass of it) runs the tool on the turns a scripted
    server writes; its output goes through ``NaiveRewardManager.run_single`` to the router, as
    verl's reward loop sends it."""
    from omegaconf import OmegaConf
    from verl.experimental.agent_loop.agent_loop import _agent_loop_registry
    from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager
    from verl.trainer.ppo.reward import get_custom_reward_fn

    monkeypatch.syspath_prepend(str(tmp_path))
    entry = _agent_loop_registry["tool_agent"] if agent == "tool_agent" else None
    if entry is None:
        _, entry = docs_agent_loop(tmp_path)
    tokenizer = qwen3_tokenizer()
    path: Path = request.getfixturevalue(router)
    config = OmegaConf.create(
        {
            "reward": {
                "custom_reward_function": {
                    "path": "pkg://rewardrouter.integrations.verl",
                    "name": "compute_score",
                    "reward_kwargs": {"rewardrouter_config": str(path)},
                }
            }
        }
    )
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        output = run_tool_agent(entry, tokenizer, turns, limit)
        manager = NaiveRewardManager(config, tokenizer, get_custom_reward_fn(config))
        batch = verl_batch(output, "weather", "Sunny")
        if isinstance(expected, str):
            with pytest.raises(RewardError, match="route 'weather'") as info:
                loop.run_until_complete(manager.run_single(batch))
            assert expected in str(info.value)
            return
        result = loop.run_until_complete(manager.run_single(batch))
    finally:
        asyncio.set_event_loop(None)
        loop.close()
    assert (result["reward_score"], result["reward_extra_info"]["status"]) == (expected, "ok")
    info = result["reward_extra_info"]
    assert None not in (info["weather/format"], info["weather/tools_worked"])  # calls counted


# -- slime -------------------------------------------------------------------------------------


@pytest.fixture
def slime(monkeypatch: pytest.MonkeyPatch) -> Any:
    """slime's ``Sample`` and reward entry points, imported from a checkout."""
    monkeypatch.syspath_prepend(str(checkout(SLIME)))
    from slime.rollout.rm_hub import async_rm, batched_async_rm  # type: ignore[import-not-found]
    from slime.utils.types import Sample  # type: ignore[import-not-found]

    return type("Slime", (), {"Sample": Sample, "async_rm": async_rm, "batched": batched_async_rm})


@pytest.mark.parametrize("group_rm", [False, True], ids=["custom_rm", "batched_custom_rm"])
def test_slime_multi_turn_sample_keeps_its_loss_mask(
    slime: Any, router_yaml: Path, group_rm: bool
) -> None:
    """slime's multi-turn rollouts (its retool and tau-bench examples) leave the trained text in
    ``response`` and mark tool tokens 0 in ``loss_mask``; the conversation travels in
    ``metadata['messages']``, which the router reads there."""
    args = trainer_args(
        "rewardrouter.integrations.slime", group_rm, rewardrouter_config=str(router_yaml)
    )
    good = [
        {"role": "user", "content": "Weather in Paris?"},
        assistant_call('{"city": "Paris"}'),
        {"role": "tool", "tool_call_id": "c1", "content": "Error: service down"},
        {"role": "assistant", "content": "Sunny"},
    ]
    bad = [*good[:1], assistant_call('{"city": Paris}'), *good[2:]]

    def sample(index: int, messages: list[dict[str, Any]]) -> Any:
        return slime.Sample(
            group_index=0,
            index=index,
            prompt="Weather in Paris?",
            response="<tool_call>...</tool_call><tool_response>...</tool_response>Sunny",
            response_length=12,
            label="Sunny",
            loss_mask=[1, 1, 1, 0, 0, 0, 1],
            status=slime.Sample.Status.COMPLETED,
            metadata={"dataset": "weather", "messages": messages},
        )

    samples = [sample(0, good), sample(1, bad)]

    async def run() -> list[Any]:
        if group_rm:
            return list(await slime.batched(args, samples))
        return [await slime.async_rm(args, s) for s in samples]

    rewards = asyncio.run(run())
    assert rewards == [1.0 + 0.5 + 0.0, 1.0 + 0.0 + 0.0]
    assert [s.loss_mask for s in samples] == [[1, 1, 1, 0, 0, 0, 1]] * 2
    assert all(s.response.endswith("Sunny") for s in samples)


def slime_args(router: Path, group_rm: bool, hooks: str = "rewardrouter.integrations.slime") -> Any:
    return trainer_args(hooks, group_rm, rewardrouter_config=str(router))


async def scored(entry: Any, args: Any, samples: list[Any]) -> list[Any]:
    """``samples`` through a trainer's reward entry point, as its rollout calls it: the group
    one with ``--group-rm``, else the per-sample one."""
    if args.group_rm:
        return list(await entry.batched(args, samples))
    return [await entry.async_rm(args, sample) for sample in samples]


def outcome(entry: Any, args: Any, samples: list[Any], expected: float | str) -> None:
    """Score ``samples``: each gets ``expected``, or (a string) the call stops with it."""
    if isinstance(expected, str):
        with pytest.raises(RewardError, match="route 'weather'") as info:
            asyncio.run(scored(entry, args, samples))
        assert expected in str(info.value)
    else:
        assert asyncio.run(scored(entry, args, samples)) == [expected] * len(samples)


ASK = {"role": "user", "content": "Weather in Paris?"}
#: A run as slime's tau-bench agent keeps its messages: each turn's raw text (its call written
#: in it), each tool's result named by the tool.
WRITTEN_RUN = [
    ASK,
    {"role": "assistant", "content": CALL},
    {"role": "tool", "name": "get_weather", "content": "sunny"},
    {"role": "assistant", "content": "Sunny"},
]
#: ``response`` as slime's retool example builds it: each turn's text, then the tool's output in
#: tags of its own; its samples carry no messages.
RETOOL_RESPONSE = f"{CALL}\n\n<interpreter>\nsunny\n</interpreter>\n\nSunny"

SLIME_SAMPLES = [
    # (router, what the metadata carries besides the dataset, response, reward or error)
    pytest.param("router_yaml", {}, RETOOL_RESPONSE, NO_MESSAGES, id="retool_no_messages"),
    pytest.param("text_router_yaml", {}, RETOOL_RESPONSE, NO_RESULTS, id="retool_as_text"),
    pytest.param(
        "router_yaml",
        {"messages": WRITTEN_RUN},
        RETOOL_RESPONSE,
        CLEAN_RUN,
        id="messages_with_calls_written_as_text",
    ),
    pytest.param(
        "router_yaml",
        {"messages": json.dumps(WRITTEN_RUN)},
        RETOOL_RESPONSE,
        CLEAN_RUN,
        id="messages_as_json_text",
    ),
    pytest.param(
        "router_yaml",
        {"messages": [*WRITTEN_RUN[:2], {**WRITTEN_RUN[2], "content": '{"status": "error"}'}]},
        RETOOL_RESPONSE,
        0.0 + 0.5 + 0.0,
        id="tool_result_that_says_error",
    ),
    pytest.param(
        "router_yaml",
        {"messages": WRITTEN_RUN[:2]},
        CALL,
        0.0 + 0.5 + 0.0,
        id="cut_before_the_reply",
    ),
]


@pytest.mark.parametrize("group_rm", [False, True], ids=["custom_rm", "batched_custom_rm"])
@pytest.mark.parametrize(("router", "carried", "response", "expected"), SLIME_SAMPLES)
def test_slime_multi_turn_samples_through_its_reward_entry_points(
    slime: Any,
    router: str,
    carried: dict[str, Any],
    response: str,
    expected: float | str,
    group_rm: bool,
    request: pytest.FixtureRequest,
) -> None:
    """slime's ``async_rm`` / ``batched_async_rm`` on samples built as its multi-turn examples
    build them: the trained text in ``response``, the conversation in the metadata or nowhere."""
    sample = slime.Sample(
        group_index=0,
        index=0,
        prompt="Weather in Paris?",
        response=response,
        label="Sunny",
        status=slime.Sample.Status.COMPLETED,
        metadata={"dataset": "weather", **carried},
    )
    outcome(slime, slime_args(request.getfixturevalue(router), group_rm), [sample], expected)


@pytest.mark.parametrize("kept", [False, True], ids=["no_messages", "messages_in_extra_metadata"])
def test_slime_trajectory_manager_samples(slime: Any, router_yaml: Path, kept: bool) -> None:
    """slime's ``TrajectoryManager`` records each turn of a session and hands over one ``Sample``
    per linear chain: tokens and a loss mask, no messages (they stay in its session tree), its
    metadata what ``extra_metadata`` gives (the base sample's is not copied). ``reward=None``,
    or slime never asks for one. Without the messages the call stops with the fix."""
    from slime.agent.trajectory import TrajectoryManager, TurnRecord  # type: ignore[import-not-found]

    call = assistant_call('{"city": "Paris"}')
    result = {"role": "tool", "tool_call_id": "c1", "content": "sunny"}
    answer = {"role": "assistant", "content": "Sunny"}
    manager = TrajectoryManager()
    manager.record_turn(
        "s",
        turn=TurnRecord(prompt_ids=[1, 2, 3], output_ids=[4, 5], finish_reason="stop"),
        prompt_messages=[ASK],
        response_message=call,
    )
    manager.record_turn(
        "s",
        turn=TurnRecord(prompt_ids=[1, 2, 3, 4, 5, 6, 7], output_ids=[8], finish_reason="stop"),
        prompt_messages=[ASK, call, result],
        response_message=answer,
    )
    base = slime.Sample(index=0, group_index=0, prompt="Weather in Paris?", label="Sunny")
    extra: dict[str, Any] = {"dataset": "weather"}
    if kept:
        extra["messages"] = [ASK, call, result, answer]
    [sample] = manager.get_trajectory("s", base_sample=base, reward=None, extra_metadata=extra)
    assert (sample.loss_mask, sample.response) == ([1, 1, 0, 0, 1], "")
    args = slime_args(router_yaml, group_rm=False)
    outcome(slime, args, [sample], CLEAN_RUN if kept else NO_MESSAGES)


# -- miles -------------------------------------------------------------------------------------


@pytest.fixture
def miles(monkeypatch: pytest.MonkeyPatch) -> Any:
    """miles' ``Sample`` and reward entry points, imported from a checkout."""
    monkeypatch.syspath_prepend(str(checkout(MILES)))
    from miles.rollout.rm_hub import async_rm, batched_async_rm  # type: ignore[import-not-found]
    from miles.utils.types import Sample  # type: ignore[import-not-found]

    return type("Miles", (), {"Sample": Sample, "async_rm": async_rm, "batched": batched_async_rm})


@pytest.mark.parametrize("group_rm", [False, True], ids=["custom_rm", "batched_custom_rm"])
@pytest.mark.parametrize(
    ("returned", "expected"),
    [
        pytest.param(None, NO_MESSAGES, id="agent_returns_none"),
        pytest.param({"messages": WRITTEN_RUN}, CLEAN_RUN, id="agent_returns_its_messages"),
    ],
)
def test_miles_agentic_samples_through_its_reward_entry_points(
    miles: Any,
    router_yaml: Path,
    returned: dict[str, Any] | None,
    expected: float | str,
    group_rm: bool,
) -> None:
    """miles' agentic rollout merges what the agent function returns into each sample's metadata
    (``agentic_tool_call.generate``); its docs' agent returns None, which leaves no messages."""
    sample = miles.Sample(
        group_index=0,
        index=0,
        prompt=[ASK],
        response=RETOOL_RESPONSE,
        label="Sunny",
        status=miles.Sample.Status.COMPLETED,
        metadata={"dataset": "weather"},
    )
    sample.metadata.update(returned or {})
    args = slime_args(router_yaml, group_rm, hooks="rewardrouter.integrations.miles")
    outcome(miles, args, [sample], expected)
