"""The ``rewardrouter`` command end to end, run as a user runs it: another folder, a subprocess."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from rewardrouter.rewards.code.local import probe

pytestmark = pytest.mark.slow  # a long file: `make test` starts it first

ROOT = Path(__file__).resolve().parents[2]
EXE = shutil.which("rewardrouter", path=str(Path(sys.executable).parent)) or "rewardrouter"


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": str(Path(sys.executable).parent), "COLUMNS": "200", "HOME": str(cwd)},
    )


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_no_arguments_scores_the_shipped_example(tmp_path: Path) -> None:
    done = run(tmp_path)
    assert done.returncode == 0, done.stderr
    [out] = tmp_path.glob("outputs/*/*/rewards.jsonl")
    scored = rows(out)
    assert len(scored) == 36
    assert {r["route"] for r in scored} == {"exact", None}
    assert "rewards per route" in done.stdout


def test_mixed_router_on_example_data_from_another_folder(tmp_path: Path) -> None:
    done = run(tmp_path, "router=mixed", "output.path=scored.jsonl")
    assert done.returncode == 0, done.stderr
    scored = rows(tmp_path / "scored.jsonl")
    by_route: dict[str | None, list[float | None]] = {}
    for r in scored:
        by_route.setdefault(r["route"], []).append(r["reward"])
    # Hand-scored. gsm8k: math on the last \\boxed{} plus 0.1 for having one (row 3 has none);
    # squad: token F1 ("Normandy is in France." against "France": P 1/4, R 1 -> 0.4);
    # gpqa: the answer letter, in any case (row 2 answers "b").
    assert by_route["gsm8k"] == pytest.approx(
        [1.1, 1.1, 0.1, 0.0, 1.1, 1.1, 1.1, 0.1, 1.1, 1.1, 0.1]
    )
    assert by_route["squad"] == pytest.approx([1.0, 1.0, 0.4, 0.0, 1.0, 1.0, 0.0, 1.0])
    assert by_route["gpqa"] == [1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]
    # code: the share of the three tests passed (a - b is right on "0 0" only; the loop is killed)
    assert by_route["apps"] == pytest.approx([1.0, 1 / 3, 1.0, 0.0])
    # ifeval: lower case and no commas, both required
    assert by_route["ifeval"] == [1.0, 0.0, 0.0]
    # judged: no judge server here, so the call fails and `on_error: skip` leaves no reward
    assert by_route["judged"] == [None]
    first = scored[0]
    assert (first["route"], first["level"], first["status"]) == ("gsm8k", "route", "ok")
    assert first["reward"] == pytest.approx(1.1)
    assert first["terms"] == {"correct": 1.0, "format": 1.0}
    # GRPO over prompt group 0 (rewards 1.1, 1.1, 0.1, 0.0): (1.1 - 0.575) / (std 0.60759 + 1e-6)
    assert first["advantage"] == pytest.approx(0.86406, abs=1e-4)
    assert "1 constant group(s), their advantages all exactly 0" in " ".join(done.stdout.split())
    # the code sandbox's walls in force (the memory wall as this host allows), on the terminal
    # and in summary.json
    walls = f"code local ({', '.join(probe())})"
    assert "seccomp" in walls and ("memory cgroup" in walls or "memory watched" in walls)
    assert f"routes.apps.rewards.tests: {walls}" in " ".join(done.stdout.split())
    [summary] = tmp_path.glob("outputs/*/*/summary.json")
    written = json.loads(summary.read_text())
    assert written["graders"]["routes.apps.rewards.tests"] == walls
    # the file is what its published schema says
    schema = json.loads((ROOT / "schemas" / "summary.schema.json").read_text())
    jsonschema.validate(written, schema)
    assert written["warnings"][0]["code"] == "failed" and written["objective"]["value"] > 0
    aborted = scored[11]
    assert (aborted["status"], aborted["reward"], aborted["route"]) == ("aborted", None, None)
    for route in ("gsm8k", "squad", "gpqa"):
        assert route in done.stdout


def test_launch_command_overrides_reach_the_router(tmp_path: Path) -> None:
    data = tmp_path / "my.jsonl"
    data.write_text(
        json.dumps(
            {
                "response": "\\boxed{4}",
                "label": "4",
                "metadata": {"dataset": "gsm8k"},
                "group_index": 0,
            }
        )
        + "\n"
    )
    done = run(
        tmp_path,
        "router=mixed",
        "routes.gsm8k.rewards.format.weight=0.2",
        f"data.path={data}",
        "output.path=out.jsonl",
    )
    assert done.returncode == 0, done.stderr
    assert rows(tmp_path / "out.jsonl")[0]["reward"] == pytest.approx(1.2)  # correct 1 + format 0.2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["routes.exact.rewards.correct.wieght=1"],
            "did you mean 'weight'?",
            id="typo_in_override",
        ),
        pytest.param(
            ["router=mixed", "default_route=nope"],
            "default_route: route 'nope' does not exist",
            id="bad_reference",
        ),
        pytest.param(["data.path=missing.jsonl"], "data.path: file not found", id="missing_data"),
        pytest.param(
            ["router=mixed", "data.path=ungrouped.jsonl"],
            "ungrouped.jsonl:1: no group_index, but the advantage stage `grpo` groups by it",
            id="advantage_without_groups",
        ),
        pytest.param(
            ["router=mixed", "data.path=unroutable.jsonl"],
            "unroutable.jsonl:1: no route matched",
            id="unroutable",
        ),
    ],
)
def test_user_errors_exit_2_without_traceback(
    tmp_path: Path, args: list[str], message: str
) -> None:
    (tmp_path / "unroutable.jsonl").write_text(
        '{"response": "x", "metadata": {"dataset": "other"}}\n'
    )
    (tmp_path / "ungrouped.jsonl").write_text(
        '{"response": "x", "metadata": {"dataset": "squad"}}\n'
    )
    done = run(tmp_path, *args)
    assert done.returncode == 2
    assert message in " ".join(done.stderr.split())
    assert "Traceback" not in done.stderr


def test_bad_json_line_is_located(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text('{"response": "x"}\n{"response": \n')
    done = run(tmp_path, "data.path=bad.jsonl")
    assert done.returncode == 2
    assert "bad.jsonl:2:14: invalid JSON" in " ".join(done.stderr.split())


def test_help_lists_the_subcommands_and_version_is_ours(tmp_path: Path) -> None:
    done = run(tmp_path, "--help")
    assert done.returncode == 0
    for command in ("check", "explain", "validate", "serve", "--config FILE"):
        assert command in done.stdout
    assert "powered by Hydra" not in done.stdout
    version = run(tmp_path, "--version")
    assert version.stdout.strip() == "rewardrouter 0.1.0"


def test_the_main_job_takes_a_router_file_and_imports_rewards_from_the_current_folder(
    tmp_path: Path,
) -> None:
    (tmp_path / "my_rewards.py").write_text(
        "def shout(args, sample):\n    return float(sample.response.isupper())\n"
    )
    (tmp_path / "router.yaml").write_text(
        "allowed_modules: [my_rewards]\ndefault_route: loud\n"
        "routes:\n  loud:\n    rewards:\n      shout: {path: my_rewards.shout}\n"
    )
    (tmp_path / "rows.jsonl").write_text('{"response": "HI"}\n{"response": "hi"}\n')
    done = run(tmp_path, "--config", "router.yaml", "data.path=rows.jsonl", "output.path=out.jsonl")
    assert done.returncode == 0, done.stderr
    assert [r["reward"] for r in rows(tmp_path / "out.jsonl")] == [1.0, 0.0]
    both = run(tmp_path, "--config", "router.yaml", "router=mixed")
    assert both.returncode == 2
    assert "both --config router.yaml and router=mixed name the router" in " ".join(
        both.stderr.split()
    )
    # what compiling finds (here a function name) names the file it is about, as loading does
    (tmp_path / "typo.yaml").write_text(
        (tmp_path / "router.yaml").read_text().replace("shout}", "shoutt}")
    )
    for command in ([], ["check"]):
        typo = run(tmp_path, *command, "--config", "typo.yaml", "data.path=rows.jsonl")
        assert typo.returncode == 2
        said = " ".join(typo.stderr.split())
        assert "invalid reward router config in composed config (--config typo.yaml)" in said
        assert "routes.loud.rewards.shout.path" in said and "shout" in said
