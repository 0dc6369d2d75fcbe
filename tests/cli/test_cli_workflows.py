"""The Hydra workflows: per-dataset maps, check, explain, validate, sweeps and the run report."""

from __future__ import annotations

import itertools
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rewardrouter.cli import check, explain, validate
from rewardrouter.cli.compose import compose_job
from rewardrouter.cli.figure import build_figure
from rewardrouter.errors import ConfigError, RewardRouterError

pytestmark = pytest.mark.slow  # a long file: `make test` starts it first

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "examples" / "data" / "mixed.jsonl"
DATASETS = sorted(p.stem for p in (ROOT / "conf" / "datasets").glob("*.yaml"))
ROUTERS = sorted(p.stem for p in (ROOT / "conf" / "router").glob("*.yaml"))
SHAPINGS = sorted(p.stem for p in (ROOT / "conf" / "shaping").glob("*.yaml"))
EXE = shutil.which("rewardrouter", path=str(Path(sys.executable).parent)) or "rewardrouter"


def _combinations() -> list[Any]:
    """Every router with no dataset map, each map, each pair of maps and all of them, and with
    every shaping chain. Maps merge key by key, so two that clash show in a pair; every subset
    would double the cases with each map shipped and find nothing the pairs do not."""
    subsets = [(), *itertools.combinations(DATASETS, 1), *itertools.combinations(DATASETS, 2)]
    subsets += [tuple(DATASETS)] if len(DATASETS) > 2 else []
    combos = []
    for router in ROUTERS:
        for chosen in subsets:
            overrides = [f"router={router}"]
            if chosen:
                overrides.append(f"datasets=[{','.join(chosen)}]")
            combos.append(pytest.param(overrides, id=f"{router}+{'+'.join(chosen) or 'none'}"))
        for shaping in SHAPINGS:
            combos.append(
                pytest.param([f"router={router}", f"shaping={shaping}"], id=f"{router}~{shaping}")
            )
    return combos


@pytest.mark.parametrize("overrides", _combinations())
def test_every_shipped_config_combination_composes(
    overrides: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The job that `validate` composes, compiles and passes is the one looked into (a Hydra
    # compose of the config tree is most of what a case costs: one, not two).
    composed: list[Any] = []

    def compose(*args: Any, **kwargs: Any) -> Any:
        composed.append(compose_job(*args, **kwargs))
        return composed[-1]

    monkeypatch.setattr(validate, "compose_job", compose)
    assert validate.main(overrides) == 0
    [job] = composed
    for override in overrides:
        group, _, choice = override.partition("=")
        if group == "datasets":
            assert set(choice.strip("[]").split(",")) <= set(job.routes)
        if group == "shaping":
            assert job.post_process, "a shaping option sets post_process"


def test_own_dataset_map_from_the_worked_example(capsys: pytest.CaptureFixture[str]) -> None:
    searchpath = f"hydra.searchpath=[file://{ROOT / 'examples' / 'datasets'}]"
    job = compose_job([searchpath, "datasets=[arith,gsm8k]"])
    assert {"arith", "gsm8k"} <= set(job.routes)
    assert check.main([searchpath, "datasets=[arith,gsm8k]"]) == 0
    assert "3 passed, 0 failed" in capsys.readouterr().out  # the arith examples


def test_sweep_configs_compose() -> None:
    for sweep in sorted(p.stem for p in (ROOT / "conf" / "sweep").glob("*.yaml")):
        job = compose_job([f"+sweep={sweep}"])
        assert job.objective.name in ("agreement", "abs_error")
        assert job.objective.column == "expected_reward"


# -- check ----------------------------------------------------------------------------------

ROUTER_WITH_EXAMPLES = """
routes:
  qa:
    rewards:
      correct: {kind: exact_match}
    examples:
      - {response: "Paris", label: "paris", reward: 1.0}
      - {response: "Lyon", label: "paris", reward: %s}
"""


@pytest.mark.parametrize(
    ("second_reward", "status", "verdict"),
    [
        pytest.param("0.0", 0, "2 passed, 0 failed", id="all_match"),
        pytest.param("1.0", 1, "1 passed, 1 failed", id="one_mismatch"),
    ],
)
def test_check_exit_status(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    second_reward: str,
    status: int,
    verdict: str,
) -> None:
    config = tmp_path / "router.yaml"
    config.write_text(ROUTER_WITH_EXAMPLES % second_reward)
    assert check.main(["--config", str(config)]) == status
    out = capsys.readouterr().out
    assert verdict in out
    assert ("MISMATCH" in out) == bool(status)


def test_check_shipped_examples_pass(capsys: pytest.CaptureFixture[str]) -> None:
    assert check.main(["router=mixed"]) == 0


def test_check_without_examples_fails_loudly(capsys: pytest.CaptureFixture[str]) -> None:
    assert check.main(["router=default"]) == 1
    assert "nothing was checked" in capsys.readouterr().out


# -- explain --------------------------------------------------------------------------------

EXPLAIN_CONFIG = """
allowed_modules: [rewardrouter, rr_testfns]
default_route: fallback
routes:
  qa:
    match: [org/qa]
    rewards:
      correct: {kind: exact_match}
      length: {path: rr_testfns.length, weight: 0.01}
  fallback:
    rewards:
      correct: {kind: exact_match}
"""


def _explain_paris(tmp_path: Path, capsys: pytest.CaptureFixture[str], metadata: str) -> str:
    """``explain`` of the answer "Paris" (label "Paris") under EXPLAIN_CONFIG; its output."""
    config = tmp_path / "router.yaml"
    config.write_text(EXPLAIN_CONFIG)
    argv = ["--config", str(config), "--response", "Paris", "--label", "Paris"]
    assert explain.main([*argv, "--metadata", metadata]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        pytest.param(
            {"custom_rm_path": "rr_testfns.length"},
            "precedence level: custom_rm_path",
            id="custom_rm_path",
        ),
        pytest.param({"rm_type": "boxed_exact_match"}, "precedence level: rm_type", id="rm_type"),
        pytest.param(
            {"dataset": "org/qa"},
            "precedence level: route; metadata.dataset = 'org/qa'",
            id="route",
        ),
        pytest.param({"dataset": "other"}, "precedence level: default_route", id="default_route"),
    ],
)
def test_explain_names_the_precedence_level(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], metadata: dict[str, Any], expected: str
) -> None:
    out = " ".join(_explain_paris(tmp_path, capsys, json.dumps(metadata)).split())
    assert expected in out
    assert "reward" in out


def test_explain_multi_term_route_shows_each_term(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _explain_paris(tmp_path, capsys, '{"dataset": "org/qa"}')
    assert "rr_testfns.length" in out and "exact_match" in out
    assert "reward 1.05" in " ".join(out.split())


def test_explain_a_row_of_a_data_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert explain.main(["router=mixed", "--data", str(DATA), "--line", "3"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    # Row 3 boxes 144 for a label of 72: math 0, the format bonus 0.1.
    assert "gsm8k" in out and "reward 0.1" in out


def test_explain_an_aborted_row(capsys: pytest.CaptureFixture[str]) -> None:
    assert explain.main(["router=mixed", "--data", str(DATA), "--line", "12"]) == 0
    assert "status aborted" in capsys.readouterr().out


def test_explain_a_sample_given_on_the_command_line_under_an_advantage_stage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # mixed ends in grpo, which groups by group_index: a sample alone is its own group
    argv = ["router=mixed", "--response", "\\boxed{72}", "--label", "72"]
    assert explain.main([*argv, "--metadata", '{"dataset": "gsm8k"}']) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "reward 1.1 status ok" in out and "computed for the sample alone" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(
            ["--data", str(DATA), "--line", "3", "--response", "\\boxed{72}"],
            "--response and --data both give the sample; with --data FILE the sample is the "
            "file's row on --line: drop --response, or drop --data",
            id="response_with_data",
        ),
        pytest.param(
            ["--data", str(DATA), "--label", "72", "--metadata", "{}"],
            "--label, --metadata and --data both give the sample",
            id="label_and_metadata_with_data",
        ),
        pytest.param(
            ["--response", "\\boxed{72}", "--line", "3"],
            "--line 3 picks a row of --data FILE, and no --data was given: add --data FILE, or "
            "drop --line",
            id="line_without_data",
        ),
        pytest.param(
            ["--response", "x", "--metadata", "gsm8k"],
            "--metadata: 'gsm8k' is not JSON (Expecting value); pass a JSON object, e.g. "
            '--metadata \'{"dataset": "gsm8k"}\'',
            id="metadata_not_json",
        ),
        pytest.param(
            ["--response", "x", "--metadata", '["gsm8k"]'],
            "--metadata: found a JSON list; pass a JSON object",
            id="metadata_not_an_object",
        ),
        pytest.param(
            ["--data", "missing.jsonl"],
            "--data: file not found: missing.jsonl; pass --data <a JSONL file>",
            id="data_not_found",
        ),
    ],
)
def test_explain_names_the_argument_at_fault(argv: list[str], message: str) -> None:
    # each would have explained another sample than the one asked for, or named another option
    with pytest.raises(RewardRouterError) as caught:
        explain.main(["router=mixed", *argv])
    assert message in str(caught.value)


def test_explain_a_line_without_a_row(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text('{"response": "x"}\n\n{"response": "y"}\n')
    with pytest.raises(explain.ExplainError, match="has no row on line 2"):
        explain.main(["--data", str(data), "--line", "2"])


# -- validate -------------------------------------------------------------------------------


def test_validate_shipped_files(capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(p) for p in sorted((ROOT / "conf").rglob("*.yaml"))]
    assert validate.main(files) == 0


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        pytest.param(
            "routes:\n  a:\n    rewards:\n      t: {kind: exact_match, wieght: 1}\n",
            "routes.a.rewards.t: Additional properties are not allowed ('wieght' was unexpected)",
            id="schema_typo",
        ),
        pytest.param(
            "post_process:\n  - {kind: clip, mn: 0}\n",
            "post_process[0]: Additional properties are not allowed ('mn' was unexpected)",
            id="typo_inside_tagged_union",
        ),
        pytest.param(
            "routes:\n  a:\n    rewards:\n      t: {kind: exact_mach}\n",
            "routes.a.rewards.t.kind: unknown built-in kind 'exact_mach'",
            id="compile_problem",
        ),
        pytest.param("routes: [\n", "cannot read YAML", id="not_yaml"),
    ],
)
def test_validate_bad_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, problem: str
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    assert validate.main([str(bad)]) == 1
    assert problem in " ".join(capsys.readouterr().out.split())


def test_validate_composed_config_with_bad_override(capsys: pytest.CaptureFixture[str]) -> None:
    assert validate.main(["router=mixed", "default_route=nope"]) == 1
    assert "default_route: route 'nope' does not exist" in capsys.readouterr().out


def test_validate_names_the_target_of_every_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yml"
    good.write_text("routes:\n  a:\n    rewards:\n      t: {kind: exact_match}\n")
    bad.write_text("routes:\n  a:\n    rewards:\n      t: {kind: exact_mach}\n")
    missing, folder = tmp_path / "missing.yaml", tmp_path
    argv = [str(good), str(bad), str(missing), str(folder)]
    assert validate.main(argv) == 1
    out = capsys.readouterr().out.splitlines()
    assert f"valid {good}" in out
    assert f"invalid {bad} (1 problem):" in out
    assert f"  - {bad}: routes.a.rewards.t.kind: unknown built-in kind 'exact_mach'" in out
    assert (
        f"  - {missing}: <root>: file not found; check the path (relative to the current folder)"
        in out
    )
    assert f"  - {folder}: <root>: is a folder; name a YAML file" in out
    assert out[-1] == f"3 of 4 targets invalid: {bad}, {missing}, {folder}"


@pytest.mark.parametrize(
    ("argv", "label"),
    [
        pytest.param([], "composed config router=default", id="default"),
        pytest.param(
            ["router=mixed", "shaping=grpo"],
            "composed config router=mixed shaping=grpo",
            id="mixed",
        ),
    ],
)
def test_validate_names_the_composed_router(
    capsys: pytest.CaptureFixture[str], argv: list[str], label: str
) -> None:
    assert validate.main(argv) == 0
    assert capsys.readouterr().out.splitlines() == [f"valid {label}"]
    assert validate.main([*argv, "default_route=nope"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"invalid {label} default_route=nope (1 problem):"
    assert out[1].startswith(f"  - {label} default_route=nope: default_route: route 'nope'")


def test_validate_reads_a_file_of_any_extension_as_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    router = tmp_path / "router.json"
    router.write_text('{"routes": {"a": {"rewards": {"t": {"kind": "exact_match"}}}}}')
    assert validate.main([str(router)]) == 0
    assert capsys.readouterr().out.split() == ["valid", str(router)]


def test_validate_refuses_overrides_next_to_files(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("routes:\n  a:\n    rewards:\n      t: {kind: exact_match}\n")
    with pytest.raises(
        ConfigError, match="overrides apply to the composed config, not to files"
    ) as exc:
        validate.main([str(good), "shaping=grpo"])
    assert f"rewardrouter validate --config {good} shaping=grpo" in str(exc.value)


# -- sweeps and the run report ---------------------------------------------------------------


def test_three_job_multirun_writes_outputs_and_objectives(tmp_path: Path) -> None:
    sweep_dir = tmp_path / "sweep"
    done = subprocess.run(
        [EXE, "+sweep=gsm8k_format", f"hydra.sweep.dir={sweep_dir}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    jobs = sorted(p for p in sweep_dir.iterdir() if p.is_dir())
    assert [p.name for p in jobs] == ["0", "1", "2"]
    values = []
    for job in jobs:
        assert len((job / "rewards.jsonl").read_text().splitlines()) == 36
        assert (job / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        summary = json.loads((job / "summary.json").read_text())
        assert summary["objective"]["name"] == "agreement"
        values.append(summary["objective"]["value"])
    # Without the format bonus the gsm8k rewards are the hand scores' 0/1; with it they are not.
    assert values[0] > values[1] and values[0] > values[2]
    # the best line docs/workflows.md pastes for this command
    page = (ROOT / "docs" / "workflows.md").read_text()
    [pasted] = [b for b in re.findall(r"```text\n(.*?)```", page, re.S) if "best of 3" in b]
    assert " ".join(pasted.split()) in " ".join(done.stdout.split())


def test_optuna_sweeper_runs_the_shipped_sweep(tmp_path: Path) -> None:
    pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")
    sweep_dir = tmp_path / "optuna"
    done = subprocess.run(
        [
            EXE,
            "+sweep=gsm8k_format_optuna",
            f"hydra.sweep.dir={sweep_dir}",
            "hydra.sweeper.n_trials=3",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "best_value" in (sweep_dir / "optimization_results.yaml").read_text()


def test_figure_has_one_labelled_panel_per_route_and_advantages() -> None:
    fig = build_figure({"gsm8k": [0.0, 1.0, 1.0], "squad": [0.5]}, advantages=[-1.0, 0.0, 1.0])
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in visible] == [
        "route gsm8k (n=3)",
        "route squad (n=1)",
        "advantages (n=3)",
    ]
    assert all(ax.get_xlabel() and ax.get_ylabel() == "samples" for ax in visible)


SHAPED_CONFIG = """
default_route: qa
routes:
  qa:
    rewards:
      correct: {kind: exact_match}
    shaping:
      - {kind: scale, mul: 2.0}
post_process:
  - {kind: clip, max: 1.5}
  - {kind: grpo}
"""


def test_explain_shows_each_stage_and_the_advantage_within_its_group(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "router.yaml"
    config.write_text(SHAPED_CONFIG)
    data = tmp_path / "group.jsonl"
    rows = [("Paris", 0), ("Lyon", 0), ("Paris", 1)]
    data.write_text(
        "".join(
            json.dumps({"response": r, "label": "Paris", "group_index": g}) + "\n" for r, g in rows
        )
    )
    assert explain.main(["--config", str(config), "--data", str(data), "--line", "1"]) == 0
    out = capsys.readouterr().out
    lines = {line.split("│")[1].strip(): line for line in out.splitlines() if line.count("│") >= 3}
    assert "2.0" in lines["routes.qa.shaping[0]"]  # 1.0 scaled by 2
    assert "1.5" in lines["post_process[0]"]  # then clipped
    # GRPO within group 0 (1.5 and 0.0): (1.5 - 0.75) / (std 1.0607 + 1e-6)
    assert "0.7071" in lines["post_process[1]"]
