"""The runner that executes a program's test cases inside the local sandbox.

Standard library only, and it never imports rewardrouter: the ``local`` backend starts it as
``python -I harness.py`` in a fresh session (process group) with a scrubbed environment, writes
one JSON job to its stdin and reads one JSON report from its stdout.

Job: ``{"program": str, "cases": [case, ...], "limits": {...}, "isolate": bool,
"drop_user": bool, "stop_on_failure": bool, "workdir": str}``, where a case is one of

- ``{"stdin": str}``: run the program as ``__main__`` with that standard input;
- ``{"call": name, "args": [...]}``: run the program as module ``solution``, call ``name`` (or
  ``Solution().name``) with ``args`` and report the return value;
- ``{"tests": code, "function": name | null, "entry": name | null}``: run the program as module
  ``solution`` (importable under that name), run ``code`` in its namespace, then call
  ``function()`` (a pytest-style test) or ``check(entry)`` (HumanEval style) when given.

Report: ``{"isolation": [...], "uid": int | null, "cases": [{"status", "seconds", "stdout",
"stderr", "returned"?}, ...]}``, statuses ``ok``, ``error``, ``timeout``, ``memory``,
``output_limit``, ``killed``. The harness judges nothing: expected outputs never enter the
sandbox, and the caller compares what the program printed or returned.

How a run is contained (each step is skipped, and left out of ``isolation``, where the OS
refuses it):

1. ``unshare`` new network, PID, IPC and mount namespaces (with a user namespace when not root):
   no network interface but a loopback that is down, and an ``init`` process whose exit makes
   the kernel kill every process the program started, ``setsid`` escapees included;
2. in the mount namespace, private size-capped tmpfs over ``/tmp``, ``/var/tmp``, ``/dev/shm``
   (the interpreter's directories under them, a virtualenv in ``/tmp``, bound back read-only);
3. each case in a fresh process forked from ``init``, in its own process group and working
   directory, with RLIMIT_CPU / AS / FSIZE / NPROC / CORE set, and (when started as root) its
   user and group switched to ``uid``: an otherwise unused id, so the process limit counts this
   program's processes alone and files readable only by their owner stay unreadable;
4. at a case's wall-clock deadline its process group is killed; after every case every process
   left in the PID namespace is killed (without one: every process of ``uid``).
"""

import builtins
import contextlib
import ctypes
import json
import os
import random
import resource
import select
import signal
import sys
import time
import traceback
import types
from typing import Any

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REMOUNT = 32
MS_STRICTATIME = 1 << 24
MNT_DETACH = 2
MS_MOVE = 8192
MS_REC = 16384
MS_PRIVATE = 1 << 18
#: Covered by a private tmpfs in the sandbox's mount namespace.
PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
PR_SET_PDEATHSIG = 1

EXIT_MEMORY = 3  # the program ran out of its address space
EXIT_HARNESS = 4  # the harness itself could not set the case up

_libc = ctypes.CDLL(None, use_errno=True)


def _die_with_parent() -> None:
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _isolate(root: bool) -> list[str]:
    """Enter new namespaces; the names of those entered. Without root, in a new user namespace
    whose only ids are this process's own."""
    uid, gid = os.geteuid(), os.getegid()
    user = 0 if root else CLONE_NEWUSER
    for flags, names in (
        (
            CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNS,
            ["network", "pid", "ipc", "mount"],
        ),
        (CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC, ["network", "pid", "ipc"]),
        (CLONE_NEWNET, ["network"]),
    ):
        if _libc.unshare(flags | user) == 0:
            if user and not _map_own_ids(uid, gid):
                names = [n for n in names if n != "mount"]  # no files could be made there
            return names
    return []


def _map_own_ids(uid: int, gid: int) -> bool:
    """Map this process's user and group ids to themselves in its new user namespace. Unmapped,
    it would be the overflow id there, and no file could be created on the private tmpfs."""
    try:
        # (kernels before 3.19 have no setgroups file)
        with contextlib.suppress(FileNotFoundError), open("/proc/self/setgroups", "w") as out:
            out.write("deny")
        with open("/proc/self/uid_map", "w") as out:
            out.write(f"{uid} {uid} 1")
        with open("/proc/self/gid_map", "w") as out:
            out.write(f"{gid} {gid} 1")
    except OSError:
        return False
    return True


def _blocked(path: str) -> str | None:
    """The outermost ancestor of ``path`` that other users may not enter, if any."""
    parts = os.path.abspath(path).split(os.sep)
    for i in range(2, len(parts) + 1):
        ancestor = os.sep.join(parts[:i])
        try:
            if not os.stat(ancestor).st_mode & 0o001:
                return ancestor
        except OSError:
            return None
    return None


def _mount(
    source: bytes | None, target: str, fstype: bytes | None, flags: int, data: bytes | None = None
) -> bool:
    return bool(_libc.mount(source, target.encode(), fstype, flags, data) == 0)


def _kept_flags(path: str) -> int:
    """The flags of the mount at ``path`` that a read-only remount must repeat: in a user
    namespace the kernel refuses a remount that would drop ``nosuid``, ``nodev``, ``noexec`` or
    change the atime mode of a mount it inherited (a /tmp tmpfs is ``nosuid,nodev``)."""
    have = os.statvfs(path).f_flag
    flags = 0
    for st, ms in (
        (os.ST_NOSUID, MS_NOSUID),
        (os.ST_NODEV, MS_NODEV),
        (os.ST_NOEXEC, MS_NOEXEC),
        (os.ST_NOATIME, MS_NOATIME),
        (os.ST_NODIRATIME, MS_NODIRATIME),
    ):
        if have & st:
            flags |= ms
    if not have & (os.ST_NOATIME | os.ST_RELATIME):  # relatime is the kernel's default
        flags |= MS_STRICTATIME
    return flags


def _private_mounts(size_bytes: int, interpreter: list[str]) -> bool:
    """In the new mount namespace: size-capped private tmpfs over the world-writable
    directories, and the interpreter's directories reachable by the sandbox user.

    A Python installed under a directory only its owner may enter (``/root/.pyenv``) is
    unreadable for the sandbox user; that directory is covered by an empty tmpfs into which the
    interpreter's directories are bound back, so the program can import the standard library
    while the rest of the owner's files stay out of sight.
    """
    if not _mount(b"none", "/", None, MS_REC | MS_PRIVATE):
        return False
    wanted = sorted({os.path.realpath(p) for p in interpreter if os.path.isdir(p)})
    wanted = [p for p in wanted if not any(p.startswith(q + os.sep) for q in wanted)]
    # An environment under a directory the tmpfs covers (a virtualenv in /tmp): held open now
    # and bound back read-only onto the tmpfs, or the program could not import its packages.
    held = {
        path: os.open(path, os.O_PATH | os.O_DIRECTORY)
        for path in wanted
        if any(path.startswith(where + os.sep) for where in PRIVATE_DIRS)
    }
    options = f"size={max(size_bytes, 1 << 20)},mode=1777".encode()
    if not _mount(b"tmpfs", "/tmp", b"tmpfs", MS_NOSUID | MS_NODEV, options):
        return False
    for where in PRIVATE_DIRS[1:]:
        if os.path.isdir(where):
            _mount(b"tmpfs", where, b"tmpfs", MS_NOSUID | MS_NODEV, options)
    for path, fd in held.items():
        os.makedirs(path, mode=0o755, exist_ok=True)
        if not _mount(f"/proc/self/fd/{fd}".encode(), path, None, MS_BIND | MS_REC):
            return False
        os.close(fd)
        if not _mount(
            None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_REC | _kept_flags(path)
        ):
            _libc.umount2(path.encode(), MNT_DETACH)  # never leave the environment writable
            return False
    exposed: list[tuple[str, str]] = []
    for path in wanted:
        blocked = _blocked(path)
        if path not in held and blocked is not None and not blocked.startswith("/tmp"):
            exposed.append((path, blocked))
    if not exposed:
        return True
    os.mkdir("/tmp/.stage", 0o700)
    for i, (path, _) in enumerate(exposed):
        os.mkdir(f"/tmp/.stage/{i}")
        if not _mount(path.encode(), f"/tmp/.stage/{i}", None, MS_BIND | MS_REC):
            return False
    for blocked in sorted({b for _, b in exposed}):
        if not _mount(b"tmpfs", blocked, b"tmpfs", MS_NOSUID | MS_NODEV, b"size=1m,mode=0755"):
            return False
    for i, (path, _) in enumerate(exposed):
        os.makedirs(path, mode=0o755, exist_ok=True)
        if not _mount(f"/tmp/.stage/{i}".encode(), path, None, MS_MOVE):
            return False
    for i in range(len(exposed)):
        os.rmdir(f"/tmp/.stage/{i}")
    os.rmdir("/tmp/.stage")
    return True


def _limits(limits: dict[str, Any]) -> None:
    cpu = max(1, int(limits["cpu_seconds"] + 0.999))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_bytes"], limits["memory_bytes"]))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_bytes"], limits["file_bytes"]))
    resource.setrlimit(resource.RLIMIT_NPROC, (limits["processes"], limits["processes"]))


def _jsonable(value: object) -> dict[str, Any]:
    """The return value as JSON (tuples become lists), or its repr when JSON cannot hold it."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return {"repr": repr(value)}
    return {"value": value}


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
            try:
                exec(code, {"__name__": "__main__", "__builtins__": builtins})
            except SystemExit as stop:
                if stop.code not in (None, 0):
                    raise
            reply: dict[str, Any] = {"done": True}
        else:
            module = types.ModuleType("solution")
            module.__file__ = "solution.py"
            sys.modules["solution"] = module
            exec(code, module.__dict__)
            if "call" in case:
                target = module.__dict__.get(case["call"])
                solution = module.__dict__.get("Solution")
                if target is None and isinstance(solution, type):
                    target = getattr(solution(), case["call"], None)
                if target is None:
                    raise NameError(f"the program defines no function {case['call']!r}")
                reply = _jsonable(target(*case["args"]))
            else:
                namespace = module.__dict__
                exec(compile(case["tests"], "tests.py", "exec"), namespace)
                if case.get("function"):
                    namespace[case["function"]]()
                if case.get("entry"):
                    namespace["check"](namespace[case["entry"]])
                reply = {"done": True}
        sys.stdout.flush()
        os.write(result_fd, json.dumps(reply).encode())
        return 0
    except MemoryError:
        return EXIT_MEMORY
    except BaseException:
        traceback.print_exc()
        return 1


def _case_process(job: dict[str, Any], case: dict[str, Any], workdir: str, result_fd: int) -> None:
    """The forked child: confine itself, then run the case. Never returns."""
    status = EXIT_HARNESS
    try:
        os.setpgid(0, 0)
        os.chdir(workdir)
        stdin = os.open("stdin", os.O_RDONLY)
        stdout = os.open("stdout", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        stderr = os.open("stderr", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2), (result_fd, 3)):
            os.dup2(fd, target)
        os.closerange(4, 1 << 16)
        _limits(job["limits"])
        uid = job.get("uid")
        if uid is not None:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
        os.environ["HOME"] = workdir
        status = _run_case(job["program"], case, 3)
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(status)


def _wait(pid: int, seconds: float) -> tuple[int | None, float]:
    """``(wait status, or None at the deadline, seconds taken)``; kills the case's group then."""
    begun = time.monotonic()
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # kernels before 5.3: poll
        while time.monotonic() - begun < seconds:
            done_pid, status, _ = os.wait4(pid, os.WNOHANG)
            if done_pid == pid:
                return status, time.monotonic() - begun
            time.sleep(0.002)
        done = False
    else:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        done = bool(poller.poll(max(0.0, seconds) * 1000))
        os.close(pidfd)
    took = time.monotonic() - begun
    if not done:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    _, status, _ = os.wait4(pid, 0)
    return (status if done else None), took


def _sweep(pid_namespace: bool, uid: int | None) -> None:
    """Kill every process the case left behind, and reap the ones reparented to us."""
    if pid_namespace:
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)  # as PID 1: every other process of the namespace
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


def _read(path: str, limit: int) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", errors="replace")
    except OSError:
        return ""


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


def run_cases(job: dict[str, Any], pid_namespace: bool) -> list[dict[str, Any]]:
    limits = job["limits"]
    root = job["workdir"]
    uid = job.get("uid")
    cap = limits["file_bytes"]
    deadline = limits.get("deadline_seconds")
    started = time.monotonic()
    stop = False
    reports: list[dict[str, Any]] = []
    for i, case in enumerate(job["cases"]):
        if stop or (deadline is not None and time.monotonic() - started >= deadline):
            reports.append({"status": "skipped", "seconds": 0.0, "stdout": "", "stderr": ""})
            continue
        workdir = os.path.join(root, f"case-{i}")
        os.mkdir(workdir, 0o700)
        if uid is not None:
            os.chown(workdir, uid, uid)
        with open(os.path.join(workdir, "stdin"), "w", encoding="utf-8") as f:
            f.write(case.get("stdin", ""))
        # Read back through the harness's own descriptor, whatever the program does to the path.
        result_fd = os.open(os.path.join(workdir, "result"), os.O_RDWR | os.O_CREAT, 0o600)
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
        pid = os.fork()
        if pid == 0:
            _case_process(job, case, workdir, result_fd)
        status, took = _wait(pid, limits["wall_seconds"])
        cpu = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - before
        _sweep(pid_namespace, uid)
        returned = os.pread(result_fd, cap, 0)
        os.close(result_fd)
        out_path = os.path.join(workdir, "stdout")
        out_bytes = os.path.getsize(out_path) if os.path.exists(out_path) else 0
        report: dict[str, Any] = {
            "status": _classify(status, cpu >= limits["cpu_seconds"], out_bytes, cap),
            "seconds": round(took, 4),
            "stdout": _read(out_path, cap),
            "stderr": _read(os.path.join(workdir, "stderr"), 4096),
        }
        if report["status"] == "ok":
            try:
                reply = json.loads(returned)
            except ValueError:
                reply = {}
            if not isinstance(reply, dict):  # the program wrote there itself
                reply = {}
            if not reply.get("done") and "value" not in reply and "repr" not in reply:
                report["status"] = "error"
                report["stderr"] += "\n(the program exited before its test finished)"
            elif "value" in reply or "repr" in reply:
                report["returned"] = reply
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
    _die_with_parent()
    job = json.loads(sys.stdin.buffer.read())
    job["uid"] = _sandbox_uid() if job.get("drop_user", True) else None
    isolation = _isolate(os.geteuid() == 0) if job.get("isolate", True) else []
    out_r, out_w = os.pipe()
    init = os.fork()
    if init == 0:
        # PID 1 of the new PID namespace, when there is one.
        os.close(out_r)
        _die_with_parent()
        if "mount" in isolation:
            if _private_mounts(
                job["limits"]["disk_bytes"], [sys.base_prefix, sys.prefix, *sys.path]
            ):
                os.makedirs("/tmp/work", mode=0o711)
                job["workdir"] = "/tmp/work"
            else:
                isolation.remove("mount")
        reports = run_cases(job, "pid" in isolation)
        with os.fdopen(out_w, "wb") as out:
            out.write(
                json.dumps(
                    {"isolation": isolation, "uid": job.get("uid"), "cases": reports}
                ).encode()
            )
        os._exit(0)
    os.close(out_w)
    with os.fdopen(out_r, "rb") as reader:
        report = reader.read()
    _, status = os.waitpid(init, 0)
    if status != 0 or not report:
        sys.stderr.write(f"harness init ended with status {status}\n")
        sys.exit(2)
    # The isolation list is complete only now: init may have dropped "mount".
    sys.stdout.buffer.write(report)


if __name__ == "__main__":
    main()
