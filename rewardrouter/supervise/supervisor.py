"""One child process that holds something costly (a compiled router, a loaded model) and answers
requests, supervised: started, awaited until ready, killed at a deadline, reported when it dies,
started again, stopped.

The ``serve`` command's scoring process, a local reward model's worker and the fork servers
(:mod:`.forkserver`) are each a :class:`Supervisor`'s child; the process executor's templates
are forked by a fork server, and its workers use the same crash words (:func:`~.boot.exit_cause`).

- **Start.** A fresh interpreter (:func:`~.boot.start_python`: never the caller's script), or,
  with ``preload``, a fork of the fork server that imported those modules; either way the leader
  of a session of its own, given one end of a socket pair and a *lifeline*: a pipe whose
  write end this process holds (a process forked from it drops its copy). When this process
  exits, however it dies, the lifeline closes and the child kills its process group: a child
  never outlives its supervisor, whichever thread started it (``PR_SET_PDEATHSIG`` follows the
  starting thread).
- **Ready.** The child calls ``setup(spec)`` (a top-level function, imported by name; ``spec``
  is pickled) and says ``ready`` with what the handler tells of itself, or ``failed`` with the
  exception. A child that cannot get ready (its setup raised, it died, it overran
  ``ready_timeout``, its fork server could not fork it) is the supervisor's
  :attr:`~Supervisor.failure`: every request fails with it, for a child set up the same way
  would fail the same way.
- **Requests.** Frames both ways are a header (:data:`~.frames.HEADER`: request id, payload
  length, how many file descriptors are passed beside it) and a pickled payload
  (:mod:`.frames`), answered in any order (:mod:`.child` is the child's side):
  a handler whose ``__call__`` is a coroutine function answers many at once, another one at a
  time. Requests sent before the child is ready wait for it and reach it in the order they were
  made. An answer that cannot be pickled, or unpickled, fails its request alone.
- **Deadline.** :meth:`Supervisor.call` waits at most ``deadline`` seconds for its answer; past
  it, the child's process group is killed (``SIGKILL``: a loop in C cannot ignore it), the call
  raises :class:`ChildTimeout`, and the child is started again.
- **Crash.** The child's exit is watched, not only its socket (a process the child forked may
  hold the socket open): when it dies, what is left of its process group is killed, and every
  request it had not answered fails with :class:`ChildDied`, whose :attr:`~ChildError.cause`
  says which process and how it ended (``died (killed by SIGKILL, signal 9: ...)``).
  ``restart="at_once"`` starts the next child then (requests wait for it);
  ``restart="on_request"`` starts it with the next request.
- **Stop.** :meth:`Supervisor.stop` closes the child's socket; the child cancels what it was
  answering, closes its handler (``close()``) and exits, or is killed after ``stop_grace``
  seconds (at once while it is still setting up: it holds nothing to finish).

>>> from rewardrouter.supervise.child import echo
>>> supervisor = Supervisor("the echo process", echo, "hello, ")
>>> supervisor.wait_ready()["pid"] == supervisor.pid
True
>>> supervisor.call("world", deadline=30.0)
'hello, world'
>>> supervisor.stop()
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from itertools import count
from typing import Any, Literal, Protocol

from rewardrouter.supervise import forkserver
from rewardrouter.supervise.boot import (
    close_all,
    cut_lifeline,
    exit_cause,
    kill_group,
    new_lifeline,
    not_for_forks,
    start_python,
)
from rewardrouter.supervise.child import run_child
from rewardrouter.supervise.frames import MAX_FDS, describe, receive, send_frame

log = logging.getLogger("rewardrouter.supervise")

#: Seconds the socket of a child that exited may stay open (held by a process it started that
#: left its group) before the supervisor stops reading it.
SOCKET_GRACE = 2.0


class ChildError(Exception):
    """A request the child did not answer. :attr:`cause` is the reason in a few words."""

    def __init__(self, cause: str) -> None:
        super().__init__(cause)
        self.cause = cause


class ChildDied(ChildError):
    """The child ended before it answered (a crash, the OOM killer, a kill, or a stop)."""


class ChildTimeout(ChildError):
    """The answer did not come within the call's deadline; the child was killed."""


class ChildUnready(ChildError):
    """No child could get ready: its setup raised (:attr:`error`, when it could be sent), it died
    while starting, or it overran ``ready_timeout``; or no process could be started at all.
    :attr:`why` is the reason alone (the setup's ``"ValueError: ..."``), :attr:`cause` a
    sentence that names the child."""

    def __init__(self, cause: str, error: BaseException | None = None, why: str = "") -> None:
        super().__init__(cause)
        self.error = error
        self.why = why or cause


class ChildRaised(ChildError):
    """The handler raised on this request, or its answer could not cross (the child lives on
    and answers the next)."""


@dataclass(frozen=True)
class Change:
    """What happened to a supervisor's child, for its owner's log: ``died`` (``cause``; the
    requests it was answering, ``failed`` of them, fail with :class:`ChildDied`) or ``failure``
    (no child can get ready any more: ``cause`` is :attr:`Supervisor.failure`)."""

    kind: Literal["died", "failure"]
    cause: str
    failed: int = 0


class _Process(Protocol):
    """A child's process: :class:`_Started` here, or :class:`~.forkserver.Forked` by a fork
    server."""

    @property
    def pid(self) -> int | None: ...

    def known(self, timeout: float) -> bool:
        """Whether it is known whether the process exists (a fork server's answer is in),
        waiting up to ``timeout`` seconds."""

    def kill(self) -> None:
        """``SIGKILL`` its process group (not called once :meth:`exited` returned)."""

    def exited(self) -> None:
        """Block until it has exited and what was left of its group is killed."""

    def cause(self) -> str:
        """How it ended, in :func:`~.boot.exit_cause`'s words (after :meth:`exited`)."""


class _Started:
    """A child started here as a fresh interpreter."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self.popen = popen
        self.pid: int | None = popen.pid

    def known(self, timeout: float) -> bool:
        return True

    def kill(self) -> None:
        kill_group(self.popen.pid)

    def exited(self) -> None:
        try:
            os.waitid(os.P_PID, self.popen.pid, os.WEXITED | os.WNOWAIT)
            kill_group(self.popen.pid)  # exited, not reaped: the number is still its own
        except ChildProcessError:  # reaped by another (SIGCHLD ignored, a waitpid(-1))
            pass

    def cause(self) -> str:
        return exit_cause(self.popen.wait())


#: A request waiting for its child to be ready: id, payload, the copies of its descriptors.
_Queued = tuple[int, bytes, list[int]]


@dataclass(eq=False)
class _Child:
    """One process of a supervisor, as the supervisor sees it."""

    process: _Process
    sock: socket.socket
    lifeline: int  # the write end: closing it kills the child's process group
    ready: Future[Any] = field(default_factory=Future)
    pending: dict[int, Future[Any]] = field(default_factory=dict)
    queued: list[_Queued] = field(default_factory=list)  # sent once ready
    send_lock: threading.Lock = field(default_factory=threading.Lock)
    read: threading.Event = field(default_factory=threading.Event)  # the reader is done
    # it exited and what was left of its group is killed; not reaped before this is set, so
    # its process id is never another process's when it is signalled
    exited: threading.Event = field(default_factory=threading.Event)
    retired: bool = False  # killed by the supervisor: its end is no failure to get ready
    ended: str | None = None  # how it ended, once its reader is done
    threads: list[threading.Thread] = field(default_factory=list)

    @property
    def label(self) -> str:
        pid = self.process.pid
        return "(not yet forked)" if pid is None else f"(pid {pid})"


class Supervisor:
    """One supervised child process (see the module's description). Thread-safe, bound to no
    event loop: :meth:`request` returns a :class:`concurrent.futures.Future`, which asyncio code
    awaits through :func:`asyncio.wrap_future`.

    ``name``: how messages call the child ("the scoring process"). ``setup``: a top-level
    function that, in the child, turns ``spec`` into the handler (a callable with an optional
    ``info`` and ``close()``). ``late``: the message when the child is not ready within
    ``ready_timeout``. ``on_change``: called with a :class:`Change` when a ready child died, and
    when no child can get ready any more (the supervisor's :attr:`failure`); on a supervisor
    thread, or on the thread that waited past ``ready_timeout``. The child is started at once
    (what it loads, it loads meanwhile). ``preload``: modules the child needs (torch); where
    children can be forked (Linux), each is then forked by this process's fork server for those
    modules (:mod:`.forkserver`), which imported them once, instead of started as a fresh
    interpreter that imports them again.
    """

    def __init__(
        self,
        name: str,
        setup: Callable[[Any], Any],
        spec: Any,
        *,
        ready_timeout: float | None = None,
        late: str = "",
        stop_grace: float = 10.0,
        restart: Literal["at_once", "on_request"] = "on_request",
        on_change: Callable[[Change], None] | None = None,
        preload: Sequence[str] | None = None,
    ) -> None:
        self.name = name
        self._entry = f"{setup.__module__}:{setup.__qualname__}"
        self._preload = None if preload is None else [*preload, setup.__module__]
        self._spec = pickle.dumps(spec)
        self.ready_timeout = ready_timeout
        self._late = late
        self.stop_grace = stop_grace
        self._restart = restart
        self._on_change = on_change
        self._lock = threading.Lock()
        self._ids = count(1)
        self._closing = False
        self._children: set[_Child] = set()  # started and not yet ended
        #: Why no child can answer any more (set once: a child could not get ready).
        self.failure: str | None = None
        self._unready: ChildUnready | None = None
        #: Why a new child is being started, while one is (``restart="at_once"``).
        self.restarting: str | None = None
        self._child: _Child | None = None
        with self._lock, contextlib.suppress(ChildUnready):  # raised again on first use
            self._child = self._start_locked()

    # -- the caller's side ---------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The current child's process id (None while none is started)."""
        child = self._child
        return None if child is None else child.process.pid

    @property
    def stopped(self) -> bool:
        """Whether :meth:`stop` was called."""
        return self._closing

    def wait_ready(self) -> Any:
        """Block until the current child is ready; its handler's ``info``. Raises
        :class:`ChildUnready` when it cannot get ready (then :attr:`failure` is set)."""
        return self._ready(self._current())

    def request(self, payload: Any, fds: Sequence[int] = ()) -> Future[Any]:
        """Send ``payload`` to the child (once it is ready); the future holds the handler's
        answer, or a :class:`ChildError`. Does not wait for the answer (it may wait to send a
        large payload). Raises :class:`ChildError` when no child can answer: stopped, or
        :attr:`failure`. With ``fds`` (file descriptors, at most :data:`~.frames.MAX_FDS`), copies
        are sent along, and the handler is called as ``handler(payload, fds)`` with the
        child's numbers of them, which it then owns; the caller may close its own at once."""
        return self._request(None, payload, fds)

    def call(self, payload: Any, deadline: float | None = None, fds: Sequence[int] = ()) -> Any:
        """The child's answer to ``payload``, within ``deadline`` seconds of being sent (the
        child's start and setup do not count). Raises :class:`ChildError`."""
        child = self._current()
        self._ready(child)
        answer = self._request(child, payload, fds)
        try:
            return answer.result(timeout=deadline)
        except FutureTimeout:
            self._retire(child)
            raise ChildTimeout(
                f"{self.name} {child.label} gave no answer within the deadline "
                f"({deadline:g} s) and was killed"
            ) from None

    def stop(self) -> None:
        """Stop the child (see the module's description), and every child killed before it
        whose end is not yet handled; idempotent. Requests still waiting fail with
        :class:`ChildDied`."""
        with self._lock:
            self._closing = True
            self._child = None
            self.restarting = None
            children = list(self._children)
        for child in children:
            with contextlib.suppress(OSError):
                child.sock.shutdown(socket.SHUT_RDWR)
            if not child.ready.done():  # still setting up: it holds nothing to finish
                self._kill(child)
        current = threading.current_thread()
        for child in children:
            if current in child.threads:  # its reader: it reaps the child when this returns
                continue
            for thread in child.threads:
                thread.join()

    def kill(self) -> None:
        """Kill the current child now (``SIGKILL`` to its process group); the next request
        goes to a new one."""
        child = self._child
        if child is not None:
            self._retire(child)

    # -- the supervisor's machinery ------------------------------------------------------------

    def _current(self) -> _Child:
        with self._lock:
            return self._current_locked()

    def _current_locked(self) -> _Child:
        if self._closing:
            raise ChildDied(f"{self.name} is stopped")
        if self._unready is not None:
            raise ChildUnready(self._unready.cause, self._unready.error, self._unready.why)
        if self.failure is not None:
            raise ChildUnready(self.failure)
        if self._child is None:  # the last one died or was killed: restart="on_request"
            self._child = self._start_locked()
        return self._child

    def _request(self, child: _Child | None, payload: Any, fds: Sequence[int]) -> Future[Any]:
        """Send ``payload`` (and copies of ``fds``) to ``child`` (None: the current child)."""
        if len(fds) > MAX_FDS:
            raise ValueError(f"a request carries at most {MAX_FDS} file descriptors")
        data = pickle.dumps(payload)
        ident = next(self._ids)
        answer: Future[Any] = Future()
        copies: list[int] = []
        try:
            for fd in fds:
                copies.append(not_for_forks(os.dup(fd)))
            with self._lock:
                if child is None:
                    child = self._current_locked()
                if child.ended is not None:  # ended between its readiness and this request
                    raise ChildDied(child.ended)
                if child.ready.done() and (failed := child.ready.exception()) is not None:
                    raise failed
                child.pending[ident] = answer
                if not child.ready.done():
                    child.queued.append((ident, data, copies))
                    return answer
        except BaseException:
            close_all(copies)
            raise
        self._send(child, ident, data, copies)
        return answer

    def _ready(self, child: _Child) -> Any:
        try:
            return child.ready.result(timeout=self.ready_timeout)
        except FutureTimeout:
            late = self._late or f"{self.name} was not ready within {self.ready_timeout:g} s"
            self._fail_ready(child, late, late)
            return child.ready.result()  # raises: whichever failure came first

    def _start_locked(self) -> _Child:
        """A new child (``self._lock`` held). Raises :class:`ChildUnready` when no process can
        be started (no memory, no file descriptors): not the supervisor's failure for good."""
        try:
            ours, theirs = socket.socketpair()
        except OSError as exc:
            raise ChildUnready(f"{self.name} could not be started: {exc}") from None
        try:
            lifeline, keep = new_lifeline()
        except OSError as exc:
            ours.close()
            theirs.close()
            raise ChildUnready(f"{self.name} could not be started: {exc}") from None
        try:
            process = self._process(theirs.fileno(), lifeline)
        except OSError as exc:
            ours.close()
            cut_lifeline(keep)
            raise ChildUnready(f"{self.name} could not be started: {exc}") from None
        finally:
            theirs.close()
            os.close(lifeline)
        child = _Child(process, ours, keep)
        child.threads = [
            threading.Thread(target=target, args=(child,), name=name, daemon=True)
            for target, name in (
                (self._watch, "rewardrouter-supervisor-watch"),
                (self._read, "rewardrouter-supervisor-read"),
            )
        ]
        started = []
        try:
            for thread in child.threads:
                thread.start()
                started.append(thread)
        except RuntimeError as exc:  # can't start new thread
            child.read.set()  # the watcher need not wait for a reader
            process.kill()
            if started:
                child.exited.wait()
            else:
                process.exited()
            process.cause()  # reaped
            ours.close()
            cut_lifeline(keep)
            raise ChildUnready(f"{self.name} could not be started: {exc}") from None
        self._children.add(child)
        return child

    def _process(self, fd: int, lifeline: int) -> _Process:
        """Start the child's process, serving on ``fd`` and watching ``lifeline``: forked by
        the fork server of ``preload`` where there is one, else a fresh interpreter."""
        args = [fd, lifeline, self._entry]
        if self._preload is not None and forkserver.can_fork():
            status, write = os.pipe()
            not_for_forks(write)  # a fork of this process meanwhile must not hold it open
            try:
                forked = request_fork(
                    ",".join(self._preload),
                    self._preload,
                    run_child,
                    [self._entry],
                    [fd, lifeline],
                    session=True,
                    status=write,
                )
            except (ChildError, OSError, RuntimeError) as exc:  # no fork server: start fresh
                os.close(status)
                why = exc.cause if isinstance(exc, ChildError) else str(exc)
                log.warning("%s: %s; it starts as a fresh interpreter", self.name, why)
            except BaseException:
                os.close(status)
                raise
            else:
                return forkserver.Forked(forked, status)
            finally:
                close_all([write])
        return _Started(start_python(run_child, args, [fd, lifeline], new_session=True))

    def _send(self, child: _Child, ident: int, data: bytes, fds: list[int]) -> None:
        """Send one frame to ``child`` and close ``fds`` (the request's copies)."""
        try:
            with child.send_lock, contextlib.suppress(OSError):  # a dead child: the reader tells
                send_frame(child.sock, ident, data, fds)
        finally:
            close_all(fds)

    def _read(self, child: _Child) -> None:
        """The child's reader thread: send the setup, pass the answers on; when the socket
        ends, reap the child and fail what it did not answer."""
        try:
            self._await_fork(child)
            self._send(child, 0, self._spec, [])
            while True:
                ident, payload, fds = receive(child.sock)
                close_all(fds)  # a child sends none
                if ident == 0:
                    self._on_ready(child, payload)
                else:
                    self._on_answer(child, ident, payload)
        except (OSError, EOFError):
            pass
        except BaseException:  # a defect here must not leave requests waiting forever
            log.exception("%s %s: its reader failed", self.name, child.label)
        finally:
            child.read.set()
            self._ended(child)

    def _await_fork(self, child: _Child) -> None:
        """A forked child is sent its setup once its server's answer is in (until then it dies
        with the server: see :mod:`.forkserver`), or once it is no longer wanted."""
        while not child.process.known(0.2) and not (self._closing or child.retired):
            pass

    def _watch(self, child: _Child) -> None:
        """Wait for the child's exit (its socket may outlive it, held by a process it started):
        kill what is left of its process group, and stop reading its socket if that stays
        open. Only the reader reaps the child, after this."""
        try:
            child.process.exited()
        finally:
            child.exited.set()
        if not child.read.wait(SOCKET_GRACE):
            with contextlib.suppress(OSError):
                child.sock.shutdown(socket.SHUT_RDWR)

    def _on_answer(self, child: _Child, ident: int, payload: bytes) -> None:
        with self._lock:
            answer = child.pending.pop(ident, None)
        if answer is None or answer.done():
            return
        try:
            ok, value = pickle.loads(payload)
        except Exception as exc:
            answer.set_exception(ChildRaised(f"its answer could not be read: {describe(exc)}"))
            return
        if ok:
            answer.set_result(value)
        else:
            answer.set_exception(ChildRaised(value))

    def _on_ready(self, child: _Child, payload: bytes) -> None:
        try:
            kind, value = pickle.loads(payload)
        except Exception as exc:
            kind, value = "failed", f"its setup's message could not be read: {describe(exc)}"
        if kind != "ready":
            error = value if isinstance(value, BaseException) else None
            why = describe(value) if error is not None else str(value)
            self._fail_ready(child, why, f"{self.name} could not start: {why}", error)
            return
        with self._lock:
            if child.ready.done():  # too late: failed at ready_timeout
                return
            child.ready.set_result(value)
            queued, child.queued = child.queued, []
            if child is self._child:
                self.restarting = None
            if queued:  # sent in order, by another thread: this one must go on reading
                child.send_lock.acquire()
        if queued:
            try:
                threading.Thread(
                    target=self._flush,
                    args=(child, queued),
                    name="rewardrouter-supervisor-send",
                    daemon=True,
                ).start()
            except BaseException:
                child.send_lock.release()
                for _, _, fds in queued:
                    close_all(fds)
                raise

    def _flush(self, child: _Child, queued: list[_Queued]) -> None:
        """Send the requests that waited for ``child`` to be ready (its send lock held)."""
        try:
            for ident, data, fds in queued:
                send_frame(child.sock, ident, data, fds)
        except OSError:
            pass  # a dead child: the reader reports
        finally:
            child.send_lock.release()
            for _, _, fds in queued:
                close_all(fds)

    def _fail_ready(
        self, child: _Child, why: str, fresh: str, error: BaseException | None = None
    ) -> None:
        """``child`` cannot get ready (``why``): the supervisor's :attr:`failure` is ``fresh``,
        or, for a child started after another died, says both; a child the supervisor killed,
        or one stopped, fails only what waits for it."""
        with self._lock:
            if child.ready.done():
                return
            sticky = not self._closing and not child.retired
            failed: ChildError
            if not sticky:
                how = "stopped" if self._closing else "killed by its supervisor"
                failed = ChildDied(f"{self.name} {child.label} was {how} before it was ready")
            else:
                if self.restarting is not None:
                    fresh = f"{self.restarting}, and a new one could not be started: {why}"
                failed = ChildUnready(fresh, error, why)
            child.ready.set_exception(failed)
            child.ready.exception()  # retrieved: no "never retrieved" warning
            waiting = list(child.pending.values())
            child.pending.clear()
            for _, _, fds in child.queued:
                close_all(fds)
            child.queued.clear()
            report = sticky and self.failure is None
            if report and isinstance(failed, ChildUnready):
                self.failure, self._unready = fresh, failed
            if child is self._child:
                self.restarting = None
                if not sticky:
                    self._child = None
        self._kill(child)
        for answer in waiting:
            if not answer.done():
                answer.set_exception(failed)
        if report:
            self._notify(Change("failure", fresh))

    def _ended(self, child: _Child) -> None:
        """The child's socket closed: reap it, fail what it did not answer, start the next
        one (``restart="at_once"``)."""
        child.sock.close()
        if not child.exited.wait(self.stop_grace):
            log.warning("%s %s did not exit: killed", self.name, child.label)
            child.process.kill()
            child.exited.wait()
        cause = child.process.cause()
        if self._closing:
            ended = f"{self.name} {child.label} was stopped"
        elif child.retired:
            ended = f"{self.name} {child.label} was killed by its supervisor"
        elif child.process.pid is None:  # its fork server could not fork it
            ended = f"{self.name} could not be started: {cause}"
        else:
            ended = f"{self.name} {child.label} died ({cause})"
        if not child.ready.done():  # the failure is set before the child is let go
            if child.process.pid is None:
                self._fail_ready(child, cause, ended)
            else:
                self._fail_ready(
                    child, f"it died ({cause}) while starting", f"{ended} while starting"
                )
        died = child.ready.exception() is None
        restart_failed: str | None = None
        with self._lock:
            child.ended = ended
            if self._child is child:
                self._child = None
            waiting = list(child.pending.values())
            child.pending.clear()
            self._children.discard(child)
            cut_lifeline(child.lifeline)
            at_once = self._restart == "at_once" and self._child is None
            if died and at_once and not self._closing and self.failure is None:
                self.restarting = ended
                try:
                    self._child = self._start_locked()
                except ChildUnready as exc:
                    self.failure = f"{ended}, and a new one could not be started: {exc.why}"
                    self.restarting = None
                    restart_failed = self.failure
        for answer in waiting:
            if not answer.done():
                answer.set_exception(ChildDied(ended))
        if died and not self._closing and not child.retired:
            self._notify(Change("died", ended, len(waiting)))
        if restart_failed is not None:
            self._notify(Change("failure", restart_failed))

    def _retire(self, child: _Child) -> None:
        """Kill ``child``; requests from now on go to the next one (its reader thread reports
        the end and fails what ``child`` did not answer)."""
        with self._lock:
            child.retired = True
            if self._child is child:
                self._child = None
                self.restarting = None
        self._kill(child)

    @staticmethod
    def _kill(child: _Child) -> None:
        if not child.exited.is_set():  # not reaped before it is: the number is its own
            child.process.kill()

    def _notify(self, change: Change) -> None:
        if self._on_change is None:
            return
        try:
            self._on_change(change)
        except Exception:  # the owner's callback: logged, never the end of a supervisor thread
            log.exception("%s: on_change failed on %s", self.name, change)


# -- the fork servers of this process ------------------------------------------------------------

#: Seconds a fork server may take to answer a fork request: its own start, importing the
#: modules (torch, a pool's reward modules), forking. Past it, the server is killed, what it
#: had not answered fails, and the next request starts another.
FORK_SECONDS = 300.0

_FORK_SERVERS: dict[str, Supervisor] = {}
_FORK_SERVERS_LOCK = threading.Lock()
_FORK_SERVERS_OWNER = [os.getpid()]  # a process forked from this one starts servers of its own


def fork_server(key: str) -> Supervisor:
    """This process's fork server (:mod:`.forkserver`) for ``key``: started on first use,
    started again by the next request after it died or could not start. It lives as long as
    this process (a server of torch holds what importing torch took)."""
    with _FORK_SERVERS_LOCK:
        if _FORK_SERVERS_OWNER[0] != os.getpid():  # inherited through a fork: the parent's
            _FORK_SERVERS.clear()
            _FORK_SERVERS_OWNER[0] = os.getpid()
        found = _FORK_SERVERS.get(key)
        failed = found if found is not None and found.failure is not None else None
        if found is None or found.stopped or failed is not None:
            found = _FORK_SERVERS[key] = Supervisor(
                f"the fork server {key!r}", forkserver.serve_forks, None
            )
    if failed is not None:  # stopped out of the lock: stopping fails its requests, whose
        failed.stop()  # callbacks may ask for a server again
    return found


def request_fork(
    key: str,
    modules: Sequence[str],
    entry: Callable[..., Any],
    args: Sequence[Any],
    fds: Sequence[int],
    *,
    session: bool,
    status: int | None = None,
) -> Future[int]:
    """Ask the fork server ``key`` to import ``modules`` and fork a child that calls
    ``entry(*fds, *args)`` (the child's numbers of ``fds``, in that order). The server takes
    this process's ``sys.path``, current folder, environment and umask before it imports, and
    the child this process's standard output and error: it starts where a fresh interpreter
    started now would (not taken: resource limits and CPU affinity, the server's since it
    started). The future holds the child's pid, or the :class:`ChildError` of a server that
    could not answer within :data:`FORK_SECONDS`. A server that died before it answered (it
    may have died before the request reached it; a child it forked dies with it, see
    :mod:`.forkserver`) is asked again once, as the next one: only two deaths in a row fail the
    request, or one past :data:`FORK_SECONDS`. Raises :class:`ChildError` when no server can
    answer, ``OSError`` when a descriptor cannot be copied. The child leads a session of its
    own (``session``), else a process group. With ``status`` (the write end of a pipe), the
    server writes the child's exit code there when it reaps the child. The caller may close
    its descriptors at once: copies are kept until the answer."""
    try:
        cwd: str | None = os.getcwd()
    except OSError:  # the folder was removed: the server stays in the one it is in
        cwd = None
    stdio = [n for n in (1, 2) if _is_open(n)]
    place = (sys.path, cwd, dict(os.environ), _umask(), stdio)
    request = (place, list(modules), f"{entry.__module__}:{entry.__qualname__}", list(args),
               session, status is not None)  # fmt: skip
    held: list[int] = []  # kept for a second request, dropped by forks of this process
    try:
        for fd in [*fds, *stdio, *([] if status is None else [status])]:
            held.append(not_for_forks(os.dup(fd)))
        outcome: Future[int] = Future()
        outcome.add_done_callback(lambda _: close_all(held))
        _ask(key, request, held, outcome, again=True)
    except BaseException:
        close_all(held)
        raise
    return outcome


def _ask(key: str, request: Any, fds: list[int], outcome: Future[int], *, again: bool) -> None:
    """Send ``request`` to the fork server ``key``; its answer settles ``outcome``, or, when
    the server died first and ``again``, a second request does."""
    server = fork_server(key)
    overdue = _Overdue(key, server)
    try:
        answer = server.request(request, fds=fds)
    except ChildDied:  # stopped by another thread, or its death seen just now
        overdue.cancel()
        if not again:
            raise
        _ask(key, request, fds, outcome, again=False)
        return
    except BaseException:
        overdue.cancel()
        raise
    overdue.watch(answer)

    def settle(answer: Future[int]) -> None:
        failed = answer.exception()
        if isinstance(failed, ChildDied) and again and not overdue.fired:
            try:
                _ask(key, request, fds, outcome, again=False)
            except BaseException as exc:
                outcome.set_exception(exc)
        elif failed is not None:
            outcome.set_exception(failed)
        else:
            outcome.set_result(answer.result())

    answer.add_done_callback(settle)


#: When each fork server last answered (``time.monotonic()``), by key.
_ANSWERED: dict[str, float] = {}


class _Overdue:
    """Kills a fork server that answers nothing for :data:`FORK_SECONDS` while a request of
    its waits: time a request spends queued behind another's imports does not count, for the
    server answered that one meanwhile. The timer is started before the request is sent, so
    that a process out of threads fails the request unsent."""

    def __init__(self, key: str, server: Supervisor) -> None:
        self.key, self.server, self.pid = key, server, server.pid
        self.answer: Future[int] | None = None
        self.fired = False  # it killed the server: the request is not asked again
        self._timer = self._start(FORK_SECONDS)

    def _start(self, seconds: float) -> threading.Timer:
        timer = threading.Timer(seconds, self._check)
        timer.daemon = True
        timer.start()
        return timer

    def cancel(self) -> None:
        self._timer.cancel()

    def watch(self, answer: Future[int]) -> None:
        self.answer = answer
        answer.add_done_callback(self._answered)

    def _answered(self, answer: Future[int]) -> None:
        self._timer.cancel()
        _ANSWERED[self.key] = time.monotonic()

    def _check(self) -> None:
        answer = self.answer
        if answer is None or answer.done():
            return
        quiet = time.monotonic() - _ANSWERED.get(self.key, 0.0)
        if quiet < FORK_SECONDS:  # it answered others meanwhile: this one waited its turn
            self._timer = self._start(FORK_SECONDS - quiet)
            return
        if self.server.pid == self.pid or self.pid is None:  # the one it was sent to
            log.warning("%s answered nothing in %g s: killed", self.server.name, FORK_SECONDS)
            self.fired = True
            self.server.kill()


def _umask() -> int:
    """This process's umask, read without changing it (which another thread would see)."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status") as status:
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)  # an older kernel: set and restored at once
    os.umask(mask)
    return mask


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True
