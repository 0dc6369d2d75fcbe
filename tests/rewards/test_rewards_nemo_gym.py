"""``kind: nemo_gym`` against NeMo Gym's own code.

NeMo Gym (``nemo-gym``, Python 3.12) runs in a venv of its own (``tests/rr_nemo_gym.py``). Its
``equivalence_rule`` resources server, started from its own package in that interpreter, grades
the rollouts NeMo Gym ships with it (``data/example_rollouts.jsonl``: rows with the response and
the reward NeMo Gym recorded); the same rollouts as samples go through ``kind: nemo_gym``. The
router's rewards must be what NeMo Gym's own client reads from that server for the same rows, and
what NeMo Gym recorded.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import pytest
from rr_nemo_gym import (
    example_rollouts,
    nemo_gym_client,
    nemo_gym_python,
    rollout_sample,
    site_packages,
)

import rewardrouter
from rewardrouter.errors import ConfigError

pytestmark = pytest.mark.slow  # a NeMo Gym venv (made once), servers started in it

SERVER = "equivalence_rule"
#: The fields a verify reply adds to the row (its `response` is the row's rollout).
GRADED = ("reward", "equivalence_score")


def _config_path(python: str) -> str:
    return str(site_packages(python) / "resources_servers" / SERVER / "configs" / "lc.yaml")


def _router(kwargs: dict[str, Any]) -> rewardrouter.Router:
    term = {"kind": "nemo_gym", "kwargs": kwargs}
    return rewardrouter.compile_router(
        {"default_route": "gym", "routes": {"gym": {"rewards": {"v": term}}}}
    )


def test_rewards_equal_nemo_gyms_own_client_and_record() -> None:
    from rewardrouter.rewards.nemo_gym.server import ResourcesServer
    from rewardrouter.rewards.nemo_gym.settings import ServerSettings

    python = nemo_gym_python()
    rows = example_rollouts(python, SERVER)
    server = ResourcesServer(ServerSettings(python=python, config_path=_config_path(python)))
    try:
        port = int(server.url.rpartition(":")[2])
        theirs = nemo_gym_client(
            python,
            "127.0.0.1",
            port,
            [{k: v for k, v in r.items() if k not in GRADED} for r in rows],
        )
        with _router({"url": server.url}) as router:
            ours = router.score_sync([rollout_sample(row, GRADED) for row in rows])
    finally:
        server.close()
    assert [r.status for r in ours] == ["ok"] * len(rows)
    assert [r.reward for r in ours] == [t["reward"] for t in theirs] == [r["reward"] for r in rows]
    assert sorted({r.reward for r in ours}) == [0.0, 1.0]  # both verdicts are shown


def test_a_server_the_router_starts_scores_and_stops_with_the_router() -> None:
    python = nemo_gym_python()
    rows = example_rollouts(python, SERVER)
    router = _router({"server": {"python": python, "config_path": _config_path(python)}})
    [started] = router_resources(router)
    try:
        results = router.score_sync([rollout_sample(row, GRADED) for row in rows])
    finally:
        router.close()
    assert [r.reward for r in results] == [r["reward"] for r in rows]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(started.process.pid):
        time.sleep(0.1)
    assert not _alive(started.process.pid), "the server outlived the router"
    assert not Path(started.log).exists(), "its log outlived it"


def router_resources(router: rewardrouter.Router) -> list[Any]:
    """The resources servers a router started."""
    from rewardrouter.rewards.nemo_gym.server import ResourcesServer

    held = router.resources._items.values()  # what the router owns, to watch it end
    return [item for item in held if isinstance(item, ResourcesServer)]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return (
        Path(f"/proc/{pid}").is_dir()
        and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]
    )


@pytest.mark.parametrize(
    ("server", "found"),
    [
        pytest.param(
            {
                "python": "/nonexistent/bin/python",
                "config": {"x": {"resources_servers": {"equivalence_rule": {}}}},
            },
            "kwargs.server.python: no interpreter",
            id="interpreter_missing",
        ),
        pytest.param(
            {"python": "PYTHON", "config": {"x": {"responses_api_agents": {"simple_agent": {}}}}},
            "holds 0 resources servers",
            id="config_without_a_resources_server",
        ),
        pytest.param(
            {
                "python": "PYTHON",
                "config": {
                    "x": {"resources_servers": {"no_such_server": {"entrypoint": "app.py"}}}
                },
            },
            "could not start: ModuleNotFoundError",
            id="server_that_does_not_import",
        ),
        pytest.param(
            {
                "python": "PYTHON",
                "config": {
                    "x": {"resources_servers": {"equivalence_rule": {"grading_rule": "fuzzy"}}}
                },
            },
            "could not start: ValidationError",
            id="config_nemo_gym_refuses",
        ),
    ],
)
def test_a_server_that_cannot_start_is_a_compile_error(server: dict[str, Any], found: str) -> None:
    if server["python"] == "PYTHON":
        server = {**server, "python": nemo_gym_python()}
    with pytest.raises(ConfigError) as caught:
        _router({"server": server})
    message = str(caught.value)
    assert "routes.gym.rewards.v" in message and found in message, message
    named = re.search(r"the end of its log \((.+?)\):", message)
    if named:  # the log an error names stays for the user to read
        assert Path(named[1]).is_file()
        Path(named[1]).unlink()


def test_deadline_must_fit_the_terms_timeout() -> None:
    term = {
        "kind": "nemo_gym",
        "timeout": 10,
        "kwargs": {"url": "http://127.0.0.1:9", "deadline": 30},
    }
    with pytest.raises(
        ConfigError, match=r"routes\.gym\.rewards\.v\.timeout: kwargs\.deadline \(30 s\)"
    ):
        rewardrouter.compile_router({"routes": {"gym": {"rewards": {"v": term}}}})
