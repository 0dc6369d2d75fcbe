"""``rewardrouter serve`` under hostile input, load and faults, on a real server on 127.0.0.1:
bearer authentication, a request size cap, bodies nested too deep to read, a health check that
answers while the scoring process is busy (a large batch, a grader holding its interpreter), a
scoring process killed mid-request, and a server stopped by a signal that leaves no process
behind."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import select
import signal
import socket
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import rr_testfns
from rr_processes import children, descendants
from rr_remote import Servers
from test_serve import CONFIG, EXE, _listening, command_env, stopped

from rewardrouter.config.models import RouterConfig
from rewardrouter.serve import make_app
from rewardrouter.serve.process import ScoringFailed, ScoringProcess
from rewardrouter.serve.scoring import REWARD

pytestmark = pytest.mark.slow  # a long file: `make test` starts it first

TOKEN = "serve-t0ken-value"
SAMPLE = {"response": "Paris", "label": "Paris", "metadata": {"dataset": "rajpurkar/squad"}}


#: CONFIG with a route whose grader holds its interpreter until the test lets it go.
HELD_CONFIG = {
    **CONFIG,
    "routes": {
        **CONFIG["routes"],
        "held": {
            "match": ["held"],
            "rewards": {"t": {"path": "rr_testfns.holds_the_interpreter", "executor": "thread"}},
        },
    },
}
#: What /health names, for CONFIG and HELD_CONFIG.
ROUTES = {"routes": ["failing", "gsm8k", "skipping", "squad"], "default_route": "squad"}
HELD_ROUTES = {
    "routes": ["failing", "gsm8k", "held", "skipping", "squad"],
    "default_route": "squad",
}


def send(
    url: str, body: bytes | None = None, token: str | None = None, timeout: float = 120
) -> tuple[int, Any, dict[str, str]]:
    """GET (no body) or POST ``body``; the status, the decoded JSON reply and the headers."""
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return reply.status, json.loads(reply.read()), dict(reply.headers)
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read()), dict(error.headers)


@pytest.fixture
def serving() -> Iterator[Any]:
    """``serving(config=CONFIG, **make_app_options) -> base url``: a config served on an
    ephemeral port, its scoring process a child of this one."""
    servers = Servers()

    def start(config: Mapping[str, Any] = CONFIG, **options: Any) -> str:
        return servers.app(make_app(config, **options)).url("").rstrip("/")

    yield start
    servers.stop()


# -- authentication -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def with_token() -> Iterator[str]:
    """CONFIG served with TOKEN (one server for the tests below: they only send requests)."""
    servers = Servers()
    yield servers.app(make_app(CONFIG, token=TOKEN)).url("").rstrip("/")
    servers.stop()


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
    with_token: str, token: str | None, status: int
) -> None:
    base = with_token
    for path, body in (("/reward", SAMPLE), ("/batch", [SAMPLE])):
        got, reply, headers = send(base + path, json.dumps(body).encode(), token)
        assert got == status, reply
        if status == 401:
            assert reply == {"error": "this server needs `Authorization: Bearer <token>`"}
            assert headers["WWW-Authenticate"] == "Bearer"
        else:  # the holder is scored: Paris for Paris
            assert reply == (1.0 if path == "/reward" else [1.0])


def test_health_answers_anyone_but_names_routes_only_to_the_token_holder(with_token: str) -> None:
    base = with_token
    assert send(base + "/health")[:2] == (200, {"status": "ok"})
    status, reply, _ = send(base + "/health", token=TOKEN)
    assert (status, reply["status"], reply["default_route"]) == (200, "ok", "squad")


def test_the_serve_command_reads_its_token_from_the_environment(tmp_path: Path) -> None:
    config = tmp_path / "router.yaml"
    config.write_text(json.dumps(CONFIG))
    env = command_env(tmp_path, RR_SERVE_TOKEN=TOKEN)
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
    serving: Any, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str], body: bytes
) -> None:
    base = serving()
    with caplog.at_level(logging.DEBUG, logger="rewardrouter"):
        for path in ("/reward", "/batch"):
            status, reply, _ = send(base + path, body)
            assert status == 400, reply
            assert "nests JSON too deeply" in reply["error"]
    # (aiohttp's access lines are INFO records of requests, where a run's logging shows them)
    logged = [r for r in caplog.records if r.name != "aiohttp.access"]
    assert "Traceback" not in caplog.text and not logged
    assert "Traceback" not in capfd.readouterr().err  # the scoring process's log


# -- the scoring process --------------------------------------------------------------------------


def test_health_answers_while_a_large_batch_is_scored(serving: Any) -> None:
    # 50,000 samples: decoding, checking, routing and encoding them take the scoring process
    # seconds, during which /health is asked again and again.
    base = serving()
    body = json.dumps([SAMPLE] * 50_000).encode()
    done = threading.Event()
    result: dict[str, Any] = {}

    def score() -> None:
        result["reply"] = send(base + "/batch", body)[:2]
        done.set()

    threading.Thread(target=score, daemon=True).start()
    asked = 0
    while not done.wait(0.02):
        assert send(base + "/health")[:2] == (200, {"status": "ok", **ROUTES})
        asked += 1
    assert result["reply"] == (200, [1.0] * 50_000)
    assert asked >= 3, "the batch ended before /health could be asked during it"


class HeldGrader:
    """A request to the ``held`` route in flight: its grader (``rr_testfns.holds_the_interpreter``)
    holds the scoring process's interpreter until :meth:`release`. ``response``: the sample's
    (its length picks the scoring lane)."""

    def __init__(self, base: str, folder: Path, response: str = "x") -> None:
        self._listener = socket.socket(socket.AF_UNIX)
        path = folder / "held.sock"
        self._listener.bind(str(path))
        self._listener.listen(1)
        self._listener.settimeout(60)
        sample = {"response": response, "metadata": {"dataset": "held", "socket": str(path)}}
        self.reply: tuple[int, Any] | None = None
        self._thread = threading.Thread(
            target=self._post, args=(base, json.dumps(sample).encode()), daemon=True
        )
        self._thread.start()
        self._conn, _ = self._listener.accept()
        self._conn.settimeout(60)
        #: The process the grader runs in (the scoring process), and its thread.
        self.pid, thread = map(int, self._conn.makefile().readline().split())
        rr_testfns.wait_in_recv(self.pid, thread)

    def _post(self, base: str, body: bytes) -> None:
        self.reply = send(base + "/reward", body)[:2]

    def release(self) -> None:
        with contextlib.suppress(OSError):
            self._conn.sendall(b"x")

    def reply_when_done(self) -> tuple[int, Any]:
        self._thread.join(60)
        self._conn.close()
        self._listener.close()
        assert self.reply is not None, "no reply within 60 s"
        return self.reply


@pytest.fixture
def command(tmp_path: Path) -> Iterator[Any]:
    """``command(config, env={}, new_session=False, flags=()) -> (process, base url)``:
    ``rewardrouter serve`` started as an operator does; stopped with SIGTERM at the end if it
    still runs."""
    started: list[subprocess.Popen[str]] = []

    def start(
        config: Mapping[str, Any],
        env: Mapping[str, str] = {},
        new_session: bool = False,
        flags: Sequence[str] = (),
    ) -> tuple[subprocess.Popen[str], str]:
        path = tmp_path / "router.yaml"
        path.write_text(json.dumps(config))
        process = subprocess.Popen(
            [EXE, "serve", "--config", str(path), "--port", "0", *flags],
            env=command_env(tmp_path, **env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=new_session,
        )
        started.append(process)
        return process, _listening(process, within=60)

    yield start
    for process in started:
        if process.poll() is None:
            stopped(process)


def test_health_answers_while_a_grader_holds_the_scoring_interpreter(
    command: Any, tmp_path: Path
) -> None:
    """A grader in a long C call that keeps the interpreter lock does not keep /health waiting:
    it answers while that request is still being scored."""
    process, base = command(HELD_CONFIG)
    held = HeldGrader(base, tmp_path)
    try:
        health = send(base + "/health", timeout=30)[:2]
        scored_by_then = held.reply is not None
    finally:
        held.release()
    assert health == (200, {"status": "ok", **HELD_ROUTES})
    assert not scored_by_then
    assert held.reply_when_done() == (200, 1.0)
    assert held.pid in descendants(process.pid)  # graded in the server's scoring process


def test_a_killed_scoring_process_fails_its_requests_with_503_and_is_replaced(
    command: Any, tmp_path: Path
) -> None:
    process, base = command(HELD_CONFIG)
    held = HeldGrader(base, tmp_path)
    os.kill(held.pid, signal.SIGKILL)
    status, reply = held.reply_when_done()
    assert status == 503
    cause = f"the scoring process (pid {held.pid}) died (killed by SIGKILL, signal 9"
    assert reply["error"].startswith(cause), reply
    assert reply["error"].endswith(
        "while scoring this request; it was not scored (the server starts a new scoring process)"
    )
    # The next request waits for the new scoring process and is scored.
    assert send(base + "/reward", json.dumps(SAMPLE).encode())[:2] == (200, 1.0)
    assert send(base + "/health")[:2] == (200, {"status": "ok", **HELD_ROUTES})
    stderr = stopped(process)
    assert process.returncode == 0, stderr
    assert (
        f"{cause}: the out-of-memory killer, or a kill -9); 1 request(s) it was scoring got 503; "
        "starting a new scoring process" in stderr
    )


#: One scoring process (no small-request lane): the tests that count scoring processes, or whose
#: reward module fails when a second process imports it, use it.
ONE_LANE = ("--small-request-kb", "0")

#: A router whose reward module knows when a new scoring process imports it (rr_second_import).
SECOND_IMPORT_CONFIG = {
    "default_route": "r",
    "routes": {"r": {"rewards": {"t": {"path": "rr_second_import.reward"}}}},
}


def test_requests_wait_for_the_new_scoring_process_and_health_says_restarting(
    command: Any, tmp_path: Path
) -> None:
    path = tmp_path / "import.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.listen(1)
    listener.settimeout(60)
    env = {"RR_MARKER": str(tmp_path / "imported"), "RR_SECOND_IMPORT_WAITS": str(path)}
    process, base = command(SECOND_IMPORT_CONFIG, env=env, flags=ONE_LANE)
    body = json.dumps(SAMPLE).encode()
    [first] = children(process.pid)
    os.kill(first, signal.SIGKILL)
    conn, _ = listener.accept()  # the new scoring process imports the module: it waits
    with conn, listener:
        conn.settimeout(60)
        second = int(conn.makefile().readline())
        outcome: dict[str, Any] = {}
        waiting = threading.Thread(
            target=lambda: outcome.update(reply=send(base + "/reward", body)[:2]), daemon=True
        )
        waiting.start()  # a request that cannot be scored until the new process is ready
        status, health, _ = send(base + "/health")
        answered_by_then = "reply" in outcome
        conn.sendall(b"x")
    waiting.join(60)
    assert not answered_by_then
    assert (status, health["status"]) == (503, "restarting")
    assert health["error"].startswith(f"the scoring process (pid {first}) died (killed by SIGKILL")
    assert second != first and children(process.pid) == [second]
    assert outcome["reply"] == (200, 1.0)
    assert send(base + "/health")[:2] == (
        200,
        {"status": "ok", "routes": ["r"], "default_route": "r"},
    )


def test_a_scoring_process_that_cannot_be_started_again_stops_the_server_loudly(
    command: Any, tmp_path: Path
) -> None:
    process, base = command(
        SECOND_IMPORT_CONFIG, env={"RR_MARKER": str(tmp_path / "imported")}, flags=ONE_LANE
    )
    assert send(base + "/reward", json.dumps(SAMPLE).encode())[:2] == (200, 1.0)
    [scoring] = children(process.pid)
    os.kill(scoring, signal.SIGKILL)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 1, stderr
    assert (
        f"error: the server stopped: the scoring process (pid {scoring}) died (killed by SIGKILL, "
        "signal 9" in stderr
    )
    assert "and a new one could not be started: ConfigError:" in stderr
    assert "this module was imported before" in stderr


@pytest.mark.parametrize(
    "stop",
    [
        pytest.param(lambda p: p.send_signal(signal.SIGTERM), id="sigterm_to_the_server"),
        pytest.param(lambda p: os.killpg(p.pid, signal.SIGINT), id="ctrl_c_to_its_group"),
    ],
)
def test_a_stopped_server_leaves_no_process_behind(command: Any, stop: Any) -> None:
    """The scoring process and the worker processes of its router end with the server."""
    config = {
        **CONFIG,
        "routes": {
            **CONFIG["routes"],
            "workers": {
                "match": ["workers"],
                "rewards": {"t": {"path": "rr_testfns.length", "executor": "process"}},
            },
        },
    }
    process, base = command(config, new_session=True)
    sample = {"response": "four", "metadata": {"dataset": "workers"}}
    assert send(base + "/reward", json.dumps(sample).encode())[:2] == (200, 4.0)
    left = descendants(process.pid)
    assert len(left) >= 2, "expected the scoring process and its router's workers"
    pidfds = [os.pidfd_open(pid) for pid in left]
    try:
        stop(process)
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 0, stderr
        # Each pidfd turns readable when its process ends; none may be left running.
        running = set(pidfds)
        while running:
            ended, _, _ = select.select(list(running), [], [], 30)
            assert ended, f"{len(running)} of {len(left)} processes outlived the server"
            running -= set(ended)
    finally:
        for fd in pidfds:
            os.close(fd)


def test_closing_a_scoring_process_that_could_not_be_started_again_does_not_raise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The application's cleanup closes the scoring process after a restart failed (the command
    then stops the server): close() itself must not raise the failure a second time."""
    monkeypatch.setenv("RR_MARKER", str(tmp_path / "imported"))

    async def scenario() -> str | None:
        scoring = ScoringProcess(RouterConfig.model_validate(SECOND_IMPORT_CONFIG))
        await scoring.start()
        assert await scoring.score(REWARD, json.dumps(SAMPLE).encode()) == (200, b"1.0")
        assert scoring.pid is not None
        os.kill(scoring.pid, signal.SIGKILL)
        await asyncio.wait_for(scoring.failed.wait(), 60)
        with pytest.raises(ScoringFailed, match="a new one could not be started"):
            await scoring.score(REWARD, json.dumps(SAMPLE).encode())
        await scoring.close()
        return scoring.failure

    failure = asyncio.run(scenario())
    assert failure is not None and "this module was imported before" in failure
