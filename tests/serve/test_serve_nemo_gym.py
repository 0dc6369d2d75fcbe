"""``rewardrouter serve --protocol nemo-gym`` read by NeMo Gym's own client.

The command serves a router on 127.0.0.1; NeMo Gym's ``ServerClient`` (in NeMo Gym's own Python
3.12 venv, ``tests/rr_nemo_gym.py``) posts ``/seed_session`` and ``/verify`` to it as its agents
do after a rollout, with the rollouts NeMo Gym ships for its ``equivalence_rule`` server, and
validates each reply as its agents do. The rewards it reads must be the router's for the same
rollouts as samples.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from rr_nemo_gym import example_rollouts, nemo_gym_client, nemo_gym_python, rollout_sample
from serve.test_serve import EXE, _listening, command_env, stopped

from rewardrouter import compile_router

pytestmark = pytest.mark.slow  # a NeMo Gym venv (made once), a served command

#: Two terms, so that the reward is a weighted sum and not only 0 or 1; one route, the
#: default (NeMo Gym's rows name a `dataset` no route matches).
CONFIG: dict[str, Any] = {
    "default_route": "answers",
    "routes": {
        "answers": {
            "rewards": {
                "exact": {"kind": "exact_match"},
                "overlap": {"kind": "f1", "weight": 0.5},
            }
        },
    },
}
GRADED = ("reward", "equivalence_score")


def test_nemo_gym_client_reads_the_routers_rewards(tmp_path: Path) -> None:
    python = nemo_gym_python()
    rows = [
        {k: v for k, v in r.items() if k not in GRADED}
        for r in example_rollouts(python, "equivalence_rule")
    ]
    # Each shipped rollout answered right, and once more answered with its reference itself.
    rows += [
        {**row, "response": {**row["response"], "output": [
            {"type": "message", "id": "m", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": row["expected_answer"], "annotations": []}]}
        ]}}
        for row in rows[:2]
    ]  # fmt: skip
    config = tmp_path / "router.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    command = [EXE, "serve", "--config", str(config), "--port", "0", "--protocol", "nemo-gym"]
    process = subprocess.Popen(
        command,
        cwd=tmp_path,
        env=command_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base = _listening(process, within=60)
        port = int(base.rpartition(":")[2])
        theirs = nemo_gym_client(python, "127.0.0.1", port, rows)
        unscored = nemo_gym_client(
            python,
            "127.0.0.1",
            port,
            [{**rows[0], "expected_answer": ""}],
        )
    finally:
        stderr = stopped(process)
    with compile_router(CONFIG) as router:
        ours = [r.reward for r in router.score_sync([rollout_sample(row) for row in rows])]
    assert [t.get("reward", t) for t in theirs] == ours, stderr
    assert ours[-2:] == [1.5, 1.5] and min(ours) < 1.5
    # A sample the router gives no reward (here: a blank label, which no term applies to) is a 4xx
    # NeMo Gym's client sees, never a made-up number.
    assert unscored[0].get("status") == 422, unscored
    assert process.returncode == 0, stderr
