"""The thread and inline executors: deadlines without signals, abandoned threads replaced,
cancelled coroutines, late results, and the same policies as every other executor."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import rr_execution
from rr_execution import router_config, row

from rewardrouter import RewardError

TIMEOUT = 0.5
MARGIN = 1.0


@pytest.fixture(autouse=True)
def _release_hung_threads() -> Iterator[None]:
    """Threads cannot be killed: the test lets its hung calls return when it is done."""
    rr_execution.RELEASE.clear()
    yield
    rr_execution.RELEASE.set()


def _lane_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("rewardrouter-thread-")]


@pytest.mark.parametrize(
    ("path", "executor", "bad", "message"),
    [
        pytest.param(
            "rr_execution.hang",
            "thread",
            "hang",
            "its thread was abandoned (threads cannot be stopped)",
            id="thread_hangs",
        ),
        pytest.param(
            "rr_execution.async_misbehave",
            "inline",
            "sleep",
            "the coroutine was cancelled",
            id="coroutine_hangs",
        ),
    ],
)
@pytest.mark.parametrize(
    ("policy", "fallback"),
    [pytest.param("skip", None, id="skip"), pytest.param({"value": 0.5}, 0.5, id="value")],
)
def test_an_overrun_is_a_timeout_and_the_rest_of_the_batch_is_scored(
    make_router: Any,
    path: str,
    executor: str,
    bad: str,
    message: str,
    policy: Any,
    fallback: float | None,
) -> None:
    config = router_config(path, executor=executor, on_error=policy, timeout=TIMEOUT)
    router = make_router(config)
    samples = [row("z" * (i % 4)) for i in range(40)]
    samples[7] = row("bad", bad)
    start = time.perf_counter()
    results = router.score_sync(samples)
    assert time.perf_counter() - start < TIMEOUT + MARGIN
    assert (results[7].status, results[7].reward) == ("timeout", fallback)
    assert f"no result within {TIMEOUT:g} s; {message}" in (results[7].error_message or "")
    assert [r.reward for i, r in enumerate(results) if i != 7] == [
        i % 4 for i in range(40) if i != 7
    ]


@pytest.mark.parametrize(
    ("path", "executor"),
    [
        pytest.param("rr_execution.hang", "thread", id="thread"),
        pytest.param("rr_execution.async_misbehave", "inline", id="inline"),
    ],
)
def test_on_error_raise_names_the_sample_that_overran(
    make_router: Any, path: str, executor: str
) -> None:
    bad = "hang" if executor == "thread" else "sleep"
    router = make_router(router_config(path, executor=executor, timeout=TIMEOUT))
    with pytest.raises(RewardError, match=rf"sample 2, route 'r', term 't' \({path}\): timeout"):
        router.score_sync([row("a"), row("b"), row("c", bad)])


def test_an_abandoned_thread_is_replaced_so_capacity_stays(make_router: Any) -> None:
    config = router_config("rr_execution.hang", executor="thread", on_error="skip", timeout=0.3)
    router = make_router({**config, "max_concurrency": 1})  # one thread at a time
    first = router.score_sync([row("bad", "hang"), row("ab")])
    assert [r.status for r in first] == ["timeout", "ok"]
    second = router.score_sync([row("abc") for _ in range(10)])  # a new thread serves these
    assert [r.reward for r in second] == [3.0] * 10
    rr_execution.RELEASE.set()
    time.sleep(0.1)  # the abandoned thread returns from its call and leaves
    assert len(_lane_threads()) <= 1


def test_group_call_on_a_thread_has_one_deadline(make_router: Any) -> None:
    config = router_config(
        "rr_execution.hang_group", executor="thread", on_error="skip", timeout=TIMEOUT
    )
    router = make_router(config)
    start = time.perf_counter()
    results = router.score_sync([row("a"), row("b", "hang"), row("c")])
    assert time.perf_counter() - start < TIMEOUT + MARGIN
    assert [r.status for r in results] == ["timeout"] * 3


@pytest.mark.parametrize(
    ("executor", "seconds", "status"),
    [
        pytest.param("inline", 0.3, "timeout", id="inline_late"),
        pytest.param("inline", 0.0, "ok", id="inline_in_time"),
        pytest.param("thread", 0.0, "ok", id="thread_in_time"),
    ],
)
def test_a_result_after_the_deadline_is_a_timeout_on_every_executor(
    make_router: Any, executor: str, seconds: float, status: str
) -> None:
    config = router_config(
        "rr_execution.slow_then_fine", executor=executor, on_error="skip", timeout=0.15
    )
    [result] = make_router(config).score_sync([row("x", seconds=seconds)])
    assert result.status == status
    if status == "timeout":
        assert "it returned after 0.3" in (result.error_message or "")


def test_close_stops_the_lane_threads(make_router: Any) -> None:
    router = make_router(router_config("rr_execution.hang", executor="thread"))
    router.score_sync([row(str(i)) for i in range(20)])
    assert _lane_threads()
    router.close()
    time.sleep(0.1)
    assert not _lane_threads()
