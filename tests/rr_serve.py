"""``rewardrouter serve`` as the command runs it (:func:`rewardrouter.serve.serve`: its lanes, its
connection guard), on an ephemeral 127.0.0.1 port from a thread of the test, and the raw-socket
clients that the serve and red-team tests aim at it.

The scoring processes are children of the test process and inherit its environment (a red-team
canary included).
"""

from __future__ import annotations

import asyncio
import json
import selectors
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from rewardrouter.serve import ServeOptions, serve

#: One route, exact match: "Paris" for "Paris" scores 1.0.
CONFIG: dict[str, Any] = {
    "default_route": "squad",
    "allowed_modules": ["rr_testfns"],
    "routes": {
        "squad": {"match": ["rajpurkar/squad"], "rewards": {"correct": {"kind": "exact_match"}}},
        "held": {
            "match": ["held"],
            "rewards": {"t": {"path": "rr_testfns.holds_the_interpreter", "executor": "thread"}},
        },
    },
}
HONEST = {"response": "Paris", "label": "Paris", "metadata": {"dataset": "rajpurkar/squad"}}


class ServeThread:
    """:func:`~rewardrouter.serve.serve` on 127.0.0.1, any free port, on a thread of its own;
    :meth:`stop` ends it (and its scoring processes)."""

    def __init__(
        self,
        config: Mapping[str, Any] = CONFIG,
        max_request_mb: float = 64.0,
        **options: Any,
    ) -> None:
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self.error: BaseException | None = None
        self.base = ""
        self._thread = threading.Thread(
            target=self._run,
            args=(dict(config), max_request_mb, ServeOptions(**options)),
            name="serve-thread",
            daemon=True,
        )
        self._thread.start()
        if not self._ready.wait(60):
            raise RuntimeError("the server did not listen within 60 s")
        if self.error is not None:
            raise self.error
        host, _, port = self.base.removeprefix("http://").rpartition(":")
        self.address = (host, int(port))

    def _run(self, config: dict[str, Any], max_request_mb: float, options: ServeOptions) -> None:
        from rewardrouter.config.models import RouterConfig

        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()

            def listening(url: str) -> None:
                self.base = url
                self._ready.set()

            await serve(
                RouterConfig.model_validate(config),
                "127.0.0.1",
                0,
                max_request_mb=max_request_mb,
                options=options,
                stop=self._stop,
                listening=listening,
            )

        try:
            asyncio.run(main())
        except BaseException as exc:
            self.error = exc
        finally:
            self._ready.set()

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)

    def connect(self, timeout: float = 10.0) -> socket.socket:
        """A new raw connection to the server."""
        return socket.create_connection(self.address, timeout=timeout)


def request(
    url: str, body: Any = None, raw: bytes | None = None, timeout: float = 30.0
) -> tuple[int, Any]:
    """GET (no body), or POST ``body`` as JSON (or ``raw`` bytes); the status and decoded JSON."""
    data = raw if raw is not None else None if body is None else json.dumps(body).encode()
    sent = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(sent, timeout=timeout) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def until_closed(
    sock: socket.socket, within: float, drip: bytes = b"", every: float = 0.1
) -> tuple[float, bytes]:
    """Seconds until the server closes ``sock`` (at most ``within``: then ``inf``), and what it
    wrote first; ``drip`` is sent every ``every`` seconds meanwhile (a slow client)."""
    start = time.monotonic()
    sock.settimeout(every)
    received = b""
    while time.monotonic() - start < within:
        try:
            part = sock.recv(65536)
        except TimeoutError:
            part = None
        except OSError:  # reset
            return time.monotonic() - start, received
        if part == b"":
            return time.monotonic() - start, received
        if part:
            received += part
            continue
        if drip:
            try:
                sock.sendall(drip)
            except OSError:
                return time.monotonic() - start, received
    return float("inf"), received


def closed_by_server(socks: list[socket.socket], at_least: int, within: float = 5.0) -> int:
    """How many of ``socks`` the server has closed, waiting until ``at_least`` are (at most
    ``within`` seconds)."""
    closed = 0
    deadline = time.monotonic() + within
    with selectors.DefaultSelector() as selector:
        for sock in socks:
            sock.setblocking(False)
            selector.register(sock, selectors.EVENT_READ)
        while closed < at_least and time.monotonic() < deadline:
            for key, _ in selector.select(max(0.0, deadline - time.monotonic())):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                try:
                    ended = sock.recv(65536) == b""
                except BlockingIOError:
                    continue
                except OSError:
                    ended = True
                if ended:
                    selector.unregister(sock)
                    closed += 1
    return closed


def status_of(reply: bytes) -> int | None:
    """The status code of a raw HTTP reply (None: no reply)."""
    head = reply.split(b"\r\n", 1)[0].split()
    return int(head[1]) if len(head) >= 2 and head[1].isdigit() else None
