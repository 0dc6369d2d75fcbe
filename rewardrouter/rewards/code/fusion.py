"""The ``sandbox_fusion`` backend: run programs on a SandboxFusion service (``POST /run_code``).

Requests go through :class:`~rewardrouter.remote.client.JsonEndpoint`, so the service gets the remote
client's connection pool, retries with jittered backoff, deadline and concurrency cap.

- **Python**: one request per program. Its code is the local backend's runner
  (:mod:`~rewardrouter.rewards.code.harness`), its stdin the job, so every case of the program
  runs in one request with a per-case deadline, and call-based and assert-style tests work as
  they do locally.
- **Other languages** (``cpp``, ``java``, ``go``, ...): one request per stdin/stdout case, as
  verl's client does; call-based and assert-style tests need Python.

Request and reply, as SandboxFusion's ``RunCodeRequest`` / ``RunCodeResponse`` define them::

    {"code": "...", "language": "python", "stdin": "...", "run_timeout": 6,
     "compile_timeout": 10, "memory_limit_MB": 1024}
    {"status": "Success" | "Failed" | "SandboxError", "message": "...",
     "compile_result": {...} | null,
     "run_result": {"status": "Finished" | "Error" | "TimeLimitExceeded", "return_code": 0,
                    "stdout": "...", "stderr": "...", "execution_time": 0.01}}

A ``SandboxError`` reply, or a reply of another shape, fails the call (the term's ``on_error``
applies); a program that fails to compile fails its cases.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any

from rewardrouter.remote.client import JsonEndpoint
from rewardrouter.rewards.code.bubblewrap import HARNESS
from rewardrouter.rewards.code.local import (
    CaseRun,
    LocalSandbox,
    RunReport,
    SandboxError,
    _report,
)
from rewardrouter.rewards.code.settings import CodeLimits, FusionServer

_RUN_STATUS = {"Finished": "ok", "TimeLimitExceeded": "timeout", "Error": "error"}


class FusionSandbox:
    """Runs programs in ``language`` on the SandboxFusion service behind ``endpoint``."""

    def __init__(
        self, server: FusionServer, limits: CodeLimits, language: str, endpoint: JsonEndpoint
    ) -> None:
        self.server = server
        self.limits = limits
        self.language = language
        self.endpoint = endpoint
        # The runner's job and time budget are the local backend's (without its walls or user
        # ids: the service is the sandbox).
        self._jobs = LocalSandbox(limits, workers=1, isolate=False, drop_user=False, walls=False)
        self._harness = HARNESS.read_text(encoding="utf-8")

    def fits(self, seconds: float) -> tuple[str, str] | None:
        """Whether the service's requests fit in the term's timeout ``seconds`` (their
        ``deadline``, checked by the remote client's own rule)."""
        return self.endpoint.fits(seconds)

    def _request(self, code: str, stdin: str, run_timeout: float, language: str) -> dict[str, Any]:
        return {
            "code": code,
            "language": language,
            "stdin": stdin,
            "run_timeout": run_timeout,
            "compile_timeout": self.server.compile_timeout,
            "memory_limit_MB": self.limits.memory_mb,
        }

    async def _post(self, request: dict[str, Any]) -> Mapping[str, Any]:
        reply = await self.endpoint.post_json(request)
        if not isinstance(reply, Mapping) or "status" not in reply:
            raise SandboxError(
                f"SandboxFusion replied {str(reply)[:200]!r}; expected a RunCodeResponse"
            )
        if reply["status"] == "SandboxError":
            raise SandboxError(f"SandboxFusion failed: {str(reply.get('message'))[:300]}")
        return reply

    async def run(
        self, program: str, runs: Sequence[dict[str, Any]], stop_on_failure: bool = False
    ) -> RunReport:
        if self.language == "python":
            return await self._run_harness(program, runs, stop_on_failure)
        for run in runs:
            if "stdin" not in run:
                raise SandboxError(
                    f"call-based and assert-style tests need Python; language is {self.language!r}"
                )
        if stop_on_failure:
            cases: list[CaseRun] = []
            for run in runs:
                case = await self._run_case(program, run["stdin"])
                cases.append(case)
                if case.status != "ok":
                    cases += [CaseRun("skipped")] * (len(runs) - len(cases))
                    break
        else:
            cases = list(await asyncio.gather(*(self._run_case(program, r["stdin"]) for r in runs)))
        return RunReport(tuple(cases), ("sandbox_fusion",))

    async def _run_case(self, program: str, stdin: str) -> CaseRun:
        reply = await self._post(self._request(program, stdin, self.limits.timeout, self.language))
        compiled = reply.get("compile_result")
        if isinstance(compiled, Mapping) and (
            compiled.get("status") != "Finished" or compiled.get("return_code") not in (0, None)
        ):
            return CaseRun("error", stderr=str(compiled.get("stderr") or "")[-4096:])
        result = reply.get("run_result")
        if not isinstance(result, Mapping):
            raise SandboxError(f"SandboxFusion replied without a run_result: {str(reply)[:200]!r}")
        status = _RUN_STATUS.get(str(result.get("status")), "error")
        if status == "ok" and result.get("return_code") not in (0, None):
            status = "error"
        return CaseRun(
            status,
            float(result.get("execution_time") or 0.0),
            str(result.get("stdout") or ""),
            str(result.get("stderr") or "")[-4096:],
        )

    async def _run_harness(
        self, program: str, runs: Sequence[dict[str, Any]], stop_on_failure: bool
    ) -> RunReport:
        job = self._jobs.job(program, runs, stop_on_failure, ".").decode()
        budget = self._jobs.budget(len(runs))
        reply = await self._post(self._request(self._harness, job, budget, "python"))
        result = reply.get("run_result")
        if not isinstance(result, Mapping) or result.get("status") != "Finished":
            found = json.dumps(result)[:300] if result is not None else "no run_result"
            raise SandboxError(f"the runner did not finish on SandboxFusion: {found}")
        if result.get("return_code") != 0:
            raise SandboxError(
                f"the runner failed on SandboxFusion: {str(result.get('stderr'))[-300:]}"
            )
        reply_text = str(result.get("stdout") or "").encode()
        return _report(reply_text, len(runs), ("sandbox_fusion",), uid_at=1)
