"""``rewardrouter serve`` against hostile clients, on 127.0.0.1: connections that hold the server's
file descriptors or its time (slowloris heads, trickled and stalled bodies, idle floods, busy
connections at the cap), requests that try its parsers and its size cap, and a heavy client
beside a light one.

The cases run against one server (:class:`rr_serve.ServeThread`, the command's code, with short
timeouts), one after the other, and a case that needs other options against a server of its
own. Each asserts what the server did to the attacker, and then that the server is still up and
scores an honest request right: the shared server takes every attack in turn. The canary (see
``conftest.py``) is in the environment of the server and its scoring processes: it must reach
no log and no output.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from rr_serve import HONEST, ServeThread, closed_by_server, request, status_of, until_closed

from .conftest import CANARY_ENV, Canary

pytestmark = pytest.mark.slow  # a long file: `make test` starts it first

#: The server's options in every case unless a case says otherwise: short timeouts, so that each
#: case ends in seconds.
OPTIONS: dict[str, Any] = {
    "header_timeout": 0.5,
    "keep_alive_timeout": 5.0,
    "body_timeout": 0.5,
    "min_body_rate_kb": 1.0,
    "max_connections": 100,
    "max_request_mb": 1.0,
}

Attack = Callable[[ServeThread], None]


@dataclass(frozen=True)
class Case:
    attack: Attack
    options: dict[str, Any] = field(default_factory=dict)


def _head(path: str = "/reward", length: int | None = None, *extra: str) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: x", "Content-Type: application/json", *extra]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


# -- the attacks -------------------------------------------------------------------------------
# Each sends what a hostile client sends and asserts how the server answered that client.


def slowloris_head(server: ServeThread) -> None:
    """A head a byte every 50 ms: 408 and closed after the 0.5 s header timeout."""
    with server.connect() as sock:
        sock.sendall(b"POST /reward HTTP/1.1\r\n")
        seconds, reply = until_closed(sock, within=10, drip=b"X", every=0.05)
    assert 0.4 <= seconds < 5 and status_of(reply) == 408


def slowloris_swarm(server: ServeThread) -> None:
    """Forty slowloris connections at once, fewer than the cap: every one closed in time."""
    swarm = [server.connect() for _ in range(40)]
    try:
        for sock in swarm:
            sock.sendall(b"GET /health HTTP/1.1\r\nX-")
            sock.setblocking(False)
        start, open_ = time.monotonic(), set(swarm)
        while open_ and time.monotonic() - start < 10:
            for sock in list(open_):
                try:
                    if sock.recv(4096) == b"":
                        open_.discard(sock)
                        continue
                except BlockingIOError:
                    pass
                except OSError:
                    open_.discard(sock)
                    continue
                try:
                    sock.send(b"a")
                except OSError:
                    open_.discard(sock)
            time.sleep(0.05)
        assert not open_, f"{len(open_)} slowloris connections still open after 10 s"
    finally:
        for sock in swarm:
            sock.close()


def trickled_body(server: ServeThread) -> None:
    """A body at 100 bytes/s against a floor of 1 KiB/s: 408 and closed."""
    with server.connect() as sock:
        sock.sendall(_head(length=100_000))
        seconds, reply = until_closed(sock, within=10, drip=b"x" * 10, every=0.1)
    assert 0.4 <= seconds < 5 and status_of(reply) == 408
    assert b"the body arrived too slowly" in reply


def stalled_body(server: ServeThread) -> None:
    """Half a body, then silence: 408 once the grace and the floor's allowance are spent."""
    with server.connect() as sock:
        sock.sendall(_head(length=2000) + b"x" * 1000)
        seconds, reply = until_closed(sock, within=10)
    assert 0.4 <= seconds < 5 and status_of(reply) == 408


def idle_flood(server: ServeThread) -> None:
    """Three times the cap in idle connections: /health and an honest request still answered
    while they are held, and the server closed the surplus."""
    flood = [server.connect() for _ in range(300)]
    try:
        assert request(server.base + "/health", timeout=10)[0] == 200
        assert request(server.base + "/reward", HONEST, timeout=10) == (200, 1.0)
        assert closed_by_server(flood, at_least=200) >= 200
    finally:
        for sock in flood:
            sock.close()


def busy_at_the_cap(server: ServeThread) -> None:
    """Every slot held by a request whose body never comes: the next connection gets 503."""
    busy = [server.connect() for _ in range(3)]
    try:
        for sock in busy:
            sock.sendall(_head("/reward", 100, "Expect: 100-continue"))
            assert sock.recv(100).startswith(b"HTTP/1.1 100")
        with server.connect() as extra:
            _, reply = until_closed(extra, within=10)
        assert status_of(reply) == 503
    finally:
        for sock in busy:
            sock.close()


def half_closed(server: ServeThread) -> None:
    """Half a head, then the client's side of the connection shut: closed without a reply."""
    with server.connect() as sock:
        sock.sendall(b"POST /reward HTTP/1.1\r\nHost: x\r\n")
        sock.shutdown(socket.SHUT_WR)
        seconds, _ = until_closed(sock, within=10)
    assert seconds < 5


def oversized_declared(server: ServeThread) -> None:
    """A Content-Length over the 1 MiB cap: 413 before the body is read."""
    with server.connect() as sock:
        sock.sendall(_head(length=2 * 2**20))
        _, reply = until_closed(sock, within=10, drip=b"x" * 65536, every=0.01)
    assert status_of(reply) == 413
    assert b"--max-request-mb" in reply


def oversized_chunked(server: ServeThread) -> None:
    """A chunked body (no Content-Length) that grows past the cap: 413."""
    chunk = b"x" * 65536
    with server.connect() as sock:
        sock.sendall(_head("/reward", None, "Transfer-Encoding: chunked"))
        _, reply = until_closed(
            sock, within=10, drip=b"%x\r\n%s\r\n" % (len(chunk), chunk), every=0.01
        )
    assert status_of(reply) == 413


def malformed_json(server: ServeThread) -> None:
    status, reply = request(server.base + "/reward", raw=b'{"response": "Paris", "label": ')
    assert status == 400 and reply["error"].startswith("the body is not JSON")


def deeply_nested_json(server: ServeThread) -> None:
    for path in ("/reward", "/batch"):
        status, reply = request(server.base + path, raw=b"[" * 100_000 + b"]" * 100_000)
        assert status == 400 and "nests JSON too deeply" in reply["error"]


def garbage_request_line(server: ServeThread) -> None:
    """Bytes that are not HTTP: 400 and closed."""
    with server.connect() as sock:
        sock.sendall(b"\x16\x03\x01\x00\xff\x01\x00 not http\r\n\r\n")
        _, reply = until_closed(sock, within=10)
    assert status_of(reply) == 400


def huge_header(server: ServeThread) -> None:
    """A header line of 100 KB, over aiohttp's 8190-byte bound: refused, not buffered."""
    with server.connect() as sock:
        sock.sendall(_head("/health", None, "X-Big: " + "a" * 100_000).replace(b"POST", b"GET"))
        _, reply = until_closed(sock, within=10)
    assert status_of(reply) in (400, 431)


def many_headers(server: ServeThread) -> None:
    """Five hundred headers, over aiohttp's bound of 128: refused."""
    extra = [f"X-H{i}: {i}" for i in range(500)]
    with server.connect() as sock:
        sock.sendall(_head("/health", None, *extra).replace(b"POST", b"GET"))
        _, reply = until_closed(sock, within=10)
    assert status_of(reply) in (400, 431)


def bare_numbers(server: ServeThread) -> None:
    """A ``/batch`` of 500,000 bare numbers (1 MB): a 400 that names the first five and counts
    the rest, in under 1 KB (it listed every one: a body drew a reply 30 times its size)."""
    body = b"[" + b"7," * 499_999 + b"7]"
    status, reply = request(server.base + "/batch", raw=body, timeout=60)
    assert status == 400 and len(json.dumps(reply)) < 1000
    assert reply["error"].endswith("found int; and 499,995 more problems in the body")


def bulky_bad_fields(server: ServeThread) -> None:
    """Samples whose wrong fields (a key, a value) hold 100,000 characters each: every problem is
    quoted short."""
    item = {"response": ["x" * 100_000], "k" * 100_000: 1}
    status, reply = request(server.base + "/batch", [item] * 4, timeout=60)
    assert status == 400 and len(json.dumps(reply)) < 3000
    assert "more problems in the body" in reply["error"]


#: OpenRLHF's body for 200,000 samples (4.4 MB): its reply is 10 MB, over what the kernel's
#: socket buffers take, so the rest of it waits in the server's memory until the client reads it.
OPENRLHF_LARGE = json.dumps(
    {"query": ["Paris"] * 200_000, "prompts": [""] * 200_000, "labels": ["Paris"] * 200_000}
).encode()


def unread_reply(server: ServeThread) -> None:
    """A client that posts a batch and reads its 10 MB reply at 20 KB/s (a 4 KiB receive
    buffer): the server drops the reply and closes the connection once the reply is 1 s old
    (``--write-timeout``), having sent a fraction of it; a client that reads gets all of it."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(server.address)
        sock.sendall(_head("/reward", len(OPENRLHF_LARGE)) + OPENRLHF_LARGE)
        seconds, received = trickle_read(sock, within=60)
    assert seconds < 40, "the unread reply was held past the write deadline"
    assert received < 5 * 2**20, f"{received} bytes: the whole reply was read"
    status, whole = request(server.base + "/reward", raw=OPENRLHF_LARGE, timeout=120)
    assert status == 200 and whole["rewards"] == [1.0] * 200_000


def trickle_read(sock: socket.socket, within: float) -> tuple[float, int]:
    """Read ``sock`` 1 KiB every 50 ms until the server ends the connection (at most ``within``
    seconds: then ``inf``); the seconds it took and the bytes read."""
    start, received = time.monotonic(), 0
    sock.settimeout(0.05)
    while time.monotonic() - start < within:
        try:
            part = sock.recv(1024)
        except TimeoutError:
            continue
        except OSError:  # reset: the server aborted the connection
            return time.monotonic() - start, received
        if not part:
            return time.monotonic() - start, received
        received += len(part)
        time.sleep(0.05)
    return float("inf"), received


def heavy_beside_light(server: ServeThread) -> None:
    """A batch of 60,000 samples posted first; a light client's five requests, posted while it
    is scored, all come back before it."""
    heavy = json.dumps([HONEST] * 60_000).encode()
    finished: dict[str, float] = {}

    def post_heavy() -> None:
        status, rewards = request(server.base + "/batch", raw=heavy, timeout=300)
        assert status == 200 and rewards == [1.0] * 60_000
        finished["heavy"] = time.monotonic()

    thread = threading.Thread(target=post_heavy, daemon=True)
    thread.start()
    time.sleep(0.3)  # the heavy body is read and in its scoring process
    for _ in range(5):
        assert request(server.base + "/reward", HONEST, timeout=60) == (200, 1.0)
    finished["light"] = time.monotonic()
    thread.join(300)
    assert "heavy" in finished, "the heavy batch got no reply"
    assert finished["light"] < finished["heavy"]


@pytest.fixture(scope="module")
def shared(canary_value: str) -> Iterator[ServeThread]:
    """The server (``OPTIONS``) of the cases without options of their own, started with the
    module's canary in its environment, as each test's own server was."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CANARY_ENV, canary_value)
        server = ServeThread(**OPTIONS)
        try:
            yield server
        finally:
            server.stop()


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(Case(slowloris_head), id="slowloris_head"),
        pytest.param(Case(slowloris_swarm), id="slowloris_swarm"),
        pytest.param(Case(trickled_body), id="trickled_body"),
        pytest.param(Case(stalled_body), id="stalled_body"),
        pytest.param(Case(idle_flood), id="idle_flood"),
        pytest.param(Case(busy_at_the_cap, {"max_connections": 3}), id="busy_at_the_cap"),
        pytest.param(Case(half_closed), id="half_closed_head"),
        pytest.param(Case(oversized_declared), id="oversized_body_declared"),
        pytest.param(Case(oversized_chunked), id="oversized_body_chunked"),
        pytest.param(Case(malformed_json), id="malformed_json"),
        pytest.param(Case(bare_numbers), id="batch_of_bare_numbers"),
        pytest.param(Case(bulky_bad_fields), id="bulky_bad_fields"),
        pytest.param(
            Case(
                unread_reply, {"max_request_mb": 64.0, "body_timeout": 30.0, "write_timeout": 1.0}
            ),
            id="unread_reply",
        ),
        pytest.param(Case(deeply_nested_json), id="deeply_nested_json"),
        pytest.param(Case(garbage_request_line), id="garbage_request_line"),
        pytest.param(Case(huge_header), id="huge_header"),
        pytest.param(Case(many_headers), id="many_headers"),
        pytest.param(
            Case(heavy_beside_light, {"max_request_mb": 64.0, "body_timeout": 30.0}),
            id="heavy_client_beside_light_client",
        ),
    ],
)
def test_a_hostile_client_leaves_the_server_up_and_right(
    case: Case,
    shared: ServeThread,
    canary: Canary,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    own = ServeThread(**{**OPTIONS, **case.options}) if case.options else None
    server = own or shared
    try:
        case.attack(server)
        assert request(server.base + "/health", timeout=10)[0] == 200
        assert request(server.base + "/reward", HONEST, timeout=10) == (200, 1.0)
        wrong = {**HONEST, "response": "Lyon"}
        assert request(server.base + "/batch", [HONEST, wrong], timeout=10) == (200, [1.0, 0.0])
    finally:
        if own is not None:
            own.stop()
    out, err = capfd.readouterr()
    canary.absent_from(out, err)
    # What a client sends is no error of the server's: no traceback for it fills the log.
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert "Traceback" not in err
