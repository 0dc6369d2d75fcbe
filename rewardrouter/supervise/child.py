"""The supervised child's side (:mod:`.supervisor`): build the handler from the spec the
supervisor sends, say ``ready`` (or ``failed``), answer requests until the socket closes, and
kill its own process group when the supervising process is gone (the lifeline closed).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import os
import pickle
import signal
import socket
import threading
from typing import Any

from rewardrouter.supervise.boot import close_all, cover, die_with_parent
from rewardrouter.supervise.frames import describe, receive, send_frame


def run_child(fd: int, lifeline: int, entry: str) -> None:
    """The child: watch the lifeline, build the handler from the spec the supervisor sends, say
    ``ready`` (or ``failed``), then answer requests until the socket closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C: the supervisor decides when to stop
    # The watcher blocks SIGCHLD, so that a handler's own SIGCHLD handler (a fork server's)
    # interrupts the main thread's wait for requests.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    try:
        threading.Thread(target=_watch_lifeline, args=(lifeline,), daemon=True).start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    if hasattr(os, "register_at_fork"):  # a process a handler forks holds neither descriptor
        os.register_at_fork(after_in_child=lambda: cover((fd, lifeline)))
    sock = socket.socket(fileno=fd)
    try:
        _, spec, fds = receive(sock)
        close_all(fds)
    except (EOFError, OSError):  # stopped before it was sent
        return
    die_with_parent(0)  # forked: its supervisor has its pid now, so it may outlive its server
    module, _, name = entry.partition(":")
    try:
        handler = getattr(importlib.import_module(module), name)(pickle.loads(spec))
    except BaseException as exc:  # everything a setup can raise is reported, not a traceback
        _reply(sock, threading.Lock(), 0, ("failed", _sendable(exc)))
        return
    try:
        _reply(sock, threading.Lock(), 0, ("ready", getattr(handler, "info", None)))
        if inspect.iscoroutinefunction(type(handler).__call__):
            import asyncio

            asyncio.run(_answer_async(handler, sock))
        else:
            _answer_in_turn(handler, sock)
    finally:
        getattr(handler, "close", lambda: None)()
        sock.close()


def _watch_lifeline(lifeline: int) -> None:
    """Kill this process's group when the supervisor's process is gone (the lifeline closed)."""
    while os.read(lifeline, 512):
        pass
    os.killpg(0, signal.SIGKILL)


def _answer_in_turn(handler: Any, sock: socket.socket) -> None:
    lock = threading.Lock()
    while True:
        try:
            ident, payload, fds = receive(sock)
        except (EOFError, OSError):
            return
        _reply(sock, lock, ident, _answered(handler, payload, fds))


async def _answer_async(handler: Any, sock: socket.socket) -> None:
    import asyncio

    loop = asyncio.get_running_loop()
    lock = threading.Lock()
    tasks: set[asyncio.Task[None]] = set()
    stopping = False

    async def answer(ident: int, payload: bytes, fds: list[int]) -> None:
        try:
            reply: tuple[bool, Any] = (True, await handler(*_arguments(payload, fds)))
        except asyncio.CancelledError:
            if stopping:
                raise
            reply = (False, "CancelledError: the handler was cancelled")
        except Exception as exc:
            reply = (False, describe(exc))
        await loop.run_in_executor(None, _reply, sock, lock, ident, reply)

    while True:
        try:
            ident, payload, fds = await loop.run_in_executor(None, receive, sock)
        except (EOFError, OSError):
            break
        task = asyncio.create_task(answer(ident, payload, fds))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    stopping = True
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def _arguments(payload: bytes, fds: list[int]) -> tuple[Any, ...]:
    """What the handler is called with: the request, and its file descriptors if it has any
    (the handler's from then on)."""
    try:
        request = pickle.loads(payload)
    except BaseException:
        close_all(fds)
        raise
    return (request, fds) if fds else (request,)


def _answered(handler: Any, payload: bytes, fds: list[int]) -> tuple[bool, Any]:
    try:
        return True, handler(*_arguments(payload, fds))
    except Exception as exc:  # this request fails, not the child
        return False, describe(exc)


def _reply(sock: socket.socket, lock: threading.Lock, ident: int, value: Any) -> None:
    try:
        data = pickle.dumps(value)
    except Exception as exc:  # an answer that cannot be pickled fails its request alone
        kind = "failed" if ident == 0 else False
        data = pickle.dumps((kind, f"its answer could not be sent: {describe(exc)}"))
    with lock, contextlib.suppress(OSError):  # the supervisor stopped listening
        send_frame(sock, ident, data)


def _sendable(exc: BaseException) -> BaseException | str:
    """``exc`` if it comes back from pickling as it was, else its message."""
    try:
        same = str(pickle.loads(pickle.dumps(exc))) == str(exc)
    except Exception:
        same = False
    return exc if same else describe(exc)


# -- the doctest's child -------------------------------------------------------------------------


class _Echo:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.info = {"pid": os.getpid()}

    def __call__(self, text: str) -> str:
        return self.prefix + text


def echo(prefix: str) -> _Echo:
    """A setup for the module's example: answers each text with ``prefix`` before it."""
    return _Echo(prefix)
