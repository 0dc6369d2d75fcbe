"""OpenRLHF contract, judged by openrlhf 0.11.2 itself.

OpenRLHF's ``SingleTurnAgentExecutor`` loads the ``--remote_rm_url`` Python file (here the
integration module's own file, and the example's reward file) with its own loader, decodes prompt
and response tokens with the real tokenizer, calls ``reward_func`` in a thread, and keeps what it
returns, or logs an exception at INFO and goes on. Its HTTP client posts the same call to
``rewardrouter serve``'s app on loopback. Every reward is compared with the router's own.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from aiohttp.test_utils import TestServer
from openrlhf.utils.agent import SingleTurnAgentExecutor

import rewardrouter.integrations.openrlhf as module
from rewardrouter import Sample, compile_router, load_config
from rewardrouter.integrations._router_cache import close_shared
from rewardrouter.serve.app import make_app

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "openrlhf"
ROUTER = EXAMPLE / "router.yaml"

# (prompt, response, label) as OpenRLHF sees them: the label column holds a JSON object.
ROWS = [
    (
        "Q: 7*6? A:",
        "<think>6 sevens</think> \\boxed{42}",
        {"label": "42", "dataset": "openai/gsm8k"},
    ),
    ("Q: 7*6? A:", "\\boxed{41}", {"label": "42", "dataset": "openai/gsm8k"}),
    ("Q: capital of France? A:", " Paris", {"label": "Paris", "dataset": "rajpurkar/squad"}),
    ("Q: capital of France? A:", " Rome", {"label": "Paris", "dataset": "rajpurkar/squad"}),
]


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("REWARDROUTER_CONFIG", str(ROUTER))
    monkeypatch.delenv("REWARDROUTER_OVERRIDES", raising=False)
    yield
    close_shared()


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        [p + r for p, r, _ in ROWS],
        trainers.BpeTrainer(
            vocab_size=400,
            special_tokens=["<pad>", "</s>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    return PreTrainedTokenizerFast(tokenizer_object=bpe, pad_token="<pad>", eos_token="</s>")


class Engine:
    """Stands in for OpenRLHF's vLLM engine: it "generates" a fixed response and the EOS."""

    def __init__(self, tokenizer: Any, response: str) -> None:
        self.ids = tokenizer(text=response, add_special_tokens=False)["input_ids"]
        self.ids.append(tokenizer.eos_token_id)

    async def generate(
        self, prompt_ids: list[int], params: Any, multi_modal_data: Any = None
    ) -> Any:
        output = SimpleNamespace(token_ids=self.ids, finish_reason="stop", logprobs=None)
        return SimpleNamespace(outputs=[output])


def expected(rows: list[tuple[str, str, dict[str, Any]]]) -> list[float]:
    """The router's own rewards (with the squad route's `scale` shaping)."""
    samples = [Sample(prompt=p, response=r, label=m["label"], metadata=m) for p, r, m in rows]
    with compile_router(load_config(ROUTER)) as router:
        results = list(router.score_sync(samples))
    return [
        2.0 * r.reward if r.route == "squad" else r.reward for r in results if r.reward is not None
    ]


def execute(executor: SingleTurnAgentExecutor, tokenizer: Any, row: tuple[str, str, Any]) -> Any:
    prompt, response, label = row
    params = SimpleNamespace(max_tokens=32, logprobs=None)
    return asyncio.run(
        executor.execute(
            prompt, json.dumps(label), params, 128, tokenizer, Engine(tokenizer, response)
        )
    )


def test_openrlhf_loads_the_module_file_and_gets_the_routers_rewards(tokenizer: Any) -> None:
    executor = SingleTurnAgentExecutor(remote_rm_url=module.__file__)
    outputs = [execute(executor, tokenizer, row) for row in ROWS]
    assert [float(o["reward"]) for o in outputs] == pytest.approx(expected(ROWS))
    assert [float(o["scores"]) for o in outputs] == pytest.approx(expected(ROWS))
    logs = outputs[0]["extra_logs"]
    assert {k: float(v) for k, v in logs.items()} == {
        "rewardrouter/scored": 1.0,
        "rewardrouter/status/skipped": 0.0,
        "rewardrouter/status/error": 0.0,
        "rewardrouter/status/timeout": 0.0,
        "rewardrouter/status/invalid": 0.0,
        "rewardrouter/route/gsm8k": 1.0,
        "rewardrouter/route/squad": 0.0,
    }
    # what OpenRLHF's experience maker does with the values
    assert torch.tensor([outputs[2]["reward"]]).tolist() == pytest.approx([2.0])


def test_a_reward_file_of_your_own(tokenizer: Any) -> None:
    executor = SingleTurnAgentExecutor(remote_rm_url=str(EXAMPLE / "reward_func.py"))
    prompt, response, label = ROWS[0]
    row = (prompt, response, {"answer": label["label"], "dataset": label["dataset"]})
    assert float(execute(executor, tokenizer, row)["reward"]) == pytest.approx(
        expected(ROWS[:1])[0]
    )


def test_config_errors_are_logged_at_error_with_the_fix(
    tokenizer: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """OpenRLHF swallows the exception (INFO, no reward); rewardrouter's ERROR line remains."""
    monkeypatch.delenv("REWARDROUTER_CONFIG")
    executor = SingleTurnAgentExecutor(remote_rm_url=module.__file__)
    with caplog.at_level(logging.INFO):
        out = execute(executor, tokenizer, ROWS[0])
        execute(executor, tokenizer, ROWS[1])
    assert out["reward"] is None  # OpenRLHF went on without a reward
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1  # once, not once per sample
    assert errors[0].name == "rewardrouter.openrlhf"
    assert "export REWARDROUTER_CONFIG=/abs/path/router.yaml" in errors[0].getMessage()


def test_plain_labels_go_to_the_default_route() -> None:
    reward = module.RewardFunc(ROUTER, overrides=["default_route=squad"])
    out = reward(["Q: capital? A: Paris</s>"], ["Q: capital? A:"], ["Paris"])
    assert out["rewards"].tolist() == [2.0]


@pytest.mark.parametrize(
    ("query", "prompt", "response"),
    [
        pytest.param("P: x A: 42</s>", "P: x A:", " 42", id="after_the_prompt_eos_stripped"),
        pytest.param("<s>P: x A: 42<|im_end|>\n", "P: x A:", " 42", id="bos_before_the_prompt"),
        pytest.param("A: 42</s></s>", "A:", " 42", id="repeated_eos"),
    ],
)
def test_response_is_the_query_after_the_prompt(query: str, prompt: str, response: str) -> None:
    [sample] = module.openrlhf_samples([query], [prompt], ['{"label": "42"}'])
    assert (sample.response, sample.label) == (response, "42")


def test_serve_answers_openrlhfs_http_client() -> None:
    """OpenRLHF's own HTTP client against the router's server, on loopback."""

    async def run() -> Any:
        async with TestServer(make_app(load_config(ROUTER)), host="127.0.0.1") as server:
            executor = SingleTurnAgentExecutor(str(server.make_url("/reward")))
            return await executor._fetch_rewards_via_http(
                [p + r + "</s>" for p, r, _ in ROWS],
                [p for p, _, _ in ROWS],
                [json.dumps(label) for _, _, label in ROWS],
            )

    [reply] = asyncio.run(run())
    assert reply["rewards"] == pytest.approx(expected(ROWS))
    assert reply["extra_logs"]["rewardrouter/route/squad"] == [0.0, 0.0, 1.0, 1.0]
