"""The ``ray`` executor on a real local Ray instance: the process executor's results, deadlines
that kill actors, deaths that lose no sample, actors freed by close, and no second cluster when
a router runs inside a Ray actor.

Ray is optional: without it, only the tests that need no Ray run (and one of them checks that
choosing the executor is then a compile problem).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rr_execution import router_config, row

from rewardrouter import (
    ConfigError,
    RewardResult,
    RewardRouterError,
    Router,
    Sample,
    compile_router,
)
from rewardrouter.compile.resolve import resolve_path
from rewardrouter.execute.executor import Call
from rewardrouter.execute.ray.pool import RayPool
from rewardrouter.execute.ray.settings import RaySettings

pytestmark = pytest.mark.slow  # a long file: `make test` starts it first

TESTS = Path(__file__).resolve().parents[1]
TIMEOUT = 1.0
#: Generous bound on a batch with one overrun: a second deadline for the call run alone, and a
#: replacement actor (a new Ray worker process) on a loaded machine. A hang would take an hour.
BOUND = 30.0
#: Every pool of these tests: two actors on half a CPU each, so that routers of a test and the
#: module's routers fit on the two CPUs of the test's Ray instance at once.
POOL = {"actors": 2, "cpus_per_actor": 0.5}


# -- without a Ray instance (first: the last test starts one of its own) ------------


@pytest.mark.parametrize(
    ("address", "valid"),
    [
        pytest.param("auto", True, id="auto"),
        pytest.param("10.0.0.1:6379", True, id="head_node"),
        pytest.param("ray://head.cluster:10001", True, id="ray_client"),
        pytest.param(None, True, id="null_starts_a_local_instance"),
        pytest.param("http://head:8265", False, id="dashboard_url"),
        pytest.param("head", False, id="no_port"),
    ],
)
def test_ray_addresses(address: str | None, valid: bool) -> None:
    config = {"executors": {"ray": {"address": address}}}
    if valid:
        compile_router(config).close()
    else:
        with pytest.raises(ConfigError, match=r"executors\.ray\.address: .*is not a Ray address"):
            compile_router(config)


def _problems(config: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        compile_router(config)
    return [str(p) for p in info.value.problems]


def test_without_ray_choosing_it_is_a_compile_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # what an environment without Ray looks like
    assert _problems(router_config("rr_execution.misbehave", executor="ray")) == [
        "routes.r.rewards.t.executor: executor 'ray' needs Ray, which is not installed\n"
        "    pip install 'rewardrouter[ray]' (or use `executor: process` on one machine)"
    ]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param(
            "rr_execution.LAMBDA",
            "rr_execution.LAMBDA cannot run in a Ray actor: it is a lambda",
            id="lambda",
        ),
        pytest.param(
            "rr_execution.async_grade",
            "rr_execution.async_grade is an async function; executor 'ray' runs plain functions",
            id="async",
        ),
    ],
)
def test_what_a_ray_actor_cannot_run_is_a_compile_problem(path: str, expected: str) -> None:
    pytest.importorskip("ray")
    [problem] = _problems(router_config(path, executor="ray"))
    assert problem.startswith(f"routes.r.rewards.t.executor: {expected}")


def test_an_address_where_nothing_answers_is_a_clear_error_at_once() -> None:
    pytest.importorskip("ray")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # free once closed: nothing listens there
    config = router_config("rr_execution.misbehave", executor="ray")
    config["ray"] = {"address": f"127.0.0.1:{port}", "actors": 1}
    start = time.perf_counter()
    with compile_router(config) as router, pytest.raises(RewardRouterError) as info:
        router.score_sync([row("abc")])
    assert time.perf_counter() - start < BOUND  # not Ray's 20 s of retries, nor a hang
    assert str(info.value) == (
        f"ray.address: nothing answers at '127.0.0.1:{port}' (ConnectionRefusedError: [Errno "
        f"111] Connection refused); start the cluster's head there (`ray start --head "
        f"--port={port}`), or point `ray.address` at the head that `ray start --head` named "
        f"(`auto` on a node of the cluster)"
    )


class Listener:
    """A real TCP service on a free local port that is not Ray: ``reply`` is what it sends each
    connection (its first bytes read, when ``after_request``), then it hangs up."""

    def __init__(self, reply: bytes, after_request: bool = True) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.server.getsockname()[1]}"
        self.reply, self.after_request = reply, after_request
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        with self.server:
            while True:
                try:
                    connection, _ = self.server.accept()
                except OSError:  # closed
                    return
                with connection:
                    if self.after_request:
                        connection.recv(1024)
                    connection.sendall(self.reply)

    def close(self) -> None:
        self.server.close()


# Each row: a service that is not a Ray head, and how the error says what answered.
NOT_RAY = [
    pytest.param(
        b"HTTP/1.1 400 Bad Request\r\nServer: nginx\r\n\r\n",
        True,
        "an HTTP server answers there ('HTTP/1.1 400 Bad Request')",
        id="http_server",
    ),
    pytest.param(
        b"SSH-2.0-OpenSSH_9.6\r\n",
        False,
        "it answered 'SSH-2.0-OpenSSH_9.6'",
        id="banner_before_a_word",
    ),
    pytest.param(b"", True, "it closed the connection without a word", id="hangs_up"),
]


@pytest.mark.parametrize(("reply", "after_request", "answered"), NOT_RAY)
def test_an_address_where_a_service_that_is_not_ray_listens_says_what_answered(
    reply: bytes, after_request: bool, answered: str
) -> None:
    """``ray.init`` would wait there for minutes; the router says at once what it found."""
    pytest.importorskip("ray")
    listener = Listener(reply, after_request)
    config = router_config("rr_execution.misbehave", executor="ray")
    config["ray"] = {"address": listener.address, "actors": 1}
    start = time.perf_counter()
    try:
        with compile_router(config) as router, pytest.raises(RewardRouterError) as info:
            router.score_sync([row("abc")])
    finally:
        listener.close()
    assert time.perf_counter() - start < BOUND
    assert str(info.value) == (
        f"ray.address: what listens at {listener.address!r} is not a Ray head: {answered}; "
        f"point `ray.address` at the port of the cluster's head (the one `ray start --head` "
        f"prints, 6379 unless `--port` says otherwise), or `ray://host:10001` for Ray Client"
    )


def test_auto_goes_where_ray_address_points(monkeypatch: pytest.MonkeyPatch) -> None:
    """``auto`` with ``RAY_ADDRESS`` set is checked at that head, and the error names both."""
    pytest.importorskip("ray")
    listener = Listener(b"HTTP/1.0 200 OK\r\n\r\n")
    monkeypatch.setenv("RAY_ADDRESS", listener.address)
    config = router_config("rr_execution.misbehave", executor="ray")
    config["ray"] = {"address": "auto", "actors": 1}
    try:
        with compile_router(config) as router, pytest.raises(RewardRouterError) as info:
            router.score_sync([row("abc")])
    finally:
        listener.close()
    assert str(info.value).startswith(
        f"ray.address: what listens at {listener.address!r} (`auto`, from RAY_ADDRESS) is not a "
        f"Ray head: an HTTP server answers there ('HTTP/1.0 200 OK'); "
    )


def test_a_router_that_starts_ray_imports_it_late_and_shuts_it_down() -> None:
    pytest.importorskip("ray")
    script = textwrap.dedent(
        """
        import sys
        from rewardrouter import compile_router
        router = compile_router({
            "default_route": "r",
            "executors": {"ray": {"address": None, "num_cpus": 1, "actors": 1}},
            "routes": {"r": {"rewards": {"t": {"kind": "exact_match", "executor": "ray"}}}},
        })
        print("imported before use:", "ray" in sys.modules)
        [result] = router.score_sync([{"response": "42", "label": "42"}])
        import ray
        print("reward:", result.reward, "started:", router.executors["ray"].pool.lease.started)
        router.close()
        print("running after close:", ray.is_initialized())
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == [
        "imported before use: False",
        "reward: 1.0 started: True",
        "running after close: False",
    ]


# -- on the test's Ray instance --------------------------------------------------------------


@pytest.fixture(scope="module")
def ray() -> Iterator[Any]:
    """A local Ray instance with 2 CPUs whose workers can import the test modules."""
    ray = pytest.importorskip("ray")
    path = os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH")) if p)
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": path}},
    )
    yield ray
    ray.shutdown()


def _mixed(executor: str) -> dict[str, Any]:
    """Three routes on one executor: the math built-in, a misbehaving function, a group one."""

    def term(**fields: Any) -> dict[str, Any]:
        return {"t": {"executor": executor, "on_error": "skip", **fields}}

    return {
        "timeout": TIMEOUT,
        "executors": {"process": {"workers": 2}, "ray": POOL},
        "routes": {
            "math": {"rewards": term(kind="math")},
            "misbehave": {"rewards": term(path="rr_execution.misbehave")},
            "group": {"rewards": term(path="rr_execution.misbehave_group")},
        },
    }


@pytest.fixture(scope="module")
def routers(ray: Any) -> Iterator[dict[str, Router]]:
    """The same config on the process and the ray executor, warmed up."""
    made = {executor: compile_router(_mixed(executor)) for executor in ("process", "ray")}
    for router in made.values():
        router.score_sync([_math(1), _bad(""), row("g", dataset="group")])
    yield made
    for router in made.values():
        router.close()


def _math(i: int) -> dict[str, Any]:
    """A math answer; every third one is wrong."""
    answer = f"\\frac{{{i}}}{{{i + 1}}}" if i % 3 else f"{i} + 1"
    return {"response": f"So the answer is \\boxed{{{answer}}}.", "label": f"{i}/{i + 1}",
            "metadata": {"dataset": "math"}}  # fmt: skip


def _bad(response: str, bad: str | None = None) -> dict[str, Any]:
    return row(response, bad, dataset="misbehave")


def _cheap(count: int, bad: str, at: int) -> list[dict[str, Any]]:
    """``count`` cheap samples, one of which misbehaves."""
    samples = [_bad("z" * (i % 7)) for i in range(count)]
    samples[at] = _bad("bad", bad)
    return samples


BATCHES = [
    pytest.param(
        [_math(i) for i in range(30)]
        + [_bad("ab"), _bad("x", "raise"), _bad("x", "nan"), _bad("x", "string")]
        + [_bad("x", "none"), _bad("x", "dict_without_key"), _bad("x", "exit_call")]
        + [row(r, dataset="group") for r in ("a", "bb", "ccc")],
        {31: "error", 32: "invalid", 33: "invalid", 34: "skipped", 35: "invalid", 36: "error"},
        id="math_and_failures_that_leave_the_actor_alive",
    ),
    pytest.param(
        [row("a", dataset="group"), row("b", "sleep", dataset="group")],
        {0: "timeout", 1: "timeout"},
        id="a_group_call_that_hangs",
    ),
]


def _same_as_the_process_executor(
    routers: dict[str, Router], samples: list[dict[str, Any]]
) -> list[RewardResult]:
    expected = routers["process"].score_sync(samples)
    start = time.perf_counter()
    results = routers["ray"].score_sync(samples)
    assert time.perf_counter() - start < BOUND
    assert [(r.status, r.reward) for r in results] == [(r.status, r.reward) for r in expected]
    return results


@pytest.mark.parametrize(("samples", "failed"), BATCHES)
def test_results_equal_the_process_executors(
    routers: dict[str, Router], samples: list[dict[str, Any]], failed: dict[int, str]
) -> None:
    results = _same_as_the_process_executor(routers, samples)
    assert {i: r.status for i, r in enumerate(results) if r.status != "ok"} == failed


@pytest.mark.parametrize(
    ("bad", "status", "message"),
    [
        pytest.param(
            "sleep",
            "timeout",
            "no result within 1 s; its Ray actor was killed and replaced",
            id="a_call_that_hangs",
        ),
        pytest.param("exit", "error", "the Ray actor died", id="a_call_that_kills_its_actor"),
    ],
)
def test_a_lost_actor_is_replaced_and_only_its_culprit_fails(
    routers: dict[str, Router], bad: str, status: str, message: str
) -> None:
    before = routers["ray"].executors["ray"].pool.handles
    # Cheap calls travel in chunks: the culprit's neighbours run again, each alone.
    results = _same_as_the_process_executor(routers, _cheap(40, bad, 25))
    assert (results[25].status, results[25].reward) == (status, None)
    assert message in (results[25].error_message or "")
    assert all(r.reward == i % 7 for i, r in enumerate(results) if i != 25)
    after = routers["ray"].executors["ray"].pool.handles
    assert len(after) == 2 and set(before) - set(after)  # replaced: the pool is full again


def _wait_until_dead(ray: Any, actor: Any) -> None:
    """``ray.kill`` returns before the actor is dead: a call may still get through."""
    with pytest.raises(ray.exceptions.RayActorError):
        for _ in range(600):
            ray.get(actor.ready.remote(), timeout=30)
            time.sleep(0.05)


def test_an_actor_killed_from_outside_loses_no_sample(ray: Any, make_router: Any) -> None:
    config = router_config(
        "rr_execution.slow_then_fine", executor="ray", on_error="skip", timeout=10.0
    )
    config["ray"] = POOL
    router = make_router(config)
    router.score_sync([row("warm", seconds=0.2)])
    [idle, _] = router.executors["ray"].pool.handles
    ray.kill(idle)  # between batches: the next task finds it dead and runs again elsewhere
    _wait_until_dead(ray, idle)
    samples = [row(str(i), seconds=0.3) for i in range(8)]
    assert [r.status for r in router.score_sync(samples)] == ["ok"] * 8

    box: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: box.update(results=router.score_sync(samples)))
    thread.start()
    time.sleep(0.5)  # in the middle of the batch
    ray.kill(router.executors["ray"].pool.handles[0])
    thread.join()
    statuses = [r.status for r in box["results"]]
    assert set(statuses) <= {"ok", "error"} and statuses.count("error") <= 1, statuses
    assert len(router.executors["ray"].pool.handles) == 2


def test_close_kills_the_actors_and_leaves_a_ray_it_did_not_start(ray: Any) -> None:
    config = router_config("rr_execution.pid", executor="ray")
    config["ray"] = POOL
    router = compile_router(config)
    results = router.score_sync([row(str(i)) for i in range(20)])
    actors = router.executors["ray"].pool.handles
    pids = {float(ray.get(a.ready.remote())[0]) for a in actors}
    assert {r.reward for r in results} <= pids
    lease = router.executors["ray"].pool.lease
    assert lease is not None and not lease.started  # the test's instance was reused
    router.close()
    for actor in actors:
        with pytest.raises(ray.exceptions.RayActorError):
            ray.get(actor.ready.remote(), timeout=30)
    assert ray.is_initialized()


def test_a_router_inside_a_ray_actor_uses_that_cluster(ray: Any) -> None:
    import rr_ray

    config = router_config("rr_execution.misbehave", executor="ray")
    # null would start a local instance: inside an actor, the actor's own cluster wins.
    config["ray"] = {"address": None, "actors": 1, "cpus_per_actor": 0.5}
    trainer = ray.remote(num_cpus=0)(rr_ray.Trainer).remote()
    seen = ray.get(trainer.score.remote(config, [row("abc"), row("de")]), timeout=120)
    ray.kill(trainer)
    assert seen == {
        "rewards": [3.0, 2.0],
        "started_ray": False,
        "gcs_address": ray.get_runtime_context().gcs_address,
        "nodes": 1,
    }


def test_whole_replies_for_ray_client_run_one_call_per_task(ray: Any) -> None:
    pool = RayPool(RaySettings.model_validate(POOL), ["rr_execution"], streaming=False)
    try:
        samples = [Sample(response="ab"), Sample(response="x", metadata={"bad": "sleep"}),
                   Sample(response="abc")]  # fmt: skip
        call = Call(resolve_path("rr_execution.misbehave", {}, "auto"), None, timeout=TIMEOUT)
        future = pool.submit(call, samples)
        outcomes = future.result(timeout=BOUND)
    finally:
        pool.close()
    assert [(o.status, o.value) for o in outcomes] == [("ok", 2.0), ("timeout", None), ("ok", 3.0)]


def test_a_runtime_env_path_that_cannot_be_uploaded_is_a_clear_error(
    ray: Any, make_router: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = router_config("rr_execution.misbehave", executor="ray")
    config["ray"] = {**POOL, "runtime_env": {"py_modules": ["./my_rewards"]}}
    router = make_router(config)
    with pytest.raises(RewardRouterError) as info:
        router.score_sync([row("abc")])
    assert str(info.value) == (
        "ray.runtime_env.py_modules: ['./my_rewards'] could not be uploaded to the Ray cluster "
        "(ValueError: py_modules entry must be a .py file, a directory, or a .whl file; got "
        "./my_rewards); expected package directories, .py or .whl files (relative paths are "
        f"read from {tmp_path}) or URIs the cluster can fetch"
    )


def test_actors_that_cannot_start_fail_the_calls_waiting_with_the_cause(
    ray: Any, make_router: Any
) -> None:
    config = router_config("rr_execution.misbehave", executor="ray", on_error="skip")
    missing = "gcs://_ray_pkg_0000000000000000.zip"  # a package the cluster does not have
    config["ray"] = {**POOL, "runtime_env": {"py_modules": [missing]}}
    router = make_router(config)
    start = time.perf_counter()
    [first] = router.score_sync([row("abc")])
    [later] = router.score_sync([row("abc")])  # at once: the pool has not started one since
    assert time.perf_counter() - start < BOUND
    for result in (first, later):
        assert result.status == "error"
        assert (result.error_message or "").startswith(
            "t: Ray actors of the reward pool failed to start 3 times in a row (the last: "
            "RuntimeEnvSetupError: Failed to set up runtime environment. ... "
        )
        assert (result.error_message or "").endswith(
            "); the pool keeps trying, and later calls run once one starts"
        )
