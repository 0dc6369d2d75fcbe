"""OpenRLHF contract, judged by openrlhf 0.11.2 itself.

OpenRLHF's ``SingleTurnAgentExecutor`` loads the ``--reward.remote_url`` Python file (here the
integration module's own file, and the example's reward file) with its own loader, decodes prompt
and response tokens with the real tokenizer, calls ``reward_func`` in a thread, and keeps what it
returns, or logs an exception at INFO and goes on. Its HTTP client posts the same call to
``rewardrouter serve``'s app on loopback. Every reward is compared with the router's own.

Every OpenRLHF launch line of README.md and examples/openrlhf/README.md is read from the Markdown
when the tests run, expanded by bash as a user's shell would, and parsed by the argument parser
that ``openrlhf.cli.train_ppo_ray`` builds, with the checks it runs after parsing (that module's
own ``__main__`` block, taken from the installed file without its last statement,
``train(args)``: the module itself cannot be imported without vLLM). The README's data rows then
go through OpenRLHF's ``blending_datasets`` and ``PromptDataset`` with the parsed arguments, and
their labels to the reward file the line names.
"""

from __future__ import annotations

import ast
import asyncio
import functools
import importlib.util
import json
import logging
import os
import re
import socket
import subprocess
import sys
import warnings
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import CodeType, SimpleNamespace
from typing import Any

import pytest
import torch
from aiohttp.test_utils import TestServer
from openrlhf.datasets import PromptDataset
from openrlhf.datasets.utils import blending_datasets
from openrlhf.utils.agent import SingleTurnAgentExecutor
from rr_tiny_llama import bpe_tokenizer

import rewardrouter.integrations.openrlhf as module
from rewardrouter import RewardRouterWarning, Sample, compile_router, load_config
from rewardrouter.integrations import _metrics
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
    monkeypatch.setattr(_metrics, "WARNINGS", Counter())
    monkeypatch.setattr(_metrics, "_emitted", set())
    monkeypatch.setenv("REWARDROUTER_CONFIG", str(ROUTER))
    monkeypatch.delenv("REWARDROUTER_OVERRIDES", raising=False)
    yield
    close_shared()


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return bpe_tokenizer(
        [p + r for p, r, _ in ROWS],
        vocab_size=400,
        special_tokens=["<pad>", "</s>"],
        pad="<pad>",
        eos="</s>",
    )


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


def label_column(label: Any) -> str:
    """A label as OpenRLHF's data holds it: an object as JSON text, a string as it is."""
    return label if isinstance(label, str) else json.dumps(label)


def execute(executor: SingleTurnAgentExecutor, tokenizer: Any, row: tuple[str, str, Any]) -> Any:
    prompt, response, label = row
    params = SimpleNamespace(max_tokens=32, logprobs=None)
    return asyncio.run(
        executor.execute(
            prompt, label_column(label), params, 128, tokenizer, Engine(tokenizer, response)
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
        "rewardrouter/label_missing": 0.0,
        "rewardrouter/label_unreadable": 0.0,
    }
    # what OpenRLHF's experience maker does with the values
    assert torch.tensor([outputs[2]["reward"]]).tolist() == pytest.approx([2.0])


def test_a_reward_file_of_your_own(tokenizer: Any) -> None:
    executor = SingleTurnAgentExecutor(remote_rm_url=str(EXAMPLE / "reward_func.py"))
    outputs = [execute(executor, tokenizer, row) for row in ROWS]
    assert [float(o["reward"]) for o in outputs] == pytest.approx(expected(ROWS))


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
    [sample], unreadable = module.openrlhf_samples([query], [prompt], ['{"label": "42"}'])
    assert unreadable == {}
    assert (sample.response, sample.label) == (response, "42")


def through_openrlhfs_http_client(labels: list[str]) -> Any:
    """OpenRLHF's own HTTP client against the router's server, on loopback: its reply for
    ROWS with these labels (as OpenRLHF sends them: strings)."""

    async def run() -> Any:
        async with TestServer(make_app(load_config(ROUTER)), host="127.0.0.1") as server:
            executor = SingleTurnAgentExecutor(str(server.make_url("/reward")))
            return await executor._fetch_rewards_via_http(
                [p + r + "</s>" for p, r, _ in ROWS], [p for p, _, _ in ROWS], labels
            )

    [reply] = asyncio.run(run())
    return reply


def test_serve_answers_openrlhfs_http_client() -> None:
    reply = through_openrlhfs_http_client([json.dumps(label) for _, _, label in ROWS])
    assert reply["rewards"] == pytest.approx(expected(ROWS))
    assert reply["extra_logs"]["rewardrouter/route/squad"] == [0.0, 0.0, 1.0, 1.0]
    # the same checks as the reward file's: every row's label names its answer
    assert reply["extra_logs"]["rewardrouter/label_missing"] == [0.0] * len(ROWS)


def test_serve_counts_a_label_that_is_not_json_never_grading_it_as_text() -> None:
    """Through OpenRLHF's HTTP client as through the reward file: a label that opens a JSON
    object but does not parse gets missing_reward.value (0), counted, beside honest rows."""
    broken = json.dumps(ROWS[0][2])[:-1]  # cut short: the closing brace is lost
    reply = through_openrlhfs_http_client([broken, *(json.dumps(lb) for _, _, lb in ROWS[1:])])
    assert reply["rewards"] == pytest.approx([0.0, *expected(ROWS)[1:]])
    assert reply["extra_logs"]["rewardrouter/label_unreadable"] == [1.0, 0.0, 0.0, 0.0]


# -- the documented launch lines, through OpenRLHF's own argument parser ----------------------

DOCS = [ROOT / "README.md", ROOT / "docs" / "trainers.md", EXAMPLE / "README.md"]
COMMAND = "openrlhf.cli.train_ppo_ray"


def openrlhf_main() -> CodeType:
    """The ``__main__`` block of the installed ``openrlhf/cli/train_ppo_ray.py``, compiled: its
    standard-library imports, its parser, ``parse_args()`` and the checks after it; not the
    final ``train(args)``, which starts Ray and the GPU actors."""
    spec = importlib.util.find_spec("openrlhf")
    assert spec is not None and spec.submodule_search_locations
    path = Path(spec.submodule_search_locations[0]) / "cli" / "train_ppo_ray.py"
    tree = ast.parse(path.read_text(), str(path))
    [main] = [
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "__name__ == '__main__'"
    ]
    assert ast.unparse(main.body[-1]) == "train(args)", "OpenRLHF's __main__ block changed"
    stdlib = [
        node
        for node in tree.body
        if isinstance(node, ast.Import | ast.ImportFrom)
        and all(
            ((node.module or "") if isinstance(node, ast.ImportFrom) else alias.name).split(".")[0]
            in sys.stdlib_module_names
            for alias in node.names
        )
    ]
    return compile(ast.Module(body=[*stdlib, *main.body[:-1]], type_ignores=[]), str(path), "exec")


MAIN = openrlhf_main()


def parse(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """``argv`` as ``python -m openrlhf.cli.train_ppo_ray`` parses and checks it: the args."""
    monkeypatch.setattr(sys, "argv", [f"{COMMAND}.py", *argv])
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(MAIN, namespace)  # OpenRLHF's own code, from the installed file
    return namespace["args"]


def shell_words(text: str) -> list[str]:
    """The words bash makes of ``text`` (quotes, ``$(...)``), as the user's shell would; the
    documents' ``/abs/path`` is this repository, ``python`` this interpreter."""
    text = text.replace("/abs/path/", f"{ROOT}/")
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
    }
    done = subprocess.run(
        ["bash", "-c", f"printf '%s\\0' {text}"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        timeout=60,
    )
    return [w for w in done.stdout.split("\0") if w and w != "..."]


@functools.cache
def launch_lines(doc: Path) -> list[list[str]]:
    """The arguments of every ``openrlhf.cli.train_ppo_ray`` command in ``doc``'s bash blocks."""
    lines = []
    for block in re.findall(r"^```bash[^\n]*\n(.*?)^```", doc.read_text(), re.S | re.M):
        for command in block.replace("\\\n", " ").splitlines():
            if COMMAND in command:
                lines.append(shell_words(command.split(COMMAND, 1)[1]))
    return lines


def readme_rows() -> list[dict[str, Any]]:
    """The data rows examples/openrlhf/README.md shows (its ``json`` blocks)."""
    text = (EXAMPLE / "README.md").read_text()
    return [json.loads(b) for b in re.findall(r"^```json\n(.*?)^```", text, re.S | re.M)]


#: (document, index of the launch line in it), for every launch line of the documents.
DOC_LINES = [(doc, i) for doc in DOCS for i in range(len(launch_lines(doc)))]
LINES = [pytest.param(doc, i, id=f"{doc.relative_to(ROOT)}:{i}") for doc, i in DOC_LINES]


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: str(d.relative_to(ROOT)))
def test_every_doc_shows_an_openrlhf_launch_line(doc: Path) -> None:
    assert launch_lines(doc), f"{doc} has no `{COMMAND}` line in a bash block"


@pytest.mark.parametrize(("doc", "index"), LINES)
def test_launch_lines_parse_with_openrlhfs_own_parser(
    doc: Path, index: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = parse(launch_lines(doc)[index], monkeypatch)
    [url] = args.reward.remote_url  # OpenRLHF splits it at commas
    assert (args.data.input_key, args.data.label_key) == ("prompt", "label")
    assert set(readme_rows()[0]) == {args.data.input_key, args.data.label_key}
    if url.endswith(".py"):
        reward_func = SingleTurnAgentExecutor(args.reward.remote_url).reward_func
        # OpenRLHF execs the file as a module of its own: the class is a copy, not this one
        assert type(reward_func).__qualname__ == module.RewardFunc.__qualname__
        assert reward_func.label_field == "label"  # the entry the README's label objects hold
    else:
        assert url.endswith("/reward")  # rewardrouter serve's OpenRLHF endpoint


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["--remote_rm_url", "reward.py"], id="remote_rm_url"),
        pytest.param(["--label_key", "label"], id="label_key"),
        pytest.param(["--input_key", "prompt"], id="input_key"),
    ],
)
def test_flags_of_earlier_releases_are_refused_by_0_11(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        parse(argv, monkeypatch)
    assert stopped.value.code == 2
    assert f"unrecognized arguments: {' '.join(argv)}" in capsys.readouterr().err


class Strategy:
    """What OpenRLHF's dataset code asks of its DeepSpeed strategy: the parsed args, printing,
    and whether this is rank 0 (the real one needs DeepSpeed and a process group)."""

    def __init__(self, args: Any) -> None:
        self.args = args

    def print(self, *msg: Any) -> None:
        pass

    def is_rank_0(self) -> bool:
        return True


def remote_url(words: list[str]) -> str:
    """The value a launch line gives ``--reward.remote_url``."""
    return words[words.index("--reward.remote_url") + 1]


#: The launch lines that name a Python reward file (OpenRLHF's loader runs it).
FILE_LINES = [
    pytest.param(doc, i, id=f"{doc.relative_to(ROOT)}:{i}")
    for doc, i in DOC_LINES
    if remote_url(launch_lines(doc)[i]).endswith(".py")
]


@pytest.mark.parametrize(("doc", "index"), FILE_LINES)
def test_readme_rows_score_right_above_wrong_through_openrlhfs_loaders(
    doc: Path, index: int, tokenizer: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's rows, loaded as the launch line tells OpenRLHF to load them, scored by the
    reward file it names: a right and a wrong answer to each get the router's two rewards."""
    data = tmp_path / "prompts.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in readme_rows()))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "cache"))
    args = parse([*launch_lines(doc)[index], "--data.prompt_dataset", str(data)], monkeypatch)
    strategy = Strategy(args)
    rows = blending_datasets(  # as openrlhf.trainer.ppo_trainer.prepare_datasets calls it
        args.data.prompt_dataset,
        args.data.prompt_probs,
        strategy,
        args.train.seed,
        max_count=args.data.max_samples,
        dataset_split=args.data.prompt_split,
    )
    dataset = PromptDataset(rows, tokenizer, strategy, input_template=args.data.input_template)
    executor = SingleTurnAgentExecutor(args.reward.remote_url)
    params = SimpleNamespace(max_tokens=32, logprobs=None)
    assert len(dataset) == len(readme_rows()) > 0  # every README row, and at least one, is checked
    for _, prompt, label, _ in dataset:
        answer = json.loads(label)
        scored = {
            response: float(
                asyncio.run(
                    executor.execute(
                        prompt, label, params, 128, tokenizer, Engine(tokenizer, response)
                    )
                )["reward"]
            )
            for response in (f"\\boxed{{{answer['label']}}}", "\\boxed{0}")
        }
        truth = [(prompt, r, answer) for r in scored]
        assert list(scored.values()) == pytest.approx(expected(truth))
        right, wrong = scored.values()
        assert right > wrong


# -- no None to OpenRLHF: what its experience maker batches -----------------------------------


def openrlhf_method(module: str, cls: str, method: str, namespace: dict[str, Any]) -> Any:
    """``cls.method`` of the installed OpenRLHF's ``module`` file, compiled alone from its source
    (the module imports vLLM) with ``namespace`` as its globals: OpenRLHF's own code."""
    spec = importlib.util.find_spec("openrlhf")
    assert spec is not None and spec.submodule_search_locations
    path = Path(spec.submodule_search_locations[0]) / module
    tree = ast.parse(path.read_text(), str(path))
    [node] = [
        node
        for klass in tree.body
        if isinstance(klass, ast.ClassDef) and klass.name == cls
        for node in klass.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == method
    ]
    exec(compile(ast.Module(body=[node], type_ignores=[]), str(path), "exec"), namespace)
    return namespace[method]


def experience_of() -> Any:
    """``SamplesGenerator._process_response_into_experience``: how OpenRLHF turns the
    executor's output into an ``Experience``."""
    from openrlhf.trainer.ppo_utils.experience import Experience

    return openrlhf_method(
        "trainer/ppo_utils/samples_generator.py",
        "SamplesGenerator",
        "_process_response_into_experience",
        {"torch": torch, "Experience": Experience},
    )


def batched(outputs: list[Any]) -> Any:
    """The outputs as OpenRLHF's experience maker batches them (``concat_experiences``)."""
    from openrlhf.trainer.ppo_utils.experience import Experience

    make = experience_of()
    return Experience.concat_experiences([make(None, o, max_len=128) for o in outputs], 0)


#: The shipped mixed config's judge route (`on_error: skip`) with no judge listening, next to
#: a math route that scores.
JUDGED = [
    ("Q: 7*6? A:", "\\boxed{42}", {"label": "42", "dataset": "openai/gsm8k"}),
    (
        "Q: a haiku? A:",
        " old pond",
        {"label": "", "dataset": "HuggingFaceH4/ultrafeedback_binarized"},
    ),
]


@pytest.fixture
def unreachable_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("JUDGE_URL", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setenv("REWARDROUTER_CONFIG", str(ROOT / "conf" / "router" / "mixed.yaml"))


@pytest.mark.parametrize(
    ("overrides", "fill"),
    [
        pytest.param("", 0.0, id="default_missing_reward"),
        pytest.param("missing_reward.value=-0.5", -0.5, id="declared_missing_reward"),
    ],
)
def test_a_skipped_judge_call_batches_as_a_number_with_its_status(
    tokenizer: Any,
    unreachable_judge: None,
    monkeypatch: pytest.MonkeyPatch,
    overrides: str,
    fill: float,
) -> None:
    monkeypatch.setenv("REWARDROUTER_OVERRIDES", overrides)
    executor = SingleTurnAgentExecutor(remote_rm_url=module.__file__)
    experience = batched([execute(executor, tokenizer, row) for row in JUDGED])
    assert experience.rewards.tolist() == pytest.approx([1.1, fill])
    assert experience.scores.tolist() == pytest.approx([1.1, fill])
    info = {k: v.tolist() for k, v in experience.info.items()}
    assert info["rewardrouter/status/error"] == [0.0, 1.0]  # the judged row's real status
    assert info["rewardrouter/scored"] == [1.0, 0.0]
    assert info["rewardrouter/route/judged"] == [0.0, 1.0]
    assert info["reward"] == pytest.approx([1.1, fill])


def test_a_label_entry_that_matches_nothing_is_counted_in_openrlhfs_logs(
    tokenizer: Any, tmp_path: Path
) -> None:
    """A reward file reading `answer` from labels that hold `label`: right and wrong get the
    same reward, and what OpenRLHF logs says why."""
    reward_file = tmp_path / "reward_func.py"
    reward_file.write_text(
        "from rewardrouter.integrations.openrlhf import RewardFunc\n"
        f"reward_func = RewardFunc({str(ROUTER)!r}, label_field='answer')\n"
    )
    executor = SingleTurnAgentExecutor(remote_rm_url=str(reward_file))
    with pytest.warns(UserWarning, match=r"their label objects hold: dataset, label"):
        experience = batched([execute(executor, tokenizer, row) for row in ROWS[:2]])
    assert experience.rewards.tolist() == pytest.approx([0.1, 0.0])  # the format bonus alone
    assert experience.info["rewardrouter/label_missing"].tolist() == [1.0, 1.0]
    assert experience.info["rewardrouter/status/skipped"].tolist() == [0.0, 0.0]


# -- what stops the run, and what is one sample's counted failure ------------------------------

GSM8K_LABEL = {"label": "42", "dataset": "openai/gsm8k"}


def generate_responses(executor: SingleTurnAgentExecutor, tokenizer: Any, label: str) -> Any:
    """Two answers to one prompt through ``RolloutRayActor.generate_responses`` of the installed
    OpenRLHF (its executor's ``execute`` under ``asyncio.gather``), as its vLLM actor runs it."""
    method = openrlhf_method(
        "trainer/ray/vllm_engine.py", "RolloutRayActor", "generate_responses", {"asyncio": asyncio}
    )
    engine = Engine(tokenizer, "\\boxed{42}")
    actor = SimpleNamespace(executor=executor, generate=engine.generate)
    params = SimpleNamespace(max_tokens=32, logprobs=None)
    return asyncio.run(method(actor, "Q: 7*6? A:", label, params, 128, tokenizer, num_samples=2))


#: (environment overrides, label, what the error says): faults that stop the run. Before, each
#: reached OpenRLHF as an exception, which it turned into reward None, and its experience maker
#: failed on that None.
STOPS = [
    pytest.param(
        {"REWARDROUTER_CONFIG": None},
        GSM8K_LABEL,
        "export REWARDROUTER_CONFIG=/abs/path/router.yaml",
        id="no_config",
    ),
    pytest.param(
        {"REWARDROUTER_OVERRIDES": "routes.gsm8k.rewards.correct.kind=boxed_exact_mach"},
        GSM8K_LABEL,
        "did you mean 'boxed_exact_match'",
        id="config_does_not_compile",
    ),
    pytest.param(
        {},
        {"label": "42", "dataset": "openai/gsm8K_v2"},
        "add the value to a route's `match:`, or set `default_route`",
        id="unknown_dataset",
    ),
    pytest.param(
        {},
        "42",
        "OpenRLHF's label '42' is not a JSON object, so it names no route",
        id="plain_label_without_default_route",
    ),
    pytest.param(
        {"REWARDROUTER_OVERRIDES": "+routes.gsm8k.rewards.own={path: rr_testfns.raises}"},
        GSM8K_LABEL,
        "term 'own' (rr_testfns.raises): error: ValueError",
        id="own_function_raises_under_on_error_raise",
    ),
]


@pytest.mark.parametrize(("env", "label", "says"), STOPS)
def test_a_fault_that_must_stop_the_run_passes_openrlhfs_handler(
    tokenizer: Any,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    env: dict[str, str | None],
    label: Any,
    says: str,
) -> None:
    """OpenRLHF's executor catches every Exception of a reward function and goes on with reward
    None; the error passes it, its vLLM actor's gather, and reaches the trainer whole."""
    for name, value in env.items():
        if value is None:
            monkeypatch.delenv(name)
        else:
            monkeypatch.setenv(name, value)
    executor = SingleTurnAgentExecutor(remote_rm_url=module.__file__)
    with caplog.at_level(logging.INFO), pytest.raises(module.FatalRewardError) as stopped:
        generate_responses(
            executor, tokenizer, json.dumps(label) if isinstance(label, dict) else label
        )
    assert says in str(stopped.value)
    assert isinstance(stopped.value.__cause__, Exception)
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1  # two samples, one line
    assert errors[0].name == "rewardrouter.openrlhf"
    assert says in errors[0].getMessage()


def test_a_plain_label_error_names_every_fix(tokenizer: Any) -> None:
    executor = SingleTurnAgentExecutor(remote_rm_url=module.__file__)
    with pytest.raises(module.FatalRewardError) as stopped:
        execute(executor, tokenizer, ("Q: 7*6? A:", "\\boxed{42}", "42"))
    message = str(stopped.value)
    assert '{"label": "42", "dataset": "openai/gsm8k"}' in message  # the label to write
    assert "REWARDROUTER_OVERRIDES=default_route=<route>" in message
    assert "RewardFunc('/abs/path/router.yaml', route='<route>')" in message
    assert "Routes: gsm8k, squad" in message


#: (REWARDROUTER_OVERRIDES, label, reward, label_unreadable): labels as OpenRLHF hands them
#: over, batched beside a right answer. A label that opens as a JSON object but does not parse
#: was a plain label before: under default_route it was graded as the answer (a right answer
#: got the format bonus alone), without it the call raised and OpenRLHF got None.
LABELS = [
    pytest.param(
        "default_route=gsm8k",
        '{"label": "42", "dataset": "openai/gsm8k"',
        0.0,
        1.0,
        id="cut_short_under_default_route",
    ),
    pytest.param(
        "",
        "{'label': '42', 'dataset': 'openai/gsm8k'}",
        0.0,
        1.0,
        id="python_repr_without_default_route",
    ),
    pytest.param(
        "missing_reward.value=-1",
        '{ "label": "42", dataset: "openai/gsm8k"}',
        -1.0,
        1.0,
        id="unquoted_key_declared_missing_reward",
    ),
    pytest.param(
        "default_route=gsm8k",
        "{42}",
        1.0,
        0.0,
        id="a_braced_answer_stays_a_plain_label",
    ),
]


@pytest.mark.parametrize(("overrides", "label", "reward", "unreadable"), LABELS)
def test_an_unreadable_json_label_is_that_samples_counted_failure(
    tokenizer: Any,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    overrides: str,
    label: str,
    reward: float,
    unreadable: float,
) -> None:
    monkeypatch.setenv("REWARDROUTER_OVERRIDES", overrides)
    executor = SingleTurnAgentExecutor(remote_rm_url=module.__file__)
    right = ("Q: 7*6? A:", "<think>6 sevens</think> \\boxed{42}", GSM8K_LABEL)
    with caplog.at_level(logging.ERROR), warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        good = execute(executor, tokenizer, right)
        outputs = [good, execute(executor, tokenizer, ("Q: 7*6? A:", "\\boxed{42}", label))]
    experience = batched(outputs)  # OpenRLHF's experience maker takes both
    assert experience.rewards.tolist() == pytest.approx([1.1, reward])
    info = {k: v.tolist() for k, v in experience.info.items()}
    assert info["rewardrouter/label_unreadable"] == [0.0, unreadable]
    assert info["rewardrouter/status/invalid"] == [0.0, unreadable]
    logged = [r.getMessage() for r in caplog.records if r.name == "rewardrouter.openrlhf"]
    counted = [str(w.message) for w in warned if w.category is RewardRouterWarning]
    assert _metrics.WARNINGS["label_unreadable"] == unreadable
    if unreadable:
        [line] = logged
        assert "opens a JSON object but is not JSON" in line
        assert "write each label as JSON, with double quotes" in line
        assert counted == [line]
    else:
        assert logged == counted == []
