"""The scoring process of ``rewardrouter serve``: a fresh interpreter, owned by the server, that
compiles the router and scores every request.

The server's own process answers HTTP: it reads a body as bytes, hands it to the scoring process
over a socket pair, and writes the reply it gets back. Decoding, routing, grading (graders that
hold the interpreter lock in a long C call included), the garbage collector of a large batch and
encoding all happen in the scoring process, so none of them delays ``/health`` or the reading
of other requests.

Frames both ways are a header (:data:`HEADER`: request id, a code, the payload's length) and the
payload. The first frame to the scoring process holds the pickled :class:`RouterConfig` (and how the
protocols' requests are read: :class:`~rewardrouter.serve.scoring.Served`); its
first frame back says whether the router compiled. Then each request is ``(id, endpoint,
body)`` and each reply ``(id, HTTP status, JSON)``, in any order.

If the scoring process dies (the OOM killer, a grader that crashes the interpreter, a ``kill``),
the requests it was scoring get :class:`ScoringFailed` naming the cause, and a new process is
started; requests that arrive meanwhile wait for it. If the new one cannot start (its router no
longer compiles), :attr:`ScoringProcess.failure` is set and every request fails with that cause:
the command then stops the server with exit status 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import signal
import socket
import struct
import subprocess
from dataclasses import dataclass, field
from itertools import count

from rewardrouter.config.models import RouterConfig
from rewardrouter.errors import ConfigError, Problem
from rewardrouter.remote.pool import REQUESTER
from rewardrouter.router import Router, compile_router
from rewardrouter.serve.scoring import Served, answer
from rewardrouter.supervise.boot import die_with_parent, exit_cause, kill_group, start_python

log = logging.getLogger("rewardrouter.serve")

#: A frame's header: request id, code (endpoint or HTTP status), payload length.
HEADER = struct.Struct("!QHQ")
#: Buffer of the socket readers (a payload of any size is read, in pieces of about this).
BUFFER = 4 * 2**20
#: Seconds the scoring process has to finish after the server closes its socket.
EXIT_SECONDS = 10.0

_READY, _CONFIG_ERROR, _FAILED = "ready", "config error", "failed"


class ScoringFailed(Exception):
    """The scoring process died while scoring a request, or could not be started."""


async def read_frame(reader: asyncio.StreamReader) -> tuple[int, int, bytes]:
    """The next ``(id, code, payload)``; :class:`asyncio.IncompleteReadError` at the end."""
    ident, code, length = HEADER.unpack(await reader.readexactly(HEADER.size))
    return ident, code, await reader.readexactly(length)


def write_frame(writer: asyncio.StreamWriter, ident: int, code: int, payload: bytes) -> None:
    writer.write(HEADER.pack(ident, code, len(payload)))
    writer.write(payload)


# -- the server's side ------------------------------------------------------------------------------


@dataclass(eq=False)
class _Child:
    """One scoring process, as the server sees it."""

    process: subprocess.Popen[bytes]
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    waiting: dict[int, asyncio.Future[tuple[int, bytes]]] = field(default_factory=dict)
    dead: str | None = None  # why it can no longer score, once it cannot


class ScoringProcess:
    """The server's scoring process: :meth:`start` it, :meth:`score` request bodies with it,
    :meth:`close` it. It is started again when it dies (see the module's description).

    Create and use it on one event loop, in the thread that lives as long as the server: the
    scoring process is told to die with that thread (Linux), so it never outlives the server.
    """

    def __init__(
        self,
        config: RouterConfig,
        failed: asyncio.Event | None = None,
        served: Served | None = None,
    ) -> None:
        """Raises :class:`~rewardrouter.ConfigError` for a config that cannot be sent to the
        scoring process (an object that cannot be pickled in a term's kwargs). ``failed``: the
        event to set when a restart fails (several scoring processes may share one).
        ``served``: how the protocols' requests are read."""
        try:
            self._config = pickle.dumps((config, served or Served()))
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            raise ConfigError(
                [
                    Problem(
                        "",
                        f"the config cannot be sent to the scoring process: it holds an object "
                        f"that cannot be pickled ({type(exc).__name__}: {exc})",
                        "give term kwargs and settings as plain values (numbers, strings, lists, "
                        "mappings), as a YAML file holds them",
                    )
                ]
            ) from None
        self._ids = count(1)
        self._child: asyncio.Future[_Child] | None = None
        self._watch: asyncio.Task[None] | None = None
        self._closing = False
        #: Why the server cannot score any more (set once, when a restart fails).
        self.failure: str | None = None
        #: Set together with :attr:`failure`.
        self.failed = asyncio.Event() if failed is None else failed
        #: Why the scoring process is being started again (None while it is up).
        self.restarting: str | None = None

    async def start(self) -> None:
        """Start the scoring process and wait until its router is compiled.

        Raises :class:`~rewardrouter.ConfigError` for a config that does not compile, and
        :class:`ScoringFailed` when the process ends before it is ready.
        """
        child = await self._launch()
        self._child = asyncio.get_running_loop().create_future()
        self._child.set_result(child)
        self._watch = asyncio.create_task(self._watch_over(child))

    async def score(self, endpoint: int, body: bytes) -> tuple[int, bytes]:
        """The HTTP status and JSON reply of the scoring process for ``body``.

        Raises :class:`ScoringFailed` when the scoring process dies before it answers, or no
        scoring process can be started.
        """
        while True:
            if self._child is None:
                raise ScoringFailed("the server is stopping; this request was not scored")
            # A process that died after this request began to wait for it, before the request
            # was sent: the request waits for the next one (``_child`` was replaced already).
            child = await asyncio.shield(self._child)
            if child.dead is None:
                break
        ident = next(self._ids)
        reply: asyncio.Future[tuple[int, bytes]] = asyncio.get_running_loop().create_future()
        child.waiting[ident] = reply
        try:
            write_frame(child.writer, ident, endpoint, body)
            with contextlib.suppress(ConnectionError):  # the watch reports the death
                await child.writer.drain()
            return await reply
        finally:
            child.waiting.pop(ident, None)

    async def close(self) -> None:
        """Close the scoring process's socket, wait for it to close its router and exit (killed
        after :data:`EXIT_SECONDS`). Requests still waiting get :class:`ScoringFailed`."""
        self._closing = True
        current, self._child = self._child, None
        if current is None:
            return
        if current.done():
            if current.exception() is None:  # else no process is left: none could be started
                current.result().writer.close()
        else:  # a new process is being started: the watch stops it
            current.set_exception(ScoringFailed("the server is stopping"))
            current.exception()  # retrieved: no "never retrieved" warning
        if self._watch is not None:
            await self._watch

    async def _launch(self) -> _Child:
        ours, theirs = socket.socketpair()
        try:
            process = start_python(run, [theirs.fileno(), os.getpid()], [theirs.fileno()])
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        reader, writer = await asyncio.open_unix_connection(sock=ours, limit=BUFFER)
        try:
            write_frame(writer, 0, 0, self._config)
            await writer.drain()
            _, _, payload = await read_frame(reader)
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()
            cause = exit_cause(await _exited(process))
            raise ScoringFailed(f"the scoring process died ({cause}) while starting") from None
        except BaseException:
            writer.close()
            await _exited(process)
            raise
        outcome = pickle.loads(payload)
        if outcome[0] != _READY:
            writer.close()
            await _exited(process)
            if outcome[0] == _CONFIG_ERROR:
                raise ConfigError(outcome[1], outcome[2])
            raise ScoringFailed(f"the scoring process could not compile the router: {outcome[1]}")
        return _Child(process, reader, writer)

    async def _watch_over(self, child: _Child) -> None:
        """Pass replies to the requests that wait for them; when the process ends, fail those
        requests and start another process (unless the server is closing)."""
        while True:
            try:
                ident, status, payload = await read_frame(child.reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                break
            waiter = child.waiting.get(ident)
            if waiter is not None and not waiter.done():
                waiter.set_result((status, payload))
        child.writer.close()
        name = f"the scoring process (pid {child.process.pid})"
        if self._closing:
            await _exited(child.process)
            child.dead = f"{name} was stopped with the server"
            self._fail(child, "")
            return
        # Requests from now on wait for the next process.
        following: asyncio.Future[_Child] = asyncio.get_running_loop().create_future()
        self._child = following
        self.restarting = f"{name} ended"
        child.dead = f"{name} died ({exit_cause(await _exited(child.process))})"
        log.error(
            "%s; %d request(s) it was scoring got 503; starting a new scoring process",
            child.dead,
            sum(not waiter.done() for waiter in child.waiting.values()),
        )
        self._fail(child, " (the server starts a new scoring process)")
        if self._closing:
            self.restarting = None
            return
        self.restarting = child.dead
        try:
            new = await self._launch()
        except Exception as exc:
            self.failure = (
                f"{child.dead}, and a new one could not be started: {type(exc).__name__}: {exc}"
            )
            log.error("%s", self.failure)
            if not following.done():
                following.set_exception(ScoringFailed(self.failure))
                following.exception()  # retrieved: no "never retrieved" warning
            self.failed.set()
            return
        finally:
            self.restarting = None
        if following.done():  # the server began to stop while the new process started
            new.writer.close()
            await _exited(new.process)
            return
        following.set_result(new)
        self._watch = asyncio.create_task(self._watch_over(new))

    @staticmethod
    def _fail(child: _Child, after: str) -> None:
        """Fail the requests waiting for ``child``'s replies with the cause (``child.dead``)."""
        message = f"{child.dead} while scoring this request; it was not scored{after}"
        for waiter in child.waiting.values():
            if not waiter.done():
                waiter.set_exception(ScoringFailed(message))


async def _exited(process: subprocess.Popen[bytes]) -> int:
    """The exit status of ``process``, reaped; killed (with its process group) if it has not
    exited within :data:`EXIT_SECONDS`."""
    loop = asyncio.get_running_loop()
    try:
        return await asyncio.wait_for(
            loop.run_in_executor(None, process.wait), timeout=EXIT_SECONDS
        )
    except asyncio.TimeoutError:
        log.warning("the scoring process (pid %d) did not exit: killed", process.pid)
        kill_group(process.pid)
        return await loop.run_in_executor(None, process.wait)


# -- the scoring process's side ---------------------------------------------------------------------


def run(fd: int, server: int) -> None:
    """The scoring process: compile the router sent over socket ``fd``, then answer request
    frames until the server closes the socket; exits with the server (``server``: its pid)."""
    # Ctrl-C in a terminal reaches the whole foreground group: the server decides when to stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent()
    if os.getppid() != server:  # the server died before the line above
        return
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s: %(message)s"
    )
    sock = socket.socket(fileno=fd)
    try:
        _, _, length = HEADER.unpack(_received(sock, HEADER.size))
        config, served = pickle.loads(_received(sock, length))
    except ConnectionError:  # the server stopped before it sent the config
        return
    try:
        router = compile_router(config)
    except ConfigError as exc:
        outcome: tuple[object, ...] = (_CONFIG_ERROR, list(exc.problems), exc.source)
    except Exception as exc:
        outcome = (_FAILED, f"{type(exc).__name__}: {exc}")
    else:
        outcome = (_READY,)
    payload = pickle.dumps(outcome)
    try:
        sock.sendall(HEADER.pack(0, 0, len(payload)) + payload)
    except ConnectionError:  # the server stopped while the router compiled
        if outcome[0] == _READY:
            router.close()
        return
    if outcome[0] == _READY:
        with router:
            asyncio.run(_answer_requests(router, sock, served))
    sock.close()


def _received(sock: socket.socket, size: int) -> bytes:
    """Exactly ``size`` bytes from ``sock`` (blocking); ``ConnectionError`` at its end."""
    parts = []
    while size:
        part = sock.recv(min(size, BUFFER))
        if not part:
            raise ConnectionError("the server closed the socket")
        parts.append(part)
        size -= len(part)
    return b"".join(parts)


async def _answer_requests(router: Router, sock: socket.socket, served: Served) -> None:
    """Score each request frame as it comes, until the server closes the socket."""
    reader, writer = await asyncio.open_unix_connection(sock=sock, limit=BUFFER)

    async def reply(ident: int, endpoint: int, body: bytes) -> None:
        # Each request its own requester: clients share a remote term's slots in turn.
        REQUESTER.set(ident)
        status, payload = await answer(router, endpoint, body, served)
        write_frame(writer, ident, status, payload)
        with contextlib.suppress(ConnectionError):
            await writer.drain()

    tasks: set[asyncio.Task[None]] = set()
    while True:
        try:
            ident, endpoint, body = await read_frame(reader)
        except (asyncio.IncompleteReadError, ConnectionError):
            break  # the server closed the socket: it is stopping
        task = asyncio.create_task(reply(ident, endpoint, body))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    writer.close()
