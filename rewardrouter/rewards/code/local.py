"""The ``local`` backend: run a program's test cases in a sandbox on this machine.

One fresh runner process per program (``harness.py``, started as ``python -I`` in a new session
with a scrubbed environment and a temporary working directory); inside it every test case is a
process forked from a warm interpreter, so a program with twenty tests pays for one interpreter
start, not twenty. What the runner does to contain a program is described in
:mod:`rewardrouter.rewards.code.harness` and in the README's security section.

>>> sandbox = LocalSandbox(CodeLimits(timeout=2), workers=2)
>>> report = asyncio.run(sandbox.run("print(input()[::-1])", [{"stdin": "abc"}]))
>>> report.cases[0].status, report.cases[0].stdout
('ok', 'cba\\n')
"""

from __future__ import annotations

import asyncio
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
from pathlib import Path
from typing import Any

from rewardrouter.rewards.code.settings import CodeLimits

log = logging.getLogger("rewardrouter.code")

HARNESS = Path(__file__).with_name("harness.py")

#: The whole environment a program sees: no credentials, tokens or proxies of the trainer.
SCRUBBED_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}

#: Seconds the runner itself may take on top of its cases (start-up, forks, clean-up).
_GRACE = 10.0


class SandboxError(RuntimeError):
    """The sandbox failed (not the program): the runner could not start, crashed or overran."""


@dataclass(frozen=True)
class CaseRun:
    """What one test case did. ``returned`` is ``{"value": ...}`` (or ``{"repr": ...}`` when
    the value is not JSON) for call-based cases that returned."""

    status: str
    seconds: float = 0.0
    stdout: str = ""
    stderr: str = ""
    returned: dict[str, Any] | None = None


@dataclass(frozen=True)
class RunReport:
    """The cases of one program, in order, the namespaces its runner entered, and the user id
    the program ran as (a fresh one per program when the runner starts as root, else None)."""

    cases: tuple[CaseRun, ...]
    isolation: tuple[str, ...]
    uid: int | None = None


def _limits_json(limits: CodeLimits) -> dict[str, Any]:
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

    Safe to share between the terms of a router: each event loop that grades with it gets its
    own cap (asyncio primitives belong to one loop).
    """

    def __init__(
        self,
        limits: CodeLimits,
        workers: int | None = None,
        python: str = sys.executable,
        isolate: bool = True,
    ) -> None:
        self.limits = limits
        self.isolate = isolate  # False: resource limits only (benchmarks measure the difference)
        self.workers = workers or len(os.sched_getaffinity(0))
        self.python = python
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
        """The runner's input for one program."""
        return json.dumps(
            {
                "program": program,
                "cases": list(runs),
                "limits": _limits_json(self.limits),
                "isolate": self.isolate,
                "drop_user": self.isolate,
                "stop_on_failure": stop_on_failure,
                "workdir": workdir,
            }
        ).encode()

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
        async with self._cap():
            workdir = tempfile.mkdtemp(prefix="rewardrouter-code-")
            try:
                os.chmod(workdir, 0o711)
                job = self.job(program, runs, stop_on_failure, workdir)
                reply = await self._exchange(job, workdir, len(runs))
            finally:
                await asyncio.to_thread(shutil.rmtree, workdir, True)
        return _report(reply, len(runs))

    async def _exchange(self, job: bytes, workdir: str, cases: int) -> bytes:
        try:
            process = await asyncio.create_subprocess_exec(
                self.python,
                "-I",
                str(HARNESS),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=workdir,
                env=SCRUBBED_ENV,
                start_new_session=True,
            )
        except OSError as exc:
            raise SandboxError(f"cannot start the sandbox runner ({self.python}): {exc}") from None
        budget = self.budget(cases)
        try:
            out, err = await asyncio.wait_for(process.communicate(job), budget)
        except asyncio.TimeoutError:
            raise SandboxError(f"the sandbox runner did not finish within {budget:g} s") from None
        finally:
            # The whole session: the runner, and everything it left (it leaves nothing when the
            # PID namespace exists; the kernel ends that with the runner's init).
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            if process.returncode is None:
                await process.wait()
        if process.returncode != 0 or not out:
            tail = err.decode(errors="replace")[-500:].strip()
            raise SandboxError(
                f"the sandbox runner exited with status {process.returncode}: {tail or 'no output'}"
            )
        return out


def _report(reply: bytes, expected: int) -> RunReport:
    try:
        data = json.loads(reply)
        cases = tuple(CaseRun(**case) for case in data["cases"])
        isolation = tuple(data["isolation"])
        uid = data["uid"]
    except (ValueError, KeyError, TypeError) as exc:
        raise SandboxError(f"unreadable report from the sandbox runner: {exc}") from None
    if len(cases) != expected:
        raise SandboxError(f"the sandbox runner reported {len(cases)} cases of {expected}")
    return RunReport(cases, isolation, uid)


@functools.cache
def probe(python: str = sys.executable) -> tuple[str, ...]:
    """The namespaces the local sandbox can enter on this machine (run once per interpreter).

    Raises :class:`SandboxError` when the runner does not work at all.
    """
    sandbox = LocalSandbox(CodeLimits(timeout=5), workers=1, python=python)
    with tempfile.TemporaryDirectory(prefix="rewardrouter-probe-") as workdir:
        os.chmod(workdir, 0o711)
        job = sandbox.job("print('ok')", [{"stdin": ""}], False, workdir)
        try:
            done = subprocess.run(
                [python, "-I", str(HARNESS)],
                input=job,
                capture_output=True,
                env=SCRUBBED_ENV,
                cwd=workdir,
                timeout=30,
                start_new_session=True,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SandboxError(f"the sandbox runner does not start ({python}): {exc}") from None
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace")[-500:].strip()
        raise SandboxError(f"the sandbox runner failed on this machine: {tail}")
    report = _report(done.stdout, 1)
    if report.cases[0].status != "ok" or report.cases[0].stdout != "ok\n":
        raise SandboxError(
            f"the sandbox runner cannot run a trivial program: {report.cases[0].status} "
            f"{report.cases[0].stderr[-300:]}"
        )
    return report.isolation
