"""The process executor, with real worker processes: deadlines that kill, deaths that are
reported, policies that decide, and workers that are started once and freed by close."""

from __future__ import annotations

import gc
import os
import pickle
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from enum import Enum
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import rr_execution
from rr_execution import router_config, row

from rewardrouter import RewardError, Router, Sample, compile_router
from rewardrouter.cli.summary import route_stats
from rewardrouter.execute.process.launch import FreshLauncher, Launcher, TemplateLauncher
from rewardrouter.execute.process.worker import LIMIT, READY
from rewardrouter.execute.wire import snapshot

pytestmark = pytest.mark.slow  # a long file: `make test` starts it first

TIMEOUT = 1.0
MARGIN = 1.5  # start-up of replacement workers and a loaded machine, never a second timeout

#: The five bad samples of the 200-sample batch: where they sit, and what each must become.
BAD = {
    17: ("sleep", "timeout", "no result within 1 s; its worker process was killed and replaced"),
    60: ("tower", "timeout", "no result within 1 s; its worker process was killed and replaced"),
    101: ("exit", "error", "the worker process died (exit status 1) during this call"),
    142: ("raise", "error", "ValueError: this response breaks the grader"),
    188: ("nan", "invalid", "returned nan; rewards must be finite"),
}


def _batch() -> list[dict[str, Any]]:
    samples = [row("x" * (i % 13)) for i in range(200)]
    for i, (bad, _, _) in BAD.items():
        samples[i] = row("bad", bad)
    return samples


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _warm(router: Router) -> None:
    """Start the workers before a timed batch: start-up is paid once per router, not measured."""
    router.score_sync([row("warm")])


@pytest.mark.parametrize(
    ("policy", "fallback"),
    [
        pytest.param("skip", None, id="skip"),
        pytest.param({"value": -1.0}, -1.0, id="fallback_value"),
    ],
)
def test_batch_with_bad_samples_ends_on_time_with_every_good_result(
    make_router: Any, policy: Any, fallback: float | None
) -> None:
    router = make_router(router_config("rr_execution.misbehave", on_error=policy, timeout=TIMEOUT))
    _warm(router)
    samples = _batch()
    start = time.perf_counter()
    results = router.score_sync(samples)
    elapsed = time.perf_counter() - start
    assert elapsed < TIMEOUT + MARGIN, f"took {elapsed:.2f} s"
    for i, result in enumerate(results):
        if i in BAD:
            _, status, message = BAD[i]
            assert (result.status, result.reward) == (status, fallback), i
            assert message in (result.error_message or ""), i
        else:
            assert (result.status, result.reward) == ("ok", float(i % 13)), i
    # What the command line's summary counts for the route.
    [stats] = route_stats(samples, results)
    assert dict(stats.statuses) == {"ok": 195, "timeout": 2, "error": 2, "invalid": 1}


def test_batch_with_bad_samples_raises_naming_the_first_failure(make_router: Any) -> None:
    router = make_router(router_config("rr_execution.misbehave", timeout=TIMEOUT))
    _warm(router)
    start = time.perf_counter()
    with pytest.raises(RewardError) as info:
        router.score_sync(_batch())
    assert time.perf_counter() - start < TIMEOUT + MARGIN
    error = info.value
    assert (error.index, error.route, error.term, error.function) == (
        17,
        "r",
        "t",
        "rr_execution.misbehave",
    )
    assert "sample 17, route 'r', term 't' (rr_execution.misbehave): timeout: no result" in str(
        error
    )


@pytest.fixture(scope="module")
def fallback_router() -> Iterator[Router]:
    """One router for the table below; its workers are replaced as the cases kill them."""
    config = router_config(
        "rr_execution.misbehave", on_error={"value": -1.0}, timeout=0.5, key="score"
    )
    with compile_router(config) as router:
        yield router


@pytest.mark.parametrize(
    ("bad", "status", "message"),
    [
        pytest.param("sleep", "timeout", "no result within 0.5 s", id="sleeps_forever"),
        pytest.param("bigint", "timeout", "worker process was killed", id="spins_in_c"),
        pytest.param("tower", "timeout", "worker process was killed", id="power_tower"),
        pytest.param("exit", "error", "died (exit status 1)", id="os_exit"),
        pytest.param("segfault", "error", "died (killed by SIGSEGV, signal 11)", id="segfault"),
        pytest.param("exit_call", "error", "SystemExit: 3", id="sys_exit_is_a_failure"),
        pytest.param("raise", "error", "ValueError: this response breaks", id="raises"),
        pytest.param("nan", "invalid", "returned nan", id="nan"),
        pytest.param("inf", "invalid", "returned -inf; rewards must be finite", id="inf"),
        pytest.param("string", "invalid", "returned str '1.0'", id="string"),
        pytest.param("dict_without_key", "invalid", "dict without key 'score'", id="no_key"),
    ],
)
def test_each_misbehaviour_gets_its_status_and_spares_its_neighbours(
    fallback_router: Router, bad: str, status: str, message: str
) -> None:
    results = fallback_router.score_sync([row("ab"), row("bad", bad), row("abc")])
    assert [(r.status, r.reward) for r in results] == [
        ("ok", 2.0),
        (status, -1.0),
        ("ok", 3.0),
    ]
    assert message in (results[1].error_message or "")


def test_none_means_not_applicable_not_a_failure(fallback_router: Router) -> None:
    [result] = fallback_router.score_sync([row("x", "none")])
    assert (result.status, result.reward, result.error_message) == ("skipped", None, None)


@pytest.mark.parametrize(
    ("bad", "status", "message"),
    [
        pytest.param("sleep", "timeout", "no result within 1 s", id="hangs"),
        pytest.param("exit", "error", "died (exit status 1)", id="dies"),
        pytest.param("short", "invalid", "group call returned 3 rewards for 4 samples", id="short"),
        pytest.param("not_a_list", "invalid", "returned dict; expected a list", id="not_a_list"),
    ],
)
def test_group_call_has_one_deadline_and_fails_as_a_whole(
    make_router: Any, bad: str, status: str, message: str
) -> None:
    config = router_config("rr_execution.misbehave_group", on_error="skip", timeout=TIMEOUT)
    router = make_router(config)
    _warm(router)
    start = time.perf_counter()
    results = router.score_sync([row("a"), row("b"), row("c", bad), row("d")])
    assert time.perf_counter() - start < TIMEOUT + MARGIN
    assert {(r.status, r.reward) for r in results} == {(status, None)}
    assert message in (results[0].error_message or "")


def test_an_overrun_in_a_chunk_costs_its_neighbours_nothing(make_router: Any) -> None:
    # One worker: the cheap samples travel in one chunk with the sleeper, and no idle worker
    # can take the rest of the chunk while it sleeps.
    config = router_config("rr_execution.misbehave", on_error="skip", workers=1, timeout=TIMEOUT)
    router = make_router(config)
    _warm(router)
    samples = [row("y" * (i % 5)) for i in range(60)]
    samples[20] = row("sleeper", "sleep")
    start = time.perf_counter()
    results = router.score_sync(samples)
    assert time.perf_counter() - start < TIMEOUT + MARGIN
    assert results[20].status == "timeout"
    assert all(r.reward == i % 5 for i, r in enumerate(results) if i != 20)


def _pids(router: Router) -> list[int]:
    """The router's worker processes (none before its first process call or after close)."""
    executor = router.executors.started("process")
    return [] if executor is None else executor.pids


def test_workers_start_on_first_use_and_serve_every_batch(make_router: Any) -> None:
    router = make_router(router_config("rr_execution.pid", workers=2))
    assert _pids(router) == []  # nothing started by compiling
    first = router.score_sync([row(str(i)) for i in range(50)])
    pids = sorted(_pids(router))
    assert len(pids) == 2
    assert {r.reward for r in first} <= set(map(float, pids))
    second = router.score_sync([row(str(i)) for i in range(50)])
    assert sorted(_pids(router)) == pids  # the same workers, no restart
    assert {r.reward for r in second} <= set(map(float, pids))


def test_a_killed_worker_is_replaced_and_close_frees_every_worker() -> None:
    router = compile_router(router_config("rr_execution.misbehave", on_error="skip", timeout=0.5))
    _warm(router)
    before = set(_pids(router))
    results = router.score_sync([row("bad", "sleep"), row("ok")])
    assert [r.status for r in results] == ["timeout", "ok"]
    after = set(_pids(router))
    assert len(after) == 2 and len(before - after) == 1  # one killed, one new
    assert not any(_alive(pid) for pid in before - after)
    router.close()
    assert not any(_alive(pid) for pid in before | after)
    assert _pids(router) == []


def test_a_router_that_is_never_closed_frees_its_workers_when_collected() -> None:
    router = compile_router(router_config("rr_execution.misbehave"))
    _warm(router)
    pids = _pids(router)
    assert pids and all(map(_alive, pids))
    del router
    gc.collect()
    assert not any(_alive(pid) for pid in pids)


def test_executors_run_where_they_say(make_router: Any) -> None:
    # Two routes, one function: the executor is part of the call key, so two route groups.
    config = router_config("rr_execution.pid", executor="thread")
    config["routes"]["p"] = router_config("rr_execution.pid")["routes"]["r"]
    router = make_router(config)
    here, there = router.score_sync([row("a"), row("b", dataset="p")])
    assert here.reward == os.getpid()
    assert there.reward in set(map(float, _pids(router)))


class _Status(Enum):
    COMPLETED = "completed"


class _TrainerSample:
    """A framework's sample: more attributes than a Sample, one of which cannot be pickled."""

    def __init__(self) -> None:
        self.prompt = "What is 6 x 7?"
        self.response = "42"
        self.label = "42"
        self.metadata = {"dataset": "r"}
        self.status = _Status.COMPLETED
        self.group_index = 3
        self.lock = threading.Lock()


def test_workers_receive_plain_snapshots_of_samples_and_args(make_router: Any) -> None:
    router = make_router(router_config("rr_execution.fields_seen", key="score"))
    args = SimpleNamespace(seed=7, lock=threading.Lock())
    [result] = router.score_sync([_TrainerSample()], args=args)
    assert result.status == "ok"
    assert result.raw == {
        "type": "Sample",
        "response": "42",
        "label": "42",
        "metadata": {"dataset": "r"},
        "status": "completed",
        "group_index": 3,
        "args": 7,
        "score": 1.0,
    }


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers fork from a template")
@pytest.mark.parametrize(
    ("first", "replacement_warm"),
    [
        pytest.param({}, 1.0, id="replacement_is_forked_warm"),
        # A warm-up call that starts a thread would make forking unsafe: the next worker comes
        # from a fresh (cold) template instead.
        pytest.param({"thread": True}, 0.0, id="no_fork_after_a_thread_starts"),
    ],
)
def test_replacement_workers_start_warm_from_the_template(
    make_router: Any, first: dict[str, Any], replacement_warm: float
) -> None:
    router = make_router(
        router_config("rr_execution.warmth", on_error="skip", workers=1, timeout=0.5)
    )
    [cold] = router.score_sync([row("a", **first)])
    assert cold.reward == 0.0  # the first worker had never run it
    killed, after = router.score_sync([row("bad", "sleep"), row("b")])
    assert killed.status == "timeout"
    assert after.reward == replacement_warm


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers fork from a template")
def test_a_module_a_later_pool_needs_is_imported_once_for_every_pool(make_router: Any) -> None:
    """Pools of several routers in one process (a sweep's jobs, a server's lanes), the first
    with other modules: the fork server imports what a later pool needs before it forks that
    pool's template, so the pools after it are forked from the same import and pay nothing."""
    make_router(router_config("rr_execution.warmth")).score_sync([row("a")])  # the server runs
    pids = set()
    for _ in range(2):
        router = make_router(router_config("rr_imported_once.imported_in", workers=1))
        [result] = router.score_sync([row("a")])
        assert result.status == "ok", result.error_message
        pids.add(int(result.reward))
        router.close()
    [imported_in] = pids  # one import for both pools: their templates are two processes
    assert imported_in != os.getpid()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers fork from a template")
@pytest.mark.parametrize(
    ("warm_calls", "replays"),
    [
        # For a function with side effects: the template never calls it.
        pytest.param(0, 0, id="zero_never_replays"),
        pytest.param(3, 3, id="replays_up_to_the_setting"),
        pytest.param(None, 8, id="replays_up_to_the_default"),
    ],
)
def test_the_template_calls_a_function_again_at_most_warm_calls_times(
    make_router: Any, tmp_path: Path, warm_calls: int | None, replays: int
) -> None:
    log = str(tmp_path / "calls")
    # One worker: no idle worker takes back calls of a busy one (where a race may run a call
    # twice), so every extra call in the log is the template's.
    config = router_config(
        "rr_execution.log_call", on_error="skip", workers=1, timeout=TIMEOUT, warm_calls=warm_calls
    )
    router = make_router(config)
    first = [row(f"first {i}", log=log) for i in range(12)]
    sleeper = row("sleeper", "sleep", log=log)
    second = [row(f"second {i}", log=log) for i in range(12)]
    assert {r.status for r in router.score_sync(first)} == {"ok"}
    before = _pids(router)
    [killed] = router.score_sync([sleeper])
    assert killed.status == "timeout"
    assert set(_pids(router)).isdisjoint(before)  # its worker was killed and replaced
    assert {r.status for r in router.score_sync(second)} == {"ok"}
    router.close()  # the template runs every replay it was sent before it stops
    scored = Counter(s["response"] for s in [*first, sleeper, *second])
    calls = Counter(Path(log).read_text().splitlines())
    assert scored - calls == Counter()  # every sample was called
    extra = calls - scored
    assert sum(extra.values()) == replays
    assert set(extra) <= {s["response"] for s in first + second}  # successful calls only
    assert set(extra.values()) <= {1}  # each replayed once


def _launchers() -> list[Any]:
    found = [pytest.param(FreshLauncher([], 0.05), id="fresh")]
    if sys.platform.startswith("linux"):
        found += [
            pytest.param(
                TemplateLauncher([], 0.05, slots=2, warm_calls=8),
                id="template_forked_by_the_server",
            ),
            pytest.param(
                TemplateLauncher([], 0.05, slots=2, warm_calls=8, fork_server=False),
                id="template",
            ),
        ]
    return found


@pytest.mark.parametrize("launcher", _launchers())
def test_launchers_start_workers_that_serve_and_die_by_pid(launcher: Launcher) -> None:
    worker = launcher.start()
    try:
        assert worker.conn.recv() == READY
        blob = pickle.dumps((rr_execution.misbehave, None, {}, False, 5.0))
        worker.progress[LIMIT] = 2.0
        items = pickle.dumps([snapshot(Sample(response="abc")), snapshot(Sample(response="x"))])
        worker.conn.send((7, 1, blob, items, 2))
        # A worker answers in parts when a part takes longer than its budget (a loaded machine)
        replies, done = [], False
        while not done:
            task_id, first, outcomes, _, done = worker.conn.recv()
            replies.append((task_id, first, [o.value for o in outcomes]))
        assert [r[0] for r in replies] == [7] * len(replies)
        assert [r[1] for r in replies] == [0, 1][: len(replies)]
        assert [v for r in replies for v in r[2]] == [3.0, 1.0]
        assert _alive(worker.pid)
        launcher.kill(worker)
        assert launcher.reap(worker, 5.0) == -signal.SIGKILL
        assert not _alive(worker.pid)
    finally:
        launcher.release(worker)
        launcher.close()


def test_closing_a_busy_router_ends_every_route_group_in_flight() -> None:
    # Two route groups (two functions), both running when the router closes: each caller
    # hears that its calls were cut short; none waits forever.
    config = router_config("rr_execution.misbehave", on_error="skip", timeout=60.0)
    config["routes"]["g"] = router_config("rr_execution.misbehave_group", on_error="skip")[
        "routes"
    ]["r"]
    router = compile_router(config)
    _warm(router)
    box: dict[str, Any] = {}
    thread = threading.Thread(
        target=lambda: box.update(
            results=router.score_sync([row("a", "sleep"), row("b", "sleep", dataset="g")])
        )
    )
    thread.start()
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline and _busy_workers(router) < 2:
        time.sleep(0.05)
    router.close()
    thread.join(timeout=30.0)
    assert not thread.is_alive(), "a caller was left waiting after close"
    assert [(r.status, r.error_message) for r in box["results"]] == [
        ("error", "t: the router was closed before this call ran"),
        ("error", "t: the router was closed before this call ran"),
    ]


def _busy_workers(router: Router) -> int:
    executor = router.executors.started("process")
    return 0 if executor is None else sum(w.task is not None for w in executor.pool._workers)
