"""Setups of supervised children for tests/supervise: each builds a handler from its spec (a
dict) in the child process."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import importlib
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rewardrouter.errors import ConfigError, Problem


class Unshowable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message")


class InTurn:
    """Answers one request at a time: ``("echo", x)``, ``("sleep", s)``, ``("exit", code)``,
    ``("segfault", None)``, ``("raise", text)``, ``("pid", None)``."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.closed_marker = spec.get("closed_marker")
        self.info = {"pid": os.getpid()}

    def __call__(self, request: tuple[str, Any], fds: list[int] | None = None) -> Any:
        what, value = request
        if fds is not None:  # ("read", None) with a pipe's read end: what was written to it
            with os.fdopen(fds[0], "rb") as passed:
                return [what, passed.read().decode(), len(fds)]
        if what == "sleep":
            time.sleep(value)
        elif what == "exit":
            os._exit(value)
        elif what == "segfault":
            ctypes.string_at(0)
        elif what == "raise":
            raise ValueError(value)
        elif what == "raise_unshowable":  # an exception whose own message raises
            raise Unshowable()
        elif what == "pid":
            return os.getpid()
        elif what == "place":  # the folder and an environment variable the child runs with
            return [os.getcwd(), os.environ.get(value)]
        elif what == "module_value":  # VALUE of a module (imported by a fork server, maybe)
            return importlib.import_module(value).VALUE
        elif what == "print_and_exit_hook":  # unflushed output, and a file written at exit
            text, marker = value
            sys.stdout.write(text)
            atexit.register(Path(marker).write_text, "written at exit")
            return None
        elif what == "unpicklable":  # an answer the child cannot send
            return lambda: value
        elif what == "foreign":  # an answer of a module only the child imports (from `value`)
            sys.path.insert(0, value)
            return importlib.import_module("rr_only_here").Thing()
        elif what == "hold_socket":  # a process out of the group that holds the socket open
            sockets = []
            for fd in os.listdir("/proc/self/fd"):
                with contextlib.suppress(OSError):  # the listing's own descriptor is gone
                    if os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                        sockets.append(int(fd))
            holder = subprocess.Popen(
                ["sleep", "60"], pass_fds=sockets, start_new_session=True, close_fds=True
            )
            return holder.pid
        elif (
            what == "fork_sleeper"
        ):  # a forked process in the child's group (multiprocessing's way)
            pid = os.fork()
            if pid == 0:
                time.sleep(60)
                os._exit(0)
            return pid
        return value

    def close(self) -> None:
        if self.closed_marker:
            Path(self.closed_marker).write_text("closed")


class Concurrent(InTurn):
    """Answers many requests at once: ``("sleep", s)`` sleeps without holding the others."""

    async def __call__(self, request: tuple[str, Any]) -> Any:  # type: ignore[override]
        what, value = request
        if what == "sleep":
            await asyncio.sleep(value)
            return value
        return super().__call__(request)


def in_turn(spec: dict[str, Any]) -> InTurn:
    """The setup: ``spec["setup"]`` says how it goes: ``ok``, ``raise`` (a ConfigError),
    ``exit`` (the process ends), ``hang`` (never ready); ``fail_after`` (a path): ``ok`` the
    first time, ``raise`` once the file exists (a restart that cannot start); ``hang_after``
    and ``hang_first`` likewise with ``hang``."""
    how = spec.get("setup", "ok")
    marker = spec.get("fail_after")
    if marker is not None:
        how = "raise" if Path(marker).exists() else "ok"
        Path(marker).touch()
    marker = spec.get("hang_after")  # ok the first time, then never ready
    if marker is not None:
        how = "hang" if Path(marker).exists() else "ok"
        Path(marker).touch()
    marker = spec.get("hang_first")  # never ready the first time, then ok
    if marker is not None:
        how = "ok" if Path(marker).exists() else "hang"
        Path(marker).touch()
    if how == "raise":
        raise ConfigError([Problem("routes.a", "found nothing", "write something")], "x.yaml")
    if how == "exit":
        os._exit(3)
    if how == "hang":
        time.sleep(3600)
    if spec.get("stubborn"):  # never stops by itself: the supervisor must kill it
        import signal

        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        return Stubborn(spec)
    return Concurrent(spec) if spec.get("concurrent") else InTurn(spec)


class Stubborn(InTurn):
    def close(self) -> None:
        time.sleep(3600)


def exit_when_closed(fd: int, code: int) -> None:
    """A fork server's child for tests/supervise: exit with ``code`` once a byte can be read
    from ``fd``."""
    os.read(fd, 1)
    os._exit(code)
