"""Real HTTP servers for the remote and serve tests: aiohttp on 127.0.0.1, each in its own thread.

A :class:`ScriptedServer` answers every request through a plain function of what it received and
how many times it has received that same body before, so faults are scripted per sample
("500 on the first attempt, then the reward") and counted server-side.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass(frozen=True)
class Reply:
    """What a scripted server answers: a JSON ``body`` (or ``raw`` bytes) after ``delay`` s."""

    body: Any = 1.0
    status: int = 200
    raw: bytes | None = None
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Seen:
    """One request as the server received it."""

    path: str
    body: Any  # parsed JSON, or the text when it is not JSON
    headers: dict[str, str]
    peer: Any


Script = Callable[[Seen, int], Reply]


class LoopbackApp:
    """Serve an aiohttp application on an ephemeral 127.0.0.1 port from a background thread."""

    def __init__(self, app: web.Application) -> None:
        self._app = app
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self.port = 0
        self._thread = threading.Thread(target=self._run, name="loopback-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("loopback server did not start within 10 s")
        if self._error is not None:
            raise self._error

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        runner = web.AppRunner(self._app, shutdown_timeout=0.2)
        try:
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", 0).start()
            self.port = runner.addresses[0][1]
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            raise
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            await runner.cleanup()

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


class ScriptedServer(LoopbackApp):
    """A reward server whose replies come from ``script(seen, attempt)``.

    ``attempt`` counts earlier requests with the same body (0 for the first). ``seen`` lists every
    request; ``in_flight_max`` is the most requests it was handling at once.
    """

    def __init__(self, script: Script) -> None:
        self.script = script
        self.seen: list[Seen] = []
        self._bodies: Counter[str] = Counter()
        self._in_flight = 0
        self.in_flight_max = 0
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        super().__init__(app)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        text = await request.text()
        try:
            body: Any = json.loads(text)
        except ValueError:
            body = text
        peer = request.transport.get_extra_info("peername") if request.transport else None
        seen = Seen(request.path, body, dict(request.headers), peer)
        attempt = self._bodies[text]
        self._bodies[text] += 1
        self.seen.append(seen)
        self._in_flight += 1
        self.in_flight_max = max(self.in_flight_max, self._in_flight)
        try:
            reply = self.script(seen, attempt)
            if reply.delay:
                await asyncio.sleep(reply.delay)
            raw = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
            return web.Response(
                body=raw,
                status=reply.status,
                headers=reply.headers,
                content_type="application/json",
            )
        finally:
            self._in_flight -= 1

    def responses(self) -> Counter[str]:
        """How many requests carried each sample's ``response`` (batches counted per sample)."""
        counts: Counter[str] = Counter()
        for seen in self.seen:
            for body in seen.body if isinstance(seen.body, list) else [seen.body]:
                counts[body["response"]] += 1
        return counts


def refused_url() -> str:
    """A loopback URL on which nothing listens: connecting is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/reward"


class Servers:
    """Starts servers for one test and stops them all afterwards (see the ``servers`` fixtures)."""

    def __init__(self) -> None:
        self._started: list[LoopbackApp] = []

    def scripted(self, script: Script) -> ScriptedServer:
        server = ScriptedServer(script)
        self._started.append(server)
        return server

    def app(self, app: web.Application) -> LoopbackApp:
        server = LoopbackApp(app)
        self._started.append(server)
        return server

    def stop(self) -> None:
        for server in self._started:
            server.stop()
