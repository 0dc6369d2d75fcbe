"""The scoring process of ``rewardrouter serve``: a fresh interpreter, owned by the server, that
compiles the router and scores every request.

The server's own process answers HTTP: it reads a body as bytes, hands it to the scoring process
and writes the reply it gets back. Decoding, routing, grading (graders that hold the interpreter
lock in a long C call included), the garbage collector of a large batch and encoding all happen
in the scoring process, so none of them delays ``/health`` or the reading of other requests.

The scoring process is a :class:`~rewardrouter.supervise.supervisor.Supervisor`'s child: its
setup compiles the router from the pickled :class:`RouterConfig` (and how the protocols' requests
are read: :class:`~rewardrouter.serve.scoring.Served`), then each request ``(endpoint, body)``
gets ``(HTTP status, JSON)``, many at once. If the scoring process dies (the OOM killer, a grader
that crashes the interpreter, a ``kill``), the requests it was scoring get :class:`ScoringFailed`
naming the cause, and a new process is started at once; requests that arrive meanwhile wait for
it. If the new one cannot start (its router no longer compiles), :attr:`ScoringProcess.failure`
is set and every request fails with that cause: the command then stops the server with exit
status 1.
"""

from __future__ import annotations

import asyncio
import logging
import pickle
from itertools import count

from rewardrouter.config.models import RouterConfig
from rewardrouter.errors import ConfigError, Problem
from rewardrouter.remote.pool import REQUESTER
from rewardrouter.router import Router, compile_router
from rewardrouter.serve.scoring import Served, answer
from rewardrouter.supervise.supervisor import (
    Change,
    ChildDied,
    ChildError,
    ChildUnready,
    Supervisor,
)

log = logging.getLogger("rewardrouter.serve")

#: Seconds the scoring process has to finish after the server closes its socket.
EXIT_SECONDS = 10.0


class ScoringFailed(Exception):
    """The scoring process died while scoring a request, or could not be started."""


class ScoringProcess:
    """The server's scoring process: :meth:`start` it, :meth:`score` request bodies with it,
    :meth:`close` it. It is started again when it dies (see the module's description).

    Create and use it on one event loop, the server's.
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
        try:  # pickled once, here: what the supervisor sends is these bytes
            self._spec = pickle.dumps((config, served or Served()))
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
        self._supervisor: Supervisor | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._started = False
        self._closing = False
        #: Set when a restart fails (then :attr:`failure` says why).
        self.failed = asyncio.Event() if failed is None else failed

    @property
    def failure(self) -> str | None:
        """Why the server cannot score any more (set once, when a restart fails)."""
        return None if self._supervisor is None else self._supervisor.failure

    @property
    def restarting(self) -> str | None:
        """Why the scoring process is being started again (None while it is up)."""
        return None if self._supervisor is None else self._supervisor.restarting

    @property
    def pid(self) -> int | None:
        """The scoring process's id (None while none runs)."""
        return None if self._supervisor is None else self._supervisor.pid

    async def start(self) -> None:
        """Start the scoring process and wait until its router is compiled.

        Raises :class:`~rewardrouter.ConfigError` for a config that does not compile, and
        :class:`ScoringFailed` when the process ends before it is ready.
        """
        self._loop = asyncio.get_running_loop()
        supervisor = Supervisor(
            "the scoring process",
            compiled,
            self._spec,
            restart="at_once",
            stop_grace=EXIT_SECONDS,
            on_change=self._changed,
        )
        self._supervisor = supervisor
        try:
            await asyncio.to_thread(supervisor.wait_ready)
        except ChildUnready as exc:
            await asyncio.to_thread(supervisor.stop)
            if isinstance(exc.error, ConfigError):
                raise exc.error from None
            raise ScoringFailed(exc.cause) from None
        self._started = True

    async def score(self, endpoint: int, body: bytes) -> tuple[int, bytes]:
        """The HTTP status and JSON reply of the scoring process for ``body``.

        Raises :class:`ScoringFailed` when the scoring process dies before it answers, or no
        scoring process can be started.
        """
        supervisor = self._supervisor
        if supervisor is None or self._closing:
            raise ScoringFailed("the server is stopping; this request was not scored")
        try:
            # A large body takes a while to send: not on the server's event loop.
            reply = await asyncio.to_thread(supervisor.request, (endpoint, body))
            status, payload = await asyncio.wrap_future(reply)
        except ChildDied as exc:
            if self._closing:
                raise ScoringFailed(
                    f"the server is stopping ({exc.cause}); this request was not scored"
                ) from None
            raise ScoringFailed(
                f"{exc.cause} while scoring this request; it was not scored (the server starts "
                "a new scoring process)"
            ) from None
        except ChildError as exc:
            raise ScoringFailed(exc.cause) from None
        return status, payload

    async def close(self) -> None:
        """Close the scoring process's socket, wait for it to close its router and exit (killed
        after :data:`EXIT_SECONDS`). Requests still waiting get :class:`ScoringFailed`."""
        self._closing = True
        if self._supervisor is not None:
            await asyncio.to_thread(self._supervisor.stop)

    def _changed(self, change: Change) -> None:
        """The supervisor's news (on its thread): a death is logged, a failed restart too, and
        it stops the server."""
        if change.kind == "died":
            log.error(
                "%s; %d request(s) it was scoring got 503; starting a new scoring process",
                change.cause,
                change.failed,
            )
        elif self._started and not self._closing and self._loop is not None:
            log.error("%s", change.cause)
            self._loop.call_soon_threadsafe(self.failed.set)


# -- the scoring process's side ---------------------------------------------------------------------


def compiled(spec: bytes) -> _Scoring:
    """The scoring process's setup: the router of the pickled ``(config, served)`` compiled (a
    ``ConfigError`` reaches the server whole)."""
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s: %(message)s"
    )
    config, served = pickle.loads(spec)
    return _Scoring(compile_router(config), served)


class _Scoring:
    """Answers ``(endpoint, body)`` with ``(HTTP status, JSON)``, many requests at once."""

    def __init__(self, router: Router, served: Served) -> None:
        self.router = router
        self.served = served
        self._ids = count(1)

    async def __call__(self, request: tuple[int, bytes]) -> tuple[int, bytes]:
        endpoint, body = request
        # Each request its own requester: clients share a remote term's slots in turn.
        REQUESTER.set(next(self._ids))
        return await answer(self.router, endpoint, body, self.served)

    def close(self) -> None:
        self.router.close()
