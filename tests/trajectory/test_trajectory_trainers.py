"""Trajectories through the trainers' own data structures: TRL's conversational completions with
tool calls, verl's agent-loop output handed to its reward manager, slime's multi-turn ``Sample``
scored by slime's reward entry points (its loss mask untouched)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from rr_checkouts import SLIME, checkout
from rr_frameworks import trainer_args
from rr_tiny_llama import CPU_RUN, bpe_tokenizer, tiny_llama

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
