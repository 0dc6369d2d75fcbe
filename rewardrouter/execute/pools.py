"""The threads, worker processes and Ray actors of one router: each started on first use, all
freed by close."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

from rewardrouter.config.models import RouterConfig
from rewardrouter.errors import RewardRouterError
from rewardrouter.execute.inprocess.threads import ThreadLane
from rewardrouter.execute.process.pool import ProcessPool
from rewardrouter.execute.ray.pool import RayPool


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class Pools:
    """A router's :class:`ThreadLane`, :class:`ProcessPool` and :class:`RayPool`.

    ``modules`` are imported by every worker process and Ray actor when it starts (those of the
    process and ray terms), so that no call pays for an import under its deadline.
    """

    def __init__(self, config: RouterConfig, modules: Sequence[str] = ()) -> None:
        self.cap = config.max_concurrency
        self._settings = config.process_pool
        self._modules = tuple(modules)
        self._threads: ThreadLane | None = None
        self._processes: ProcessPool | None = None
        self._ray_settings = config.ray
        self._actors: RayPool | None = None
        self._lock = threading.Lock()
        self._closed = False

    def threads(self) -> ThreadLane:
        with self._lock:
            self.check_open()
            if self._threads is None:
                self._threads = ThreadLane(self.cap)
            return self._threads

    def processes(self) -> ProcessPool:
        with self._lock:
            self.check_open()
            if self._processes is None:
                settings = self._settings
                self._processes = ProcessPool(
                    settings.workers or available_cpus(),
                    chunk_seconds=settings.chunk_seconds,
                    start_method=settings.start_method,
                    modules=self._modules,
                )
            return self._processes

    def actors(self) -> RayPool:
        """The router's Ray actors (connecting to Ray and starting them on first use)."""
        with self._lock:
            self.check_open()
            if self._actors is None:
                self._actors = RayPool(self._ray_settings, self._modules)
            return self._actors

    @property
    def worker_pids(self) -> list[int]:
        """Process ids of the running worker processes (none before first use or after close)."""
        processes = self._processes
        return processes.pids if processes is not None else []

    def close(self) -> None:
        """Stop the worker processes (waits for them), the Ray actors and the threads.
        Idempotent."""
        with self._lock:
            self._closed = True
            threads, self._threads = self._threads, None
            processes, self._processes = self._processes, None
            actors, self._actors = self._actors, None
        if processes is not None:
            processes.close()
        if actors is not None:
            actors.close()
        if threads is not None:
            threads.close()

    def check_open(self) -> None:
        """Raise :class:`RewardRouterError` once :meth:`close` has run."""
        if self._closed:
            raise RewardRouterError("this router is closed; compile a new one")
