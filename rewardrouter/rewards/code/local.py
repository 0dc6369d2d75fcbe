"""The ``local`` backend: run a program's test cases in a sandbox on this machine.

One fresh runner process per program (``harness.py``, ``python -I``), started inside bubblewrap
(:mod:`~rewardrouter.rewards.code.bubblewrap`: namespaces of its own and a read-only file system
of the interpreter alone) with a scrubbed environment; inside it every test case is a process
forked from a warm interpreter, so a program with twenty tests pays for one interpreter start, not
twenty. With ``isolate=False`` the runner starts without bubblewrap: resource limits, a process
group and (as root) a fresh user id only, what ``isolation: best_effort`` falls back to where
bubblewrap cannot run.

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
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rewardrouter.outcome import InfrastructureFault
from rewardrouter.rewards.code import bubblewrap
from rewardrouter.rewards.code.bubblewrap import HARNESS
from rewardrouter.rewards.code.harness import frame
from rewardrouter.rewards.code.settings import CodeLimits

log = logging.getLogger("rewardrouter.code")

#: The whole environment a program sees: no credentials, tokens or proxies of the trainer.
SCRUBBED_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}

#: Seconds the runner itself may take on top of its cases (start-up, forks, clean-up).
_GRACE = 10.0
#: The most of a runner's report read back (every case's output together).
_REPORT_BYTES = 64 << 20
#: Where a program's cases run inside bubblewrap (its private /tmp).
_SANDBOX_WORKDIR = "/tmp/work"

#: What each kind of walls promises, as reported per program and in the summary.
WALLS = {
    True: ("bubblewrap", "pid", "network", "ipc", "filesystem"),
    False: ("rlimits",),
}


class SandboxError(InfrastructureFault, RuntimeError):
    """The sandbox failed (not the program): the runner could not start at all."""


@dataclass(frozen=True)
class CaseRun:
    """What one test case did. ``returned`` is ``{"values": [...]}`` (one encoded value per
    call, see :func:`~rewardrouter.rewards.code.harness.encode`) for call-based cases."""

    status: str
    seconds: float = 0.0
    stdout: str = ""
    stderr: str = ""
    returned: dict[str, Any] | None = None


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
    root runs each program as a fresh user id. Safe to share between the terms of a
    router: each event loop that grades with it gets its own cap (asyncio primitives belong to
    one loop).
    """

    def __init__(
        self,
        limits: CodeLimits,
        workers: int | None = None,
        python: str = sys.executable,
        isolate: bool = True,
        drop_user: bool = True,
    ) -> None:
        self.limits = limits
        self.isolate = isolate
        self.drop_user = drop_user
        self.workers = workers or len(os.sched_getaffinity(0))
        self.python = python
        self.isolation = WALLS[isolate]
        self._caps: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    def _cap(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        cap = self._caps.get(loop)
        if cap is None:
            cap = self._caps[loop] = asyncio.Semaphore(self.workers)
        return cap

    def job(
        self, program: str, runs: Sequence[dict[str, Any]], stop_on_failure: bool, workdir: str
    ) -> bytes:
        """The runner's input for one program: a frame of the program and its settings, then
        one frame per case."""
        header = frame(
            {
                "program": program,
                "cases": len(runs),
                "limits": limits_json(self.limits),
                "drop_user": self.drop_user,
                "pid_namespace": self.isolate,
                "stop_on_failure": stop_on_failure,
                "workdir": workdir,
            }
        )
        return header + b"".join(frame(run) for run in runs)

    @functools.cached_property
    def argv(self) -> list[str]:
        """The command that starts one runner (the same for every program: built at the first
        run; :class:`SandboxError` when bubblewrap is missing)."""
        if not self.isolate:
            return [self.python, "-I", str(HARNESS)]
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
        return bubblewrap.command(bwrap, python, self.limits.disk_mb << 20, os.geteuid() == 0)

    def budget(self, cases: int) -> float:
        """Seconds after which the runner of a program with ``cases`` cases is killed."""
        per_cases = cases * (self.limits.timeout + 0.5)
        if self.limits.deadline is not None:
            per_cases = min(per_cases, self.limits.deadline + self.limits.timeout + 0.5)
        return per_cases + _GRACE

    async def run(
        self, program: str, runs: Sequence[dict[str, Any]], stop_on_failure: bool = False
    ) -> RunReport:
        """Run ``program`` on each case of ``runs`` (the ``run`` dicts of the cases)."""
        argv = self.argv
        async with self._cap():
            if self.isolate:  # the sandbox's own /tmp, gone with it
                job = self.job(program, runs, stop_on_failure, _SANDBOX_WORKDIR)
                return await self._exchange(argv, job, "/", len(runs))
            workdir = tempfile.mkdtemp(prefix="rewardrouter-code-")
            try:
                os.chmod(workdir, 0o711)
                job = self.job(program, runs, stop_on_failure, workdir)
                return await self._exchange(argv, job, workdir, len(runs))
            finally:
                await asyncio.to_thread(shutil.rmtree, workdir, True)

    async def _exchange(self, argv: list[str], job: bytes, cwd: str, cases: int) -> RunReport:
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
        budget = self.budget(cases)
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
            return _report(out, cases, self.isolation)
        except SandboxError as exc:
            # Whatever ended the runner early (a signal from the program, a full disk), it ended
            # this program's run: its cases fail, the batch goes on.
            cause = f"exit status {process.returncode}; {tail[-200:] or exc}"
            return self._failed(cases, "error", f"the runner ended early ({cause})")

    def _failed(self, cases: int, status: str, why: str) -> RunReport:
        log.warning("code sandbox: a program's run failed: %s", why)
        return RunReport(tuple(CaseRun(status, stderr=why) for _ in range(cases)), self.isolation)


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


def _report(reply: bytes, expected: int, isolation: tuple[str, ...]) -> RunReport:
    try:
        data = json.loads(reply)
        cases = tuple(CaseRun(**case) for case in data["cases"])
        uid = data["uid"]
    except (ValueError, KeyError, TypeError) as exc:
        raise SandboxError(f"unreadable report from the sandbox runner: {exc}") from None
    if len(cases) != expected:
        raise SandboxError(f"the sandbox runner reported {len(cases)} cases of {expected}")
    return RunReport(cases, isolation + (("uid",) if uid is not None else ()), uid)


@functools.cache
def probe(python: str = sys.executable, isolate: bool = True) -> tuple[str, ...]:
    """What the local sandbox isolates a program with on this machine, checked by running a
    program that imports the standard library (once per interpreter and mode).

    Raises :class:`SandboxError`, with the cause, when the runner does not work so.
    """
    sandbox = LocalSandbox(CodeLimits(timeout=10), workers=1, python=python, isolate=isolate)
    check = "import json, collections, fractions, re\nprint(json.dumps([input()]))\n"
    # (on a thread of its own: a router may be compiled inside a running event loop)
    with concurrent.futures.ThreadPoolExecutor(1) as thread:
        report = thread.submit(asyncio.run, sandbox.run(check, [{"stdin": "ok"}])).result()
    case = report.cases[0]
    if case.status != "ok" or case.stdout != '["ok"]\n':
        raise SandboxError(
            f"the sandbox cannot run a program that imports the standard library: "
            f"{case.status}, {case.stderr[-300:].strip() or 'no error output'}"
        )
    return report.isolation
