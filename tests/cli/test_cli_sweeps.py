"""Sweeps as a user runs them (a subprocess, ``-m``): every sweeper reports its best job."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a long file: `make test` starts it first

EXE = shutil.which("rewardrouter", path=str(Path(sys.executable).parent)) or "rewardrouter"

#: reward = weight * exact_match; every row is right and hand-scored 0.3, so abs_error is
#: |weight - 0.3|, continuous with its minimum at 0.3, and agreement holds only at 0.3.
ROUTER = """
default_route: qa
routes:
  qa:
    rewards:
      correct: {kind: exact_match}
"""
ROWS = "".join(
    json.dumps({"response": r, "label": r, "expected_reward": 0.3}) + "\n"
    for r in ("Paris", "Rome")
)


def sweep(folder: Path, *args: str) -> tuple[str, dict[str, object]]:
    done = run_sweep(folder, *args)
    assert done.returncode == 0, done.stderr
    return " ".join(done.stdout.split()), json.loads((folder / "sweep" / "best.json").read_text())


def run_sweep(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (folder / "router.yaml").write_text(ROUTER)
    (folder / "rows.jsonl").write_text(ROWS)
    return subprocess.run(
        [
            EXE,
            "-m",
            "--config",
            "router.yaml",
            "data.path=rows.jsonl",
            "hydra.sweep.dir=sweep",
            *args,
        ],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
        env={"PATH": str(Path(sys.executable).parent), "HOME": str(folder), "COLUMNS": "200"},
    )


def test_a_grid_value_no_job_can_take_stops_the_sweep_before_its_first_job(
    tmp_path: Path,
) -> None:
    done = run_sweep(tmp_path, "routes.qa.rewards.correct.weight=0.1,0.3,heavy,nan")
    assert done.returncode == 2
    said = " ".join(done.stderr.split())
    assert "invalid reward router config in the sweep (no job was run) (2 problems)" in said
    assert "job 2 (++routes.qa.rewards.correct.weight=heavy): routes.qa.rewards" in said
    assert "job 3 (++routes.qa.rewards.correct.weight=nan): routes.qa.rewards" in said
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "sweep").exists()  # no job ran, none wrote a folder


def test_a_grid_sweep_prints_its_best_job(tmp_path: Path) -> None:
    out, best = sweep(
        tmp_path, "objective.name=agreement", "routes.qa.rewards.correct.weight=0.1,0.3,0.5"
    )
    line = "best of 3 jobs: agreement = 1.0000 (higher is better) with "
    assert line + "routes.qa.rewards.correct.weight=0.3" in out
    assert best["value"] == 1.0
    assert "++routes.qa.rewards.correct.weight=0.3" in best["overrides"]  # type: ignore[operator]


def test_optuna_finds_the_minimum_of_a_continuous_objective(tmp_path: Path) -> None:
    pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")
    out, best = sweep(
        tmp_path,
        "hydra/sweeper=optuna",
        "hydra.sweeper.direction=minimize",
        "hydra.sweeper.n_trials=12",
        "hydra.sweeper.sampler.seed=0",
        "hydra.sweeper.sampler.n_startup_trials=4",
        "objective.name=abs_error",
        "++routes.qa.rewards.correct.weight=interval(0.0, 1.0)",
    )
    assert "best of 12 jobs: abs_error = " in out and "(lower is better)" in out
    [weight] = [
        float(o.rpartition("=")[2])
        for o in best["overrides"]  # type: ignore[attr-defined]
        if o.startswith("++routes.qa")
    ]
    assert best["value"] == pytest.approx(abs(weight - 0.3))
    assert best["value"] < 0.05  # within 0.05 of the optimum in 12 trials
