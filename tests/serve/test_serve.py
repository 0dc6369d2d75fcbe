"""``rewardrouter serve``: the router behind a real HTTP server on 127.0.0.1.

Rewards served must equal ``score_sync`` on the same samples; bad requests get a 4xx JSON error;
reward failures follow ``on_error`` and never stop the server.
"""

from __future__ import annotations

import asyncio
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from rr_remote import Servers

from rewardrouter import Router, compile_router
from rewardrouter.serve import make_app
from rewardrouter.serve.scoring import BATCH, ERRORS_IN_FULL, PROBLEM_CHARS, answer

pytestmark = pytest.mark.slow  # a long file: `make test` starts it first

EXE = shutil.which("rewardrouter", path=str(Path(sys.executable).parent)) or "rewardrouter"

CONFIG: dict[str, Any] = {
    "default_route": "squad",
    "allowed_modules": ["rr_testfns"],
    "routes": {
        "squad": {"match": ["rajpurkar/squad"], "rewards": {"correct": {"kind": "exact_match"}}},
        "gsm8k": {
            "match": ["openai/gsm8k"],
            "rewards": {
                "correct": {"kind": "boxed_exact_match"},
                "length": {"path": "rr_testfns.length", "weight": 0.01},
            },
        },
        "failing": {"rewards": {"t": {"path": "rr_testfns.raises"}}},
        "skipping": {"rewards": {"t": {"path": "rr_testfns.raises", "on_error": "skip"}}},
    },
}

#: What slime's remote_rm posts: prompt, response and label, no metadata.
SLIME_SAMPLES: list[dict[str, Any]] = [
    {"prompt": "Who wrote Hamlet?", "response": "Shakespeare", "label": "Shakespeare"},
    {"prompt": "Who wrote Hamlet?", "response": "Marlowe", "label": "Shakespeare"},
    {"prompt": [{"role": "user", "content": "2+2?"}], "response": "4", "label": "4"},
]

#: Samples that carry metadata, so they find other routes.
ROUTED_SAMPLES: list[dict[str, Any]] = [
    {"response": "so \\boxed{12}", "label": "12", "metadata": {"dataset": "openai/gsm8k"}},
    {"response": "\\boxed{7}", "label": "12", "metadata": {"dataset": "openai/gsm8k"}},
    {"response": "Paris", "label": "Paris", "metadata": {"dataset": "rajpurkar/squad"}},
]


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, Router]]:
    """The test config served on an ephemeral port (its scoring process a child of this one):
    (base url, the same router compiled here, for the expected rewards). One server for the
    module: no test changes what it serves, and each bad request is followed by a good one."""
    servers = Servers()
    with compile_router(CONFIG) as router:
        server = servers.app(make_app(CONFIG))
        yield server.url("").rstrip("/"), router
        servers.stop()


def post(url: str, body: Any = None, raw: bytes | None = None) -> tuple[int, Any]:
    """POST JSON (or raw bytes); the status and the decoded JSON reply, errors included."""
    data = raw if raw is not None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    return _send(request)


def get(url: str) -> tuple[int, Any]:
    return _send(urllib.request.Request(url))


def _send(request: urllib.request.Request) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            assert reply.headers["Content-Type"].startswith("application/json")
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        assert error.headers["Content-Type"].startswith("application/json")
        return error.code, json.loads(error.read())


async def slime_remote_rm(url: str, samples: list[dict[str, Any]]) -> list[Any]:
    """What slime's ``remote_rm`` does for each sample: POST the body as JSON, fail on an error
    status, and take the JSON reply (read with aiohttp's content-type check) as the reward."""
    async with aiohttp.ClientSession() as session:

        async def one(sample: dict[str, Any]) -> Any:
            body = {
                "prompt": sample["prompt"],
                "response": sample["response"],
                "label": sample["label"],
            }
            async with session.post(url, json=body) as response:
                response.raise_for_status()
                return await response.json()

        return await asyncio.gather(*(one(s) for s in samples))


def test_slime_remote_rm_gets_what_score_sync_gives(served: tuple[str, Router]) -> None:
    base, router = served
    rewards = asyncio.run(slime_remote_rm(f"{base}/reward", SLIME_SAMPLES))
    assert rewards == [r.reward for r in router.score_sync(SLIME_SAMPLES)] == [1.0, 0.0, 1.0]


@pytest.mark.parametrize(
    ("samples", "by_hand"),
    [
        pytest.param(SLIME_SAMPLES, [1.0, 0.0, 1.0], id="slime_bodies_to_the_default_route"),
        # gsm8k: the boxed match plus 0.01 per character of the response; squad: its match
        pytest.param(ROUTED_SAMPLES, [1 + 0.13, 0 + 0.09, 1.0], id="metadata_routes_them"),
    ],
)
def test_single_and_batch_endpoints_agree_with_score_sync(
    served: tuple[str, Router], samples: list[dict[str, Any]], by_hand: list[float]
) -> None:
    base, router = served
    expected = [r.reward for r in router.score_sync(samples)]
    assert expected == pytest.approx(by_hand, abs=1e-12)
    assert [post(f"{base}/reward", s) for s in samples] == [(200, r) for r in expected]
    assert post(f"{base}/batch", samples) == (200, expected)


def test_a_remote_term_pointed_at_serve_scores_like_the_router_itself(
    served: tuple[str, Router],
) -> None:
    base, router = served
    samples = SLIME_SAMPLES + ROUTED_SAMPLES
    expected = [r.reward for r in router.score_sync(samples)]
    for endpoint, batch in (("reward", False), ("batch", True)):
        kwargs = {"url": f"{base}/{endpoint}", "batch": batch, "send_metadata": True}
        term = {"kind": "remote", "kwargs": kwargs}
        with compile_router(
            {"default_route": "r", "routes": {"r": {"rewards": {"j": term}}}}
        ) as client:
            assert [r.reward for r in client.score_sync(samples)] == expected, endpoint


@pytest.mark.parametrize(
    ("path", "body", "status", "error"),
    [
        pytest.param("/reward", b"{not json", 400, "the body is not JSON", id="not_json"),
        pytest.param(
            "/reward",
            [1, 2],
            400,
            "expected a JSON object with `response`, found list",
            id="not_an_object",
        ),
        pytest.param(
            "/reward",
            {"prompt": "p"},
            400,
            "response: missing required key 'response'",
            id="no_response",
        ),
        pytest.param(
            "/reward",
            {"response": "x", "lable": "y"},
            400,
            "lable: unknown key 'lable'\n    did you mean 'label'?",
            id="typo_in_a_key",
        ),
        pytest.param(
            "/reward",
            {"response": 3},
            400,
            "response: Input should be a valid string",
            id="response_not_a_string",
        ),
        pytest.param(
            "/reward",
            {"response": "x", "metadata": {"custom_rm_path": "os.system"}},
            400,
            "is outside allowed_modules",
            id="sample_names_a_forbidden_function",
        ),
        pytest.param(
            "/batch",
            {"response": "x"},
            400,
            "expected a JSON list of samples, found dict",
            id="batch_not_a_list",
        ),
        pytest.param(
            "/batch",
            [{"response": "x"}, {"prompt": 1}, 7],
            400,
            "[1].response: missing required key 'response'; [2]: expected a JSON object",
            id="batch_reports_every_bad_item",
        ),
        pytest.param(
            "/reward",
            {"response": "x", "metadata": {"dataset": "failing"}},
            422,
            "sample 0, route 'failing': t: ValueError: cannot score 'x'",
            id="reward_failure_under_raise",
        ),
        pytest.param("/nowhere", {"response": "x"}, 404, "Not Found", id="unknown_endpoint"),
    ],
)
def test_bad_requests_get_a_json_error_and_the_server_lives_on(
    served: tuple[str, Router], path: str, body: Any, status: int, error: str
) -> None:
    base, _ = served
    raw = body if isinstance(body, bytes) else None
    code, reply = post(f"{base}{path}", body, raw)
    assert code == status
    assert error in reply["error"]
    assert post(f"{base}/reward", SLIME_SAMPLES[0]) == (200, 1.0)


def test_wrong_method_is_a_json_405(served: tuple[str, Router]) -> None:
    base, _ = served
    assert get(f"{base}/reward") == (405, {"error": "Method Not Allowed"})


def test_a_sample_without_a_reward_is_never_a_null_for_slime(served: tuple[str, Router]) -> None:
    """slime's remote_rm turns the reply into a float: no reward must be an error it sees."""
    base, _ = served
    code, reply = post(f"{base}/reward", {"response": "x", "metadata": {"dataset": "skipping"}})
    assert code == 422
    assert reply["status"] == "error"
    assert "no reward for this sample (route 'skipping'" in reply["error"]
    assert "on_error: {value: x}" in reply["error"]


def test_a_batch_entry_fails_alone(served: tuple[str, Router]) -> None:
    base, router = served
    samples = [
        ROUTED_SAMPLES[2],
        {"response": "x", "metadata": {"dataset": "skipping"}},  # on_error: skip → null
        {"response": "x", "metadata": {"custom_rm_path": "os.system"}},  # unroutable
        {"response": "x", "metadata": {"dataset": "failing"}},  # on_error: raise
        ROUTED_SAMPLES[0],
    ]
    code, reply = post(f"{base}/batch", samples)
    assert code == 200
    expected = [r.reward for r in router.score_sync([samples[0], samples[4]])]
    assert [reply[0], reply[1], reply[4]] == [expected[0], None, expected[1]]
    assert reply[2]["status"] == "unroutable" and "outside allowed_modules" in reply[2]["error"]
    assert reply[3]["status"] == "error" and "ValueError: cannot score 'x'" in reply[3]["error"]


def test_the_errors_of_a_batch_reply_cost_a_few_bytes_per_sample() -> None:
    """5,000 samples no route matches, each naming a dataset of 1,000 characters: each entry is
    that sample's failure, the first ones cut short, the rest (past 64 KiB of them) naming only
    their status; the reply was every dataset quoted whole (5 MB)."""
    count = 5_000
    samples = [{"response": "x", "metadata": {"dataset": "d" * 1000}}] * count
    with compile_router({"routes": {"qa": {"rewards": {"c": {"kind": "exact_match"}}}}}) as router:
        status, reply = asyncio.run(answer(router, BATCH, json.dumps(samples).encode()))
    entries = json.loads(reply)
    assert status == 200 and [e["status"] for e in entries] == ["unroutable"] * count
    assert len(reply) < ERRORS_IN_FULL + 100 * count
    assert entries[0]["error"].startswith("sample 0: no route matched")
    assert len(entries[0]["error"]) < PROBLEM_CHARS + 40 < 1000
    assert entries[-1]["error"] == f"sample {count - 1}: unroutable (see the first errors)"


def test_a_remote_batch_term_fails_only_the_samples_serve_could_not_score(
    served: tuple[str, Router],
) -> None:
    base, _ = served
    kwargs = {"url": f"{base}/batch", "batch": True, "send_metadata": True}
    term = {"kind": "remote", "kwargs": kwargs, "on_error": "skip"}
    samples = [ROUTED_SAMPLES[2], {"response": "x", "metadata": {"dataset": "failing"}}]
    with compile_router(
        {"default_route": "r", "routes": {"r": {"rewards": {"j": term}}}}
    ) as client:
        ok, failed = client.score_sync(samples)
    assert (ok.reward, ok.status) == (1.0, "ok")
    assert (failed.reward, failed.status) == (None, "error")
    assert "the server could not score this sample: sample 1, route 'failing'" in (
        failed.error_message or ""
    )


def test_health(served: tuple[str, Router]) -> None:
    base, _ = served
    assert get(f"{base}/health") == (
        200,
        {
            "status": "ok",
            "routes": ["failing", "gsm8k", "skipping", "squad"],
            "default_route": "squad",
        },
    )


# -- the command, end to end ----------------------------------------------------------------------


def _listening(process: subprocess.Popen[str], within: float) -> str:
    """The URL from the server's ``listening on`` line; fails if it does not come in time."""
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], within)
    assert ready, f"no `listening on` line within {within} s"
    line = process.stdout.readline()
    assert "listening on http://127.0.0.1:" in line, line + (
        process.stderr.read() if process.stderr else ""
    )
    return line.rsplit(" ", 1)[1].strip()


def command_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a `rewardrouter serve` under test: this interpreter's scripts, the
    tests' reward modules on the import path (after an inherited PYTHONPATH: the package under
    test comes first), ``extra``."""
    path = [os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []
    return {
        "PATH": str(Path(sys.executable).parent),
        "HOME": str(home),
        "PYTHONPATH": os.pathsep.join([*path, str(Path(__file__).resolve().parents[1])]),
        **extra,
    }


def test_serve_command_end_to_end(tmp_path: Path) -> None:
    config = tmp_path / "router.yaml"
    config.write_text(json.dumps({**CONFIG, "default_route": None}))  # YAML is a superset of JSON
    env = command_env(tmp_path)
    command = [
        EXE,
        "serve",
        "--config",
        str(config),
        "--port",
        "0",
        "default_route=squad",
    ]
    process = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        base = _listening(process, within=60)
        samples = SLIME_SAMPLES + ROUTED_SAMPLES
        with compile_router(CONFIG) as router:
            expected = [r.reward for r in router.score_sync(samples)]
        assert asyncio.run(slime_remote_rm(f"{base}/reward", SLIME_SAMPLES)) == expected[:3]
        assert post(f"{base}/batch", samples) == (200, expected)
        assert get(f"{base}/health")[1]["default_route"] == "squad"
    finally:
        stderr = stopped(process)
    assert process.returncode == 0, stderr


def stopped(process: subprocess.Popen[str]) -> str:
    """Stop a running `rewardrouter serve` as an operator does (SIGTERM); its stderr."""
    process.send_signal(signal.SIGTERM)
    try:
        return process.communicate(timeout=15)[1]
    finally:
        process.kill()


def test_serve_command_reports_a_bad_config_without_a_traceback(tmp_path: Path) -> None:
    config = tmp_path / "router.yaml"
    config.write_text(
        "routes:\n  j:\n    rewards:\n      judge: {kind: remote, kwargs: {timout: 3}}\n"
    )
    done = subprocess.run(
        [EXE, "serve", "--config", str(config), "--port", "0"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": str(Path(sys.executable).parent), "HOME": str(tmp_path), "COLUMNS": "200"},
    )
    assert done.returncode == 2
    assert f"in composed config (--config {config})" in " ".join(done.stderr.split())
    assert "routes.j.rewards.judge.kwargs.timout: unknown key 'timout'" in done.stderr
    assert "routes.j.rewards.judge.kwargs.url: missing required key 'url'" in done.stderr
    assert "Traceback" not in done.stderr
