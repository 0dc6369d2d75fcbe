"""The ``ray`` executor on a real two-node Ray cluster on this machine (``rr_cluster``): reward
modules shipped to a node that cannot import them, a pool larger than the cluster, a node lost
mid-batch and one that joins later, ``actors: null`` growing into freed CPUs, calls that find no
actor at all, an actor that fits no node because the free CPUs are split, joining with and
without the cluster's authentication token (by address and by ``auto`` through
``RAY_ADDRESS``), and, last, ``actors: null`` shrinking when a node leaves for good.

The nodes are ``ray start`` processes with their own temp dirs and ports, killed (every process
of a node at once) and started by the tests. One cluster serves the module: the tests run in
order, and the node-loss test leaves the head and the node that joined (2 CPUs), which the last
test kills.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import rr_ray
import test_docs
from rr_cluster import LocalCluster
from rr_execution import router_config, row

from rewardrouter import Router
from rewardrouter.execute.ray import pool as ray_pool
from rewardrouter.execute.ray.pool import RayPool

pytestmark = pytest.mark.slow  # a long file: `make test` starts it first

ray = pytest.importorskip("ray")

TESTS = Path(__file__).resolve().parents[1]
README = " ".join((TESTS.parent / "docs" / "ray.md").read_text().split())  # the manual's Ray page
HEAD = "10.0.0.1:6379"  # the README's head node
#: Generous bound on waiting for the cluster to change (a node's actors to be placed on a
#: loaded machine); a hang would take an hour.
BOUND = 90.0


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    """A head and one node, 1 CPU each, that this process joins by address, as a trainer's
    driver would."""
    made = LocalCluster.for_this_machine()
    try:
        made.start(cpus=1, head=True)
        made.start(cpus=1)
        path = os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH")) if p)
        made.join(
            log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": path}},  # the rr_* test modules, not the rest
        )
        yield made
    finally:
        ray.shutdown()
        made.stop()


def _pool(router: Router) -> RayPool:
    pool: RayPool = router.executors["ray"].pool
    return pool


def _nodes(pool: RayPool) -> set[str]:
    """The nodes of the pool's actors."""
    return {node for _, node in ray.get([h.ready.remote() for h in pool.handles], timeout=60)}


def _placed(pool: RayPool) -> tuple[int, int]:
    """The pool's actors: placed, and waiting to be."""
    return pool.placement.ready, pool.placement.pending


def _until(done: Callable[[], bool], what: str, pool: RayPool | None = None) -> None:
    deadline = time.monotonic() + BOUND
    while not done():
        state = f" ({pool.placement})" if pool is not None else ""
        assert time.monotonic() < deadline, f"not within {BOUND:g} s: {what}{state}"
        time.sleep(0.2)


def _slow(count: int, seconds: float) -> list[dict[str, Any]]:
    return [row(str(i), seconds=seconds) for i in range(count)]


def _statuses(results: Any) -> list[str]:
    return [r.status for r in results]


def _pool_config(**ray_settings: Any) -> dict[str, Any]:
    config = router_config("rr_execution.slow_then_fine", executor="ray", on_error="skip",
                           timeout=10.0)  # fmt: skip
    config["ray"] = ray_settings
    return config


def _logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What the pool logged (`rewardrouter.ray`), in order."""
    return [r.getMessage() for r in caplog.records if r.name == "rewardrouter.ray"]


# -- shipping code ---------------------------------------------------------------------------

SHIPPED = """
def length(args, sample):
    return float(len(sample.response))
"""


def test_runtime_env_ships_a_module_the_nodes_cannot_import(
    cluster: LocalCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make_router: Any
) -> None:
    (tmp_path / "shipped_rewards").mkdir()
    (tmp_path / "shipped_rewards" / "__init__.py").write_text(SHIPPED)
    monkeypatch.syspath_prepend(str(tmp_path))  # the driver compiles the router: it imports it
    monkeypatch.chdir(tmp_path)  # the README's relative path
    importable = ray.remote(num_cpus=0)(rr_ray.importable)
    strategy = ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy
    for node in ray.nodes():
        where = strategy(node_id=node["NodeID"], soft=False)
        assert not ray.get(importable.options(scheduling_strategy=where).remote("shipped_rewards"))

    config = router_config("shipped_rewards.length", executor="ray", on_error="skip")
    config["ray"] = {"actors": 2, "runtime_env": {"py_modules": ["./shipped_rewards"]}}
    router = make_router(config)
    samples = [row("x" * i) for i in range(20)]
    results = router.score_sync(samples)
    assert [(r.status, r.reward) for r in results] == [("ok", float(i)) for i in range(20)]
    assert len(_nodes(_pool(router))) == 2  # one actor on each node: both imported it


# -- placement, lost nodes and joining nodes -------------------------------------------------


def test_a_pool_larger_than_the_cluster_serves_loses_a_node_and_grows_when_one_joins(
    cluster: LocalCluster, make_router: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="rewardrouter.ray")
    router = make_router(_pool_config(actors=3))
    pool = _pool(router)

    # Three actors asked of two CPUs: two serve, the third waits, and the pool says so once.
    assert _statuses(router.score_sync(_slow(8, 0.05))) == ["ok"] * 8
    _until(lambda: len(_logged(caplog)) == 1, "the waiting actor is reported")
    [report] = _logged(caplog)
    assert report.startswith("1 of 3 Ray actors of the reward pool are waiting to be placed, ")
    assert report.endswith(
        ": the cluster has 0 of its 2 CPUs free and each actor reserves 1; they start as CPUs "
        "free up or nodes join (set `ray.actors` to what the cluster can spare)"
    )
    _until(lambda: _placed(pool) == (2, 1), "two actors serve", pool)
    assert pool.placement.reason in report

    # The node of one actor is lost mid-batch: its calls run again on the head; none is lost.
    box: dict[str, Any] = {}
    batch = threading.Thread(target=lambda: box.update(results=router.score_sync(_slow(16, 0.3))))
    batch.start()
    time.sleep(1.0)
    cluster.nodes[1].kill()
    assert batch.is_alive()  # 16 calls of 0.3 s on two actors: the kill came mid-batch
    batch.join()
    assert [(r.status, r.reward) for r in box["results"]] == [("ok", 1.0)] * 16
    _until(lambda: _placed(pool) == (1, 2), "the lost actor's replacement waits", pool)
    _until(lambda: len(_logged(caplog)) == 2, "the new state is reported")
    assert _logged(caplog)[1].startswith(
        "2 of 3 Ray actors of the reward pool are waiting to be placed, serving with 1: the "
        "cluster has 0 of its 1 CPUs free"
    )
    # Without the node, the pool goes on with what it has.
    assert _statuses(router.score_sync(_slow(6, 0.05))) == ["ok"] * 6

    # A node joins: the waiting actors start there, and the pool says it is whole.
    cluster.start(cpus=2)
    _until(lambda: _placed(pool) == (3, 0), "the waiting actors are placed", pool)
    _until(lambda: len(_logged(caplog)) == 3, "the pool reports it is whole")
    assert _logged(caplog)[2] == "all 3 Ray actors of the reward pool are placed"
    assert _statuses(router.score_sync(_slow(12, 0.05))) == ["ok"] * 12
    assert len(_nodes(pool)) == 2  # the head and the node that joined
    for line in _logged(caplog)[1:]:
        assert line in README, "the README quotes these lines"


def _holder(cpus: int) -> Any:
    """A Ray actor that holds ``cpus`` CPUs of the cluster until killed (other work)."""
    holder = ray.remote(num_cpus=cpus)(rr_ray.Trainer).remote()
    ray.get(holder.__ray_ready__.remote(), timeout=BOUND)
    return holder


def test_actors_null_grows_into_cpus_that_come_free(
    cluster: LocalCluster, make_router: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="rewardrouter.ray")
    holder = _holder(2)  # of the cluster's 3 CPUs (the head's and the joined node's 2)
    router = make_router(_pool_config(actors=None))
    pool = _pool(router)
    assert _statuses(router.score_sync(_slow(4, 0.05))) == ["ok"] * 4
    assert _placed(pool) == (1, 0)

    ray.kill(holder)
    # The pool grows while it has work: batches until it has.
    _until(
        lambda: (
            _statuses(router.score_sync(_slow(6, 0.1))) == ["ok"] * 6 and _placed(pool) == (3, 0)
        ),
        "the pool grows to the cluster's 3 CPUs",
    )
    assert "CPUs came free on the Ray cluster: the reward pool grows from 1 to 3 actors" in (
        _logged(caplog)
    )


def test_calls_that_find_no_actor_fail_after_the_placement_timeout_and_later_ones_run(
    cluster: LocalCluster, make_router: Any
) -> None:
    holder = _holder(2)
    router = make_router(_pool_config(actors=1, cpus_per_actor=2, placement_timeout=2.0))
    start = time.monotonic()
    results = router.score_sync(_slow(3, 0.0))
    assert time.monotonic() - start < BOUND
    assert _statuses(results) == ["error"] * 3
    assert results[0].error_message == (
        "t: no Ray actor of the reward pool was ready for 2 s (`ray.placement_timeout`): the "
        "cluster has 1 of its 3 CPUs free and each actor reserves 2; they start as CPUs free up "
        "or nodes join (set `ray.actors` to what the cluster can spare)"
    )
    ray.kill(holder)  # the CPUs come free: the waiting actor starts, and the pool serves
    _until(lambda: _pool(router).placement.ready == 1, "the actor is placed")
    assert _statuses(router.score_sync(_slow(3, 0.0))) == ["ok"] * 3


def test_an_actor_that_fits_no_node_because_free_cpus_are_split_is_reported_so(
    cluster: LocalCluster, make_router: Any
) -> None:
    """2 CPUs free in all, 1 on the head and 1 on the 2-CPU node: an actor of 2 CPUs fits no
    node, and the pool says so (not that it is placed and still starting)."""
    [big] = [n["NodeID"] for n in ray.nodes() if n["Alive"] and n["Resources"]["CPU"] == 2]
    where = ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(node_id=big, soft=False)
    holder = ray.remote(num_cpus=1)(rr_ray.Trainer).options(scheduling_strategy=where).remote()
    ray.get(holder.__ray_ready__.remote(), timeout=BOUND)
    router = make_router(_pool_config(actors=1, cpus_per_actor=2, placement_timeout=2.0))
    results = router.score_sync(_slow(2, 0.0))
    assert _statuses(results) == ["error"] * 2
    assert results[0].error_message == (
        "t: no Ray actor of the reward pool was ready for 2 s (`ray.placement_timeout`): the "
        "cluster has 2 of its 3 CPUs free, but split across its nodes: the most free on one "
        "node is 1 and an actor reserves 2 on one node; they start as CPUs free up on a node or "
        "nodes join (lower `ray.cpus_per_actor`, or set `ray.actors` to what the nodes can "
        "spare)"
    )
    ray.kill(holder)
    _until(lambda: _pool(router).placement.ready == 1, "the actor is placed")
    assert _statuses(router.score_sync(_slow(2, 0.0))) == ["ok"] * 2


# -- token authentication --------------------------------------------------------------------

JOIN = textwrap.dedent(
    """
    import sys, time
    from rewardrouter import RewardRouterError, compile_router
    router = compile_router({
        "default_route": "r",
        "executors": {"ray": {"address": sys.argv[1], "actors": 1, "cpus_per_actor": 0.5}},
        "routes": {"r": {"rewards": {"t": {"kind": "exact_match", "executor": "ray"}}}},
    })
    start = time.monotonic()
    try:
        [result] = router.score_sync([{"response": "42", "label": "42"}])
        print("reward", result.reward)
    except RewardRouterError as exc:
        print(f"{time.monotonic() - start:.1f}")
        print(exc)
    finally:
        router.close()
    """
)


def test_a_cluster_with_token_authentication(cluster: LocalCluster, tmp_path: Path) -> None:
    """The cluster authenticates with a token, which this machine has in ``~/.ray/auth_token``:
    a router that joins it by address without ``RAY_AUTH_MODE=token`` hears why at once, with a
    wrong token hears that, and the README's recipe, in token mode, scores on the cluster."""
    token = cluster.env.get("RAY_AUTH_TOKEN")
    if token is None:
        pytest.skip(f"Ray {ray.__version__} has no token authentication")
    home = tmp_path / "home"
    (home / ".ray").mkdir(parents=True)
    (home / ".ray" / "auth_token").write_text(token)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(HOME=str(home), PYTHONPATH=str(TESTS))

    def join(address: str = cluster.address, **extra: str) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", JOIN, address],
            capture_output=True, text=True, timeout=120, check=False, env={**env, **extra},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout.splitlines()

    seconds, message = join()
    assert float(seconds) < 10.0  # not Ray's 20 s of retries
    assert message.startswith(
        f"ray.address: Ray at {cluster.address!r} requires token authentication and this "
        f"process sent no token (AuthenticationError: "
    )
    assert message.endswith(
        "Ray sends one to an explicit address only when `RAY_AUTH_MODE=token` is set; set "
        "`RAY_AUTH_MODE=token` in the environment of the process that runs the router, with "
        "the cluster's token in `~/.ray/auth_token`, `RAY_AUTH_TOKEN` or the file that "
        "`RAY_AUTH_TOKEN_PATH` names (`ray get-auth-token` on the head prints it); on a node "
        "of the cluster, `ray.address: auto` does this by itself"
    )
    quoted = message.partition("(AuthenticationError: ")[0].replace(cluster.address, HEAD)
    assert quoted in README, "the README quotes this message"
    _, wrong = join(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN="f" * 64)
    assert wrong.startswith(f"ray.address: authentication with Ray at {cluster.address!r} failed")

    # `auto` through RAY_ADDRESS: the same check at that head, not 20 s and "start a cluster".
    seconds, message = join("auto", RAY_ADDRESS=cluster.address)
    assert float(seconds) < 10.0
    assert message.startswith(
        f"ray.address: Ray at {cluster.address!r} (`auto`, from RAY_ADDRESS) requires token "
        f"authentication and this process sent no token (AuthenticationError: "
    )
    assert message.endswith(
        "`auto` through RAY_ADDRESS sends one only when `RAY_AUTH_MODE=token` is set; set "
        "`RAY_AUTH_MODE=token` in the environment of the process that runs the router, with "
        "the cluster's token in `~/.ray/auth_token`, `RAY_AUTH_TOKEN` or the file that "
        "`RAY_AUTH_TOKEN_PATH` names (`ray get-auth-token` on the head prints it)"
    )
    assert join("auto", RAY_ADDRESS=cluster.address, RAY_AUTH_MODE="token") == ["reward 1.0"]

    # The README's recipe, step 3: its config, a reward package no node has, its check command.
    [config] = [b.code for b in test_docs.ALL if b.language == "yaml" and HEAD in b.code]
    (tmp_path / "cluster_router.yaml").write_text(config.replace(HEAD, cluster.address))
    (tmp_path / "my_rewards").mkdir()
    [module] = [b.code for b in test_docs.ALL if b.title == "my_rewards/__init__.py"]
    (tmp_path / "my_rewards" / "__init__.py").write_text(module)
    [command] = [b.code for b in test_docs.ALL if "rewardrouter check --config cluster" in b.code]
    assert "export RAY_AUTH_MODE=token" in command
    done = subprocess.run(
        ["rewardrouter", "check", "--config", "cluster_router.yaml"],
        cwd=tmp_path, capture_output=True, text=True, timeout=180, check=False,
        env={**env, "RAY_AUTH_MODE": "token", "PYTHONPATH": "",
             "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


# -- last: a node leaves for good ------------------------------------------------------------


def test_actors_null_shrinks_when_a_node_leaves(
    cluster: LocalCluster,
    make_router: Any,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``actors: null`` sized the pool to the cluster's free CPUs: when a node leaves, its
    actors leave the pool, which does not wait (and warn) for places that will not come."""
    caplog.set_level(logging.INFO, logger="rewardrouter.ray")
    router = make_router(_pool_config(actors=None))
    pool = _pool(router)
    _until(  # Ray's view of free CPUs lags the last test's actors: batches until it has them
        lambda: (
            _statuses(router.score_sync(_slow(6, 0.05))) == ["ok"] * 6 and _placed(pool) == (3, 0)
        ),
        "one actor a CPU: the head's and the node's 2",
        pool,
    )

    # From here on, a count of waiting actors is reported once it has held 2 s (not 5 s): the
    # pool has grown, and what is checked below is that no such count ever arises.
    monkeypatch.setattr(ray_pool, "REPORT_SECONDS", 2.0)
    cluster.nodes[-1].kill()  # the 2-CPU node, for good
    _until(lambda: _placed(pool) == (1, 0), "the pool shrinks to the head's actor", pool)
    assert _statuses(router.score_sync(_slow(4, 0.05))) == ["ok"] * 4
    time.sleep(ray_pool.REPORT_SECONDS + 2.0)  # a pending replacement would be reported by now
    assert _placed(pool) == (1, 0)
    logged = _logged(caplog)
    assert not [line for line in logged if "waiting to be placed" in line], logged
    assert [line for line in logged if "is gone" in line] == [
        "a node of the Ray cluster is gone: the reward pool (`ray.actors: null`) drops its "
        f"actor there, {left} left; it grows again as CPUs come free"
        for left in (2, 1)
    ]
