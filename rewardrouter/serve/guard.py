"""What keeps idle, slow and too many connections from exhausting ``rewardrouter serve``: a
connection cap, a deadline on each request's head, a floor on each body's rate.

aiohttp, the server underneath, bounds the size of a request head (lines of 8190 bytes, 128
headers) and closes a connection that sends nothing for its keep-alive timeout (before its first
request, or after a reply; ``--keep-alive-timeout``). It has no deadline on a head that arrives
a byte at a time (slowloris), none on a body trickled in, and no cap on connections: each open
one holds a file descriptor, and when they run out the server can accept nothing, ``/health``
included. What this module adds, each on one connection at a time:

- :class:`ConnectionGuard` wraps each connection's aiohttp protocol. It closes a connection whose
  request head is not complete ``header_timeout`` seconds after its first byte (with a 408), and
  holds the number of open connections at ``cap``: a new connection beyond it closes the
  connection idle longest (no request in progress, no head begun), else the one whose head began
  first; when every connection has a request in progress the new one gets a 503 and is closed.
  Connections sending requests thus always get in; a flood of idle ones only evicts itself.
- :func:`read_body` reads a body with a deadline that grows with what has arrived: ``grace``
  seconds plus one second per ``floor`` bytes. A client sending at least ``floor`` bytes per
  second never meets it; one trickling slower is answered 408 and closed.
- A reply has ``write_timeout`` seconds, from when it begins to be written, to be taken by the
  client: a client that never reads (its reply held in the server's memory, its connection busy
  and so never evicted) loses the reply and the connection when they pass.
- :class:`GuardedSite` serves an application's runner on a TCP port through its guard, and
  :func:`connection_cap` fits the cap to the open-file limit.

The application's middleware (:func:`track_requests`) tells the guard when a connection's
request begins (its head is complete) and when its reply has been written.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import resource
import socket
import struct
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Literal

from aiohttp import web
from aiohttp.http import HttpProcessingError

from rewardrouter.errors import ConfigError, Problem
from rewardrouter.serve.options import MAX_CONNECTIONS, ServeOptions

log = logging.getLogger("rewardrouter.serve")

#: File descriptors kept free beyond the connection cap: the listening socket, the scoring
#: processes' sockets, logs, and the connections accepted in one turn of the event loop before
#: the guard can close any (up to the listen backlog, :data:`BACKLOG`).
RESERVED_FDS = 256
#: The listen backlog.
BACKLOG = 128
#: Seconds between two warnings that the cap closed or refused connections.
WARN_EVERY = 10.0

State = Literal["idle", "head", "busy"]


class BodyTooSlow(Exception):
    """A request body that arrived slower than the server's floor (answered 408)."""


def _raw_reply(status: int, reason: str, message: str) -> bytes:
    """A complete HTTP/1.1 reply that closes the connection, written without aiohttp (for a
    connection that has no request aiohttp could answer)."""
    body = json.dumps({"error": message}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


class GuardedConnection(asyncio.Protocol):
    """One connection: aiohttp's protocol (``inner``) behind the guard's cap and head deadline."""

    def __init__(self, guard: ConnectionGuard, inner: asyncio.Protocol) -> None:
        self.guard = guard
        self.inner = inner
        self.transport: asyncio.Transport | None = None
        self.state: State = "idle"
        self.admitted = False
        self._deadline: asyncio.TimerHandle | None = None  # the head's, then the reply's

    # -- asyncio's side ------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if self.guard.admit(self):
            self.admitted = True
            self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if not self.admitted:
            return
        if self.state == "idle" and data:
            self.guard.move(self, "head")
            loop = asyncio.get_running_loop()
            self._deadline = loop.call_later(self.guard.options.header_timeout, self._head_late)
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received() if self.admitted else None

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_deadline()
        if self.admitted:
            self.guard.forget(self)
            self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        if self.admitted:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.admitted:
            self.inner.resume_writing()

    # -- the guard's side ----------------------------------------------------------------------

    def request_began(self) -> None:
        """The head of a request is complete: no deadline until its reply is written."""
        self._cancel_deadline()
        self.guard.move(self, "busy")

    def reply_began(self) -> None:
        """The reply is about to be written: the client has ``write_timeout`` seconds to take
        it all."""
        self._cancel_deadline()
        if self.transport is not None and not self.transport.is_closing():
            loop = asyncio.get_running_loop()
            self._deadline = loop.call_later(self.guard.options.write_timeout, self._reply_unread)

    def request_ended(self, _: object = None) -> None:
        """The reply is written: the connection is idle until its next byte."""
        self._cancel_deadline()
        if self.transport is not None and not self.transport.is_closing():
            self.guard.move(self, "idle")

    def close(self, reply: bytes | None = None) -> None:
        """Close the connection, after writing ``reply`` if given."""
        self._cancel_deadline()
        if self.transport is not None and not self.transport.is_closing():
            if reply is not None:
                self.transport.write(reply)
            self.transport.close()

    def _head_late(self) -> None:
        self._deadline = None
        if self.state != "head":
            return
        seconds = self.guard.options.header_timeout
        self.guard.count("late heads")
        self.close(
            _raw_reply(
                408,
                "Request Timeout",
                f"the request head was not complete {seconds:g} s after its first byte "
                f"(the server's --header-timeout); send the whole head at once",
            )
        )

    def _reply_unread(self) -> None:
        self._deadline = None
        if self.transport is None or self.transport.is_closing():
            return
        self.guard.count("unread replies dropped")
        # A reset, not a close: a close would keep the unsent reply (in this process, and up
        # to a socket buffer of it in the kernel) until the client read it.
        sock = self.transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.transport.abort()

    def _cancel_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None


#: Which connections the cap closes for a new one, first to last, and what that is counted as.
_EVICTION: tuple[tuple[State, str], ...] = (
    ("idle", "closed idle"),
    ("head", "closed unfinished heads"),
)


class ConnectionGuard:
    """Every open connection of one server, by state, and the cap on their number (see the
    module's description); ``cap`` comes from :func:`connection_cap`."""

    def __init__(self, options: ServeOptions, cap: int) -> None:
        self.options = options
        self.cap = cap
        #: Connections by state; ``idle`` and ``head`` in the order they entered it.
        self._by_state: dict[State, OrderedDict[GuardedConnection, None]] = {
            "idle": OrderedDict(),
            "head": OrderedDict(),
            "busy": OrderedDict(),
        }
        self._of_protocol: dict[asyncio.BaseProtocol, GuardedConnection] = {}
        #: What the guard did, counted since the last warning (``closed idle``, ``closed
        #: unfinished heads``, ``refused``, ``late heads``, ``malformed requests``, ``unread
        #: replies dropped``).
        self.counts: dict[str, int] = {}
        self._warned = 0.0

    def __call__(self, inner: asyncio.Protocol) -> GuardedConnection:
        return GuardedConnection(self, inner)

    @property
    def open(self) -> int:
        """How many connections are open (admitted, not yet lost)."""
        return sum(len(held) for held in self._by_state.values())

    def of(self, protocol: asyncio.BaseProtocol | None) -> GuardedConnection | None:
        """The guarded connection of aiohttp's ``protocol`` (None: not one of this guard's)."""
        return None if protocol is None else self._of_protocol.get(protocol)

    def admit(self, connection: GuardedConnection) -> bool:
        """Take ``connection`` in, closing another one if the cap is reached; or refuse it
        (answered 503 and closed) when every open connection has a request in progress."""
        if self.open >= self.cap:
            for state, counted in _EVICTION:
                held = self._by_state[state]
                if held:
                    oldest = next(iter(held))
                    self.forget(oldest)  # before close(): its slot is the new connection's
                    oldest.close()
                    self.count(counted)
                    break
            else:
                self.count("refused")
                connection.close(
                    _raw_reply(
                        503,
                        "Service Unavailable",
                        f"the server has {self.open} connections open, each with a request in "
                        f"progress (its --max-connections cap); retry later",
                    )
                )
                return False
        connection.state = "idle"
        self._by_state["idle"][connection] = None
        self._of_protocol[connection.inner] = connection
        return True

    def move(self, connection: GuardedConnection, state: State) -> None:
        """``connection`` is now in ``state`` (last in that state's order)."""
        if self._by_state[connection.state].pop(connection, False) is False:
            return  # forgotten already: it is being closed
        connection.state = state
        self._by_state[state][connection] = None

    def forget(self, connection: GuardedConnection) -> None:
        """``connection`` is closed: it no longer counts."""
        self._by_state[connection.state].pop(connection, None)
        self._of_protocol.pop(connection.inner, None)

    def count(self, what: str) -> None:
        """Count what the guard did; warn (at most every :data:`WARN_EVERY` seconds) with the
        counts since the last warning."""
        self.counts[what] = self.counts.get(what, 0) + 1
        now = time.monotonic()
        if now - self._warned >= WARN_EVERY:
            self._warned = now
            done = ", ".join(f"{what} {n}" for what, n in sorted(self.counts.items()))
            self.counts = {}
            log.warning(
                "connection guard (%d open, cap %d; --max-connections, --header-timeout, "
                "--write-timeout): %s",
                self.open,
                self.cap,
                done,
            )


class MalformedRequests(logging.Filter):
    """Drops aiohttp's traceback for a request it could not parse (already answered 400: the
    client's mistake, and a hostile client could fill the log with them); the guard counts it
    instead (in its warnings, as ``malformed requests``). Attach it to ``aiohttp.server``."""

    def __init__(self, guard: ConnectionGuard) -> None:
        super().__init__()
        self.guard = guard

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], HttpProcessingError):
            self.guard.count("malformed requests")
            return False
        return True


GUARD = web.AppKey("guard", ConnectionGuard)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def track_requests(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Tell the application's guard that this connection's request began, that its reply is
    about to be written (the handler returned it), and (once it is written: the task serving it
    ends) that it ended."""
    guard = request.app.get(GUARD)
    connection = guard.of(request.protocol) if guard is not None else None
    if connection is not None:
        connection.request_began()
        task = asyncio.current_task()
        if task is not None:
            task.add_done_callback(connection.request_ended)
    response = await handler(request)
    if connection is not None:
        connection.reply_began()
    return response


async def read_body(request: web.Request, options: ServeOptions, limit: int) -> bytes:
    """The request's body, read with a deadline of ``options.body_timeout`` seconds plus one
    second per ``options.min_body_rate`` bytes received.

    Raises :class:`BodyTooSlow` when the deadline passes, and
    :class:`aiohttp.web.HTTPRequestEntityTooLarge` for a body over ``limit`` bytes (told by its
    ``Content-Length``, or once that much has arrived).
    """
    declared = request.content_length
    if declared is not None and declared > limit:
        raise web.HTTPRequestEntityTooLarge(max_size=limit, actual_size=declared)
    loop = asyncio.get_running_loop()
    start = loop.time()
    parts: list[bytes] = []
    received = 0
    while True:
        deadline = start + options.body_timeout + received / options.min_body_rate
        try:
            part = await asyncio.wait_for(request.content.readany(), deadline - loop.time())
        except asyncio.TimeoutError:
            raise BodyTooSlow(
                f"the body arrived too slowly: {received} bytes in {loop.time() - start:.1f} s, "
                f"under the server's floor of {options.min_body_rate_kb:g} KiB/s after a grace "
                f"of {options.body_timeout:g} s (--min-body-rate-kb, --body-timeout); send the "
                f"body as fast as the request is written, or ask for a larger --body-timeout"
            ) from None
        if not part:
            return b"".join(parts)
        received += len(part)
        if received > limit:
            raise web.HTTPRequestEntityTooLarge(max_size=limit, actual_size=received)
        parts.append(part)


def cap_problem(cap: int, limit: int) -> Problem | None:
    """Why ``cap`` connections cannot be held under an open-file ``limit`` (None: they can)."""
    want = cap + RESERVED_FDS
    if limit == resource.RLIM_INFINITY or limit >= want:
        return None
    return Problem(
        "--max-connections",
        f"{cap} connections need {want} open files, but this process may open only {limit} "
        f"(`ulimit -n`)",
        f"pass --max-connections {max(limit - RESERVED_FDS, 1)} or less, or raise the limit "
        f"(`ulimit -n {want}`) before starting the server",
    )


def connection_cap(requested: int | None) -> tuple[int, str | None]:
    """The connection cap for ``requested`` (None: :data:`MAX_CONNECTIONS`, lowered to fit),
    and a note when the default was lowered; raises this process's soft open-file limit as far
    as needed and allowed.

    Raises :class:`~rewardrouter.ConfigError` naming ``--max-connections`` when a requested cap
    does not fit under the open-file limit (:func:`cap_problem`).
    """
    cap = requested or MAX_CONNECTIONS
    want = cap + RESERVED_FDS
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < want:
        raised = want if hard == resource.RLIM_INFINITY else min(want, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
        except (ValueError, OSError):
            pass
    problem = cap_problem(cap, soft)
    if problem is None:
        return cap, None
    fits = soft - RESERVED_FDS
    if requested is not None or fits < 1:
        raise ConfigError([problem])
    return fits, (
        f"--max-connections lowered to {fits}: this process may open only {soft} files "
        f"(`ulimit -n`); raise that limit to allow more"
    )


def hard_cap_problem(cap: int) -> Problem | None:
    """:func:`cap_problem` under this process's hard open-file limit (how far
    :func:`connection_cap` can raise the soft one): checked as the flag is read."""
    return cap_problem(cap, resource.getrlimit(resource.RLIMIT_NOFILE)[1])


class GuardedSite(web.BaseSite):
    """A runner's application on ``host:port``, each connection through ``guard``."""

    __slots__ = ("_guard", "_host", "_port")

    def __init__(
        self, runner: web.BaseRunner, host: str, port: int, guard: ConnectionGuard
    ) -> None:
        super().__init__(runner, backlog=BACKLOG)
        self._host, self._port, self._guard = host, port, guard

    @property
    def name(self) -> str:
        return f"http://{self._host}:{self._port}"

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None
        guard = self._guard
        self._server = await asyncio.get_running_loop().create_server(
            lambda: guard(server()), self._host, self._port, backlog=self._backlog
        )
