"""Walls the kernel keeps: a memory cgroup and a pids cgroup for each program.

The kernel charges a cgroup for every page its processes use, wherever it lives (anonymous
memory, shared memory, ``memfd``, files in a tmpfs) and counts their processes and threads; past
``memory`` it kills one of them (the OOM killer, inside the cgroup alone), past ``pids`` a fork
fails. No watch of resident memory can be that exact: a page in a tmpfs or a ``memfd`` belongs to
no process.

Where this process may make cgroups, :func:`controllers` finds it once:

- cgroup v1 (hybrid hosts): children of this process's own ``memory`` and ``pids`` cgroups
  (their paths in ``/proc/self/cgroup``), given ``memory.limit_in_bytes`` (and
  ``memory.memsw.limit_in_bytes``, so that swap is no way around it) and ``pids.max``;
- cgroup v2: a child of this process's own cgroup when that cgroup delegates ``memory`` and
  ``pids`` to its children (``cgroup.subtree_control``), given ``memory.max``,
  ``memory.swap.max`` 0, ``memory.oom.group`` 1 (an OOM kills the whole program) and
  ``pids.max``.

Elsewhere it finds nothing, and the sandbox says so in its walls (``memory watched`` instead of
``memory cgroup``). :class:`ProgramCgroups` makes one program's cgroups and removes them.

>>> found = controllers()
>>> found is None or found.walls[0].startswith("memory cgroup")
True
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

log = logging.getLogger("rewardrouter.code")

#: The name every program's cgroup starts with: ``rewardrouter-<pid of the trainer>-<n>``.
PREFIX = "rewardrouter-"
_counter = itertools.count()


@dataclass(frozen=True)
class Controllers:
    """Where this process makes the cgroups of its programs: the folders their cgroups go
    under (the same folder for both controllers on cgroup v2)."""

    version: Literal[1, 2]
    memory: Path
    pids: Path | None

    @property
    def walls(self) -> tuple[str, ...]:
        """The walls' names as the sandbox reports them."""
        names = [f"memory cgroup v{self.version}"]
        if self.pids is not None:
            names.append(f"pids cgroup v{self.version}")
        return tuple(names)

    @property
    def events(self) -> str:
        """The file of a memory cgroup that counts its OOM kills (``oom_kill N``)."""
        return "memory.oom_control" if self.version == 1 else "memory.events"


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """``(root, mount point, file system type, super options)`` of every cgroup mount."""
    found = []
    with open("/proc/self/mountinfo") as mountinfo:
        for line in mountinfo:
            fields = line.split()
            if "-" not in fields:
                continue
            dash = fields.index("-")
            kind = fields[dash + 1]
            if kind in ("cgroup", "cgroup2"):
                options = set(fields[dash + 3].split(",")) if len(fields) > dash + 3 else set()
                found.append((fields[3], fields[4], kind, options))
    return found


def _own_path(root: str, mount: str, path: str) -> Path | None:
    """The folder of cgroup ``path`` under a mount of ``root`` at ``mount``."""
    if root != "/" and path != root and not path.startswith(root.rstrip("/") + "/"):
        return None
    inside = path[len(root) :] if root != "/" else path
    return Path(mount) / inside.lstrip("/")


def _may_make(folder: Path) -> bool:
    """Whether this process can make (and remove) a child cgroup in ``folder``."""
    probe = folder / f"{PREFIX}probe-{os.getpid()}"
    try:
        probe.mkdir()
    except OSError:
        return False
    with contextlib.suppress(OSError):
        probe.rmdir()
    return True


def _v1(own: dict[str, str]) -> Controllers | None:
    folders: dict[str, Path] = {}
    for root, mount, kind, options in _mounts():
        for controller in ("memory", "pids"):
            if kind == "cgroup" and controller in options and controller in own:
                folder = _own_path(root, mount, own[controller])
                if folder is not None and folder.is_dir():
                    folders.setdefault(controller, folder)
    memory = folders.get("memory")
    if memory is None or not _may_make(memory):
        return None
    pids = folders.get("pids")
    return Controllers(1, memory, pids if pids is not None and _may_make(pids) else None)


def _v2(path: str) -> Controllers | None:
    for root, mount, kind, _ in _mounts():
        if kind != "cgroup2":
            continue
        folder = _own_path(root, mount, path)
        if folder is None:
            continue
        try:
            delegated = (folder / "cgroup.subtree_control").read_text().split()
        except OSError:
            continue
        if "memory" in delegated and _may_make(folder):
            return Controllers(2, folder, folder if "pids" in delegated else None)
    return None


@functools.cache
def controllers() -> Controllers | None:
    """Where this process may make its programs' cgroups (v1 first, where a hybrid host binds
    the controllers there), or None where it may not."""
    own: dict[str, str] = {}
    unified: str | None = None
    try:
        with open("/proc/self/cgroup") as lines:
            for line in lines:
                _, names, path = line.rstrip("\n").split(":", 2)
                if names == "":
                    unified = path
                for name in names.split(","):
                    own[name] = path
    except (OSError, ValueError):
        return None
    found = _v1(own) if "memory" in own else None
    if found is None and unified is not None:
        found = _v2(unified)
    if found is not None:
        _remove_stale(found)
    return found


def _remove_stale(found: Controllers) -> None:
    """Remove the empty cgroups that programs of processes no longer running left behind."""
    for parent in {found.memory, found.pids} - {None}:
        assert parent is not None
        for folder in parent.glob(f"{PREFIX}*-*"):
            owner = folder.name[len(PREFIX) :].split("-", 1)[0]
            if owner.isdigit() and not Path(f"/proc/{owner}").exists():
                with contextlib.suppress(OSError):
                    folder.rmdir()


def _write(path: Path, value: int | str) -> None:
    path.write_text(str(value))


class ProgramCgroups:
    """The cgroups of one program: made with its limits, joined by each of its test cases (the
    runner writes to their ``cgroup.procs``), removed with :meth:`remove`.

    ``memory_bytes`` bounds all the program's memory together, its files in ``/tmp`` included;
    ``processes`` its processes and threads together. ``OSError`` when they cannot be made.
    """

    def __init__(self, found: Controllers, memory_bytes: int, processes: int) -> None:
        self.found = found
        name = f"{PREFIX}{os.getpid()}-{next(_counter)}"
        self.memory = found.memory / name
        self.pids = found.pids / name if found.pids is not None else None
        self._made: list[Path] = []
        try:
            self._make(memory_bytes, processes)
        except OSError:
            self.remove()
            raise

    def _make(self, memory_bytes: int, processes: int) -> None:
        self.memory.mkdir()
        self._made.append(self.memory)
        if self.found.version == 1:
            _write(self.memory / "memory.limit_in_bytes", memory_bytes)
            swap = self.memory / "memory.memsw.limit_in_bytes"
            if swap.exists():  # swap accounting on: memory and swap together, no more
                _write(swap, memory_bytes)
        else:
            _write(self.memory / "memory.max", memory_bytes)
            for name, value in (("memory.swap.max", 0), ("memory.oom.group", 1)):
                if (self.memory / name).exists():
                    _write(self.memory / name, value)
        if self.pids is not None:
            if self.pids != self.memory:
                self.pids.mkdir()
                self._made.append(self.pids)
            _write(self.pids / "pids.max", processes)

    @property
    def folders(self) -> tuple[Path, ...]:
        """The cgroup folders a case joins (one on cgroup v2)."""
        return tuple(dict.fromkeys(p for p in (self.memory, self.pids) if p is not None))

    def remove(self) -> bool:
        """Remove the cgroups; False when one still holds a process (a program's process
        that has not exited yet), left for the next :meth:`remove`."""
        left = []
        for folder in self._made:
            try:
                folder.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                left.append(folder)
        self._made = left
        return not left
