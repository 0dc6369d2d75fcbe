"""This process's process tree, read from /proc (Linux), for tests that stop or kill a child
rewardrouter started."""

from __future__ import annotations

import contextlib
import os
import time


def children(pid: int) -> list[int]:
    """The process ids of ``pid``'s children, over all its threads."""
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as listed:
                found += [int(child) for child in listed.read().split()]
    return found


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``, depth first."""
    found: list[int] = []
    for child in children(pid):
        found += [child, *descendants(child)]
    return found


def gone(pid: int, within: float = 10.0) -> bool:
    """Whether process ``pid`` ends within ``within`` seconds: reaped, or a zombie (dead, its
    exit status not yet collected by its parent's watcher)."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except OSError:  # FileNotFoundError, or ProcessLookupError while reading
            return True
        time.sleep(0.02)
    return False
