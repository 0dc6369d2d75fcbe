"""The settings of a ``code`` reward term, read from the term's ``kwargs`` at compile time.

Example (APPS-style rows graded on this machine, all tests must pass)::

    correct:
      kind: code
      kwargs:
        scoring: all                   # 1.0 when every test passes, else 0.0
        limits: {timeout: 4, memory_mb: 512}

The same term on a SandboxFusion service::

    correct:
      kind: code
      kwargs:
        backend: sandbox_fusion
        server: {url: http://127.0.0.1:8080/run_code, concurrency: 64}
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rewardrouter.remote.settings import EndpointSettings
from rewardrouter.rewards.code.units import Duration, Size

#: Per test: a bare number of seconds up to ten minutes, longer with its unit (``20min``).
_PER_TEST = Duration(most=600)
PerTest = Annotated[(float, *_PER_TEST.annotation())]
PerTestOrNone = Annotated[(float | None, *_PER_TEST.annotation(nullable=True))]
#: All of a program's tests: a bare number of seconds up to an hour.
AllTests = Annotated[(float | None, *Duration(most=3600).annotation(nullable=True))]
#: Memory and disk of one program: a bare number of MiB up to 64 GiB.
Mebibytes = Annotated[(int, *Size("MiB", most=64 << 10).annotation())]
#: One case's output or file: a bare number of KiB up to 256 MiB.
Kibibytes = Annotated[(int, *Size("KiB", most=256 << 10).annotation())]


class CodeLimits(BaseModel):
    """What one test case of a program may use. Enforced by the local sandbox; on SandboxFusion
    ``timeout`` and ``memory_mb`` become the request's ``run_timeout`` and ``memory_limit_MB``."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    timeout: PerTest = Field(
        default=6.0,
        gt=0,
        description="Wall-clock seconds per test case (or a duration with its unit: `2s`, "
        "`1500ms`); the case is killed then.",
    )
    cpu_seconds: PerTestOrNone = Field(
        default=None, gt=0, description="CPU seconds per test case (RLIMIT_CPU); null: `timeout`."
    )
    memory_mb: Mebibytes = Field(
        default=1024,
        ge=32,
        description="Memory of the program, MiB (or a size with its unit: `512MiB`, `2GiB`): "
        "the address space of each of its processes "
        "(RLIMIT_AS), and, with `disk_mb`, all its memory together as the kernel counts it "
        "(a cgroup of its own: shared memory and files in /tmp included), where this process "
        "may make cgroups; elsewhere the resident memory of its processes, watched while it "
        "runs. Over it, the case ends with status memory.",
    )
    output_kb: Kibibytes = Field(
        default=1024,
        ge=1,
        description="Largest output or file a test case may write, KiB (RLIMIT_FSIZE); more is "
        "status output_limit.",
    )
    processes: int = Field(
        default=32,
        ge=1,
        description="Processes and threads the program may have at once (RLIMIT_NPROC, counted "
        "for a user id of its own when the router runs as root, and a pids cgroup of its own "
        "where this process may make cgroups).",
    )
    disk_mb: Mebibytes = Field(
        default=64,
        ge=1,
        description="Size of the private /tmp, the only place a program can write (inside "
        "bubblewrap).",
    )
    deadline: AllTests = Field(
        default=None,
        gt=0,
        description="Seconds for all of a program's test cases together; cases after the first "
        "not started by then fail (status skipped). null: derived from the term's timeout (less one test's "
        "`timeout` and the runner's 11 s allowance), so a program always ends within its call; "
        "a value whose worst case does not fit the term's timeout is refused when the router "
        "compiles.",
    )


class FusionServer(EndpointSettings):
    """A SandboxFusion service (its ``/run_code`` endpoint), with the remote client's retries."""

    url: str = Field(
        description="The service's /run_code URL, e.g. http://127.0.0.1:8080/run_code."
    )
    compile_timeout: float = Field(
        default=10.0, gt=0, description="Seconds the service may spend compiling (cpp, java, go)."
    )


class CodeSettings(BaseModel):
    """How a ``code`` term finds, runs and grades the program in a response."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    backend: Literal["local", "sandbox_fusion"] = Field(
        default="local",
        description="local: this machine's sandbox (Python programs); sandbox_fusion: a "
        "SandboxFusion service (`server`), any language it runs.",
    )
    language: str = Field(
        default="python",
        description="Language of the program; picks the fenced block (```python) and, on "
        "SandboxFusion, the runner.",
    )
    scoring: Literal["fraction", "all"] = Field(
        default="fraction",
        description="fraction: passed tests / tests; all: 1.0 when every test passes, else 0.0 "
        "(stops at the first failure).",
    )
    compare: Literal["tokens", "lines"] = Field(
        default="tokens",
        description="Printed output: same tokens (numbers within `tolerance`), or same lines.",
    )
    tolerance: float = Field(
        default=1e-6, ge=0, description="Absolute or relative tolerance between numbers."
    )
    require_fence: bool = Field(
        default=True,
        description="A response without a fenced code block scores 0; false: the whole answer "
        "is the program.",
    )
    limits: CodeLimits = Field(default_factory=CodeLimits)
    workers: int | None = Field(
        default=None,
        ge=1,
        description="local: programs graded at once; null: one per CPU this process may use.",
    )
    isolation: Literal["best_effort", "required"] = Field(
        default="required",
        description="local: `required` refuses to compile unless programs can run inside "
        "bubblewrap (their own PID, network and IPC namespaces, a read-only file system of the "
        "interpreter alone) under a user id of their own (the router runs as root); "
        "best_effort runs with what this machine allows, logs what is missing and names it in "
        "the term's name.",
    )
    server: FusionServer | None = Field(
        default=None, description="sandbox_fusion: the service to send programs to."
    )

    @model_validator(mode="after")
    def _backend_settings(self) -> CodeSettings:
        if self.backend == "sandbox_fusion" and self.server is None:
            raise ValueError(
                "backend sandbox_fusion needs `server: {url: http://host:port/run_code}`"
            )
        if self.backend == "local" and self.server is not None:
            raise ValueError("`server` applies to backend sandbox_fusion; remove it or set backend")
        if self.backend == "local" and self.language != "python":
            raise ValueError(
                f"the local backend runs Python programs; language {self.language!r} needs "
                "`backend: sandbox_fusion`"
            )
        return self
