"""Faults made real against the executors: huge samples, thread starts that fail, processes a
reward function leaves behind, scripts without a main guard. Each test bounds its own wait, so
a regression fails instead of hanging the suite."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import rr_execution
from rr_execution import router_config, row

pytestmark = pytest.mark.slow  # a long file: `make test` starts it first

T = TypeVar("T")

#: A sample of about 50 MB: a whole book of reasoning, or a runaway generation.
HUGE = 50_000_000


def bounded(fn: Callable[[], T], seconds: float) -> T:
    """``fn()`` run on a daemon thread; fails the test if it is not done within ``seconds``."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds:g} s"
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("bad", "status", "reward"),
    [
        pytest.param(None, "ok", float(HUGE), id="scored"),
        pytest.param("sleep", "timeout", None, id="deadline_fires"),
    ],
)
def test_a_huge_sample_runs_once_and_meets_its_deadline(
    make_router: Any, bad: str | None, status: str, reward: float | None
) -> None:
    # Two idle workers: before the fix each took the unstarted call back from the other while
    # it was still unpickling it, forever, and the deadline never began.
    timeout = 5.0
    router = make_router(
        router_config("rr_execution.misbehave", on_error="skip", timeout=timeout, workers=2)
    )
    router.score_sync([row("warm"), row("up")])
    start = time.monotonic()
    [result] = bounded(lambda: router.score_sync([row("x" * HUGE, bad)]), 4 * timeout)
    assert (result.status, result.reward) == (status, reward)
    assert time.monotonic() - start < 3 * timeout


# -- the thread executor -------------------------------------------------------------------------

#: Run in a fresh interpreter: a router's thread lane while no thread can be started (an address
#: space limit below one thread stack), then after the limit is lifted. Prints one JSON line.
_NO_THREADS = """
import json, resource, sys, threading
sys.path.insert(0, {tests!r})
from rr_execution import router_config, row
from rewardrouter import compile_router

threading.stack_size(256 * 2**20)  # every new thread maps a 256 MiB stack
config = router_config("rr_testfns.length", executor="thread", on_error="skip", timeout=5.0)
config["max_concurrency"] = 4
# Imports and first-use costs before the limit, on no thread (a thread's stack, once freed,
# would be cached and reused by the next thread: no new mapping that the limit could refuse).
inline = router_config("rr_testfns.length", executor="inline", on_error="skip")
with compile_router(inline) as warm:
    warm.score_sync([row("warm")])
with open("/proc/self/status") as status:
    size = next(int(l.split()[1]) * 1024 for l in status if l.startswith("VmSize:"))
soft, hard = resource.getrlimit(resource.RLIMIT_AS)
router = compile_router(config)
resource.setrlimit(resource.RLIMIT_AS, (size + 64 * 2**20, hard))
limited = []
for _ in range(70):  # more failed starts than the lane has threads
    try:
        limited += [(r.status, r.error_message) for r in router.score_sync([row("abc")] * 3)]
    except Exception as exc:
        limited.append(("raised", repr(exc)))
resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
after = [(r.status, r.reward) for r in router.score_sync([row("abcd")] * 8)]
print(json.dumps({{"limited": limited, "after": after}}))
"""


def test_failed_thread_starts_fail_their_calls_and_the_lane_recovers() -> None:
    tests = str(Path(__file__).resolve().parents[1])
    code = _NO_THREADS.format(tests=tests)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    statuses = {status for status, _ in seen["limited"]}
    assert statuses == {"error"}, seen["limited"][:3]
    assert all("no thread could be started" in message for _, message in seen["limited"])
    assert "can't start new thread" in seen["limited"][0][1]
    assert seen["after"] == [["ok", 4.0]] * 8  # the lane starts threads again


@pytest.fixture
def release_hung_threads() -> Iterator[None]:
    rr_execution.RELEASE.clear()
    yield
    rr_execution.RELEASE.set()


def _lane_threads() -> int:
    return sum(t.name.startswith("rewardrouter-thread-") for t in threading.enumerate())


def test_calls_that_never_return_hold_a_bounded_number_of_threads(
    make_router: Any, release_hung_threads: None
) -> None:
    config = router_config("rr_execution.hang", executor="thread", on_error="skip", timeout=0.2)
    router = make_router({**config, "max_concurrency": 2})
    for _ in range(10):  # ten hung calls, one batch at a time as a server receives them
        [hung] = bounded(lambda: router.score_sync([row("x", "hang")]), 5.0)
        assert hung.status in ("timeout", "error")
    assert _lane_threads() <= 4  # two serving, two abandoned: no more
    # Every thread is held: calls fail at once, saying why, instead of waiting for a thread.
    [refused] = bounded(lambda: router.score_sync([row("abc")]), 5.0)
    assert refused.status == "error"
    assert "held by calls that overran their deadline" in (refused.error_message or "")
    rr_execution.RELEASE.set()  # the hung calls return: their threads leave, capacity is back
    lane = router.executors.started("thread").lane
    deadline = time.monotonic() + 5.0
    while lane.abandoned and time.monotonic() < deadline:
        time.sleep(0.02)
    results = bounded(lambda: router.score_sync([row("abc")] * 6), 5.0)
    assert [(r.status, r.reward) for r in results] == [("ok", 3.0)] * 6


# -- processes that reward functions start --------------------------------------------------------


def _gone(pid: int) -> bool:
    """The process has exited (a zombie waiting for its parent counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _wait_gone(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not _gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _child_of(pid_file: Path) -> int:
    return int(pid_file.read_text())


SESSIONS = [
    pytest.param(False, id="in_the_worker_group"),
    pytest.param(True, id="in_a_session_of_its_own"),
]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_process_started_by_a_call_dies_with_the_worker_at_its_deadline(
    make_router: Any, tmp_path: Path
) -> None:
    # The call times out, and only calls that succeeded are replayed in the worker template:
    # nothing else writes the pid file.
    router = make_router(router_config("rr_execution.leave_child", on_error="skip", timeout=1.0))
    pid_file = tmp_path / "child"
    [result] = router.score_sync([row("x", "hang", pid_file=str(pid_file))])
    assert result.status == "timeout"
    assert _wait_gone(_child_of(pid_file)), "the call's child outlived its killed worker"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("session", SESSIONS)
def test_processes_started_by_calls_die_when_the_router_closes(
    make_router: Any, tmp_path: Path, session: bool
) -> None:
    # warm_calls 0: the worker template would otherwise call leave_child again on the same
    # sample, truncating and rewriting the pid file while the test reads it.
    router = make_router(router_config("rr_execution.leave_child", timeout=5.0, warm_calls=0))
    pid_file = tmp_path / "child"
    [result] = router.score_sync([row("x", pid_file=str(pid_file), session=session)])
    assert result.reward == 1.0
    child = _child_of(pid_file)
    assert not _gone(child)  # the call returned; what it started still runs
    router.close()
    assert _wait_gone(child), "the call's child outlived close()"


_EXITS_WITHOUT_CLOSING = """
import os, sys
sys.path.insert(0, {tests!r})
from rr_execution import router_config, row
from rewardrouter import compile_router

# warm_calls 0: no replay in the worker template rewrites the pid file as the process exits.
router = compile_router(router_config("rr_execution.leave_child", timeout=5.0, warm_calls=0))
print(router.score_sync([row("x", pid_file={pid_file!r}, session={session!r})])[0].reward)
sys.stdout.flush()
os._exit(0)  # no close, no finalizers: as a trainer killed by its scheduler
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("session", SESSIONS)
def test_processes_started_by_calls_die_when_the_parent_exits(
    tmp_path: Path, session: bool
) -> None:
    tests = str(Path(__file__).resolve().parents[1])
    pid_file = tmp_path / "child"
    code = _EXITS_WITHOUT_CLOSING.format(tests=tests, pid_file=str(pid_file), session=session)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, done.stdout.strip()) == (0, "1.0"), done.stderr[-3000:]
    assert _wait_gone(_child_of(pid_file)), "the call's child outlived the parent process"


# -- scripts without a main guard -----------------------------------------------------------------

#: A launch script as users write them: no ``if __name__ == "__main__":``. ``math`` runs in worker
#: processes; the script must run once, its workers never running it again.
_UNGUARDED = """
import sys
from rewardrouter import compile_router

print("script started", flush=True)
config = {{"default_route": "m", "routes": {{"m": {{"rewards": {{"c": {{"kind": "math"}}}}}}}}}}
config["executors"] = {{"process": {{"start_method": {method!r}}}}}
with compile_router(config) as router:
    results = router.score_sync([{{"response": "so \\\\boxed{{2}}", "label": "2"}}] * 4)
print([r.reward for r in results], [r.status for r in results], flush=True)
"""


def _run_script(folder: Path, code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` as ``python train.py`` in ``folder``, as a user starts a launch script."""
    (folder / "train.py").write_text(code)
    return subprocess.run(
        [sys.executable, "train.py"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("method", ["auto", "spawn"])
def test_a_script_without_a_main_guard_runs_once_and_scores(tmp_path: Path, method: str) -> None:
    done = _run_script(tmp_path, _UNGUARDED.format(method=method))
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == [
        "script started",
        "[1.0, 1.0, 1.0, 1.0] ['ok', 'ok', 'ok', 'ok']",
    ], done.stderr[-3000:]


_DEFINED_IN_THE_SCRIPT = """
from rewardrouter import ConfigError, compile_router

def my_reward(args, sample):
    return 1.0

config = {"default_route": "r", "allowed_modules": ["__main__"], "routes": {"r": {"rewards": {
    "mine": {"path": "__main__.my_reward", "executor": "process"}}}}}
try:
    compile_router(config)
except ConfigError as exc:
    print(exc)
"""


def test_a_reward_defined_in_the_script_is_refused_for_workers_with_the_fix(
    tmp_path: Path,
) -> None:
    done = _run_script(tmp_path, _DEFINED_IN_THE_SCRIPT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "routes.r.rewards.mine.executor" in done.stdout
    assert "defined in the script being run (`__main__`)" in done.stdout
    assert "define it at the top level of a module that the script imports" in done.stdout
