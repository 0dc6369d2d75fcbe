"""The runner that executes a program's test cases inside the sandbox.

Standard library only, and it never imports rewardrouter: the ``local`` backend starts it as
``python -I harness.py`` inside bubblewrap (or, with ``isolation: best_effort`` where bubblewrap
cannot run, directly in a fresh session with a scrubbed environment), writes one JSON job to its
stdin and reads one JSON report from its stdout.

Job, on stdin as frames (a decimal byte count, a newline, that many bytes of JSON): first
``{"program": str, "cases": int, "limits": {...}, "drop_user": bool, "stop_on_failure": bool,
"workdir": str, "pid_namespace": bool, "seccomp": bool, "cgroups": {...} | null}``, then one
frame per case, each read only when its case starts (so no case process holds the input of a
case after its own), where a case is one of

- ``{"stdin": str}``: run the program as ``__main__`` with that standard input;
- ``{"calls": [{"call": name, "args": [...], "kwargs": {...}}, ...]}``: run the program as module
  ``solution``, then call each ``name`` (or ``Solution().name``) in order and report the return
  values. Arguments and return values cross the boundary in the plain encoding of
  :func:`encode` / :func:`decode`.

Report: ``{"uid": int | null, "cases": [{"status", "seconds", "cpu_seconds", "stdout",
"stderr", "returned"?}, ...]}``, statuses ``ok``, ``error``, ``timeout``, ``memory``,
``output_limit``, ``killed``, ``skipped``. The harness judges nothing: expected outputs never enter the sandbox,
and the caller compares what the program printed or returned, decoded into plain values that no
code of the program can stand behind (no ``__eq__`` of its own survives the encoding).

What it does to contain each case (the sandbox around it is the caller's: bubblewrap's
namespaces and read-only file system):

1. each case is a fresh process forked from this warm interpreter, in its own process group and
   working directory, with RLIMIT_CPU / AS / FSIZE / NPROC / CORE set and (when started as
   root) its user and group switched to ``uid``: an otherwise unused id, fresh per program;
2. it is born in the program's memory and pids cgroups (``cgroups``: made by the caller with
   the program's limits, joined by this runner at its start, so the kernel counts every page
   and process of the program, shared memory and files in ``/tmp`` included, and kills at the
   limit, the case's processes first); before it runs a line of the program it installs a
   seccomp filter (``seccomp``) that refuses what could allocate memory or disk
   outside those counts or undo the walls: new namespaces (a user namespace would let it mount
   a file system of its own), ``memfd_create``, System V shared memory, message queues and
   semaphores, mounts, keyrings, ``io_uring``, ``bpf``, ``userfaultfd``, ``perf_event_open``,
   and any system call of another ABI; a wall that cannot be set up ends the case before the
   program runs;
3. its standard streams and its result channel are descriptors this runner opened before the
   fork: the runner never opens a path the program could have replaced (a link, a FIFO);
4. without a memory cgroup, the resident memory of all the program's processes together is
   watched while it runs and the case is killed (``memory``) when it passes ``memory_bytes``;
5. at a case's wall-clock deadline its process group is killed; after every case every process
   the program left is killed (all of the PID namespace, or every process of ``uid``) and
   reaped, so its CPU time is this runner's (reported per case, and seen by whoever waits for
   the runner).
"""

import builtins
import contextlib
import ctypes
import functools
import json
import math
import os
import platform
import random
import resource
import select
import shutil
import signal
import struct
import sys
import time
import traceback
import types
from collections.abc import Sequence
from typing import Any

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4

EXIT_MEMORY = 3  # the program ran out of its address space
EXIT_HARNESS = 4  # the harness itself could not set the case up

#: How deep and how large a value may be to cross the boundary (either way).
MAX_DEPTH = 100
MAX_ITEMS = 1_000_000

_libc = ctypes.CDLL(None, use_errno=True)

# -- the seccomp filter ------------------------------------------------------------------------

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_EPERM, _ENOSYS = 1, 38
#: The new-namespace flags of ``clone`` (its low byte is the exit signal, so CLONE_NEWTIME, which
#: shares it, is reachable through ``unshare`` and ``clone3`` only, both refused whole).
_CLONE_NEW = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000
_CLONE_NEW |= 0x40000000
#: System calls refused with EPERM, by name; their numbers per ABI below.
REFUSED = (
    "unshare", "setns", "mount", "umount2", "pivot_root", "fsopen", "fsconfig", "fsmount",
    "move_mount", "open_tree", "mount_setattr", "memfd_create", "memfd_secret", "shmget",
    "msgget", "semget", "userfaultfd", "bpf", "perf_event_open", "io_uring_setup",
    "io_uring_enter", "io_uring_register", "keyctl", "add_key", "request_key", "kexec_load",
    "kexec_file_load",
)  # fmt: skip
#: Per machine: the audit architecture, the numbers of REFUSED in order, ``clone`` and
#: ``clone3``, and the bit that marks another ABI on the same architecture (x32), if any.
_ABIS = {
    "x86_64": (
        0xC000003E,
        (272, 308, 165, 166, 155, 430, 431, 432, 429, 428, 442, 319, 447, 29, 68, 64, 323, 321,
         298, 425, 426, 427, 250, 248, 249, 246, 320),
        56, 435, 0x40000000,
    ),
    "aarch64": (
        0xC00000B7,
        (97, 268, 40, 39, 41, 430, 431, 432, 429, 428, 442, 279, 447, 194, 186, 190, 282, 280,
         241, 425, 426, 427, 219, 217, 218, 104, 294),
        220, 435, 0,
    ),
}  # fmt: skip


#: The machines :func:`seccomp_program` knows.
SECCOMP_MACHINES = tuple(_ABIS)


@functools.cache  # built once per runner, before it forks its cases
def seccomp_program(machine: str, refused: Sequence[str] = REFUSED) -> bytes:
    """The classic-BPF seccomp filter of the module docstring for ``machine``
    (``platform.machine()``), refusing the calls named in ``refused`` (some of
    :data:`REFUSED`) and a ``clone`` that asks for a new namespace; ``OSError`` where no table
    of system call numbers exists.

    Refused calls fail with EPERM (``clone3`` with ENOSYS, which makes the C library fall back
    to ``clone``, whose flags a filter can read); a call of another ABI fails with ENOSYS.
    """
    if machine not in _ABIS:
        raise OSError(f"no seccomp filter is written for {machine!r} (x86_64, aarch64)")
    arch, table, clone, clone3, other_abi = _ABIS[machine]
    numbers = [table[REFUSED.index(name)] for name in refused]

    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    # Instructions as (code, true target, false target, k), targets as labels or None (next);
    # the labels ALLOW, EPERM, ENOSYS, FLAGS are resolved to relative jumps below.
    steps: list[tuple[str | None, int, str | None, str | None, int]] = [
        (None, ld, None, None, 4),  # the architecture
        (None, jeq, None, "ENOSYS", arch),  # another architecture: no call of it is known
        (None, ld, None, None, 0),  # the system call's number
    ]
    if other_abi:
        steps.append((None, jge, "ENOSYS", None, other_abi))
    steps += [(None, jeq, "EPERM", None, number) for number in numbers]
    steps.append((None, jeq, "ENOSYS", None, clone3))
    steps.append((None, jeq, "FLAGS", "ALLOW", clone))
    steps.append(("FLAGS", ld, None, None, 16))  # clone's flags: the low word of args[0]
    steps.append((None, jset, "EPERM", "ALLOW", _CLONE_NEW))
    steps.append(("ALLOW", ret, None, None, _RET_ALLOW))
    steps.append(("EPERM", ret, None, None, _RET_ERRNO | _EPERM))
    steps.append(("ENOSYS", ret, None, None, _RET_ERRNO | _ENOSYS))
    at = {label: i for i, (label, *_) in enumerate(steps) if label is not None}

    def jump(i: int, target: str | None) -> int:
        return 0 if target is None else at[target] - i - 1

    return b"".join(
        struct.pack("=HBBI", code, jump(i, yes), jump(i, no), k)
        for i, (_, code, yes, no, k) in enumerate(steps)
    )


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install_seccomp(machine: str | None = None, refused: Sequence[str] = REFUSED) -> None:
    """Install :func:`seccomp_program` on this process and everything it starts (``OSError``
    when it cannot be)."""
    code = seccomp_program(machine or platform.machine(), refused)
    filters = ctypes.create_string_buffer(code, len(code))
    prog = _SockFprog(len(code) // 8, ctypes.cast(filters, ctypes.c_void_p))
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")


class Unencodable(ValueError):
    """A value the plain encoding cannot carry (an object of the program's own class, a cycle,
    more than ``MAX_ITEMS`` items or ``MAX_DEPTH`` levels)."""


def encode(value: Any) -> Any:
    """``value`` as JSON-able data that :func:`decode` turns back into plain builtins.

    Lists, strings, numbers, booleans and None stay as they are; tuples, sets, frozensets,
    dicts, bytes, complex numbers and non-finite floats become ``{"$": tag, "v": ...}``.
    Subclasses of the builtins (and numbers of other libraries) are converted to the builtin.
    """
    budget = [MAX_ITEMS]

    def walk(item: Any, depth: int) -> Any:
        budget[0] -= 1
        if budget[0] < 0 or depth > MAX_DEPTH:
            raise Unencodable("the value is too large or too deep")
        if item is None or item is True or item is False:
            return item
        if isinstance(item, int):
            return int(item)
        if isinstance(item, float):
            number = float(item)
            return number if math.isfinite(number) else {"$": "float", "v": repr(number)}
        if isinstance(item, str):
            return str.__str__(item)
        if isinstance(item, list):
            return [walk(x, depth + 1) for x in list.__iter__(item)]
        if isinstance(item, tuple):
            return {"$": "tuple", "v": [walk(x, depth + 1) for x in tuple.__iter__(item)]}
        if isinstance(item, frozenset | set):
            tag = "frozenset" if isinstance(item, frozenset) else "set"
            return {"$": tag, "v": [walk(x, depth + 1) for x in item]}
        if isinstance(item, dict):
            pairs = dict.items(item)
            return {"$": "dict", "v": [[walk(k, depth + 1), walk(v, depth + 1)] for k, v in pairs]}
        if isinstance(item, bytes | bytearray):
            return {"$": "bytes", "v": bytes(item).hex()}
        if isinstance(item, complex):
            return {"$": "complex", "v": [repr(item.real), repr(item.imag)]}
        numeric = getattr(type(item), "item", None)  # numpy scalars
        if callable(numeric) and type(item).__module__ == "numpy":
            return walk(numeric(item), depth)
        raise Unencodable(f"a value of type {type(item).__name__}")

    return walk(value, 0)


def _non_finite(inner: Any) -> float:
    if inner not in ("nan", "inf", "-inf"):
        raise ValueError("not an encoded float")
    return float(inner)


def _hex_bytes(inner: Any) -> bytes:
    if not isinstance(inner, str):
        raise ValueError("not encoded bytes")
    return bytes.fromhex(inner)


def _complex(inner: Any) -> complex:
    if not (isinstance(inner, list) and len(inner) == 2):
        raise ValueError("not an encoded complex number")
    return complex(float(inner[0]), float(inner[1]))


#: The tags of :func:`encode` whose value is one scalar, and how to read it.
_SCALARS: dict[str, Any] = {"float": _non_finite, "bytes": _hex_bytes, "complex": _complex}
#: The tags whose value is a list of encoded items, and the type they make.
_COLLECTIONS: dict[str, Any] = {"tuple": tuple, "set": set, "frozenset": frozenset}


def decode(data: Any) -> Any:
    """The plain value :func:`encode` made ``data`` of; ``ValueError`` on anything else."""

    def walk(item: Any, depth: int) -> Any:
        if depth > MAX_DEPTH + 1:
            raise ValueError("the value is too deep")
        if item is None or isinstance(item, bool | int | float | str):
            return item
        if isinstance(item, list):
            return [walk(x, depth + 1) for x in item]
        if not isinstance(item, dict) or set(item) != {"$", "v"}:
            raise ValueError(f"not an encoded value: {str(item)[:80]}")
        tag, inner = item["$"], item["v"]
        if tag in _SCALARS:
            return _SCALARS[tag](inner)
        if not isinstance(inner, list):
            raise ValueError(f"not an encoded {tag}")
        if tag == "dict":
            return {walk(k, depth + 1): walk(v, depth + 1) for k, v in inner}
        if tag in _COLLECTIONS:
            return _COLLECTIONS[tag](walk(x, depth + 1) for x in inner)
        raise ValueError(f"unknown encoded type {tag!r}")

    try:
        return walk(data, 0)
    except (TypeError, ValueError, RecursionError) as exc:  # unhashable keys, bad numbers
        raise ValueError(f"not an encoded value: {exc}") from None


def _limits(limits: dict[str, Any]) -> None:
    cpu = max(1, int(limits["cpu_seconds"] + 0.999))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_bytes"], limits["memory_bytes"]))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_bytes"], limits["file_bytes"]))
    resource.setrlimit(resource.RLIMIT_NPROC, (limits["processes"], limits["processes"]))


def _call(module: types.ModuleType, spec: dict[str, Any]) -> Any:
    name = spec["call"]
    target = module.__dict__.get(name)
    solution = module.__dict__.get("Solution")
    if target is None and isinstance(solution, type):
        target = getattr(solution(), name, None)
    if not callable(target):
        raise NameError(f"the program defines no function {name!r}")
    args = decode(spec.get("args", []))
    kwargs = decode(spec.get("kwargs", {"$": "dict", "v": []}))
    return target(*args, **kwargs)


def _run_case(program: str, case: dict[str, Any], result_fd: int) -> int:
    """Inside the case process: run the program; the exit status tells the outcome."""
    sys.argv = ["solution.py"]
    # New text streams over the case's descriptors 0-2 (they live as long as the process).
    sys.stdin = open(0, encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", closefd=False, buffering=1)  # noqa: SIM115
    try:
        code = compile(program, "solution.py", "exec")
        if "stdin" in case:
            os.close(result_fd)  # a printed answer needs no channel the program could write to
            try:
                exec(code, {"__name__": "__main__", "__builtins__": builtins})
            except SystemExit as stop:
                if stop.code not in (None, 0):
                    raise
            sys.stdout.flush()
            return 0
        module = types.ModuleType("solution")
        module.__file__ = "solution.py"
        sys.modules["solution"] = module
        exec(code, module.__dict__)
        values = [encode(_call(module, spec)) for spec in case["calls"]]
        sys.stdout.flush()
        reply = json.dumps({"values": values}).encode()
        while reply:
            reply = reply[os.write(result_fd, reply) :]
        return 0
    except MemoryError:
        return EXIT_MEMORY
    except BaseException:
        traceback.print_exc()
        return 1


def _join_cgroups(cgroups: dict[str, Any] | None) -> None:
    """Move this runner into the program's cgroups, once (moving a process costs the kernel a
    wait of its own, so the cases do not each move: they are born there). What the runner held
    before stays charged where it was."""
    if not cgroups:
        return
    for folder in dict.fromkeys(cgroups["join"]):  # v2: one folder for both controllers
        fd = os.open(os.path.join(folder, "cgroup.procs"), os.O_WRONLY)
        try:
            os.write(fd, b"0")  # "0": the writing process
        finally:
            os.close(fd)


def _first_to_go() -> None:
    """Make this case's processes the OOM killer's first choice in the program's cgroup (the
    runner, also in it, the last): a process may raise its own score."""
    with open("/proc/self/oom_score_adj", "w") as score:
        score.write("1000")


def _case_process(job: dict[str, Any], case: dict[str, Any], workdir: str, fds: list[int]) -> None:
    """The forked child: confine itself, then run the case. Never returns."""
    status = EXIT_HARNESS
    try:
        os.setpgid(0, 0)
        for fd, target in zip(fds, (0, 1, 2, 3), strict=True):
            os.dup2(fd, target)
        os.closerange(4, 1 << 16)
        _limits(job["limits"])
        if job.get("cgroups"):
            _first_to_go()
        uid = job.get("uid")
        if uid is not None:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
        os.chdir(workdir)  # as the program: its working directory is its own
        os.environ["HOME"] = workdir
        if job.get("seccomp"):
            install_seccomp()
        status = _run_case(job["program"], case, 3)
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(status)


_PAGE = os.sysconf("SC_PAGE_SIZE")


def _resident(pid_namespace: bool, uid: int | None, group: int) -> int:
    """Bytes resident in the program's processes: all of the PID namespace but this runner and
    its init, or every process of ``uid``, or (neither) the case's process group."""
    total = 0
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in (1, me):
            continue
        try:
            if not pid_namespace:
                if uid is not None:
                    # (the owner of /proc/PID is root for a process that changed its ids)
                    with open(f"/proc/{entry}/status", "rb") as f:
                        ids = next(line for line in f if line.startswith(b"Uid:"))
                    if int(ids.split()[1]) != uid:
                        continue
                else:
                    with open(f"/proc/{entry}/stat", "rb") as f:
                        fields = f.read().rsplit(b")", 1)[1].split()
                    if int(fields[2]) != group:
                        continue
            with open(f"/proc/{entry}/statm", "rb") as f:
                total += int(f.read().split()[1]) * _PAGE
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
    return total


def _wait(
    pid: int, seconds: float, memory: int | None, pid_namespace: bool, uid: int | None
) -> tuple[int | None, float, bool]:
    """``(wait status, or None at the deadline, seconds taken, killed for memory)``; kills the
    case's process group at its deadline or, when ``memory`` is given (no cgroup counts it),
    when the program's processes together hold more than ``memory`` bytes (looked at every few
    milliseconds while it runs)."""
    pidfd = -1
    exited: select.poll | None = None
    with contextlib.suppress(AttributeError, OSError):  # kernels before 5.3: sleep between looks
        pidfd = os.pidfd_open(pid)
        exited = select.poll()
        exited.register(pidfd, select.POLLIN)
    try:
        return _watch(pid, seconds, memory, pid_namespace, uid, exited)
    finally:
        if pidfd >= 0:
            os.close(pidfd)


def _watch(
    pid: int,
    seconds: float,
    memory: int | None,
    pid_namespace: bool,
    uid: int | None,
    exited: "select.poll | None",
) -> tuple[int | None, float, bool]:
    begun = time.monotonic()
    interval = 0.005 if pid_namespace else 0.02
    if memory is None and exited is not None:
        interval = seconds  # nothing to look at: wait for the exit or the deadline
    over = False
    while True:
        took = time.monotonic() - begun
        step = min(interval, max(0.0, seconds - took))
        if exited is not None:
            done = bool(exited.poll(step * 1000))
        else:
            time.sleep(step)
            done = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        took = time.monotonic() - begun
        if done:
            break
        if took >= seconds or (memory is not None and _resident(pid_namespace, uid, pid) > memory):
            over = took < seconds
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            _, status, _ = os.wait4(pid, 0)
            return (status if over else None), took, over
    _, status, _ = os.wait4(pid, 0)
    return status, took, over


def _sweep(pid_namespace: bool, uid: int | None) -> None:
    """Kill every process the case left behind, and reap the ones reparented to us."""
    if pid_namespace:
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)  # every other process of the namespace but its init
    elif uid is not None:
        killer = os.fork()
        if killer == 0:
            try:
                os.setuid(uid)
                os.kill(-1, signal.SIGKILL)  # every process of this otherwise unused id
            finally:
                os._exit(0)
    while True:
        try:
            os.waitpid(-1, 0 if pid_namespace or uid is not None else os.WNOHANG)
        except ChildProcessError:
            return
        if not (pid_namespace or uid is not None):
            return


def _classify(status: int | None, cpu_limited: bool, out_bytes: int, cap: int) -> str:
    if status is None:
        return "timeout"
    if out_bytes >= cap:
        return "output_limit"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig in (signal.SIGXCPU, signal.SIGKILL) and cpu_limited:
            return "timeout"
        if sig == signal.SIGXFSZ:
            return "output_limit"
        return "killed"
    code = os.WEXITSTATUS(status)
    if code == 0:
        return "ok"
    return "memory" if code == EXIT_MEMORY else "error"


def _own_file(workdir: str, name: str, content: bytes = b"") -> int:
    """A new file of the runner's, opened before the program runs: read back through this
    descriptor, whatever the program later does to the path."""
    fd = os.open(os.path.join(workdir, name), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, content)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _text(fd: int, limit: int) -> str:
    return os.pread(fd, limit, 0).decode("utf-8", errors="replace")


def _oom_kills(cgroups: dict[str, Any] | None) -> int:
    """How many processes the kernel killed in the program's memory cgroup so far (``-1``
    without one)."""
    if not cgroups:
        return -1
    with open(cgroups["events"], "rb") as events:  # memory.oom_control (v1), memory.events (v2)
        for line in events:
            name, _, count = line.partition(b" ")
            if name == b"oom_kill":
                return int(count)
    return 0


def _cpu_seconds() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def run_case(job: dict[str, Any], case: dict[str, Any], workdir: str) -> dict[str, Any]:
    limits = job["limits"]
    uid = job.get("uid")
    cap = limits["file_bytes"]
    pid_namespace = bool(job.get("pid_namespace"))
    cgroups = job.get("cgroups")
    os.mkdir(workdir, 0o700)
    stdin = case.get("stdin", "").encode("utf-8", errors="replace")
    fds = [_own_file(workdir, "stdin", stdin)]
    fds += [_own_file(workdir, name) for name in ("stdout", "stderr", "result")]
    if uid is not None:
        os.chown(workdir, uid, uid)
    kills = _oom_kills(cgroups)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    cpu_before = _cpu_seconds()
    pid = os.fork()
    if pid == 0:
        _case_process(job, case, workdir, fds)
    watched = None if cgroups else limits["memory_bytes"]
    status, took, memory = _wait(pid, limits["wall_seconds"], watched, pid_namespace, uid)
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - before
    _sweep(pid_namespace, uid)
    memory = memory or _oom_kills(cgroups) > kills
    out_bytes = os.fstat(fds[1]).st_size
    report: dict[str, Any] = {
        "status": "memory"
        if memory
        else _classify(status, cpu >= limits["cpu_seconds"], out_bytes, cap),
        "seconds": round(took, 4),
        "cpu_seconds": round(_cpu_seconds() - cpu_before, 4),
        "stdout": _text(fds[1], cap),
        "stderr": _text(fds[2], 4096),
    }
    if report["status"] == "ok" and "calls" in case:
        try:
            reply = json.loads(os.pread(fds[3], cap, 0))
            values = reply["values"]
            if not isinstance(values, list) or len(values) != len(case["calls"]):
                raise ValueError("not one value per call")
            report["returned"] = {"values": values}
        except (ValueError, KeyError, TypeError):
            report["status"] = "error"
            report["stderr"] += "\n(the program ended before returning from every call)"
    for fd in fds:
        os.close(fd)
    # Nothing a case wrote is left for the next: its disk space is the program's whole budget.
    shutil.rmtree(workdir, ignore_errors=True)
    return report


def read_frame(fd: int) -> Any:
    """The next frame of ``fd``: its byte count read a byte at a time, then exactly its JSON,
    so nothing after it is read ahead into this process."""
    digits = b""
    while (byte := os.read(fd, 1)) != b"\n":
        if not byte or len(digits) > 12:
            raise EOFError("the job ended inside a frame")
        digits += byte
    size, data = int(digits), b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            raise EOFError("the job ended inside a frame")
        data += chunk
    return json.loads(data)


def frame(value: Any) -> bytes:
    """``value`` as one frame of a job."""
    data = json.dumps(value).encode()
    return b"%d\n%s" % (len(data), data)


def run_cases(job: dict[str, Any]) -> list[dict[str, Any]]:
    deadline = job["limits"].get("deadline_seconds")
    started = time.monotonic()
    stop = False
    reports: list[dict[str, Any]] = []
    for i in range(job["cases"]):
        case = read_frame(0)
        late = i > 0 and deadline is not None and time.monotonic() - started >= deadline
        if stop or late:  # (the first case always runs: a program's budget holds one case)
            reports.append({"status": "skipped", "seconds": 0.0, "stdout": "", "stderr": ""})
            continue
        report = run_case(job, case, os.path.join(job["workdir"], f"case-{i}"))
        del case
        reports.append(report)
        stop = job.get("stop_on_failure", False) and report["status"] != "ok"
    return reports


def _sandbox_uid() -> int | None:
    """A user id no account uses, fresh per program, when started as root (else ``None``): the
    process limit then counts this program's processes alone, and a sweep of the id's processes
    reaches nobody else's."""
    if os.geteuid() != 0:
        return None
    return 1_000_000 + random.SystemRandom().randrange(1 << 30)


def main() -> None:
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    # Not dumpable: a program running under this runner's own id (without root) can neither
    # trace it nor read or write its memory through /proc.
    _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    job = read_frame(0)
    _join_cgroups(job.get("cgroups"))
    if job.get("seccomp"):
        seccomp_program(platform.machine(), REFUSED)  # once, here, not in every case
    job["uid"] = _sandbox_uid() if job.get("drop_user", True) else None
    os.makedirs(job["workdir"], mode=0o711, exist_ok=True)
    reports = run_cases(job)
    sys.stdout.buffer.write(json.dumps({"uid": job["uid"], "cases": reports}).encode())


if __name__ == "__main__":
    main()
