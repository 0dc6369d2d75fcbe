"""The ``local`` backend: run a program's test cases in a sandbox on this machine.

One fresh runner process per program (``harness.py``, ``python -I``), started inside bubblewrap
(:mod:`~rewardrouter.rewards.code.bubblewrap`: namespaces of its own and a read-only file system
of the interpreter alone) with a scrubbed environment; inside it every test case is a process
forked from a warm interpreter, so a program with twenty tests pays for one interpreter start, not
twenty. Each case runs in the program's own memory and pids cgroups where this process may make
them (:mod:`~rewardrouter.rewards.code.cgroups`: the kernel counts all its memory and kills it
at the limit) and under a seccomp filter (see :mod:`~rewardrouter.rewards.code.harness`). With
``isolate=False`` the runner starts without bubblewrap: resource limits, the cgroups and the
filter, a process group and (as root) a fresh user id, what ``isolation: best_effort`` falls
back to where bubblewrap cannot run.

A program's time is bounded by the call that grades it: :meth:`LocalSandbox.run` starts the
call's deadline again when the program gets its turn (its wait for a free worker is not its
time), and the runner's budget and the cases' ``deadline`` are cut to fit that deadline, so the
sandbox ends a slow program itself, with the results of the cases it ran, before the call's
deadline would cancel it.

Whatever the program does to its runner (kill it, fill its output, stall it), the program's
cases fail with that cause and the call returns: a program never fails the batch. Only a
sandbox that cannot start at all raises :class:`SandboxError`.

>>> sandbox = LocalSandbox(CodeLimits(timeout=2), workers=2)
>>> report = asyncio.run(sandbox.run("print(input()[::-1])", [{"stdin": "abc"}]))
>>> report.cases[0].status, report.cases[0].stdout
('ok', 'cba\\n')
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import json
import logging
import math
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rewardrouter.execute.deadline import current_deadline
from rewardrouter.outcome import InfrastructureFault
from rewardrouter.rewards.code import bubblewrap, cgroups
from rewardrouter.rewards.code.bubblewrap import HARNESS
from rewardrouter.rewards.code.harness import SECCOMP_MACHINES, frame
from rewardrouter.rewards.code.settings import CodeLimits

log = logging.getLogger("rewardrouter.code")

#: The whole environment a program sees: no credentials, tokens or proxies of the trainer.
SCRUBBED_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}

#: Seconds the runner itself may take on top of its cases (start-up, forks, clean-up).
GRACE = 10.0
#: Seconds a case may take beyond its ``timeout`` before the runner has killed it and moved on.
CASE_SLACK = 0.5
#: Seconds kept between the end of a program's budget and its call's deadline, for the report
#: to reach the grader.
MARGIN = 0.5
#: The most of a runner's report read back (every case's output together).
_REPORT_BYTES = 64 << 20
#: Where a program's cases run inside bubblewrap (its private /tmp).
_SANDBOX_WORKDIR = "/tmp/work"

#: What each kind of walls promises, as reported per program and in the summary.
WALLS = {
    True: ("bubblewrap", "pid", "network", "ipc", "filesystem"),
    False: ("rlimits",),
}
#: The wall of a machine whose system call numbers the runner's filter knows.
SECCOMP = "seccomp"
#: The memory wall where no cgroup can be made: resident memory looked at while a case runs.
MEMORY_WATCHED = "memory watched"


class SandboxError(InfrastructureFault, RuntimeError):
    """The sandbox failed (not the program): the runner could not start at all."""


@dataclass(frozen=True)
class CaseRun:
    """What one test case did. ``returned`` is ``{"values": [...]}`` (one encoded value per
    call, see :func:`~rewardrouter.rewards.code.harness.encode`) for call-based cases;
    ``cpu_seconds`` is the CPU time of all its processes."""

    status: str
    seconds: float = 0.0
    stdout: str = ""
    stderr: str = ""
    returned: dict[str, Any] | None = None
    cpu_seconds: float = 0.0


@dataclass(frozen=True)
class RunReport:
    """The cases of one program, in order, the isolation it ran under, and the user id the
    program ran as (a fresh one per program when the runner starts as root, else None)."""

    cases: tuple[CaseRun, ...]
    isolation: tuple[str, ...]
    uid: int | None = None


def limits_json(limits: CodeLimits) -> dict[str, Any]:
    """``limits`` as the runner's job holds them."""
    return {
        "wall_seconds": limits.timeout,
        "cpu_seconds": limits.cpu_seconds or limits.timeout,
        "memory_bytes": limits.memory_mb << 20,
        "file_bytes": limits.output_kb << 10,
        "processes": limits.processes,
        "disk_bytes": limits.disk_mb << 20,
        "deadline_seconds": limits.deadline,
    }


class LocalSandbox:
    """Runs programs under ``limits``, at most ``workers`` at once per event loop.

    ``isolate``: start each runner inside bubblewrap (raises :class:`SandboxError` at the first
    run when it cannot start); False: resource limits only. ``drop_user``: a runner started as
    root runs each program as a fresh user id. ``walls``: each program in cgroups of its own
    (where they can be made) and under the seccomp filter (where it is written for the
    machine); False only where another sandbox runs the runner (SandboxFusion's jobs).
    ``isolation`` names the walls every program runs inside. Safe to share between the terms
    of a router: each event loop that grades with it gets its own cap (asyncio primitives
    belong to one loop).
    """

    def __init__(
        self,
        limits: CodeLimits,
        workers: int | None = None,
        python: str = sys.executable,
        isolate: bool = True,
        drop_user: bool = True,
        walls: bool = True,
    ) -> None:
        self.limits = limits
        self.isolate = isolate
        self.drop_user = drop_user
        self.workers = workers or len(os.sched_getaffinity(0))
        self.python = python
        self.cgroups = cgroups.controllers() if walls else None
        self.seccomp = walls and platform.machine() in SECCOMP_MACHINES
        memory = self.cgroups.walls if self.cgroups is not None else (MEMORY_WATCHED,)
        self.isolation = WALLS[isolate] + ((SECCOMP,) if self.seccomp else ()) + memory
        self._uid_at = len(WALLS[isolate])  # where a report names its program's own user id
        self._caps: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )
        self._leftover: list[cgroups.ProgramCgroups] = []

    def _cap(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        cap = self._caps.get(loop)
        if cap is None:
            cap = self._caps[loop] = asyncio.Semaphore(self.workers)
        return cap

    def job(
        self,
        program: str,
        runs: Sequence[dict[str, Any]],
        stop_on_failure: bool,
        workdir: str,
        deadline: float | None = None,
        joined: Sequence[str] = (),
    ) -> bytes:
        """The runner's input for one program: a frame of the program and its settings, then
        one frame per case. ``deadline``: seconds for all its cases (default: the limits');
        ``joined``: the folders of its cgroups as the runner sees them."""
        limits = limits_json(self.limits)
        if deadline is not None:
            limits["deadline_seconds"] = deadline
        memory_cgroup = None
        if joined and self.cgroups is not None:
            memory_cgroup = {"join": list(joined), "events": f"{joined[0]}/{self.cgroups.events}"}
        header = frame(
            {
                "program": program,
                "cases": len(runs),
                "limits": limits,
                "drop_user": self.drop_user,
                "pid_namespace": self.isolate,
                "stop_on_failure": stop_on_failure,
                "workdir": workdir,
                "seccomp": self.seccomp,
                "cgroups": memory_cgroup,
            }
        )
        return header + b"".join(frame(run) for run in runs)

    @functools.cached_property
    def _launcher(self) -> tuple[str, bubblewrap.Interpreter] | None:
        """bubblewrap and the interpreter as the sandbox shows it (None without isolation);
        :class:`SandboxError` when bubblewrap is missing. Found at the first run."""
        if not self.isolate:
            return None
        bwrap = bubblewrap.find()
        if bwrap is None:
            raise SandboxError(
                "bubblewrap (bwrap) is not installed; install it (Debian/Ubuntu: "
                "`apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`)"
            )
        try:
            python = bubblewrap.interpreter(self.python)
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            raise SandboxError(f"cannot start the sandbox's interpreter: {exc}") from None
        return bwrap, python

    def argv(self, binds: Sequence[tuple[str, str]] = ()) -> list[str]:
        """The command that starts one runner, with ``binds`` (the program's cgroups) in its
        sandbox; :class:`SandboxError` when bubblewrap is missing."""
        launcher = self._launcher
        if launcher is None:
            return [self.python, "-I", str(HARNESS)]
        bwrap, python = launcher
        disk = self.limits.disk_mb << 20
        return bubblewrap.command(bwrap, python, disk, os.geteuid() == 0, binds)

    def fits(self, seconds: float) -> tuple[str, str] | None:
        """Whether a program's worst case fits in its call's deadline ``seconds`` (checked when
        the router compiles): one test and the runner's allowance must, and so must
        ``limits.deadline`` where it is set. Unset, the cases' deadline is derived from the
        call's own (:meth:`case_deadline`)."""
        limits = self.limits
        allowance = CASE_SLACK + GRACE + MARGIN
        one = limits.timeout + allowance
        if one > seconds:
            return (
                f"one test's kwargs.limits.timeout ({limits.timeout:g} s) and the runner's "
                f"allowance ({allowance:g} s: start-up, clean-up, the report) need {one:g} s, "
                f"more than the term's timeout ({seconds:g} s): no test could run",
                f"set `timeout: {math.ceil(one)}` or more on the term (or the router's "
                f"`timeout`), or lower kwargs.limits.timeout",
            )
        if limits.deadline is not None and limits.deadline + one > seconds:
            need = limits.deadline + one
            return (
                f"kwargs.limits.deadline ({limits.deadline:g} s), one more test that started "
                f"before it ({limits.timeout:g} s) and the runner's allowance ({allowance:g} s) "
                f"need {need:g} s, more than the term's timeout ({seconds:g} s)",
                f"set `timeout: {math.ceil(need)}` or more on the term, or kwargs.limits.deadline "
                f"to {math.floor(seconds - one)} or less (or remove it: it is then derived from "
                f"the term's timeout)",
            )
        return None

    def case_deadline(self, call_seconds: float | None) -> float | None:
        """Seconds for all of a program's cases: the limits' ``deadline``, cut so that the
        runner's whole budget fits in ``call_seconds`` (the call's deadline) when given."""
        deadline = self.limits.deadline
        if call_seconds is None:
            return deadline
        fits = max(0.0, call_seconds - MARGIN - GRACE - self.limits.timeout - CASE_SLACK)
        return fits if deadline is None else min(deadline, fits)

    def budget(self, cases: int, deadline: float | None = None) -> float:
        """Seconds after which the runner of a program with ``cases`` cases is killed, under
        the cases' ``deadline`` (default: the limits')."""
        deadline = self.limits.deadline if deadline is None else deadline
        per_case = self.limits.timeout + CASE_SLACK
        per_cases = cases * per_case
        if deadline is not None:
            per_cases = min(per_cases, deadline + per_case)
        return per_cases + GRACE

    async def run(
        self, program: str, runs: Sequence[dict[str, Any]], stop_on_failure: bool = False
    ) -> RunReport:
        """Run ``program`` on each case of ``runs`` (the ``run`` dicts of the cases)."""
        _ = self._launcher  # SandboxError now, before a worker is taken, without bubblewrap
        call = current_deadline()
        cap = self._cap()
        with call.paused() if call is not None else contextlib.nullcontext():
            await cap.acquire()  # its time starts when it runs, not while it waits for a worker
        try:
            deadline = self.case_deadline(call.seconds if call is not None else None)
            groups = self._program_cgroups()
            try:
                return await self._run(program, runs, stop_on_failure, deadline, groups)
            finally:
                if groups is not None:
                    await self._remove(groups)
        finally:
            cap.release()

    async def _run(
        self,
        program: str,
        runs: Sequence[dict[str, Any]],
        stop_on_failure: bool,
        deadline: float | None,
        groups: cgroups.ProgramCgroups | None,
    ) -> RunReport:
        folders = [str(f) for f in groups.folders] if groups is not None else []
        budget = self.budget(len(runs), deadline)
        if self.isolate:  # the sandbox's own /tmp, gone with it
            binds = bubblewrap.cgroup_binds(folders)
            joined = [inside for _, inside in binds]
            job = self.job(program, runs, stop_on_failure, _SANDBOX_WORKDIR, deadline, joined)
            return await self._exchange(self.argv(binds), job, "/", len(runs), budget)
        workdir = tempfile.mkdtemp(prefix="rewardrouter-code-")
        try:
            os.chmod(workdir, 0o711)
            job = self.job(program, runs, stop_on_failure, workdir, deadline, folders)
            return await self._exchange(self.argv(), job, workdir, len(runs), budget)
        finally:
            await asyncio.to_thread(shutil.rmtree, workdir, True)

    def _program_cgroups(self) -> cgroups.ProgramCgroups | None:
        """A program's own cgroups, with its limits (memory and disk together: files in
        ``/tmp`` are memory too); :class:`SandboxError` when they cannot be made."""
        if self.cgroups is None:
            return None
        self._leftover = [g for g in self._leftover if not g.remove()]
        memory = (self.limits.memory_mb + self.limits.disk_mb) << 20
        try:
            # (the runner is in them too: one more process)
            return cgroups.ProgramCgroups(self.cgroups, memory, self.limits.processes + 1)
        except OSError as exc:
            raise SandboxError(f"cannot make the program's cgroups: {exc}") from None

    async def _remove(self, groups: cgroups.ProgramCgroups) -> None:
        """Remove a program's cgroups once its last process is gone (the kernel may take a
        moment after the sandbox ends); left for the next program when it takes longer."""
        for pause in (0.0, 0.005, 0.02, 0.1):
            await asyncio.sleep(pause)
            if groups.remove():
                return
        self._leftover.append(groups)

    async def _exchange(
        self, argv: list[str], job: bytes, cwd: str, cases: int, budget: float
    ) -> RunReport:
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=SCRUBBED_ENV,
                start_new_session=True,
            )
        except OSError as exc:
            raise SandboxError(f"cannot start the sandbox runner ({argv[0]}): {exc}") from None
        timed_out = False
        try:
            out, err = await asyncio.wait_for(_communicate(process, job), budget)
        except asyncio.TimeoutError:
            timed_out, out, err = True, b"", b""
        finally:
            # The whole session: the runner, and everything it left (it leaves nothing when the
            # PID namespace exists; the kernel ends that with the runner).
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            if process.returncode is None:
                await process.wait()
        if timed_out:
            return self._failed(cases, "timeout", f"the runner overran its {budget:g} s budget")
        tail = err.decode(errors="replace")[-500:].strip()
        if process.returncode != 0 and tail.startswith("bwrap:"):
            raise SandboxError(f"bubblewrap could not start the sandbox: {tail}")
        try:
            return _report(out, cases, self.isolation, self._uid_at)
        except SandboxError as exc:
            # Whatever ended the runner early (a signal from the program, a full disk), it ended
            # this program's run: its cases fail, the batch goes on.
            cause = f"exit status {process.returncode}; {tail[-200:] or exc}"
            return self._failed(cases, "error", f"the runner ended early ({cause})")

    def _failed(self, cases: int, status: str, why: str) -> RunReport:
        log.warning("code sandbox: a program's run failed: %s", why)
        return RunReport(tuple(CaseRun(status, stderr=why) for _ in range(cases)), self.isolation)

    def close(self) -> None:
        """Remove the cgroups programs left (their processes gone since). Idempotent."""
        self._leftover = [g for g in self._leftover if not g.remove()]


async def _communicate(process: asyncio.subprocess.Process, job: bytes) -> tuple[bytes, bytes]:
    """``process.communicate(job)``, reading at most ``_REPORT_BYTES`` of its report."""
    assert process.stdin and process.stdout and process.stderr
    stdin = process.stdin

    async def send() -> None:  # as the runner reads it: one case at a time
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            stdin.write(job)
            await stdin.drain()
        stdin.close()

    _, out, err = await asyncio.gather(
        send(), _upto(process.stdout, _REPORT_BYTES), _upto(process.stderr, 1 << 16)
    )
    await process.wait()
    return out, err


async def _upto(stream: asyncio.StreamReader, limit: int) -> bytes:
    """What ``stream`` holds until its end, at most ``limit`` bytes (the rest is drained)."""
    chunks: list[bytes] = []
    size = 0
    while chunk := await stream.read(1 << 20):
        if size < limit:
            chunks.append(chunk[: limit - size])
        size += len(chunk)
    return b"".join(chunks)


def _report(reply: bytes, expected: int, isolation: tuple[str, ...], uid_at: int) -> RunReport:
    try:
        data = json.loads(reply)
        cases = tuple(CaseRun(**case) for case in data["cases"])
        uid = data["uid"]
    except (ValueError, KeyError, TypeError) as exc:
        raise SandboxError(f"unreadable report from the sandbox runner: {exc}") from None
    if len(cases) != expected:
        raise SandboxError(f"the sandbox runner reported {len(cases)} cases of {expected}")
    if uid is not None:
        isolation = (*isolation[:uid_at], "uid", *isolation[uid_at:])
    return RunReport(cases, isolation, uid)


@functools.cache
def probe(python: str = sys.executable, isolate: bool = True) -> tuple[str, ...]:
    """What the local sandbox isolates a program with on this machine, checked by running a
    program that imports the standard library (once per interpreter and mode).

    Raises :class:`SandboxError`, with the cause, when the runner does not work so.
    """
    sandbox = LocalSandbox(CodeLimits(timeout=10), workers=1, python=python, isolate=isolate)
    # (on a thread of its own: a router may be compiled inside a running event loop)
    with concurrent.futures.ThreadPoolExecutor(1) as thread:
        report = thread.submit(asyncio.run, sandbox.run(_PROBE, [{"stdin": "ok"}])).result()
    sandbox.close()
    case = report.cases[0]
    if case.status != "ok":
        raise SandboxError(
            f"the sandbox cannot run a program that imports the standard library: "
            f"{case.status}, {case.stderr[-300:].strip() or 'no error output'}"
        )
    found = sandbox.cgroups
    expected = ["ok", sandbox.seccomp, len(found.walls) if found is not None else 0]
    if json.loads(case.stdout) != expected:
        raise SandboxError(
            f"the sandbox's walls do not hold: a program saw {case.stdout.strip()} "
            f"([its input, memfd_create refused, cgroups joined]); expected {expected}"
        )
    return report.isolation


#: What :func:`probe` runs: the standard library imports, ``memfd_create`` is refused where
#: the seccomp filter holds, and the case is in the program's cgroups where they are made.
_PROBE = """import collections, fractions, json, os, re
try:
    os.memfd_create("probe")
    refused = False
except OSError:
    refused = True
with open("/proc/self/cgroup") as lines:
    joined = sum("/rewardrouter-" in line for line in lines)
print(json.dumps([input(), refused, joined]))
"""
