"""The worker template: the warm process that every worker of a pool is forked from.

A worker started by ``spawn`` or ``forkserver`` has imported the reward modules but never run
them: its first calls pay for every lazy initialization (math-verify's parsers, sympy's caches),
half a second and more — enough to overrun a tight deadline, and paid again by every replacement
of a killed worker. So a pool starts one *template* process that imports the modules, replays a
few calls that succeeded (``warm``), and forks the workers: a new worker is a copy of a warm
process, serving in milliseconds.

Forking is safe only from a process whose threads are known to survive it. The template starts
no threads; after each warm-up call it counts its threads (every OS thread, on Linux) and, if the
call started one (a grader using OpenMP, say), reports ``tainted`` and refuses to fork from then
on; the pool forks later workers from a fresh template and stops warming. (Threads that imports
start, such as a BLAS pool, are there in every forkserver or fork start too, and are not
counted.)

Protocol over the template's pipe (a socket pair):

- pool → template: ``("fork", slot)``, ``("warm", job_blob, item)``, ``None`` (stop);
- template → pool: ``("forked", slot, pid)`` followed by the new worker's socket (passed with
  ``SCM_RIGHTS``), ``("exited", pid, exit code)`` for every worker it reaps, ``("tainted",)``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
from collections.abc import Sequence
from multiprocessing import reduction
from multiprocessing.connection import Connection, wait
from typing import Any

from rewardrouter.execute.outcome import CONTROL_FLOW
from rewardrouter.execute.process.worker import die_with_parent, progress_slot, serve
from rewardrouter.execute.wire import load_job
from rewardrouter.introspect import import_quietly


def thread_count() -> int:
    """Threads of this process: every OS thread where the platform tells, else Python's."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def _warm(blob: bytes, item: Any) -> None:
    """Run one call that succeeded in a worker, for its side effects (caches, lazy imports)."""
    try:
        call, _ = load_job(blob)
        call(item)
    except CONTROL_FLOW:
        raise
    except BaseException:  # it succeeded in a worker; here only its warmth matters
        pass


def _fork(
    conn: Connection, progress: Any, slot: int, flush_seconds: float, wake: tuple[int, int]
) -> int:
    """Fork a worker that serves on a new socket; hand the pool its end. The worker's pid."""
    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:  # the worker: it never returns into the template's loop
        code = 1
        try:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for fd in wake:
                os.close(fd)
            conn.close()
            ours.close()
            serve(Connection(theirs.detach()), progress_slot(progress, slot), (), flush_seconds)
            code = 0
        finally:
            os._exit(code)
    theirs.close()
    conn.send(("forked", slot, pid))
    reduction.send_handle(conn, ours.fileno(), os.getppid())
    ours.close()
    return pid


def _reap(conn: Connection, children: set[int]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        children.discard(pid)
        conn.send(("exited", pid, os.waitstatus_to_exitcode(status)))


def run_template(
    conn: Connection, progress: Any, modules: Sequence[str], flush_seconds: float
) -> None:
    """The template's main loop: fork, warm and reap until told to stop. Process target."""
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import_quietly(modules)
    # A child's exit wakes the loop: SIGCHLD writes a byte to this pipe.
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    signal.set_wakeup_fd(wake_w)
    children: set[int] = set()
    threads_at_start = thread_count()  # e.g. a BLAS pool started by an import: fork-safe
    tainted = False
    try:
        while True:
            ready = wait([conn, wake_r])
            if wake_r in ready:
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_r, 512)
            _reap(conn, children)
            if conn not in ready:
                continue
            message = conn.recv()
            if message is None:
                return
            if message[0] == "fork" and tainted:
                conn.send(("tainted",))  # refused: the pool asks a fresh template
            elif message[0] == "fork":
                wake = (wake_r, wake_w)
                children.add(_fork(conn, progress, message[1], flush_seconds, wake))
            elif message[0] == "warm" and not tainted:
                _warm(message[1], message[2])
                tainted = thread_count() > threads_at_start
                if tainted:
                    conn.send(("tainted",))
    except (EOFError, OSError):  # the pool is gone
        pass
    finally:
        for pid in children:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for pid in children:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
