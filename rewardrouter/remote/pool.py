"""One HTTP connection pool per router, whichever event loop scores with it.

An aiohttp session, its open connections and the slots that cap concurrency all belong to
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
import contextvars
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Hashable

import aiohttp

from rewardrouter.remote.errors import RemoteError

#: Who the requests of the running task are made for: ``rewardrouter serve`` sets it to each
#: HTTP request, so that its clients take an endpoint's free slots in turn. None (the default):
#: every request is the same requester's.
REQUESTER: contextvars.ContextVar[Hashable | None] = contextvars.ContextVar(
    "rewardrouter_requester", default=None
)


class Slots:
    """The concurrency cap of one endpoint on one loop: at most ``limit`` requests hold a slot
    at once. A freed slot goes to the waiting requester (:data:`REQUESTER`) that holds the
    fewest slots, the one served least recently among equals, and to its requests in the order
    they asked: one requester's many slow requests delay another's by one turn of a slot.

    A request may say how long it can wait (``until``): when that comes first it goes on
    without a slot, beyond the cap (:meth:`slot` yields False, :attr:`beyond` counts it), so
    the cap never costs a request the time its own work needs. Created and used on one loop.

    >>> async def three_requests_one_slot():
    ...     slots, order = Slots(1), []
    ...     async def request(who, name):
    ...         REQUESTER.set(who)
    ...         async with slots.slot() as held:
    ...             order.append((name, held))
    ...             await asyncio.sleep(0.01)
    ...     await asyncio.gather(request("a", "a1"), request("a", "a2"), request("b", "b1"))
    ...     async with slots.slot():  # one that cannot wait goes on beyond the cap
    ...         async with slots.slot(until=asyncio.get_running_loop().time()) as held:
    ...             order.append(("c1", held))
    ...     return order
    >>> asyncio.run(three_requests_one_slot())
    [('a1', True), ('b1', True), ('a2', True), ('c1', False)]
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        #: Slots held now, in all.
        self.held = 0
        #: Requests that went on beyond the cap, in all.
        self.beyond = 0
        #: The requests waiting, by requester, each requester's in the order they asked.
        self._waiting: dict[Hashable | None, OrderedDict[asyncio.Future[bool], None]] = {}
        #: Slots held, by requester (those holding none left out).
        self._holding: dict[Hashable | None, int] = {}
        #: Requesters holding or waiting, the one served least recently first.
        self._served: OrderedDict[Hashable | None, None] = OrderedDict()

    @contextlib.asynccontextmanager
    async def slot(self, until: float | None = None) -> AsyncIterator[bool]:
        """Hold a slot while the block runs, waiting for one first when none is free: yields
        True, or False when loop time ``until`` came first (the block runs beyond the cap)."""
        who = REQUESTER.get()
        held = await self._take(who, until)
        try:
            yield held
        finally:
            if held:
                self._give_back(who)

    async def _take(self, who: Hashable | None, until: float | None) -> bool:
        if who not in self._served:  # served never: before every requester that was
            self._served[who] = None
            self._served.move_to_end(who, last=False)
        if self.held < self.limit and not self._waiting:
            self._grant(who)
            return True
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[bool] = loop.create_future()
        self._waiting.setdefault(who, OrderedDict())[waiter] = None
        timer = None if until is None else loop.call_at(until, self._expire, who, waiter)
        try:
            held = await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled() and waiter.result():
                self._give_back(who)  # handed a slot as it was cancelled: hand it on
            else:
                self._forget(who, waiter)
            raise
        finally:
            if timer is not None:
                timer.cancel()
        if not held:
            self.beyond += 1
        return held

    def _expire(self, who: Hashable | None, waiter: asyncio.Future[bool]) -> None:
        if not waiter.done():
            waiter.set_result(False)
        self._forget(who, waiter)

    def _grant(self, who: Hashable | None) -> None:
        self.held += 1
        self._holding[who] = self._holding.get(who, 0) + 1
        self._served.move_to_end(who)

    def _forget(self, who: Hashable | None, waiter: asyncio.Future[bool]) -> None:
        queue = self._waiting.get(who)
        if queue is not None:
            queue.pop(waiter, None)
            if not queue:
                del self._waiting[who]
        self._drop_if_idle(who)

    def _drop_if_idle(self, who: Hashable | None) -> None:
        if who not in self._holding and who not in self._waiting:
            self._served.pop(who, None)

    def _give_back(self, who: Hashable | None) -> None:
        """``who`` frees a slot: the next waiting request takes it over (see the class doc)."""
        self.held -= 1
        left = self._holding[who] - 1
        if left:
            self._holding[who] = left
        else:
            del self._holding[who]
        while self._waiting:
            order = {requester: i for i, requester in enumerate(self._served)}
            chosen = min(self._waiting, key=lambda r: (self._holding.get(r, 0), order[r]))
            queue = self._waiting[chosen]
            waiter, _ = queue.popitem(last=False)
            if not queue:
                del self._waiting[chosen]
            if not waiter.done():
                self._grant(chosen)
                waiter.set_result(True)
                break
        self._drop_if_idle(who)


class LoopSession:
    """The session and slots of one running loop; created and used on that loop only."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        forget: Callable[[LoopSession], None],
    ) -> None:
        self.loop = loop
        # No connection limit here: each endpoint caps its own requests with its Slots.
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300),
            timeout=aiohttp.ClientTimeout(total=None),
        )
        self.slots_of: dict[object, Slots] = {}
        self.keeper = loop.create_task(self._keep(forget), name="rewardrouter-http-session")

    async def _keep(self, forget: Callable[[LoopSession], None]) -> None:
        try:
            await self.loop.create_future()  # resolved never: cancelled at loop end or by close
        finally:
            forget(self)
            await self.session.close()

    def slots(self, owner: object, limit: int) -> Slots:
        """The concurrency cap of ``owner`` on this loop."""
        slots = self.slots_of.get(owner)
        if slots is None:
            slots = self.slots_of[owner] = Slots(limit)
        return slots

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
