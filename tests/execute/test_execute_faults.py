"""Faults made real against the executors: huge samples, thread starts that fail, processes a
reward function leaves behind, scripts without a main guard. Each test bounds its own wait, so
a regression fails instead of hanging the suite."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
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
