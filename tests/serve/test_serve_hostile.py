"""``rewardrouter serve`` under hostile input and load, on a real server on 127.0.0.1: bearer
authentication, a request size cap, bodies nested too deep to read, and a health check that
answers while a large batch is scored."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rr_remote import Servers
from test_serve import CONFIG, EXE, _listening, stopped

from rewardrouter import compile_router
from rewardrouter.serve import make_app

TOKEN = "serve-t0ken-value"
SAMPLE = {"response": "Paris", "label": "Paris", "metadata": {"dataset": "rajpurkar/squad"}}


def send(
    url: str, body: bytes | None = None, token: str | None = None
) -> tuple[int, Any, dict[str, str]]:
    """GET (no body) or POST ``body``; the status, the decoded JSON reply and the headers."""
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=120) as reply:
            return reply.status, json.loads(reply.read()), dict(reply.headers)
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read()), dict(error.headers)


@pytest.fixture
def serving() -> Iterator[Any]:
    """``serving(**make_app_options) -> base url``: the test config served in-process."""
    servers = Servers()
    routers = []

    def start(**options: Any) -> str:
        router = compile_router(CONFIG)
        routers.append(router)
        return servers.app(make_app(router, **options)).url("").rstrip("/")

    yield start
    servers.stop()
    for router in routers:
        router.close()


# -- authentication -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("token", "status"),
    [
        pytest.param(None, 401, id="no_token"),
        pytest.param("wrong", 401, id="wrong_token"),
        pytest.param(TOKEN.upper(), 401, id="token_in_another_case"),
        pytest.param(TOKEN, 200, id="the_token"),
    ],
)
def test_a_server_with_a_token_scores_only_for_its_holder(
    serving: Any, token: str | None, status: int
) -> None:
    base = serving(token=TOKEN)
    for path, body in (("/reward", SAMPLE), ("/batch", [SAMPLE])):
        got, reply, headers = send(base + path, json.dumps(body).encode(), token)
        assert got == status, reply
        if status == 401:
            assert reply == {"error": "this server needs `Authorization: Bearer <token>`"}
            assert headers["WWW-Authenticate"] == "Bearer"


def test_health_answers_anyone_but_names_routes_only_to_the_token_holder(serving: Any) -> None:
    base = serving(token=TOKEN)
    assert send(base + "/health")[:2] == (200, {"status": "ok"})
    status, reply, _ = send(base + "/health", token=TOKEN)
    assert (status, reply["status"], reply["default_route"]) == (200, "ok", "squad")


def test_the_serve_command_reads_its_token_from_the_environment(tmp_path: Path) -> None:
    config = tmp_path / "router.yaml"
    config.write_text(json.dumps(CONFIG))
    env = {
        "PATH": str(Path(sys.executable).parent),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
        "RR_SERVE_TOKEN": TOKEN,
    }
    command = [EXE, "serve", "--config", str(config), "--port", "0"]
    unset = subprocess.run(
        [*command, "--auth-env", "RR_UNSET_TOKEN"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert unset.returncode == 2
    assert "--auth-env: environment variable 'RR_UNSET_TOKEN' is not set" in unset.stderr
    process = subprocess.Popen(
        [*command, "--auth-env", "RR_SERVE_TOKEN"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base = _listening(process, within=60)
        body = json.dumps(SAMPLE).encode()
        assert send(f"{base}/reward", body)[0] == 401
        assert send(f"{base}/reward", body, TOKEN)[:2] == (200, 1.0)
    finally:
        stderr = stopped(process)
    assert process.returncode == 0, stderr
    assert TOKEN not in stderr


# -- bodies too large, nested too deep -------------------------------------------------------------


def test_a_body_over_the_size_cap_gets_413_and_the_server_lives_on(serving: Any) -> None:
    base = serving(max_request_mb=1)
    big = json.dumps({**SAMPLE, "response": "x" * 2**21}).encode()
    status, reply, _ = send(base + "/reward", big)
    assert status == 413
    assert reply == {"error": "the body is over the server's 1 MiB limit (`--max-request-mb`)"}
    assert send(base + "/reward", json.dumps(SAMPLE).encode())[:2] == (200, 1.0)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"[" * 100_000 + b"]" * 100_000, id="nested_list"),
        pytest.param(
            json.dumps(SAMPLE)[:-1].encode()
            + b', "extra": '
            + b'{"a": ' * 50_000
            + b"1"
            + b"}" * 50_000
            + b"}",
            id="nested_inside_a_sample",
        ),
    ],
)
def test_a_body_nested_too_deep_is_a_400_without_a_traceback(
    serving: Any, caplog: pytest.LogCaptureFixture, body: bytes
) -> None:
    base = serving()
    with caplog.at_level(logging.DEBUG, logger="rewardrouter"):
        for path in ("/reward", "/batch"):
            status, reply, _ = send(base + path, body)
            assert status == 400, reply
            assert "nests JSON too deeply" in reply["error"]
    assert "Traceback" not in caplog.text and not caplog.records


# -- the event loop stays free ---------------------------------------------------------------------


def test_health_answers_while_a_large_batch_is_scored(serving: Any) -> None:
    # 50,000 samples: decoding, checking, routing and encoding them took the server's loop
    # for about two seconds, during which /health waited.
    base = serving()
    body = json.dumps([SAMPLE] * 50_000).encode()
    done = threading.Event()
    result: dict[str, Any] = {}

    def score() -> None:
        result["reply"] = send(base + "/batch", body)[:2]
        done.set()

    threading.Thread(target=score, daemon=True).start()
    waits: list[float] = []
    while not done.wait(0.02):
        start = time.monotonic()
        assert send(base + "/health")[0] == 200
        waits.append(time.monotonic() - start)
    assert result["reply"] == (200, [1.0] * 50_000)
    assert len(waits) >= 3, "the batch ended before /health could be asked during it"
    # A generous bound on a shared machine (the benchmark measures the 0.5 s target); before,
    # /health waited for the whole batch.
    assert max(waits) < 1.0, f"/health waited {max(waits):.2f} s"
