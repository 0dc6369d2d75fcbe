"""How the workers of a :class:`~rewardrouter.execute.process.pool.ProcessPool` come to be.

- :class:`TemplateLauncher` (Linux): workers are forked from a warm template process
  (:mod:`~rewardrouter.execute.process.template`); a replacement costs a fork, not a cold start;
- :class:`ContextLauncher` (elsewhere): each worker is started by the multiprocessing context.

Either way a worker is a :class:`Launched`: its pid, its pipe, its shared progress record. A
worker's death shows as end-of-file on its pipe; :meth:`Launcher.reap` then gives its exit code.
The template (or, without one, each worker) starts with ``forkserver`` where the platform has it
— preloading the reward modules, so a template starts in a moment — else ``spawn``; never plain
``fork`` of the caller, which would copy a trainer's threads and CUDA state.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from multiprocessing import reduction
from multiprocessing.connection import Connection
from multiprocessing.context import BaseContext
from typing import Any, Literal, Protocol

from rewardrouter.execute.process.template import run_template
from rewardrouter.execute.process.worker import TASK, progress_slot, serve

StartMethod = Literal["auto", "forkserver", "spawn"]

#: Seconds a template may take to fork a worker (it may be finishing a warm-up call).
FORK_SECONDS = 60.0
#: Successful calls per function replayed in the worker template, so new workers start warm.
WARM_CALLS = 8


def start_context(method: StartMethod, modules: Sequence[str]) -> BaseContext:
    """The multiprocessing context for ``method``; a forkserver preloads ``modules``."""
    if method == "auto":
        method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    context = mp.get_context(method)
    if method == "forkserver":
        # Only the first pool of a process starts the server; later calls change nothing.
        context.set_forkserver_preload(["__main__", serve.__module__, *modules])
    return context


def exit_text(code: int | None) -> str:
    """``exit code 1``, ``killed by SIGSEGV``: how a worker ended."""
    if code is None:
        return "exit status unknown"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


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
        """A call of job ``blob`` (function ``key``) on ``item()`` succeeded: future workers
        may start warmed by it."""

    def close(self) -> None:
        """Stop what the launcher runs (the pool has stopped the workers)."""


class ContextLauncher:
    """Every worker started on its own by a multiprocessing context (no fork available)."""

    def __init__(self, context: BaseContext, modules: Sequence[str], flush_seconds: float) -> None:
        self._context = context
        self._modules = tuple(modules)
        self._flush_seconds = flush_seconds

    def start(self) -> Launched:
        parent, child = self._context.Pipe()
        progress = self._context.RawArray("d", 4)
        progress[TASK] = -1.0
        process = self._context.Process(  # type: ignore[attr-defined]
            target=serve,
            args=(child, progress, self._modules, self._flush_seconds),
            name="rewardrouter-worker",
            daemon=True,
        )
        process.start()
        child.close()
        return Launched(process.pid, parent, progress, process)

    def kill(self, worker: Launched) -> None:
        worker.handle.kill()

    def reap(self, worker: Launched, wait: float) -> int | None:
        if worker.exitcode is None:
            worker.handle.join(wait)
            worker.exitcode = worker.handle.exitcode
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


@dataclass(eq=False)
class _Template:
    process: Any
    conn: Connection
    exits: dict[int, int] = field(default_factory=dict)  # reaped children: pid -> exit code
    alive: bool = True
    tainted: bool = False


class TemplateLauncher:
    """Workers forked from a warm template process (see :mod:`~rewardrouter.execute.process.template`)."""

    def __init__(
        self, context: BaseContext, modules: Sequence[str], flush_seconds: float, slots: int
    ) -> None:
        self._context = context
        self._modules = tuple(modules)
        self._flush_seconds = flush_seconds
        self._progress = context.RawArray("d", 4 * slots)
        self._free = list(range(slots))
        self._templates: list[_Template] = []
        self._warming = True
        self._warm_calls: list[tuple[bytes, Any]] = []  # replayed in every new template
        self._warmed: Counter[Hashable] = Counter()

    def start(self) -> Launched:
        for attempt in range(3):
            template = self._template()
            if not self._free:
                raise RuntimeError("every worker progress record is in use")
            slot = self._free.pop()
            progress = progress_slot(self._progress, slot)
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
        parent, child = self._context.Pipe()
        process = self._context.Process(  # type: ignore[attr-defined]
            target=run_template,
            args=(child, self._progress, self._modules, self._flush_seconds),
            name="rewardrouter-template",
            daemon=True,
        )
        process.start()
        child.close()
        template = _Template(process, parent)
        self._templates.append(template)
        if self._warming:
            for blob, item in self._warm_calls:
                template.conn.send(("warm", blob, item))
        return template

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
        with contextlib.suppress(Exception):
            template.process.kill()
            template.process.join(5)

    def kill(self, worker: Launched) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(worker.pid, signal.SIGKILL)

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
        if not self._warming or self._warmed[key] >= WARM_CALLS:
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
            template.process.join(5)
            if template.process.is_alive():
                template.process.kill()
                template.process.join()
            template.conn.close()
        self._templates.clear()


def launcher_for(
    method: StartMethod, modules: Sequence[str], flush_seconds: float, workers: int
) -> Launcher:
    """The launcher this platform supports best."""
    context = start_context(method, modules)
    if sys.platform == "linux" and hasattr(os, "fork"):
        return TemplateLauncher(context, modules, flush_seconds, slots=2 * workers + 2)
    return ContextLauncher(context, modules, flush_seconds)
