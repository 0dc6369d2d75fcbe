"""The worker template: the warm process that every worker of a pool is forked from.

A worker started from scratch has imported the reward modules but never run them: its first calls pay for every lazy initialization (math-verify's parsers, sympy's caches),
half a second and more — enough to overrun a tight deadline, and paid again by every replacement
of a killed worker. So a pool starts one *template* process that imports the modules, replays a
few calls that succeeded (``warm``), and forks the workers: a new worker is a copy of a warm
process, serving in milliseconds. A replay calls the reward function a second time on an input
it already scored, side effects included (a file written, a process started, a paid request);
``executors.process.warm_calls`` bounds the replays per function, and 0 turns them off.

Forking is safe only from a process whose threads are known to survive it. The template starts
no threads; after each warm-up call it counts its threads (every OS thread, on Linux) and, if the
call started one (a grader using OpenMP, say), reports ``tainted`` and refuses to fork from then
on; the pool forks later workers from a fresh template and stops warming. (Threads that imports
start, such as a BLAS pool, are there in every forkserver or fork start too, and are not
counted.)

What reward functions start dies with them: each worker leads a process group of its own, which
the pool kills with the worker at a deadline and the template kills when it reaps the worker;
the template adopts the orphans of its workers (``PR_SET_CHILD_SUBREAPER``), so processes a call
started in a session of their own die when the template stops — at ``close()``, when the pool's
process exits (its end of the socket closes), or when the template's parent does (``SIGTERM``).

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

from rewardrouter.execute.process.shared import ChildExits, SharedDoubles, adopt_orphans, children
from rewardrouter.execute.process.worker import serve
from rewardrouter.execute.wire import load_job
from rewardrouter.introspect import import_quietly
from rewardrouter.outcome import CONTROL_FLOW
from rewardrouter.supervise.boot import die_with_parent, kill_group


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
    conn: Connection,
    progress: SharedDoubles,
    slot: int,
    flush_seconds: float,
    exits: ChildExits,
) -> int:
    """Fork a worker that serves on a new socket; hand the pool its end. The worker's pid.

    The worker leads a process group of its own (set on both sides of the fork, so the group
    exists before the pool learns the pid): killing the group kills what its calls started.
    """
    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:  # the worker: it never returns into the template's loop
        code = 1
        try:
            with contextlib.suppress(OSError):
                os.setpgid(0, 0)
            exits.forget()
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            conn.close()
            ours.close()
            serve(Connection(theirs.detach()), progress.view(4 * slot, 4), (), flush_seconds)
            code = 0
        finally:
            os._exit(code)
    with contextlib.suppress(OSError):  # EACCES: the worker got there first
        os.setpgid(pid, pid)
    theirs.close()
    conn.send(("forked", slot, pid))
    reduction.send_handle(conn, ours.fileno(), os.getppid())
    ours.close()
    return pid


def _reap(conn: Connection | None, workers: set[int]) -> None:
    """Reap every child that exited (workers, and orphans adopted from them); report each
    worker's exit on ``conn`` and kill what it left in its process group."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in workers:
            workers.discard(pid)
            kill_group(pid)  # the group's id stays reserved while it has members
            if conn is not None:
                conn.send(("exited", pid, os.waitstatus_to_exitcode(status)))


def _stop_workers(workers: set[int]) -> None:
    """Kill every worker, all they started, and the orphans adopted from them; reap them."""
    for pid in workers:
        kill_group(pid)
    for pid in list(workers):
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        kill_group(pid)
    workers.clear()
    for orphan in children():  # started by a call in a session of its own, its worker gone
        kill_group(orphan)
    _reap(None, workers)


def run_template(
    conn: Connection, progress: SharedDoubles, modules: Sequence[str], flush_seconds: float
) -> None:
    """The template's main loop: fork, warm and reap until told to stop.

    When the pool goes away (its end of ``conn`` closes), or the template's parent exits (the
    kernel then sends ``SIGTERM``), the template kills its workers and everything they started.
    """
    workers: set[int] = set()

    def stop(signum: int, frame: Any) -> None:
        _stop_workers(workers)
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    die_with_parent(signal.SIGTERM)
    adopt_orphans()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import_quietly(modules)
    exits = ChildExits()  # a worker's exit wakes the loop, to be reaped and reported
    threads_at_start = thread_count()  # e.g. a BLAS pool started by an import: fork-safe
    tainted = False
    try:
        while True:
            ready = wait([conn, exits.fd])
            if exits.fd in ready:
                exits.drain()
            _reap(conn, workers)
            if conn not in ready:
                continue
            message = conn.recv()
            if message is None:
                return
            if message[0] == "fork" and tainted:
                conn.send(("tainted",))  # refused: the pool asks a fresh template
            elif message[0] == "fork":
                workers.add(_fork(conn, progress, message[1], flush_seconds, exits))
            elif message[0] == "warm" and not tainted:
                _warm(message[1], message[2])
                tainted = thread_count() > threads_at_start
                if tainted:
                    conn.send(("tainted",))
    except (EOFError, OSError):  # the pool is gone
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        _stop_workers(workers)


def run_fresh_template(
    conn_fd: int, progress_fd: int, count: int, modules: list[str], flush_seconds: float
) -> None:
    """The entry point of a template: forked by the ``pools`` fork server, or started as a
    fresh interpreter (``start_method: spawn``)."""
    run_template(Connection(conn_fd), SharedDoubles(count, progress_fd), modules, flush_seconds)
