"""``rewardrouter serve``'s bounds and lanes, on real sockets on 127.0.0.1: its flags, the
connection cap (idle connections evicted first, busy ones never), the head deadline (slowloris),
the keep-alive timeout, the body floor, and the small-request lane that a large request cannot
hold up. Timeouts here are short (0.5 s) and every assertion on time is generous."""

from __future__ import annotations

import argparse
import http.client
import json
import resource
import subprocess
import sys
import urllib.error
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rr_serve import HONEST, ServeThread, closed_by_server, request, status_of, until_closed
from test_serve import CONFIG, EXE, _listening, command_env, stopped
from test_serve_hostile import HeldGrader

from rewardrouter.errors import ConfigError
from rewardrouter.serve import ServeOptions, add_serve_arguments
from rewardrouter.serve.main import options_from

pytestmark = pytest.mark.slow  # a long file: `make test` starts it first


@pytest.fixture
def server() -> Iterator[Any]:
    """``server(**options) -> ServeThread``, stopped after the test."""
    started: list[ServeThread] = []

    def start(**options: Any) -> ServeThread:
        started.append(ServeThread(**options))
        return started[-1]

    yield start
    for running in started:
        running.stop()


# -- the flags -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(
            ["--header-timeout", "10s"],
            "argument --header-timeout: 10s is not a duration: expected a positive number of "
            "seconds; give one, e.g. --header-timeout 10, or leave it out for the default 10",
            id="duration_with_a_unit",
        ),
        pytest.param(
            ["--body-timeout", "0"], "argument --body-timeout: 0 is not a duration", id="zero"
        ),
        pytest.param(
            ["--keep-alive-timeout", "inf"],
            "argument --keep-alive-timeout: inf is not a duration",
            id="infinite",
        ),
        pytest.param(
            ["--max-connections", "2.5"],
            "argument --max-connections: 2.5 is not a count: expected a whole number of at "
            "least 1; give one, e.g. --max-connections 4096, or leave it out for the default "
            "(4096, lowered to what the open-file limit allows)",
            id="fractional_count",
        ),
        pytest.param(
            ["--max-connections", "0"], "argument --max-connections: 0 is not a count", id="no_cap"
        ),
        pytest.param(
            ["--min-body-rate-kb", "-1"],
            "argument --min-body-rate-kb: -1 is not a rate: expected a positive number of KiB "
            "per second",
            id="negative_rate",
        ),
        pytest.param(
            ["--small-request-kb", "-1"],
            "argument --small-request-kb: -1 is not a size: expected a number of KiB, 0 or more",
            id="negative_size",
        ),
    ],
)
def test_a_bad_flag_says_which_what_and_the_fix(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(argv)
    assert message in capsys.readouterr().err


def test_the_flags_default_to_the_options_defaults() -> None:
    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    assert options_from(parser.parse_args([])) == ServeOptions()
    given = parser.parse_args(["--header-timeout", "2", "--small-request-kb", "0"])
    assert options_from(given) == ServeOptions(header_timeout=2, small_request_kb=0)


def test_options_out_of_range_are_all_named_at_once() -> None:
    with pytest.raises(ConfigError) as raised:
        ServeOptions(max_connections=0, body_timeout=-1, min_body_rate_kb=float("nan"))
    assert [p.path for p in raised.value.problems] == [
        "--max-connections",
        "--body-timeout",
        "--min-body-rate-kb",
    ]


def test_the_cap_fits_the_open_file_limit() -> None:
    # In a child whose limit is 1024 (hard): the default cap is lowered with a note; a cap asked
    # for beyond the limit is an error that says what to pass.
    code = (
        "import resource\n"
        "from rewardrouter.errors import ConfigError\n"
        "from rewardrouter.serve.guard import connection_cap\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))\n"
        "print(connection_cap(None))\n"
        "print(connection_cap(500))\n"
        "try:\n"
        "    connection_cap(2000)\n"
        "except ConfigError as exc:\n"
        "    print(exc.problems[0])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    lowered, asked, refused = done.stdout.split("\n", 2)
    assert lowered == (
        "(768, '--max-connections lowered to 768: this process may open only 1024 files "
        "(`ulimit -n`); raise that limit to allow more')"
    )
    assert asked == "(500, None)"
    assert refused.startswith(
        "--max-connections: 2000 connections need 2256 open files, but this process may open "
        "only 1024"
    )
    assert "pass --max-connections 768 or less" in refused


def _low_file_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))


@pytest.mark.parametrize(
    ("flags", "status", "stderr"),
    [
        pytest.param(
            [],
            None,
            "rewardrouter serve: --max-connections lowered to 768: this process may open only "
            "1024 files (`ulimit -n`); raise that limit to allow more",
            id="default_cap_lowered",
        ),
        pytest.param(
            ["--max-connections", "2000"],
            2,
            "argument --max-connections: 2000 connections need 2256 open files, but this "
            "process may open only 1024 (`ulimit -n`); pass --max-connections 768 or less, or "
            "raise the limit (`ulimit -n 2256`) before starting the server",
            id="given_cap_refused",
        ),
    ],
)
def test_the_command_fits_its_cap_to_a_low_open_file_limit(
    tmp_path: Path, flags: list[str], status: int | None, stderr: str
) -> None:
    config = tmp_path / "router.yaml"
    config.write_text(json.dumps(CONFIG))
    process = subprocess.Popen(
        [EXE, "serve", "--config", str(config), "--port", "0", *flags],
        env=command_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_low_file_limit,
    )
    if status is None:  # it serves: `listening on` is still the first line of its stdout
        base = _listening(process, within=60)
        assert request(base + "/health")[0] == 200
        assert stderr in stopped(process)
    else:
        _, err = process.communicate(timeout=60)
        assert process.returncode == status, err
        assert stderr in err and "Traceback" not in err


# -- connections ---------------------------------------------------------------------------------


def test_health_answers_beside_an_idle_flood_over_the_cap(server: Any) -> None:
    running = server(max_connections=50)
    idle = [running.connect() for _ in range(300)]
    try:
        assert request(running.base + "/health", timeout=10)[0] == 200
        assert request(running.base + "/reward", HONEST, timeout=10) == (200, 1.0)
        # The server keeps at most its cap open: it closed the longest idle ones.
        assert closed_by_server(idle, at_least=300 - 50) >= 300 - 50
    finally:
        for sock in idle:
            sock.close()


def test_a_slowloris_head_is_closed_after_the_header_timeout(server: Any) -> None:
    running = server(header_timeout=0.5)
    with running.connect() as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\n")
        seconds, reply = until_closed(sock, within=10, drip=b"X", every=0.05)
    assert 0.4 <= seconds < 5
    assert status_of(reply) == 408
    assert b"--header-timeout" in reply
    assert request(running.base + "/health")[0] == 200


def test_a_silent_connection_is_closed_after_the_keep_alive_timeout(server: Any) -> None:
    running = server(keep_alive_timeout=0.5, header_timeout=30)
    with running.connect() as sock:
        seconds, reply = until_closed(sock, within=10)
    assert 0.4 <= seconds < 5
    assert reply == b""


def test_requests_on_one_connection_are_not_cut_by_the_header_timeout(server: Any) -> None:
    # Five requests on one keep-alive connection over more than the header timeout: each head
    # arrives at once, so none is late.
    running = server(header_timeout=0.5)
    connection = http.client.HTTPConnection(*running.address, timeout=10)
    try:
        for _ in range(5):
            connection.request("POST", "/reward", json.dumps(HONEST))
            reply = connection.getresponse()
            assert (reply.status, json.loads(reply.read())) == (200, 1.0)
            until_closed(connection.sock, within=0.2)  # idle a while
    finally:
        connection.close()


def test_a_trickled_body_gets_408_and_is_closed(server: Any) -> None:
    running = server(body_timeout=0.5, min_body_rate_kb=1)
    with running.connect() as sock:
        sock.sendall(b"POST /reward HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")
        seconds, reply = until_closed(sock, within=10, drip=b"x" * 10, every=0.1)  # 100 B/s
    assert 0.4 <= seconds < 5
    assert status_of(reply) == 408
    assert b"the body arrived too slowly" in reply
    assert request(running.base + "/reward", HONEST) == (200, 1.0)


def test_a_body_faster_than_the_floor_is_read_whole(server: Any) -> None:
    # 3 KiB in three parts 0.3 s apart: longer than the 0.5 s grace, faster than 1 KiB/s.
    running = server(body_timeout=0.5, min_body_rate_kb=1)
    body = json.dumps({**HONEST, "prompt": "p" * 3000}).encode()
    thirds = [
        body[: len(body) // 3],
        body[len(body) // 3 : 2 * len(body) // 3],
        body[2 * len(body) // 3 :],
    ]
    with running.connect() as sock:
        sock.sendall(
            b"POST /reward HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body)
        )
        for part in thirds:
            until_closed(sock, within=0.3)
            sock.sendall(part)
        _, reply = until_closed(sock, within=10)
    assert status_of(reply) == 200
    assert reply.endswith(b"\r\n\r\n1.0")


def test_at_the_cap_with_every_connection_busy_a_new_one_gets_503(server: Any) -> None:
    running = server(max_connections=3, body_timeout=30)
    busy = [running.connect() for _ in range(3)]
    try:
        for sock in busy:  # heads whose bodies never come: a request in progress on each
            sock.sendall(
                b"POST /reward HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                b"Content-Length: 100\r\n\r\n"
            )
            assert sock.recv(100).startswith(b"HTTP/1.1 100")
        with running.connect() as extra:
            _, reply = until_closed(extra, within=10)
        assert status_of(reply) == 503
        assert b"--max-connections" in reply
    finally:
        for sock in busy:
            sock.close()
    assert request(running.base + "/health")[0] == 200  # their slots are free again


# -- lanes ---------------------------------------------------------------------------------------


def test_a_small_request_is_scored_while_a_large_one_holds_its_scoring_process(
    server: Any, tmp_path: Path
) -> None:
    running = server(small_request_kb=1)
    held = HeldGrader(running.base, tmp_path, response="x" * 4096)  # over 1 KiB: the bulk lane
    try:
        small = request(running.base + "/reward", HONEST, timeout=30)
        scored_by_then = held.reply is not None
    finally:
        held.release()
    assert small == (200, 1.0)
    assert not scored_by_then
    assert held.reply_when_done() == (200, 1.0)


def test_with_one_lane_a_small_request_waits_for_the_large_one(server: Any, tmp_path: Path) -> None:
    running = server(small_request_kb=0)
    held = HeldGrader(running.base, tmp_path, response="x" * 4096)
    try:
        try:
            answered = request(running.base + "/reward", HONEST, timeout=1)
        except TimeoutError:
            answered = None  # waited: what is checked
        except urllib.error.URLError as error:  # a timeout while connecting; anything else fails
            if not isinstance(error.reason, TimeoutError):
                raise
            answered = None
        assert answered is None, f"answered {answered} while the one lane was held"
    finally:
        held.release()
    assert held.reply_when_done() == (200, 1.0)
    assert request(running.base + "/reward", HONEST) == (200, 1.0)
