"""The sandbox's walls: the bubblewrap command line a program's runner starts under.

`bubblewrap <https://github.com/containers/bubblewrap>`_ (Debian's ``bubblewrap``, what
Flatpak's sandbox is built on) builds the program a world of its own: new PID, network, IPC,
UTS and cgroup namespaces, a fresh ``/proc`` that shows only the sandbox's processes, a minimal
``/dev``, and a root file system made of the interpreter's directories and ``/usr`` bound
read-only plus one private, size-capped ``/tmp``; nothing else of the host (no ``/root``,
``/home``, ``/srv``, ``/work``, data files, sockets or other processes) exists there.

Started as root it keeps only the capabilities the runner needs to give each program a fresh
user id and to end its processes; started by another user it enters a user namespace of its own,
where the program runs as ``nobody`` and may make no further user namespace. The runner is the
sandbox's PID 1 (``--as-pid-1``): every process of the program is its child or is adopted by it,
and reaped, so the program's CPU time reaches whoever waits for the sandbox. The program's
cgroups (:mod:`.cgroups`) are bound in read-write at :data:`CGROUPS`, for the runner to move
each case into.

>>> argv = command("/usr/bin/bwrap", Interpreter("/usr/bin/python3", ("/usr",)), 1 << 20, True)
>>> argv[:2], "--unshare-net" in argv, "--as-pid-1" in argv, "/home" in argv
(['/usr/bin/bwrap', '--die-with-parent'], True, True, False)
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

#: Where the runner lies inside the sandbox.
RUNNER = "/rewardrouter/harness.py"
#: Where the program's cgroups are bound inside the sandbox (one folder per cgroup).
CGROUPS = "/rewardrouter/cgroup"
HARNESS = Path(__file__).with_name("harness.py")

#: Top-level names that merged-/usr systems make links into /usr (bound as such, or as
#: read-only directories where they are real ones).
_TOP_LEVEL = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: The dynamic loader's index of shared libraries, so that libraries outside the loader's
#: default directories are found as on the host.
_LOADER_CACHE = "/etc/ld.so.cache"
#: What the runner (root inside the sandbox) may still do: switch to the program's fresh user
#: id, hand it its working directory and remove it afterwards, and kill its processes.
_RUNNER_CAPABILITIES = (
    "CAP_SETUID", "CAP_SETGID", "CAP_CHOWN", "CAP_KILL", "CAP_DAC_OVERRIDE", "CAP_FOWNER",
)  # fmt: skip
#: The program's user and group without root: the overflow ids, ``nobody``.
_NOBODY = "65534"


@dataclass(frozen=True)
class Interpreter:
    """A Python interpreter as the sandbox must show it: its executable and the directories
    (real paths, none inside another) that hold it, its standard library and its packages."""

    executable: str
    roots: tuple[str, ...]


@functools.cache
def interpreter(python: str) -> Interpreter:
    """Ask ``python`` where it lives (once per interpreter). ``OSError`` when it cannot run."""
    done = subprocess.run(
        [python, "-I", "-c", "import sys, json; print(json.dumps([sys.base_prefix, sys.prefix]))"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env={"PATH": "/usr/bin:/bin"},
    )
    if done.returncode != 0:
        raise OSError(f"{python} does not run: {done.stderr.strip()[-300:]}")
    prefixes = [os.path.realpath(p) for p in json.loads(done.stdout)]
    # The executable as the sandbox must find it: absolute, without `..` (whose folders the
    # sandbox may not have), its links kept (a virtual environment is found through them).
    executable = os.path.abspath(shutil.which(python) or python)
    folders = sorted(
        {*prefixes, os.path.dirname(os.path.realpath(python)), os.path.dirname(executable)}
    )
    roots = tuple(p for p in folders if not any(p.startswith(q + os.sep) for q in folders))
    return Interpreter(executable, roots)


#: Where a system's package puts ``bwrap``, looked at when ``PATH`` (a trainer's, often just
#: its environment's ``bin``) does not hold it.
_SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


def find() -> str | None:
    """The ``bwrap`` executable on ``PATH`` or in the system's directories, or None."""
    return shutil.which("bwrap") or shutil.which("bwrap", path=_SYSTEM_PATH)


def _folders(path: str, made: set[str]) -> list[str]:
    """``--dir`` arguments for the ancestors of ``path`` not made yet, each mode 0755 (left to
    itself bubblewrap makes them 0700, which a program's own user id could not enter)."""
    argv: list[str] = []
    parts = Path(path).parts[1:-1]
    for i in range(len(parts)):
        folder = "/" + "/".join(parts[: i + 1])
        if folder not in made and folder != "/usr" and not folder.startswith("/usr/"):
            made.add(folder)
            argv += ["--perms", "0755", "--dir", folder]
    return argv


@functools.cache
def version(bwrap: str) -> tuple[int, ...]:
    """``bwrap --version`` as numbers, ``(0,)`` when it does not say."""
    try:
        said = subprocess.run(
            [bwrap, "--version"], capture_output=True, text=True, timeout=10, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return (0,)
    words = said.split()
    numbers = words[-1].split(".") if words else []
    return tuple(int(n) for n in numbers if n.isdigit()) or (0,)


def cgroup_binds(folders: Sequence[str]) -> list[tuple[str, str]]:
    """``(host folder, folder in the sandbox)`` for each of a program's cgroup folders."""
    return [(folder, f"{CGROUPS}/{i}") for i, folder in enumerate(folders)]


def command(
    bwrap: str,
    python: Interpreter,
    disk_bytes: int,
    root: bool,
    binds: Sequence[tuple[str, str]] = (),
) -> list[str]:
    """The argv that starts the runner for one program inside a fresh sandbox; ``binds``:
    ``(host folder, folder in the sandbox)`` to bind read-write (the program's cgroups)."""
    argv = [bwrap, "--die-with-parent", "--new-session"]
    argv += ["--unshare-pid", "--as-pid-1", "--unshare-net", "--unshare-ipc", "--unshare-uts"]
    argv += ["--unshare-cgroup-try", "--hostname", "sandbox"]
    if root:
        argv += ["--cap-drop", "ALL"]
        for capability in _RUNNER_CAPABILITIES:
            argv += ["--cap-add", capability]
    else:
        argv += ["--unshare-user", "--uid", _NOBODY, "--gid", _NOBODY]
        if version(bwrap) >= (0, 8):
            argv += ["--disable-userns"]
    argv += ["--ro-bind", "/usr", "/usr"]
    for name in _TOP_LEVEL:
        if os.path.islink(name):
            argv += ["--symlink", os.readlink(name), name]
        elif os.path.isdir(name):
            argv += ["--ro-bind", name, name]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    argv += ["--size", str(max(disk_bytes, 1 << 20)), "--perms", "1777", "--tmpfs", "/tmp"]
    made = {"/tmp"}  # the tmpfs above
    if os.path.isfile(_LOADER_CACHE):
        argv += _folders(_LOADER_CACHE, made)
        argv += ["--ro-bind", _LOADER_CACHE, _LOADER_CACHE]
    for folder in python.roots:
        if folder == "/usr" or folder.startswith("/usr/"):
            continue
        argv += _folders(folder + "/", made)
        argv += ["--ro-bind", folder, folder]
    for source, target in binds:
        argv += _folders(target + "/", made)
        argv += ["--bind", source, target]
    argv += _folders(RUNNER, made)
    argv += ["--ro-bind", str(HARNESS), RUNNER, "--remount-ro", "/"]
    return [*argv, python.executable, "-I", RUNNER]
