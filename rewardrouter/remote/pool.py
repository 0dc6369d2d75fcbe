"""One HTTP connection pool per router, whichever event loop scores with it.

An aiohttp session, its open connections and the semaphores that cap concurrency all belong to
the event loop that created them. A trainer scores from one long-lived loop, so there every
remote term of a router shares one session and its kept-alive connections for the whole run.
``Router.score_sync`` runs a fresh loop per call: there a session is created lazily inside that
loop and closed before the loop ends. A *keeper* task holds each session; ``asyncio.run`` cancels
leftover tasks before it closes its loop, and the keeper's cleanup closes the session then. So
no session outlives its loop, and no call ever meets a session bound to a closed loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable

import aiohttp

from rewardrouter.remote.errors import RemoteError


class LoopSession:
    """The session and semaphores of one running loop; created and used on that loop only."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        forget: Callable[[LoopSession], None],
    ) -> None:
        self.loop = loop
        # No connection limit here: each remote term caps its own requests with a semaphore.
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300),
            timeout=aiohttp.ClientTimeout(total=None),
        )
        self.semaphores: dict[object, asyncio.Semaphore] = {}
        self.keeper = loop.create_task(self._keep(forget), name="rewardrouter-http-session")

    async def _keep(self, forget: Callable[[LoopSession], None]) -> None:
        try:
            await self.loop.create_future()  # resolved never: cancelled at loop end or by close
        finally:
            forget(self)
            await self.session.close()

    def semaphore(self, owner: object, limit: int) -> asyncio.Semaphore:
        """The concurrency cap of ``owner`` on this loop."""
        semaphore = self.semaphores.get(owner)
        if semaphore is None:
            semaphore = self.semaphores[owner] = asyncio.Semaphore(limit)
        return semaphore

    def shutdown(self) -> None:
        """Close the session from any thread: on its loop if that runs, else right here."""
        loop = self.loop
        if loop.is_closed():
            return
        if loop.is_running():
            loop.call_soon_threadsafe(self.keeper.cancel)
            return
        self.keeper.cancel()
        # A loop that is neither running nor closed (driven by run_until_complete): finish the
        # cleanup now, unless this thread is busy running another loop.
        with contextlib.suppress(RuntimeError):
            loop.run_until_complete(asyncio.gather(self.keeper, return_exceptions=True))


class SessionPool:
    """The HTTP sessions of one router, one per event loop that scores with it.

    >>> pool = SessionPool()
    >>> async def fetch():
    ...     here = pool.here()              # created on first use inside the running loop
    ...     async with here.session.get(url) as response: ...
    >>> pool.close()                        # closes every session; the router does this

    Thread-safe; :meth:`close` is idempotent.
    """

    def __init__(self) -> None:
        self._live: dict[asyncio.AbstractEventLoop, LoopSession] = {}
        self._lock = threading.Lock()
        self._closed = False

    def here(self) -> LoopSession:
        """The session of the running loop (created on first use)."""
        loop = asyncio.get_running_loop()
        live = self._live.get(loop)
        if live is not None:
            return live
        with self._lock:
            if self._closed:
                raise RemoteError("the router is closed; its connection pool is gone")
            # Loops closed without running their keeper's cleanup leave entries behind.
            for stale in [old for old in self._live if old.is_closed()]:
                del self._live[stale]
            # Only this thread runs ``loop``, so no other caller creates its session meanwhile.
            live = self._live[loop] = LoopSession(loop, self._forget)
        return live

    def _forget(self, live: LoopSession) -> None:
        with self._lock:
            if self._live.get(live.loop) is live:
                del self._live[live.loop]

    @property
    def open_sessions(self) -> int:
        """How many loops hold an open session now."""
        with self._lock:
            return len(self._live)

    def close(self) -> None:
        """Close every session (each on its own loop when that loop still runs)."""
        with self._lock:
            self._closed = True
            lives = list(self._live.values())
            self._live.clear()
        for live in lives:
            live.shutdown()
