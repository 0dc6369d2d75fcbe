"""What the process executor's processes share with each other and ask of the kernel: a few
numbers in shared memory (each worker's progress), a pipe that a child's exit wakes, the reaping
of orphaned grandchildren.

>>> shared = SharedDoubles(2)
>>> view = shared.view(1, 1)
>>> view[0] = 2.5
>>> SharedDoubles(2, os.dup(shared.fd)).view(1, 1)[0]   # another mapping of the same memory
2.5
"""

from __future__ import annotations

import contextlib
import ctypes
import mmap
import os
import signal
import sys
import tempfile
from typing import Any


class ChildExits:
    """A pipe that a child's exit makes readable (``SIGCHLD`` writes to it): what wakes the
    single-threaded loops of the fork server and the templates, so they reap at once."""

    def __init__(self) -> None:
        self.fd, self._write = os.pipe()
        os.set_blocking(self.fd, False)
        os.set_blocking(self._write, False)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)
        signal.set_wakeup_fd(self._write)

    def drain(self) -> None:
        """Empty the pipe (the loop then reaps every child that exited)."""
        with contextlib.suppress(BlockingIOError):
            os.read(self.fd, 512)

    def forget(self) -> None:
        """In a forked child: drop the pipe and the handler."""
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in (self.fd, self._write):
            os.close(fd)


def adopt_orphans() -> bool:
    """On Linux, make this process the reaper of its orphaned descendants (a process that a
    reward function started, whose parent — a worker — was killed, becomes this process's child
    instead of init's, so it can be found and killed). True if the kernel agreed."""
    if sys.platform != "linux":
        return False
    try:
        return bool(ctypes.CDLL(None).prctl(36, 1) == 0)  # 36: PR_SET_CHILD_SUBREAPER
    except Exception:
        return False


def children() -> set[int]:
    """The process ids of this process's children (Linux; empty elsewhere)."""
    found: set[int] = set()
    with contextlib.suppress(OSError):
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children") as listed:
                found.update(int(pid) for pid in listed.read().split())
    return found


class SharedDoubles:
    """``count`` doubles of memory shared between processes: a file that lives in memory
    (``memfd`` on Linux, an unlinked temporary file elsewhere), mapped by each process that
    holds its descriptor ``fd`` — and by every process forked from one."""

    def __init__(self, count: int, fd: int | None = None) -> None:
        size = ctypes.sizeof(ctypes.c_double) * count
        if fd is None:
            if hasattr(os, "memfd_create"):
                fd = os.memfd_create("rewardrouter-progress")
            else:
                handle, name = tempfile.mkstemp(prefix="rewardrouter-progress-")
                os.unlink(name)
                fd = handle
            os.ftruncate(fd, size)
        self.fd = fd
        self.count = count
        self._map = mmap.mmap(fd, size)

    def view(self, first: int, count: int) -> Any:
        """Doubles ``first`` to ``first + count - 1`` as a ctypes array (writes are shared)."""
        offset = ctypes.sizeof(ctypes.c_double) * first
        return (ctypes.c_double * count).from_buffer(self._map, offset)
