"""A server on 127.0.0.1 that speaks SandboxFusion's ``POST /run_code`` (RunCodeRequest in,
RunCodeResponse out) and really runs the code it gets, ``python`` and ``bash``, in a subprocess.

It confines nothing: the tests send it benign programs only (hostile ones are the local
sandbox's tests). ``fail_first`` answers that many requests with HTTP 503 first, to exercise the
client's retries; ``requests`` records every request body.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from aiohttp import web
from rr_remote import LoopbackApp

_RUNNERS = {"python": [sys.executable], "bash": ["bash"]}


class FusionServer(LoopbackApp):
    def __init__(self, fail_first: int = 0, sandbox_error: bool = False) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail_first = fail_first
        self.sandbox_error = sandbox_error
        app = web.Application(client_max_size=64 << 20)
        app.router.add_post("/run_code", self._run_code)
        super().__init__(app)

    async def _run_code(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        if self.fail_first > 0:
            self.fail_first -= 1
            return web.json_response({"detail": "overloaded"}, status=503)
        if self.sandbox_error:
            return web.json_response(
                {"status": "SandboxError", "message": "executor pod lost", "run_result": None}
            )
        if body.get("language") not in _RUNNERS:
            return web.json_response({"detail": f"unsupported {body.get('language')}"}, status=422)
        return web.json_response(await self._execute(body))

    async def _execute(self, body: dict[str, Any]) -> dict[str, Any]:
        with tempfile.TemporaryDirectory() as where:
            source = Path(where) / "main"
            source.write_text(body["code"])
            began = time.monotonic()
            process = await asyncio.create_subprocess_exec(
                *_RUNNERS[body["language"]],
                str(source),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=where,
            )
            try:
                out, err = await asyncio.wait_for(
                    process.communicate((body.get("stdin") or "").encode()), body["run_timeout"]
                )
                status = "Finished"
            except asyncio.TimeoutError:
                process.kill()
                out, err = await process.communicate()
                status = "TimeLimitExceeded"
        run_result = {
            "status": status,
            "execution_time": time.monotonic() - began,
            "return_code": process.returncode,
            "stdout": out.decode(errors="replace"),
            "stderr": err.decode(errors="replace"),
        }
        success = status == "Finished" and process.returncode == 0
        return {
            "status": "Success" if success else "Failed",
            "message": "",
            "compile_result": None,
            "run_result": run_result,
            "executor_pod_name": None,
            "files": {},
        }
