"""Fork servers (Linux): warm processes that fork children, so that a child which needs torch or
sympy does not import them again each time it starts.

A fork server is itself a supervised child (a :class:`~.supervisor.Supervisor`, named by a key,
one per key and process, started on first use: :func:`~.supervisor.fork_server`): it answers
*fork requests* (:func:`~.supervisor.request_fork`). Each request names modules, which the
server imports if it has not yet (once per server, not once per child), a top-level function,
its arguments, and the file descriptors the new child starts with; the answer is the child's
pid. This module holds the server's side and :class:`Forked`, a forked child as its supervisor
sees it. Who asks:

- a supervisor built with ``preload`` (the local reward model's worker, which then starts in
  a fork and a model load instead of seconds of imports): its child is forked by the server for
  exactly those modules, leads a session of its own and watches its supervisor's lifeline, as a
  fresh child does;
- the process executor's pools: each worker template is forked by the ``pools`` server, which
  gathers the reward modules of every pool of the process.

The server reaps what it forks. A child forked for a supervisor comes with the write end of a
*status pipe*: when the child exits, the server kills what is left of its process group, then
writes the child's exit code to the pipe and closes it (what ``waitpid`` would tell its
supervisor, which is not its parent). The server imports modules and forks on its main thread
and starts no thread of its own beside the lifeline's watcher, which sleeps in a ``read``:
forking from it is as safe as forking from a process that imported those modules.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import os
import signal
import socket
import struct
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from rewardrouter.introspect import import_quietly
from rewardrouter.supervise.boot import die_with_parent, exit_cause, kill_group, readable

#: A child's exit code, as the server writes it to the child's status pipe.
STATUS = struct.Struct("!i")
#: Seconds a supervisor waits on a fork server's answer for a child that it killed before the
#: server forked it, or whose status pipe ended without an exit code.
KILL_WAIT = 5.0


def can_fork() -> bool:
    """Whether children can come from a fork server here (Linux: ``fork`` and descriptor
    passing)."""
    return sys.platform == "linux" and hasattr(socket, "send_fds")


# -- the asking side ------------------------------------------------------------------------------


class Forked:
    """A child forked by a fork server, as its supervisor sees it (what
    :class:`subprocess.Popen` is for a child it started): its pid once forked, its exit as the
    server tells it. Its leader is signalled through a pidfd (which no recycled pid can fool),
    its process group by id (reserved while the group has a member)."""

    def __init__(self, forked: Future[int], status: int) -> None:
        self._forked = forked
        self._status = status  # the read end of the status pipe
        self._lock = threading.Lock()
        self._pidfd: int | None = None
        self._killed_at: float | None = None
        self._reaped = False  # it exited and was reaped: its pid may be another's now
        self._done = False  # exited() returned
        self._code: int | None = None
        self._why: str | None = None
        forked.add_done_callback(self._arrived)

    @property
    def pid(self) -> int | None:
        """The child's pid; None until it is forked, or if it never was."""
        if not self._forked.done() or self._forked.exception() is not None:
            return None
        return self._forked.result()

    def known(self, timeout: float) -> bool:
        """Whether the server's answer (the child's pid, or why there is none) is in, waiting
        up to ``timeout`` seconds for it."""
        with contextlib.suppress(Exception):
            self._forked.exception(timeout=timeout)
        return self._forked.done()

    def kill(self) -> None:
        """``SIGKILL`` the child and its process group, now or as soon as it is forked."""
        with self._lock:
            if self._killed_at is None:
                self._killed_at = time.monotonic()
            self._signal()

    def _arrived(self, forked: Future[int]) -> None:
        if forked.cancelled() or forked.exception() is not None:
            return
        try:
            pidfd: int | None = os.pidfd_open(forked.result())
        except OSError:  # it exited and was reaped already
            pidfd = None
        with self._lock:
            self._pidfd = pidfd
            if self._killed_at is not None:  # killed before it was forked
                self._signal()
            if self._done and pidfd is not None:
                os.close(pidfd)
                self._pidfd = None

    def _signal(self) -> None:
        """Kill the child and its group, if it is known and not reaped (``self._lock`` held):
        the group only while the pidfd shows the leader alive, so its id is still its own."""
        pid = self.pid
        if pid is None or self._reaped or self._pidfd is None:
            return
        try:
            signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
        except OSError:  # exited: the server kills what is left of its group when it reaps it
            return
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)

    def exited(self) -> None:
        """Block until the child has exited and the server has killed what was left of its
        group (or the fork failed, or the server ended before the child, or the child was
        killed before it was forked and no fork came within :data:`KILL_WAIT` seconds)."""
        try:
            data = self._read_status()
            with self._lock:
                given_up = self._killed_at is not None and self.pid is None
            failed = self._answer_failure(0.0 if given_up else KILL_WAIT)
            with self._lock:
                if len(data) == STATUS.size:
                    self._code, self._reaped = STATUS.unpack(data)[0], True
                elif failed is not None:
                    self._why = f"it could not be forked: {failed}"
                elif self.pid is None:  # killed, and the server has not forked it yet
                    self._why = "killed before its fork server forked it"
                else:  # the server ended first: the child is nobody's to reap but init's
                    self._why = "exit status unknown: its fork server ended before it"
                pidfd = self._pidfd
            if self._why is not None and pidfd is not None:
                readable(pidfd, None)  # its exit (init reaps it; its group dies with it)
        finally:
            with self._lock:
                self._done = True
                # gone, unless it was given up on before its fork (then _arrived kills it)
                self._reaped = self._reaped or self.pid is not None
                if self._pidfd is not None:
                    os.close(self._pidfd)
                    self._pidfd = None
            os.close(self._status)

    def _read_status(self) -> bytes:
        """The exit code's bytes from the status pipe (fewer at its end), waiting at most
        :data:`KILL_WAIT` seconds once the child was killed before it was forked."""
        data = b""
        while len(data) < STATUS.size:
            with self._lock:
                unforked = self._killed_at is not None and self.pid is None
                killed_at = self._killed_at
            if unforked and killed_at is not None and time.monotonic() > killed_at + KILL_WAIT:
                return data
            # Once forked, the pipe ends for sure (an exit code, or the server's end); until
            # then a kill must be noticed.
            if not readable(self._status, 0.2 if self.pid is None else None):
                continue
            try:
                part = os.read(self._status, STATUS.size - len(data))
            except OSError:
                return data
            if not part:
                return data
            data += part
        return data

    def _answer_failure(self, wait: float) -> BaseException | None:
        """Why the server did not fork the child (None: it did, or has not answered within
        ``wait`` seconds)."""
        try:  # the server answers just after it closed its end of the status pipe
            return self._forked.exception(timeout=wait)
        except FutureTimeout:
            return None
        except BaseException as exc:  # cancelled
            return exc

    def cause(self) -> str:
        """How the child ended, in :func:`~.boot.exit_cause`'s words (after :meth:`exited`)."""
        return self._why or exit_cause(self._code)


# -- the server's side ----------------------------------------------------------------------------


def serve_forks(spec: None) -> _Forks:
    """The fork server's setup (see :class:`~.supervisor.Supervisor`)."""
    return _Forks()


class _Forks:
    """The fork server's handler: one fork per request, the children reaped on ``SIGCHLD`` (the
    supervised child's other thread blocks that signal, so it interrupts this one's wait).

    A request: ``(place, modules, entry, args, session, status)``, with ``place`` the asking
    process's ``(sys.path, folder, environment, umask, stdio)``; its descriptors are the
    entry's, then the asking process's standard streams (``stdio`` names which of 1 and 2),
    then, with ``status``, the status pipe's write end. The server takes the place before it
    imports (a library reads its environment then), and the child takes the streams: a child
    prints where a fresh interpreter started by the asking process now would.
    """

    info = None

    def __init__(self) -> None:
        self._statuses: dict[int, int] = {}  # child pid -> write end of its status pipe
        self._forked: set[int] = set()  # what it forked and has not reaped (only those)
        signal.signal(signal.SIGCHLD, self._reap)

    def __call__(self, request: tuple[Any, ...], fds: Sequence[int] = ()) -> int:
        fds = list(fds)
        status: int | None = None
        streams: list[tuple[int, int]] = []
        try:
            place, modules, entry, args, session, with_status = request
            path, cwd, environ, umask, stdio = place
            if with_status:
                status = fds.pop()
            streams = list(zip(stdio, fds[len(fds) - len(stdio) :], strict=True))
            del fds[len(fds) - len(stdio) :]
            sys.path[:] = path  # imports resolve as the asking process's would
            os.environ.clear()
            os.environ.update(environ)
            os.umask(umask)
            if cwd is not None:
                with contextlib.suppress(OSError):
                    os.chdir(cwd)
            import_quietly(modules)
            module, _, name = entry.partition(":")
            function = getattr(importlib.import_module(module), name)
            for stream in (sys.stdout, sys.stderr):  # nothing of the server's is printed twice
                with contextlib.suppress(Exception):
                    stream.flush()
            mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
            try:
                server = os.getpid()
                pid = os.fork()
                if pid == 0:
                    self._child(function, fds, args, session, streams, status, mask, server)
                self._forked.add(pid)  # recorded before its exit can be reaped
                if status is not None:
                    self._statuses[pid], status = status, None
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            return pid
        finally:
            for fd in [*fds, *(fd for _, fd in streams), *([] if status is None else [status])]:
                os.close(fd)

    def _child(
        self,
        function: Callable[..., Any],
        fds: list[int],
        args: list[Any],
        session: bool,
        streams: list[tuple[int, int]],
        status: int | None,
        mask: Any,
        server: int,
    ) -> None:
        """In the forked child: leave the server's state behind, take the asking process's
        standard streams, call the entry point, and exit as an interpreter does (its threads
        joined, its exit functions run, its streams flushed).

        A supervised child (``session``) dies with the server until its supervisor has the
        server's answer (:func:`~.child.run_child` then lets go, when its setup arrives): a
        server that dies between the fork and its answer leaves no child behind, so the request
        can go to the next server without two children on one socket."""
        code = 1
        try:
            if session:
                die_with_parent(signal.SIGKILL)
                if os.getppid() != server:  # it died before the line above
                    os._exit(1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            for fd in [*self._statuses.values(), *([] if status is None else [status])]:
                os.close(fd)
            for number, fd in streams:
                os.dup2(fd, number)
                os.close(fd)
            if session:
                os.setsid()
            else:
                os.setpgid(0, 0)
            function(*fds, *args)
            code = 0
        except BaseException:
            with contextlib.suppress(Exception):
                traceback.print_exc()
        finally:
            with contextlib.suppress(BaseException):
                threading._shutdown()  # type: ignore[attr-defined]  # as an interpreter does
            with contextlib.suppress(BaseException):
                atexit._run_exitfuncs()
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(BaseException):
                    stream.flush()
            os._exit(code)

    def _reap(self, signum: int, frame: Any) -> None:
        """Reap every forked child that exited (a subprocess that an imported module started is
        its own caller's to wait for); write each one's exit code to its status pipe. Safe when
        re-entered (a ``SIGCHLD`` that comes while it runs runs it again inside): a child the
        inner call reaped is skipped by the outer."""
        for pid in list(self._forked):
            try:
                found = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:  # reaped by an inner call
                continue
            if found is None:
                continue
            kill_group(pid)  # exited, not reaped: its group's id is still its own
            try:
                _, code = os.waitpid(pid, 0)
            except ChildProcessError:  # reaped by a call of this handler that interrupted it
                continue
            self._forked.discard(pid)
            fd = self._statuses.pop(pid, None)
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.write(fd, STATUS.pack(os.waitstatus_to_exitcode(code)))
                os.close(fd)
