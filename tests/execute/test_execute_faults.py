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
