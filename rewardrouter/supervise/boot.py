"""Fresh Python interpreters, started without the caller's script, and the words for how one
ended.

multiprocessing's ``spawn`` and ``forkserver`` prepare each child by running the caller's main
script again (as ``__mp_main__``): a script without ``if __name__ == "__main__":`` — as a TRL or
verl launch script usually is — starts over from the top in every child, compiles a router and
starts a pool of its own there. So every process rewardrouter starts is started here instead:
``python -c`` with a bootstrap that restores the caller's ``sys.path``, imports an entry point by
name and calls it with the arguments it was given and the file descriptors passed to it. The
caller's script is never imported in a child; a reward function must live in a module (the
compiler refuses one defined in ``__main__`` for executors that ship functions).
:func:`start_script` starts another interpreter (one without rewardrouter) the same way.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

#: The bootstrap of a fresh interpreter: ``sys.argv[1]`` is the JSON of :func:`start_python`.
_BOOT = (
    "import json, sys; spec = json.loads(sys.argv[1]); sys.path[:] = spec['path']; "
    "from rewardrouter.supervise.boot import enter; enter(spec)"
)


def start_python(
    entry: Callable[..., Any],
    args: Sequence[Any],
    fds: Sequence[int],
    *,
    new_session: bool = False,
) -> subprocess.Popen[bytes]:
    """A fresh interpreter that calls ``entry(*args)``; it inherits ``fds`` (same numbers).

    ``entry`` is a top-level function, imported by name; ``args`` must be JSON. The child gets
    this process's ``sys.path``, environment, interpreter flags and standard streams; with
    ``new_session`` it leads a session (and a process group) of its own, out of the reach of
    a terminal's Ctrl-C, which :func:`kill_group` ends whole.
    """
    spec = {
        "path": sys.path,
        "entry": f"{entry.__module__}:{entry.__qualname__}",
        "args": list(args),
    }
    flags: list[str] = subprocess._args_from_interpreter_flags()  # type: ignore[attr-defined]
    return subprocess.Popen(
        [sys.executable, *flags, "-c", _BOOT, json.dumps(spec)],
        stdin=subprocess.DEVNULL,
        pass_fds=tuple(fds),
        close_fds=True,
        start_new_session=new_session,
    )


def enter(spec: dict[str, Any]) -> None:
    """The bootstrap's second half, in the fresh interpreter: call the entry point."""
    module, _, name = spec["entry"].partition(":")
    getattr(importlib.import_module(module), name)(*spec["args"])


def exit_cause(code: int | None) -> str:
    """How a child process ended, in the words every supervisor of rewardrouter uses (the
    process executor's workers, the scoring process of ``serve``, a local reward model's
    worker): what goes in ``"... died (<cause>)"``.

    >>> exit_cause(3)
    'exit status 3'
    >>> exit_cause(-11)
    'killed by SIGSEGV, signal 11'
    >>> exit_cause(-9)
    'killed by SIGKILL, signal 9: the out-of-memory killer, or a kill -9'
    """
    if code is None:
        return "exit status unknown"
    if code >= 0:
        return f"exit status {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        return f"killed by signal {-code}"
    why = ": the out-of-memory killer, or a kill -9" if name == "SIGKILL" else ""
    return f"killed by {name}, signal {-code}{why}"


def die_with_parent(signum: int = signal.SIGKILL) -> None:
    """On Linux, have the kernel send ``signum`` to this process when its parent exits (even by
    ``SIGKILL``). Reliable only when the parent is single-threaded: the kernel means the parent
    *thread*, and a parent's thread that exits sends the signal too."""
    if sys.platform != "linux":
        return
    with contextlib.suppress(Exception):
        ctypes.CDLL(None).prctl(1, signum)  # 1: PR_SET_PDEATHSIG


def kill_group(pid: int) -> None:
    """``SIGKILL`` to process ``pid`` and to its process group (every process it started that
    did not leave the group). Nothing if they are gone."""
    for kill in (os.killpg, os.kill):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            kill(pid, signal.SIGKILL)


#: The bootstrap of another interpreter (one that need not have rewardrouter): watch the
#: lifeline, then run the script. ``sys.argv[1]`` is the JSON of :func:`start_script`.
_FOREIGN_BOOT = (
    "import json, os, runpy, signal, sys, threading\n"
    "spec = json.loads(sys.argv[1])\n"
    "def watch(fd):\n"
    "    while os.read(fd, 512):\n"
    "        pass\n"
    "    os.killpg(0, signal.SIGKILL)\n"
    "threading.Thread(target=watch, args=(spec['lifeline'],), daemon=True).start()\n"
    "sys.argv = [spec['script'], *spec['args']]\n"
    "runpy.run_path(spec['script'], run_name='__main__')\n"
)


def start_script(
    python: str,
    script: str,
    args: Sequence[str],
    fds: Sequence[int],
    **popen: Any,
) -> tuple[subprocess.Popen[bytes], int]:
    """A process of interpreter ``python`` (another Python: it need not have rewardrouter, nor
    this Python's version) running the file ``script`` with ``args``; it inherits ``fds``.

    Returns the process and the write end of its *lifeline*, a pipe only this process holds:
    when it closes (this process exits, however it dies, or :func:`kill_group` is not reached),
    the child kills its whole process group. A lifeline, not ``PR_SET_PDEATHSIG``: that signal
    follows the thread that started the child, and a router may be compiled on a thread that
    ends before it. The child leads a session (and so a process group) of its own, which
    :func:`kill_group` ends; ``popen`` goes to :class:`subprocess.Popen` (``stdout``,
    ``stderr``, ``env``).
    """
    lifeline, keep = new_lifeline()
    spec = {"script": script, "args": list(args), "lifeline": lifeline}
    try:
        process = subprocess.Popen(
            [python, "-c", _FOREIGN_BOOT, json.dumps(spec)],
            stdin=subprocess.DEVNULL,
            pass_fds=(lifeline, *fds),
            close_fds=True,
            start_new_session=True,
            **popen,
        )
    except BaseException:
        cut_lifeline(keep)
        raise
    finally:
        os.close(lifeline)
    return process, keep


# -- descriptors a fork of this process drops ---------------------------------------------------

#: Descriptors whose copies in a fork of this process must not stay open there: the held ends of
#: lifelines (else a forked data-loader worker would keep children alive after this process
#: died), the copies of a request's descriptors not yet sent, a status pipe's write end.
_NOT_FOR_FORKS: set[int] = set()


def not_for_forks(fd: int) -> int:
    """Have a process forked from this one drop its copy of ``fd`` (until :func:`close_all`
    closes it); ``fd``."""
    _NOT_FOR_FORKS.add(fd)
    return fd


def close_all(fds: Iterable[int]) -> None:
    """Close ``fds`` (one already closed is skipped), forks no longer dropping them."""
    for fd in fds:
        _NOT_FOR_FORKS.discard(fd)
        with contextlib.suppress(OSError):
            os.close(fd)


def cover(fds: Iterable[int]) -> None:
    """Put /dev/null where ``fds`` were: closed for what they were, their numbers still taken,
    so that nothing opened later takes one and is closed by mistake."""
    null = os.open(os.devnull, os.O_RDONLY)
    for fd in fds:
        with contextlib.suppress(OSError):
            os.dup2(null, fd)
    os.close(null)


def readable(fd: int, timeout: float | None) -> bool:
    """Whether ``fd`` becomes readable within ``timeout`` seconds (None: wait until it does);
    ``poll``, which takes descriptors of any number (``select`` refuses those over 1023)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(None if timeout is None else int(timeout * 1000)))


def _drop_at_fork() -> None:
    if _NOT_FOR_FORKS:
        cover(_NOT_FOR_FORKS)
        _NOT_FOR_FORKS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_drop_at_fork)


# -- lifelines ----------------------------------------------------------------------------------


def new_lifeline() -> tuple[int, int]:
    """A lifeline: ``(the child's end, the end this process holds)``. The child watches its end;
    when every copy of the held end is closed (:func:`cut_lifeline`, or this process dies,
    however), the child ends its process group. Forks of this process drop their copies."""
    child, held = os.pipe()
    return child, not_for_forks(held)


def cut_lifeline(held: int) -> None:
    """Close the held end of a lifeline (its child, if still up, then ends its group)."""
    close_all([held])
