"""The remote client against hostile servers on 127.0.0.1: redirects, echoed credentials in
other spellings, replies too large to read. Each server is real; the large one streams."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from aiohttp import web
from rr_remote import Reply, Seen, Servers
from rr_testfns import row

from rewardrouter import RewardError

TOKEN = "Tok/EN-s3cr3t+Value"  # a slash and upper case: spelled differently by careless echoes


def _router(make_router: Any, url: str, on_error: Any = "skip", **settings: Any) -> Any:
    kwargs = {"url": url, "backoff": 0.01, **settings}
    term = {"kind": "remote", "on_error": on_error, "kwargs": kwargs}
    return make_router({"default_route": "r", "routes": {"r": {"rewards": {"judge": term}}}})


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_not_followed_and_names_its_target(
    make_router: Any, servers: Servers, status: int
) -> None:
    def moved(seen: Seen, attempt: int) -> Reply:
        if seen.path == "/reward":
            return Reply(status=status, headers={"Location": "/elsewhere?sig=abcdef123"})
        return Reply(1.0)  # a GET of the new place, which the reward must never be read from

    server = servers.scripted(moved)
    [result] = _router(make_router, server.url("/reward")).score_sync([row("x")])
    assert (result.reward, result.status) == (None, "error")
    assert f"HTTP {status}" in (result.error_message or "")
    assert f"redirects to {server.url('/elsewhere')};" in (result.error_message or "")
    assert "abcdef123" not in (result.error_message or "")
    assert [seen.path for seen in server.seen] == ["/reward"]  # not retried, not followed


@pytest.mark.parametrize(
    "echo",
    [
        pytest.param(lambda token: json.dumps(token).replace("/", "\\/"), id="json_escaped"),
        pytest.param(lambda token: token.lower(), id="lower_case"),
        pytest.param(lambda token: token.upper(), id="upper_case"),
        pytest.param(lambda token: token.replace("/", "%2F").replace("+", "%2B"), id="url_encoded"),
    ],
)
def test_an_echoed_credential_is_scrubbed_however_it_is_spelled(
    make_router: Any,
    servers: Servers,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    echo: Any,
) -> None:
    monkeypatch.setenv("RR_HOSTILE_TOKEN", TOKEN)

    def quote_back(seen: Seen, attempt: int) -> Reply:
        raw = f'{{"detail": "bad token {echo(TOKEN)}"}}'.encode()
        return Reply(raw=raw, status=503 if attempt == 0 else 401)  # logged, then final

    server = servers.scripted(quote_back)
    url = server.url("/reward")
    with caplog.at_level(logging.DEBUG):
        [result] = _router(make_router, url, auth_env="RR_HOSTILE_TOKEN").score_sync([row("x")])
        with pytest.raises(RewardError) as raised:
            _router(make_router, url, "raise", auth_env="RR_HOSTILE_TOKEN").score_sync([row("y")])
    assert server.seen[0].headers["Authorization"] == f"Bearer {TOKEN}"
    assert "HTTP 401" in (result.error_message or "") and "***" in (result.error_message or "")
    assert "retrying" in caplog.text
    shown = {"error": result.error_message, "raised": str(raised.value), "logs": caplog.text}
    leaks = [where for where, text in shown.items() if "s3cr3t" in (text or "").lower()]
    assert leaks == []


def test_a_query_credential_is_not_shown_when_the_server_loops(
    make_router: Any, servers: Servers
) -> None:
    def loop(seen: Seen, attempt: int) -> Reply:
        return Reply(status=302, headers={"Location": "/reward?api_key=k3y-s3cr3t"})

    server = servers.scripted(loop)
    url = server.url("/reward?api_key=k3y-s3cr3t")
    [result] = _router(make_router, url).score_sync([row("x")])
    assert result.status == "error"
    assert "k3y-s3cr3t" not in (result.error_message or "")
    assert len(server.seen) == 1


class _Huge:
    """A server that streams a reply of ``megabytes`` MiB (JSON whitespace, then ``1``) and
    counts what it managed to send before the client hung up."""

    def __init__(self, megabytes: int, declare: bool) -> None:
        self.megabytes = megabytes
        self.declare = declare
        self.sent = 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        if self.declare:
            response.content_length = self.megabytes * 2**20 + 1
        await response.prepare(request)
        chunk = b" " * 2**20
        try:
            for _ in range(self.megabytes):
                await response.write(chunk)
                self.sent += len(chunk)
            await response.write(b"1")
        except (ConnectionError, RuntimeError):  # the client hung up
            pass
        return response

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/reward", self.handle)
        return app


@pytest.mark.parametrize(
    "declare",
    [pytest.param(False, id="streamed_chunked"), pytest.param(True, id="declared_length")],
)
def test_a_reply_over_the_size_limit_is_invalid_and_not_read(
    make_router: Any, servers: Servers, declare: bool
) -> None:
    huge = _Huge(200, declare)
    server = servers.app(huge.app())
    router = _router(make_router, server.url("/reward"))
    [result] = router.score_sync([row("x")])
    assert (result.reward, result.status) == (None, "invalid")
    assert "over the 32 MiB limit" in (result.error_message or "")
    assert huge.sent < 64 * 2**20  # the client stopped reading; the socket buffers held the rest
