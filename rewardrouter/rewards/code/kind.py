"""The ``code`` kind as the compiler sees it: its settings model and ``build``, registered as a
resource kind (the HTTP client of the SandboxFusion backend is imported only when built).

Terms with equal settings share one grader (and so one route group); every ``code`` term of a
router with the same limits shares one local sandbox and its cap on programs run at once.
"""

from __future__ import annotations

import logging
import platform
from typing import TYPE_CHECKING, Any

from rewardrouter.introspect import ResolveError
from rewardrouter.remote.settings import display_url
from rewardrouter.rewards.code.cases import Case, parse_tests
from rewardrouter.rewards.code.compare import same_output, same_return
from rewardrouter.rewards.code.extract import extract_program
from rewardrouter.rewards.code.harness import SECCOMP_MACHINES, decode
from rewardrouter.rewards.code.local import (
    SECCOMP,
    WALLS,
    CaseRun,
    LocalSandbox,
    SandboxError,
    probe,
)
from rewardrouter.rewards.code.settings import CodeSettings
from rewardrouter.rewards.registry import Bound, Resources, resource_kind
from rewardrouter.rewards.remote import read_credential

if TYPE_CHECKING:
    from rewardrouter.rewards.code.fusion import FusionSandbox

log = logging.getLogger("rewardrouter.code")


class CodeReward:
    """``await reward(args, sample)``: the share of the label's tests that the response's program
    passes (``scoring: fraction``), or 1.0 / 0.0 (``scoring: all``).

    A response without a program scores 0.0; a label without readable tests raises
    :class:`~rewardrouter.rewards.code.cases.LabelError` and a sandbox that fails raises
    :class:`~rewardrouter.rewards.code.local.SandboxError`, so the term's ``on_error`` decides.
    """

    __slots__ = ("name", "sandbox", "settings")

    def __init__(
        self, settings: CodeSettings, sandbox: LocalSandbox | FusionSandbox, name: str
    ) -> None:
        self.settings = settings
        self.sandbox = sandbox
        self.name = name

    def __repr__(self) -> str:
        return f"CodeReward({self.name!r})"

    def fits(self, seconds: float) -> tuple[str, str] | None:
        """Whether a program's worst case fits in the term's timeout ``seconds`` (see
        :class:`~rewardrouter.rewards.registry.Budgeted`): the sandbox's to say."""
        return self.sandbox.fits(seconds)

    async def __call__(self, args: Any, sample: Any) -> float:
        cases = parse_tests(getattr(sample, "label", None))
        settings = self.settings
        program = extract_program(
            getattr(sample, "response", "") or "", settings.language, settings.require_fence
        )
        if program is None:
            return 0.0
        report = await self.sandbox.run(
            program, [case.run for case in cases], stop_on_failure=settings.scoring == "all"
        )
        passed = sum(self.passed(case, run) for case, run in zip(cases, report.cases, strict=True))
        if settings.scoring == "all":
            return float(passed == len(cases))
        return passed / len(cases)

    def passed(self, case: Case, run: CaseRun) -> bool:
        """Whether ``run`` (what the sandbox reported) passes ``case``, decided here from the
        printed output or the decoded return values: nothing the program ran can say so."""
        if run.status != "ok":
            return False
        if case.kind == "stdin":
            return same_output(
                run.stdout, case.expected, self.settings.compare, self.settings.tolerance
            )
        values = _returned(run, len(case.run["calls"]))
        if values is None:
            return False
        if case.kind == "call":
            return same_return(values[0], case.expected, self.settings.tolerance)
        start = 0
        for check in case.expected:
            if not check.holds(values[start : start + len(check.calls)]):
                return False
            start += len(check.calls)
        return True


def _returned(run: CaseRun, calls: int) -> list[Any] | None:
    """The plain values the program's calls returned, or None when the report holds no
    decodable value for each call."""
    values = (run.returned or {}).get("values")
    if not isinstance(values, list) or len(values) != calls:
        return None
    try:
        return [decode(value) for value in values]
    except ValueError:
        return None


def _local(settings: CodeSettings, resources: Resources) -> tuple[LocalSandbox, str]:
    isolate = True
    try:
        isolation = probe()
    except SandboxError as exc:
        if settings.isolation == "required":
            raise ResolveError(
                f"kwargs.isolation: the local code sandbox cannot run here: {exc}",
                "install bubblewrap (Debian/Ubuntu `apt-get install bubblewrap`) where user "
                "namespaces are allowed, use `backend: sandbox_fusion`, or accept a weaker "
                "sandbox explicitly with `isolation: best_effort`",
            ) from None
        log.warning("code sandbox: %s; falling back to resource limits only", exc)
        isolate = False
        try:
            isolation = probe(isolate=False)
        except SandboxError as fallback:
            raise ResolveError(
                f"the local code sandbox does not work here: {exc}; without bubblewrap: {fallback}",
                "install bubblewrap (Debian/Ubuntu `apt-get install bubblewrap`) or use "
                "`backend: sandbox_fusion`",
            ) from None
    if "uid" not in isolation and settings.isolation == "required":
        raise ResolveError(
            "kwargs.isolation: programs would run under the trainer's own user id (a process "
            "that is not root cannot give them another), mapped to `nobody` in a user namespace",
            "run the trainer as root (each program then gets a fresh user id), use "
            "`backend: sandbox_fusion`, or accept this explicitly with `isolation: best_effort`",
        )
    if SECCOMP not in isolation and settings.isolation == "required":
        raise ResolveError(
            f"kwargs.isolation: the sandbox's seccomp filter is written for "
            f"{' and '.join(SECCOMP_MACHINES)}, not this {platform.machine()} machine: programs "
            f"could make user namespaces, memfd and shared memory outside their limits",
            "use `backend: sandbox_fusion`, or accept this explicitly with "
            "`isolation: best_effort`",
        )
    missing = [name for name in (*WALLS[True], "uid", SECCOMP) if name not in isolation]
    if missing:
        log.warning(
            "code sandbox (isolation: best_effort): UNTRUSTED PROGRAMS RUN WITHOUT %s; see the "
            "README's threat model",
            ", ".join(missing),
        )
    sandbox = resources.get(
        (LocalSandbox, settings.limits.model_dump_json(), settings.workers, isolate),
        lambda: LocalSandbox(settings.limits, settings.workers, isolate=isolate),
    )
    weaker = f"; best_effort, without {', '.join(missing)}" if missing else ""
    return sandbox, f"code local ({', '.join(isolation)}{weaker})"


@resource_kind("code", CodeSettings)
def build(settings: CodeSettings, resources: Resources) -> Bound:
    """Run the response's program against the label's tests, locally or on SandboxFusion.

    Raises :class:`ResolveError` when its backend cannot work.
    """
    sandbox: LocalSandbox | FusionSandbox
    if settings.backend == "local":
        sandbox, name = _local(settings, resources)
    else:
        from rewardrouter.remote.client import JsonEndpoint
        from rewardrouter.remote.pool import SessionPool
        from rewardrouter.rewards.code.fusion import FusionSandbox

        server = settings.server
        assert server is not None  # the settings model requires it for this backend
        credential = read_credential(server, "server.auth_env")
        pool = resources.get(SessionPool, SessionPool)
        name = f"code sandbox_fusion {display_url(server.url)}"
        endpoint = resources.get(
            (JsonEndpoint, server.model_dump_json()),
            lambda: JsonEndpoint(server, pool, credential, name),
        )
        sandbox = FusionSandbox(server, settings.limits, settings.language, endpoint)
    return Bound(CodeReward(settings, sandbox, name), "single", name)
