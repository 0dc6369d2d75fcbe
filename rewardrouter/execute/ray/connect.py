"""Connect to Ray for the ``ray`` executor, and disconnect only from what a router started.

- A process that is already connected (a trainer's driver, any Ray actor — where slime and miles
  call their reward functions — or a script that called ``ray.init``) keeps its connection,
  whatever ``executors.ray.address`` says: a router never starts a second cluster.
- Otherwise ``executors.ray.address`` goes to ``ray.init``: ``auto`` (the cluster this machine
  belongs to, found through ``RAY_ADDRESS`` or a local ``ray start``), ``host:port`` of a head
  node, or ``ray://host:port`` (Ray Client).
- ``executors.ray.address: null`` starts a local Ray instance with ``num_cpus`` CPUs.

A cluster with Ray's token authentication (``RAY_AUTH_MODE=token``, or a token in
``~/.ray/auth_token``) gets a token from ``ray.init`` only when this process sets
``RAY_AUTH_MODE=token`` or joins a local node through ``auto``; :func:`check_access` asks the
head first (an explicit address, or ``auto``'s ``RAY_ADDRESS``), so that a refusal is an error at
once that says so, not a 20-second wait and advice to start a cluster. It also opens a gRPC
connection there first: Ray's head speaks gRPC, and an address where something else listens (an
HTTP server, a database) would hold ``ray.init`` for minutes; the error says what answered.

Ray is imported here, when a router first runs a ``ray`` term, never when rewardrouter is
imported. Every router holds a :class:`Lease`; a Ray instance that a router started is shut down
when the last lease on it is released, and one that the host program started is never touched.

Starting Ray takes seconds, so this example is not run (the tests start a real local instance)::

    >>> lease = connect(RaySettings(address=None, num_cpus=2))   # doctest: +SKIP
    >>> lease.started, lease.client                            # doctest: +SKIP
    (True, False)
    >>> lease.release()    # shuts that instance down          # doctest: +SKIP
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import re
import socket
import threading
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from rewardrouter.errors import RewardRouterError
from rewardrouter.execute.ray.settings import RaySettings

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
    job_env: bool = False  # connected with `ray.runtime_env` as the job's runtime env
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


def connect(settings: RaySettings) -> Lease:
    """A lease on this process's Ray connection, connecting (or starting Ray) if needed."""
    global _leases
    ray = import_ray()
    with _lock:
        job_env = None
        if ray.is_initialized():
            started = _leases > 0
        else:
            address = settings.address
            # Through Ray Client the job's runtime env is the only one that can carry local
            # paths (see runtime_env.py); elsewhere the pool uploads them for its actors.
            job_env = settings.runtime_env if _is_client_address(address) else None
            listening = False
            head = None if address is None else _head_address(address)
            try:
                if head is None:
                    ray.init(num_cpus=settings.num_cpus)
                else:
                    # An address that refuses or does not answer is clear at once, not in 20 s;
                    # and a head that answers is not one to be told to start.
                    listening = check_access(ray, head, address)
                    ray.init(address=address, runtime_env=job_env)
            except RewardRouterError:
                raise
            except Exception as exc:
                failure = _connect_failure(ray, head, exc, listening, address)
                raise RewardRouterError(failure) from exc
            started = address is None
        if started:
            _leases += 1
        return Lease(ray, started, _client_mode(ray), job_env=job_env is not None)


def _is_client_address(address: str | None) -> bool:
    return address is not None and address.startswith("ray://")


def _head_address(address: str) -> str:
    """The head that ``address`` names: ``auto`` goes where ``RAY_ADDRESS`` points, if it is
    set (``ray.init`` does the same); otherwise ``address`` itself."""
    if address == "auto":
        return os.environ.get("RAY_ADDRESS", "").strip() or address
    return address


def _named(head: str, given: str | None = None) -> str:
    """How messages name the head: the address, and where it came from when ``ray.address``
    said another (``given``: ``auto``)."""
    if given is None or given == head:
        return repr(head)
    return f"{head!r} (`{given}`, from RAY_ADDRESS)"


# -- token authentication -----------------------------------------------------------------

#: Seconds the authentication check waits for the head to answer before it lets ``ray.init``
#: try (and report) on its own.
ACCESS_SECONDS = 5.0

AUTH_FIX = (
    "set `RAY_AUTH_MODE=token` in the environment of the process that runs the router, with "
    "the cluster's token in `~/.ray/auth_token`, `RAY_AUTH_TOKEN` or the file that "
    "`RAY_AUTH_TOKEN_PATH` names (`ray get-auth-token` on the head prints it); on a node of "
    "the cluster, `ray.address: auto` does this by itself"
)


def _auth_mode() -> str:
    return os.environ.get("RAY_AUTH_MODE", "").strip().lower()


def _refused(address: str, exc: BaseException, given: str | None = None) -> str:
    """The message for a head at ``address`` that did not accept this process's
    authentication; ``given``: what ``ray.address`` said, when not ``address`` (``auto``)."""
    named = _named(address, given)
    if _auth_mode() == "token":
        return (
            f"ray.address: authentication with Ray at {named} failed ({_first_line(exc)}): "
            f"this process's token is missing or is not that cluster's; put the head's token "
            f"(`ray get-auth-token` there prints it) in `~/.ray/auth_token`, `RAY_AUTH_TOKEN` "
            f"or the file that `RAY_AUTH_TOKEN_PATH` names"
        )
    if given == "auto":
        return (
            f"ray.address: Ray at {named} requires token authentication and this process "
            f"sent no token ({_first_line(exc)}): `auto` through RAY_ADDRESS sends one only "
            f"when `RAY_AUTH_MODE=token` is set; {AUTH_FIX.rpartition('; on a node')[0]}"
        )
    return (
        f"ray.address: Ray at {named} requires token authentication and this process "
        f"sent no token ({_first_line(exc)}): Ray sends one to an explicit address only "
        f"when `RAY_AUTH_MODE=token` is set; {AUTH_FIX}"
    )


#: The opening of an HTTP/2 connection (gRPC's transport), then an empty SETTINGS frame.
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def _not_a_head(host: str, port: int) -> str | None:
    """What answers at ``host:port`` if it is not a gRPC server (Ray's head is one), else None.

    Opens an HTTP/2 connection as gRPC does: a gRPC server answers with a SETTINGS frame; what
    anything else sends back (an HTTP status line, a banner, nothing) is described. Skipped
    (None) with ``RAY_USE_TLS``, where the head expects TLS first."""
    if os.environ.get("RAY_USE_TLS", "").strip().lower() in ("1", "true"):
        return None
    reply = b""
    try:
        with socket.create_connection((host, port), timeout=ACCESS_SECONDS) as sock:
            with contextlib.suppress(OSError):
                sock.sendall(H2_PREFACE)  # a server that speaks first may have hung up
            sock.settimeout(ACCESS_SECONDS)
            while len(reply) < 9:
                chunk = sock.recv(256)
                if not chunk:
                    break
                reply += chunk
    except TimeoutError:
        if not reply:
            return f"it accepted the connection and sent nothing back for {ACCESS_SECONDS:g} s"
    except OSError as exc:
        if not reply:
            return f"it dropped the connection ({_first_line(exc)})"
    if len(reply) >= 9 and reply[3] == 4:  # an HTTP/2 SETTINGS frame: gRPC
        return None
    if not reply:
        return "it closed the connection without a word"
    text = reply.decode("latin-1")
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if first.startswith("HTTP/"):
        return f"an HTTP server answers there ({first[:80]!r})"
    printable = first and all(c.isprintable() for c in first)
    said = repr(first[:80]) if printable else f"{len(reply)} bytes that are not HTTP/2"
    return f"it answered {said}"


def check_access(ray: Any, address: str, given: str | None = None) -> bool:
    """Ask the head at ``address`` whether it accepts this process, before ``ray.init``
    (which, refused, retries for 20 s and then names no cause, and, pointed at a service that is
    not Ray, waits for minutes): a refusal raises :class:`RewardRouterError` at once, saying why
    and what to do, and so does an address where nothing answers or something that is not a
    Ray head (it says what answered). ``given``: what ``ray.address`` said, when ``address``
    came from elsewhere (``auto``'s ``RAY_ADDRESS``). Returns whether ``address`` is a
    ``host:port`` that answers (False for ``auto`` without ``RAY_ADDRESS`` and Ray Client
    addresses, which are left to ``ray.init``, as is every answer but a refusal)."""
    if not re.match(r"^[^\s:/]+:\d+$", address):
        return False
    named = _named(address, given)
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=ACCESS_SECONDS):
            pass
    except OSError as exc:
        raise RewardRouterError(
            f"ray.address: nothing answers at {named} ({_first_line(exc)}); start the "
            f"cluster's head there (`ray start --head --port={port}`), or point `ray.address` "
            f"at the head that `ray start --head` named (`auto` on a node of the cluster)"
        ) from None
    other = _not_a_head(host, int(port))
    if other is not None:
        raise RewardRouterError(
            f"ray.address: what listens at {named} is not a Ray head: {other}; point "
            f"`ray.address` at the port of the cluster's head (the one `ray start --head` "
            f"prints, 6379 unless `--port` says otherwise), or `ray://host:10001` for Ray Client"
        )
    authentication_error = getattr(ray.exceptions, "AuthenticationError", None)
    gcs_client = getattr(getattr(ray, "_raylet", None), "GcsClient", None)
    if authentication_error is None or gcs_client is None:  # a Ray without authentication
        return True
    answer: concurrent.futures.Future[None] = concurrent.futures.Future()

    def ask() -> None:
        try:
            gcs_client(address=address)
        except BaseException as exc:  # the answer, whatever it is, goes to the caller
            answer.set_exception(exc)
        else:
            answer.set_result(None)

    # A frozen head would hold the client for 40 s: a daemon thread, waited on briefly.
    threading.Thread(target=ask, name="rewardrouter-ray-auth", daemon=True).start()
    try:
        answer.result(timeout=ACCESS_SECONDS)
    except authentication_error as exc:
        raise RewardRouterError(_refused(address, exc, given)) from None
    except Exception:
        pass
    return True


def _connect_failure(
    ray: Any, address: str | None, exc: BaseException, listening: bool, given: str | None = None
) -> str:
    """What to say when ``ray.init`` failed; ``listening``: something answers at ``address``;
    ``given``: what ``ray.address`` said, when not ``address`` (``auto``)."""
    authentication_error = getattr(ray.exceptions, "AuthenticationError", ())
    if address is not None and isinstance(exc, authentication_error):
        return _refused(address, exc, given)
    named = "" if address is None else _named(address, given)
    if listening:
        return (
            f"ray.address: could not join Ray at {named} ({_first_line(exc)}), although "
            f"something answers there; check that it is the port of a Ray head (the one "
            f"`ray start --head` prints), that the head runs Ray {ray.__version__} as this "
            f"process does, and the head's logs (`/tmp/ray/session_latest/logs`)"
        )
    where = "a local Ray instance" if address is None else f"Ray at {named}"
    return (
        f"ray.address: could not connect to {where} ({_first_line(exc)}); start a "
        f"cluster with `ray start --head`, point `ray.address` at its head "
        f"(`host:6379`, or `ray://host:10001` for Ray Client), or set "
        f"`ray.address: null` to start a local Ray instance for this router"
    )


def _client_mode(ray: Any) -> bool:
    """Whether this process talks to Ray through Ray Client."""
    try:
        from ray.util.client import ray as client
    except ImportError:  # Ray Client's own dependencies are missing: it cannot be in use
        return False
    is_connected: Any = client.is_connected  # untyped in Ray
    return bool(is_connected())
