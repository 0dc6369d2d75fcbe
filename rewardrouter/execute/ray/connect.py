"""Connect to Ray for the ``ray`` executor, and disconnect only from what a router started.

- A process that is already connected (a trainer's driver, any Ray actor — where slime and miles
  call their reward functions — or a script that called ``ray.init``) keeps its connection,
  whatever ``ray.address`` says: a router never starts a second cluster.
- Otherwise ``ray.address`` goes to ``ray.init``: ``auto`` (the cluster this machine belongs to,
  found through ``RAY_ADDRESS`` or a local ``ray start``), ``host:port`` of a head node, or
  ``ray://host:port`` (Ray Client).
- ``ray.address: null`` starts a local Ray instance with ``ray.num_cpus`` CPUs.

Ray is imported here, when a router first runs a ``ray`` term, never when rewardrouter is
imported. Every router holds a :class:`Lease`; a Ray instance that a router started is shut down
when the last lease on it is released, and one that the host program started is never touched.

Starting Ray takes seconds, so this example is not run (the tests start a real local instance)::

    >>> lease = connect(RayConfig(address=None, num_cpus=2))   # doctest: +SKIP
    >>> lease.started, lease.client                            # doctest: +SKIP
    (True, False)
    >>> lease.release()    # shuts that instance down          # doctest: +SKIP
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from rewardrouter.config.models import RayConfig
from rewardrouter.errors import RewardRouterError

INSTALL = "pip install 'rewardrouter[ray]'"

_lock = threading.Lock()
_leases = 0  # leases on the Ray instance that a router started (none: 0)


def import_ray() -> ModuleType:
    """The ``ray`` module, or a :class:`RewardRouterError` that says how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise RewardRouterError(
            f"executor 'ray' needs Ray, which cannot be imported ({exc}); {INSTALL}"
        ) from None
    return ray


@dataclass(eq=False)
class Lease:
    """One router's use of the process's Ray connection."""

    ray: Any  # the ray module
    started: bool  # a router started this Ray instance (and the last lease shuts it down)
    client: bool  # connected through Ray Client (ray://), which cannot stream results
    released: bool = False

    def release(self) -> None:
        """Give the connection back; shut Ray down if a router started it and this was the
        last lease. Idempotent."""
        global _leases
        with _lock:
            if self.released:
                return
            self.released = True
            if not self.started:
                return
            _leases -= 1
            if _leases == 0 and self.ray.is_initialized():
                self.ray.shutdown()


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


def connect(settings: RayConfig) -> Lease:
    """A lease on this process's Ray connection, connecting (or starting Ray) if needed."""
    global _leases
    ray = import_ray()
    with _lock:
        if ray.is_initialized():
            started = _leases > 0
        else:
            address = settings.address
            try:
                if address is None:
                    ray.init(num_cpus=settings.num_cpus)
                else:
                    ray.init(address=address)
            except Exception as exc:
                where = "a local Ray instance" if address is None else f"Ray at {address!r}"
                raise RewardRouterError(
                    f"ray.address: could not connect to {where} ({_first_line(exc)}); start a "
                    f"cluster with `ray start --head`, point `ray.address` at its head "
                    f"(`host:6379`, or `ray://host:10001` for Ray Client), or set "
                    f"`ray.address: null` to start a local Ray instance for this router"
                ) from exc
            started = address is None
        if started:
            _leases += 1
        return Lease(ray, started, _client_mode(ray))


def _client_mode(ray: Any) -> bool:
    """Whether this process talks to Ray through Ray Client."""
    try:
        from ray.util.client import ray as client
    except ImportError:  # Ray Client's own dependencies are missing: it cannot be in use
        return False
    is_connected: Any = client.is_connected  # untyped in Ray
    return bool(is_connected())
