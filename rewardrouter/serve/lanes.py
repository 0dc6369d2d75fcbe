"""The server's scoring lanes: small requests are scored by a scoring process of their own, so
that one client's large batch never delays another client's small request.

A scoring process works through the requests it holds concurrently, but a large batch holds its
interpreter for seconds at a time (decoding it, validating each sample, an inline grader called
on each, encoding the reply), and every request sent to the same process waits meanwhile. The
server therefore keeps two lanes, each a :class:`~rewardrouter.serve.process.ScoringProcess`
with its own compiled router:

- the **small lane** takes every body of at most ``small_request_bytes`` (slime's one sample
  per ``/reward``, a short ``/batch``): its requests wait only for other small requests, each
  bounded in work by its size;
- the **bulk lane** takes the rest: large batches wait for each other there (in arrival order,
  scored concurrently as before), never in front of a small request.

The body's size is what the server knows before decoding it, and it bounds the work a request
can ask for (every sample costs its bytes). ``small_request_bytes=0`` keeps one scoring process
for all (half the memory, and one set of worker pools, when the router's graders are big).

Each lane restarts its own scoring process when it dies; a lane whose process cannot be started
again fails the server (:attr:`ScoringLanes.failed`), as a single scoring process did.
"""

from __future__ import annotations

import asyncio

from rewardrouter.config.models import RouterConfig
from rewardrouter.serve.process import ScoringProcess
from rewardrouter.serve.scoring import Served


class ScoringLanes:
    """The scoring processes of one server, chosen per request by the size of its body.

    The same interface as one :class:`ScoringProcess`: :meth:`start`, :meth:`score`,
    :meth:`close`, and :attr:`failure`, :attr:`failed`, :attr:`restarting`.
    """

    def __init__(
        self, config: RouterConfig, small_request_bytes: int, served: Served | None = None
    ) -> None:
        """Raises :class:`~rewardrouter.ConfigError` for a config that cannot be sent to a
        scoring process."""
        #: Set when a lane's scoring process died and no new one could be started.
        self.failed = asyncio.Event()
        self.bulk = ScoringProcess(config, self.failed, served)
        self.small = (
            ScoringProcess(config, self.failed, served) if small_request_bytes > 0 else None
        )
        self._small_bytes = small_request_bytes

    @property
    def lanes(self) -> list[ScoringProcess]:
        return [self.bulk] if self.small is None else [self.small, self.bulk]

    async def start(self) -> None:
        """Start every lane's scoring process (at once) and wait until each router compiled.

        Raises what :meth:`ScoringProcess.start` raises (the first lane's error; the lanes that
        did start are closed again).
        """
        outcomes = await asyncio.gather(
            *(lane.start() for lane in self.lanes), return_exceptions=True
        )
        errors = [o for o in outcomes if isinstance(o, BaseException)]
        if errors:
            await self.close()
            raise errors[0]

    def lane_for(self, body: bytes) -> ScoringProcess:
        """The lane that scores ``body``."""
        if self.small is not None and len(body) <= self._small_bytes:
            return self.small
        return self.bulk

    async def score(self, endpoint: int, body: bytes) -> tuple[int, bytes]:
        """The HTTP status and JSON reply for ``body``, from its lane's scoring process (see
        :meth:`ScoringProcess.score`)."""
        return await self.lane_for(body).score(endpoint, body)

    async def close(self) -> None:
        """Close every lane's scoring process (at once)."""
        await asyncio.gather(*(lane.close() for lane in self.lanes))

    @property
    def failure(self) -> str | None:
        """Why the server cannot score any more (None while every lane can)."""
        return next((lane.failure for lane in self.lanes if lane.failure), None)

    @property
    def restarting(self) -> str | None:
        """Why a lane's scoring process is being started again (None while every one is up)."""
        return next((lane.restarting for lane in self.lanes if lane.restarting), None)
