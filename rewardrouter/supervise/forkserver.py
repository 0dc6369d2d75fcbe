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

import contextlib
import importlib
import os
import select
import signal
import socket
import struct
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

from rewardrouter.introspect import import_quietly
from rewardrouter.supervise.boot import exit_cause, kill_group

#: A child's exit code, as the server writes it to the child's status pipe.
STATUS = struct.Struct("!i")


def can_fork() -> bool:
    """Whether children can come from a fork server here (Linux: ``fork`` and descriptor
    passing)."""
    return sys.platform == "linux" and hasattr(socket, "send_fds")


# -- the asking side ------------------------------------------------------------------------------


class Forked:
    """A child forked by a fork server, as its supervisor sees it (what
    :class:`subprocess.Popen` is for a child it started): its pid once forked, its exit as the
    server tells it."""

    def __init__(self, forked: Future[int], status: int) -> None:
        self._forked = forked
        self._status = status  # the read end of the status pipe
        self._code: int | None = None
        self._why: str | None = None
        self._lock = threading.Lock()
        self._killed = False
        forked.add_done_callback(self._arrived)

    @property
    def pid(self) -> int | None:
        """The child's pid; None until it is forked, or if it never was."""
        if not self._forked.done() or self._forked.exception() is not None:
            return None
        return self._forked.result()

    def kill(self) -> None:
        """``SIGKILL`` the child's process group, now or as soon as it is forked; nothing once
        the server has reaped it."""
        with self._lock:
            self._killed = True
            pid = self.pid
            if pid is not None and self._code is None and self._why is None:
                kill_group(pid)

    def _arrived(self, forked: Future[int]) -> None:
        with self._lock:
            if self._killed and forked.exception() is None:
                kill_group(forked.result())

    def exited(self) -> None:
        """Block until the child has exited and the server has killed what was left of its
        group (or the fork failed, or the server ended before the child)."""
        data = b""
        with contextlib.suppress(OSError):
            while len(data) < STATUS.size:
                part = os.read(self._status, STATUS.size - len(data))
                if not part:
                    break
                data += part
        os.close(self._status)
        failed = self._forked_exception()
        with self._lock:
            if len(data) == STATUS.size:
                self._code = STATUS.unpack(data)[0]
            elif failed is not None:
                self._why = f"it could not be forked: {failed}"
            else:  # the server ended first: the child is nobody's to reap but init's
                self._why = "exit status unknown: its fork server ended before it"
                pid = self.pid
                if pid is not None:
                    _await_exit(pid)
                    kill_group(pid)

    def _forked_exception(self) -> BaseException | None:
        try:
            return self._forked.exception()  # the server answers after it closed the pipe
        except BaseException as exc:  # cancelled
            return exc

    def cause(self) -> str:
        """How the child ended, in :func:`~.boot.exit_cause`'s words (after :meth:`exited`)."""
        return self._why or exit_cause(self._code)


def _await_exit(pid: int) -> None:
    """Wait for process ``pid`` (not a child of this process) to exit."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:  # gone already
        return
    try:
        select.select([fd], [], [])
    finally:
        os.close(fd)


# -- the server's side ----------------------------------------------------------------------------


def serve_forks(spec: None) -> _Forks:
    """The fork server's setup (see :class:`~.supervisor.Supervisor`)."""
    return _Forks()


class _Forks:
    """The fork server's handler: one fork per request, the children reaped on ``SIGCHLD`` (the
    supervised child's other thread blocks that signal, so it interrupts this one's wait)."""

    info = None

    def __init__(self) -> None:
        self._statuses: dict[int, int] = {}  # child pid -> write end of its status pipe
        signal.signal(signal.SIGCHLD, self._reap)

    def __call__(self, request: tuple[Any, ...], fds: Sequence[int] = ()) -> int:
        fds = list(fds)
        status: int | None = None
        try:
            (path, cwd, environ), modules, entry, args, session, with_status = request
            if with_status:
                status = fds.pop()
            sys.path[:] = path  # imports resolve as the asking process's would
            import_quietly(modules)
            module, _, name = entry.partition(":")
            function = getattr(importlib.import_module(module), name)
            mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
            try:
                pid = os.fork()
                if pid == 0:
                    self._child(function, fds, args, (session, cwd, environ), status, mask)
                if status is not None:  # recorded before its exit can be reaped
                    self._statuses[pid], status = status, None
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            return pid
        finally:
            for fd in fds if status is None else [*fds, status]:
                os.close(fd)

    def _child(
        self,
        function: Callable[..., Any],
        fds: list[int],
        args: list[Any],
        place: tuple[bool, str, dict[str, str]],
        status: int | None,
        mask: Any,
    ) -> None:
        """In the forked child: leave the server's state behind, take the asking process's
        folder and environment (``place``, with whether to lead a session), call the entry
        point, exit."""
        code = 1
        try:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            for fd in [*self._statuses.values(), *([] if status is None else [status])]:
                os.close(fd)
            session, cwd, environ = place
            if session:
                os.setsid()
            else:
                os.setpgid(0, 0)
            os.environ.clear()
            os.environ.update(environ)
            os.chdir(cwd)
            function(*fds, *args)
            code = 0
        except BaseException:
            with contextlib.suppress(Exception):
                traceback.print_exc()
        finally:
            os._exit(code)

    def _reap(self, signum: int, frame: Any) -> None:
        while True:
            try:
                found = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return
            if found is None:
                return
            pid = found.si_pid
            kill_group(pid)  # exited, not reaped: its group's id is still its own
            _, code = os.waitpid(pid, 0)
            fd = self._statuses.pop(pid, None)
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.write(fd, STATUS.pack(os.waitstatus_to_exitcode(code)))
                os.close(fd)
