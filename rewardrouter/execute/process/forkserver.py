"""The fork server (Linux): one clean process per Python process, which forks worker templates.

A template started from scratch imports rewardrouter and the reward modules — seconds, with
sympy — and every pool of the process would pay that again. So the first pool starts a server, a
fresh interpreter (:mod:`~rewardrouter.supervise.boot`, never the caller's script), and
every template is forked from it. Before it forks a pool's template the server imports that
pool's modules it has not imported yet, so each module is imported once per process, not once
per pool (another router of the process, with other graders, pays only for what is new). The
server lives as long as the process that started it: when that process exits, its end of the
server's socket closes and the server exits; the templates it forked follow (their parent died:
the kernel sends them ``SIGTERM``), killing their workers.

Protocol over the server's socket: the pool sends ``("template", modules, flush_seconds,
count)`` followed by two descriptors (``SCM_RIGHTS``): the template's end of its socket to the
pool, and the memory file of the pool's progress records (``count`` doubles); the server answers
with the template's pid.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
from collections.abc import Sequence
from multiprocessing import reduction
from multiprocessing.connection import Connection, wait

from rewardrouter.execute.process.shared import ChildExits, SharedDoubles
from rewardrouter.execute.process.template import run_template
from rewardrouter.introspect import import_quietly
from rewardrouter.supervise.boot import start_python

#: Seconds the server may take to answer a pool: start (the first time), import the pool's
#: modules it has not imported yet, and fork.
FORK_SECONDS = 120.0


class ForkServer:
    """The parent's side: starts the server on first use, asks it for templates."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conn: Connection | None = None
        self._owner = 0  # the pid that started the server: a forked child starts its own

    def fork_template(
        self, modules: Sequence[str], flush_seconds: float, conn_fd: int, progress: SharedDoubles
    ) -> int:
        """The pid of a new template serving on ``conn_fd`` with ``progress`` as its records."""
        with self._lock:
            for attempt in range(2):
                conn = self._connection()
                try:
                    conn.send(("template", list(modules), flush_seconds, progress.count))
                    reduction.send_handle(conn, conn_fd, 0)
                    reduction.send_handle(conn, progress.fd, 0)
                    if not conn.poll(FORK_SECONDS):
                        raise TimeoutError(f"the fork server did not answer in {FORK_SECONDS:g} s")
                    return int(conn.recv())
                except (OSError, EOFError):  # it died: start another once
                    self._conn = None
                    conn.close()
                    if attempt:
                        raise
            raise AssertionError("unreachable")

    def _connection(self) -> Connection:
        if self._conn is not None and self._owner == os.getpid():
            return self._conn
        if self._conn is not None:  # inherited by a fork of the process: the parent's, not ours
            self._conn.close()
        ours, theirs = socket.socketpair()
        start_python(serve_forks, [theirs.fileno()], [theirs.fileno()])
        theirs.close()
        self._conn, self._owner = Connection(ours.detach()), os.getpid()
        return self._conn


#: The server of this process, started by the first pool that needs it.
SERVER = ForkServer()


def serve_forks(fd: int) -> None:
    """The server's main loop: fork a template per request (after importing the modules of
    that request's pool) until the parent's end closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    conn = Connection(fd)
    exits = ChildExits()  # an exiting template wakes the loop, to be reaped
    try:
        while True:
            ready = wait([conn, exits.fd])
            if exits.fd in ready:
                exits.drain()
                _reap()
            if conn in ready:
                _, modules, flush_seconds, count = conn.recv()
                template_fd = reduction.recv_handle(conn)
                progress_fd = reduction.recv_handle(conn)
                import_quietly(modules)  # once here, for this pool and every later one
                pid = os.fork()
                if pid == 0:
                    code = 1
                    try:
                        exits.forget()
                        conn.close()
                        progress = SharedDoubles(count, progress_fd)
                        run_template(Connection(template_fd), progress, modules, flush_seconds)
                        code = 0
                    finally:
                        os._exit(code)
                os.close(template_fd)
                os.close(progress_fd)
                conn.send(pid)
    except (EOFError, OSError):  # the parent is gone
        pass


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
