"""How the workers of a :class:`~rewardrouter.execute.process.pool.ProcessPool` come to be.

- :class:`TemplateLauncher` (Linux): workers are forked from a warm template process
  (:mod:`~rewardrouter.execute.process.template`); a replacement costs a fork, not a cold start.
  The template is forked by the process's ``pools`` fork server
  (:mod:`~rewardrouter.supervise.forkserver`, ``start_method: forkserver``, the default), which
  imports each module of every pool once, or started as a fresh interpreter (``spawn``);
- :class:`FreshLauncher` (elsewhere): each worker is a fresh interpreter.

Every process is started by :mod:`~rewardrouter.supervise.boot`, never by
multiprocessing's ``spawn`` or ``forkserver``, which run the caller's script again in each child
(a training script without ``if __name__ == "__main__":`` would start over there).

Either way a worker is a :class:`Launched`: its pid, its pipe, its shared progress record. A
worker's death shows as end-of-file on its pipe; :meth:`Launcher.reap` then gives its exit code.
Each worker leads a process group of its own, and :meth:`Launcher.kill` kills the group: what a
reward function started (a compiler, a shell, a server) dies with the worker at a deadline.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from multiprocessing import reduction
from multiprocessing.connection import Connection
from typing import Any, Literal, Protocol

from rewardrouter.execute.process.shared import SharedDoubles
from rewardrouter.execute.process.template import run_fresh_template
from rewardrouter.execute.process.worker import TASK, serve_fresh
from rewardrouter.supervise.boot import kill_group, readable, start_python
from rewardrouter.supervise.supervisor import ChildError, request_fork

StartMethod = Literal["auto", "forkserver", "spawn"]

#: Seconds a template may take to fork a worker (it may be finishing a warm-up call).
FORK_SECONDS = 60.0


@dataclass(eq=False)
class Launched:
    """A started worker process."""

    pid: int
    conn: Connection
    progress: Any  # four shared doubles: task id, position, start time, limit
    handle: Any  # the launcher's own record of the worker
    exitcode: int | None = None  # once reaped


class Launcher(Protocol):
    def start(self) -> Launched:
        """A new worker (it sends READY when it can take tasks)."""

    def kill(self, worker: Launched) -> None:
        """SIGKILL the worker (nothing if it is gone)."""

    def reap(self, worker: Launched, wait: float) -> int | None:
        """Wait up to ``wait`` seconds for the worker to be gone; its exit code (None: unknown)."""

    def release(self, worker: Launched) -> None:
        """The pool is done with the (reaped) worker and its progress record."""

    def waitables(self) -> list[Any]:
        """Objects the pool's wait includes for the launcher (see :meth:`service`)."""

    def service(self, ready: Any) -> None:
        """One of :meth:`waitables` is ready."""

    def warm(self, key: Hashable, blob: bytes, item: Callable[[], Any]) -> None:
        """A call of job ``blob`` (function ``key``) on ``item()`` succeeded: the launcher may
        call it again, on the same input, so that future workers start warm."""

    def close(self) -> None:
        """Stop what the launcher runs (the pool has stopped the workers)."""


class FreshLauncher:
    """Every worker a fresh interpreter of its own (where the template cannot fork)."""

    def __init__(self, modules: Sequence[str], flush_seconds: float) -> None:
        self._modules = list(modules)
        self._flush_seconds = flush_seconds

    def start(self) -> Launched:
        ours, theirs = socket.socketpair()
        shared = SharedDoubles(4)
        progress = shared.view(0, 4)
        progress[TASK] = -1.0
        fds = [theirs.fileno(), shared.fd]
        try:
            process = start_python(serve_fresh, [*fds, self._modules, self._flush_seconds], fds)
        finally:
            theirs.close()
            os.close(shared.fd)
        return Launched(process.pid, Connection(ours.detach()), progress, process)

    def kill(self, worker: Launched) -> None:
        kill_group(worker.pid)

    def reap(self, worker: Launched, wait: float) -> int | None:
        if worker.exitcode is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                worker.exitcode = worker.handle.wait(wait)
                kill_group(worker.pid)  # what it left in its group
        return worker.exitcode

    def release(self, worker: Launched) -> None:
        worker.conn.close()

    def waitables(self) -> list[Any]:
        return []

    def service(self, ready: Any) -> None:
        pass

    def warm(self, key: Hashable, blob: bytes, item: Callable[[], Any]) -> None:
        pass

    def close(self) -> None:
        pass


class _Process:
    """A template process: started here (``popen``), or forked by the fork server (followed
    through a pidfd, which no recycled pid can fool)."""

    def __init__(self, pid: int, popen: subprocess.Popen[bytes] | None = None) -> None:
        self.pid = pid
        self._popen = popen
        self._pidfd: int | None = None
        if popen is None:
            with contextlib.suppress(AttributeError, OSError):  # Linux >= 5.3
                self._pidfd = os.pidfd_open(pid)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if self._popen is not None:
                self._popen.kill()
            elif self._pidfd is not None:
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            else:
                os.kill(self.pid, signal.SIGKILL)

    def join(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the process to end; whether it has."""
        if self._popen is not None:
            try:
                self._popen.wait(timeout)
            except subprocess.TimeoutExpired:
                return False
            return True
        if self._pidfd is not None:
            return readable(self._pidfd, timeout)
        deadline = time.monotonic() + timeout
        while True:
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)

    def close(self) -> None:
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None


@dataclass(eq=False)
class _Template:
    process: _Process
    conn: Connection
    exits: dict[int, int] = field(default_factory=dict)  # reaped children: pid -> exit code
    alive: bool = True
    tainted: bool = False


class TemplateLauncher:
    """Workers forked from a warm template process (see :mod:`~rewardrouter.execute.process.template`).

    The template replays up to ``warm_calls`` calls per function that succeeded in a worker
    (``executors.process.warm_calls``): a second call on an input already scored, side effects
    included. With 0 it never calls a reward function.
    """

    def __init__(
        self,
        modules: Sequence[str],
        flush_seconds: float,
        slots: int,
        *,
        warm_calls: int,
        fork_server: bool = True,
    ) -> None:
        self._modules = list(modules)
        self._flush_seconds = flush_seconds
        self._fork_server = fork_server
        self._progress = SharedDoubles(4 * slots)
        self._free = list(range(slots))
        self._templates: list[_Template] = []
        self._warm_limit = warm_calls
        self._warming = warm_calls > 0
        self._warm_calls: list[tuple[bytes, Any]] = []  # replayed in every new template
        self._warmed: Counter[Hashable] = Counter()

    def start(self) -> Launched:
        for attempt in range(3):
            template = self._template()
            if not self._free:
                raise RuntimeError("every worker progress record is in use")
            slot = self._free.pop()
            progress = self._progress.view(4 * slot, 4)
            progress[TASK] = -1.0
            try:
                template.conn.send(("fork", slot))
                pid = self._forked(template, slot)
                if pid is not None:
                    fd = reduction.recv_handle(template.conn)
                    return Launched(pid, Connection(fd), progress, (template, slot))
            except (OSError, EOFError, TimeoutError):
                self._retire(template)
                if attempt == 2:
                    raise
            self._free.append(slot)
        raise RuntimeError("no worker template would fork a worker")

    def _template(self) -> _Template:
        current = self._templates[-1] if self._templates else None
        if current is not None and current.alive and not current.tainted:
            return current
        ours, theirs = socket.socketpair()
        try:
            process = self._start_template(theirs.fileno())
        finally:
            theirs.close()
        template = _Template(process, Connection(ours.detach()))
        self._templates.append(template)
        if self._warming:
            for blob, item in self._warm_calls:
                template.conn.send(("warm", blob, item))
        return template

    def _start_template(self, fd: int) -> _Process:
        modules, flush, progress = self._modules, self._flush_seconds, self._progress
        if self._fork_server:
            return _Process(self._fork_template(fd))
        args = [fd, progress.fd, progress.count, modules, flush]
        popen = start_python(run_fresh_template, args, [fd, progress.fd])
        return _Process(popen.pid, popen)

    def _fork_template(self, fd: int) -> int:
        """The pid of a template forked by the ``pools`` fork server, serving on ``fd`` (the
        request is asked again of a new server if one died, and bounded: ``FORK_SECONDS``)."""
        progress = self._progress
        try:
            return request_fork(
                "pools",
                self._modules,
                run_fresh_template,
                [progress.count, self._modules, self._flush_seconds],
                [fd, progress.fd],
                session=False,
            ).result()
        except ChildError as exc:
            raise OSError(f"the fork server could not fork a worker template: {exc}") from None

    def _forked(self, template: _Template, slot: int) -> int | None:
        """The pid of the worker forked into ``slot``; None if the template refused (tainted)."""
        deadline = time.monotonic() + FORK_SECONDS
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not template.conn.poll(left):
                raise TimeoutError(f"the worker template did not fork within {FORK_SECONDS:g} s")
            message = template.conn.recv()
            if message[0] == "forked" and message[1] == slot:
                return int(message[2])
            self._note(template, message)
            if template.tainted:
                return None

    def _note(self, template: _Template, message: Any) -> None:
        if message[0] == "exited":
            template.exits[message[1]] = message[2]
        elif message[0] == "tainted":
            template.tainted = True
            self._warming = False  # warm-up calls start threads: forking after them is unsafe

    def _retire(self, template: _Template) -> None:
        template.alive = False
        template.process.kill()
        template.process.join(5)
        template.process.close()

    def kill(self, worker: Launched) -> None:
        kill_group(worker.pid)

    def reap(self, worker: Launched, wait: float) -> int | None:
        template = worker.handle[0]
        deadline = time.monotonic() + wait
        while worker.exitcode is None and template.alive:
            if worker.pid in template.exits:
                worker.exitcode = template.exits.pop(worker.pid)
                break
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if template.conn.poll(left):
                self.service(template.conn)
        return worker.exitcode

    def release(self, worker: Launched) -> None:
        worker.conn.close()
        slot = worker.handle[1]
        if slot not in self._free:
            self._free.append(slot)

    def waitables(self) -> list[Any]:
        return [t.conn for t in self._templates if t.alive]

    def service(self, ready: Any) -> None:
        template = next(t for t in self._templates if t.conn is ready)
        try:
            while template.alive and template.conn.poll():
                self._note(template, template.conn.recv())
        except (EOFError, OSError):  # the template died; its workers die with it
            self._retire(template)

    def warm(self, key: Hashable, blob: bytes, item: Callable[[], Any]) -> None:
        if not self._warming or self._warmed[key] >= self._warm_limit:
            return
        self._warmed[key] += 1
        self._warm_calls.append((blob, item()))
        if self._templates and self._templates[-1].alive:
            with contextlib.suppress(OSError):
                self._templates[-1].conn.send(("warm", *self._warm_calls[-1]))

    def close(self) -> None:
        for template in self._templates:
            with contextlib.suppress(OSError):
                template.conn.send(None)
        for template in self._templates:
            if not template.process.join(5):
                template.process.kill()
                template.process.join(5)
            template.process.close()
            template.conn.close()
        self._templates.clear()


def launcher_for(
    method: StartMethod,
    modules: Sequence[str],
    flush_seconds: float,
    workers: int,
    *,
    warm_calls: int,
) -> Launcher:
    """The launcher this platform supports best: workers forked from a template on Linux (the
    template forked by the fork server, or with ``spawn`` started fresh, and warmed by up to
    ``warm_calls`` replayed calls per function), else fresh workers."""
    if sys.platform == "linux" and hasattr(os, "fork"):
        return TemplateLauncher(
            modules,
            flush_seconds,
            slots=2 * workers + 2,
            warm_calls=warm_calls,
            fork_server=method != "spawn",
        )
    return FreshLauncher(modules, flush_seconds)
