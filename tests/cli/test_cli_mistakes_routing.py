"""Command-line mistakes about routing and where configs come from: each is a located error or
a word in the job's output, never a job scored with a config other than the one meant."""

from __future__ import annotations

import json
import select
import shutil
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

from rewardrouter import ConfigError, RewardRouterWarning
from rewardrouter.cli import explain, validate
from rewardrouter.cli.compose import DatasetMap, compose_job, dataset_maps
from rewardrouter.cli.paths import conf_dir

RunCli = Callable[..., tuple[int, str]]
EXE = shutil.which("rewardrouter", path=str(Path(sys.executable).parent)) or "rewardrouter"

ROUTES = "routes:\n  r:\n    rewards:\n      c: {kind: exact_match}\n"


@pytest.mark.parametrize(
    ("defaults", "found", "fix"),
    [
        pytest.param(
            "defaults:\n  - /datasets: [gsm8k]\n  - shaping: grpo\n  - _self_\n",
            "[{'/datasets': ['gsm8k']}, {'shaping': 'grpo'}, '_self_']",
            "datasets=[gsm8k] shaping=grpo",
            id="group_choices",
        ),
        pytest.param(
            "defaults:\n  - override /shaping: dapo\n",
            "[{'override /shaping': 'dapo'}]",
            "shaping=dapo",
            id="override_entry",
        ),
    ],
)
def test_a_defaults_list_in_a_config_file_is_refused_with_its_overrides(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], defaults: str, found: str, fix: str
) -> None:
    path = tmp_path / "router.yaml"
    path.write_text(defaults + ROUTES)
    with pytest.raises(ConfigError) as caught:
        compose_job([], path)
    [problem] = caught.value.problems
    assert str(problem) == (
        f"defaults: --config {path} has a `defaults:` list ({found}), which is not applied to a "
        f"--config file: its choices would be dropped without a word\n    remove `defaults:` "
        f"from the file and make the choices on the command line: rewardrouter --config {path} "
        f"{fix}"
    )
    assert validate.main(["--config", str(path)]) != 0  # not "valid"
    assert "has a `defaults:` list" in capsys.readouterr().out


MY_MAP = (
    "# @package _global_\nroutes:\n  gsm8k:\n    match: [mine]\n    rewards:\n"
    "      correct: {kind: exact_match}\n"
)


def _search_folder(tmp_path: Path, name: str) -> Path:
    (tmp_path / "datasets").mkdir()
    (tmp_path / "datasets" / f"{name}.yaml").write_text(MY_MAP)
    return tmp_path / "datasets" / f"{name}.yaml"


def _hidden_by_shipped(found: str, mine: Path) -> str:
    return (
        f"datasets=gsm8k merges {found}; {mine} has the same name and is not used (the first "
        f"search-path folder holding datasets/gsm8k.yaml wins) — to merge yours, rename it "
        f"(datasets/my_gsm8k.yaml) and choose datasets=[my_gsm8k]: the shipped folder always "
        f"comes before hydra.searchpath"
    )


def test_a_dataset_map_of_yours_hidden_by_a_shipped_one_is_warned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = _search_folder(tmp_path, "gsm8k")
    overrides = ["datasets=[gsm8k]", f"hydra.searchpath=[file://{tmp_path}]"]
    with pytest.warns(RewardRouterWarning) as caught:
        compose_job(overrides)
    [found] = dataset_maps(overrides)
    assert found.path == str(conf_dir() / "datasets" / "gsm8k.yaml")
    assert found.hidden == (str(mine),)
    assert [str(w.message) for w in caught] == [_hidden_by_shipped(found.path, mine)]
    with pytest.warns(RewardRouterWarning):
        explain.main([*overrides, "--response", "4", "--label", "4"])
    shown = "".join(capsys.readouterr().out.split())  # rich wraps long paths anywhere
    assert f"datasetmapgsm8k:{found.path}(hides{mine})" in shown


def test_a_dataset_map_hidden_by_another_of_your_folders_names_the_searchpath_that_picks_it(
    tmp_path: Path,
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    for folder, match in ((first, "from_first"), (second, "from_second")):
        (folder / "datasets").mkdir(parents=True)
        (folder / "datasets" / "mine.yaml").write_text(MY_MAP.replace("[mine]", f"[{match}]"))
    overrides = ["datasets=[mine]", f"hydra.searchpath=[file://{first},file://{second}]"]
    with pytest.warns(RewardRouterWarning) as caught:
        job = compose_job(overrides)
    assert job.router().routes["gsm8k"].match == ["from_first"]
    fix = f"hydra.searchpath=[file://{second},file://{first}]"
    hidden = second / "datasets" / "mine.yaml"
    assert [str(w.message) for w in caught] == [
        f"datasets=mine merges {first / 'datasets' / 'mine.yaml'}; {hidden} has the same name "
        f"and is not used (the first search-path folder holding datasets/mine.yaml wins) — to "
        f"merge {hidden} instead, put its folder first: {fix} (or rename one of them)"
    ]
    with pytest.warns(RewardRouterWarning):  # the override given picks the other map
        assert compose_job(["datasets=[mine]", fix]).router().routes["gsm8k"].match == [
            "from_second"
        ]


def test_the_job_names_each_dataset_maps_file_and_counts_a_hidden_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: RunCli
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "1000")  # a path on one line of the output
    mine = _search_folder(tmp_path, "gsm8k")
    row = {"response": "\\boxed{4}", "label": "4", "metadata": {"dataset": "gsm8k"}}
    (tmp_path / "data.jsonl").write_text(json.dumps(row) + "\n")
    status, out = run_cli(
        "datasets=[gsm8k,squad]",
        f"hydra.searchpath=[file://{tmp_path}]",
        "data.path=data.jsonl",
        f"hydra.run.dir={tmp_path / 'out'}",
    )
    assert status == 0, out
    shipped = conf_dir() / "datasets"
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["dataset_maps"] == [
        {"name": "gsm8k", "path": str(shipped / "gsm8k.yaml"), "hidden": [str(mine)]},
        {"name": "squad", "path": str(shipped / "squad.yaml"), "hidden": []},
    ]
    message = _hidden_by_shipped(str(shipped / "gsm8k.yaml"), mine)
    assert summary["warnings"] == [
        {
            "code": "hidden_dataset_map",
            "where": "datasets=gsm8k",
            "count": 1,
            "status": None,
            "lines": [],
            "message": message,
        }
    ]
    assert f"dataset map gsm8k: {shipped / 'gsm8k.yaml'} (hides {mine})" in out
    assert f"dataset map squad: {shipped / 'squad.yaml'}" in out
    assert f"warning: {message}" in out
    assert "warnings counted (summary.json lists them): hidden_dataset_map 1" in out


def test_serve_still_prints_listening_first_when_a_dataset_map_is_hidden(tmp_path: Path) -> None:
    _search_folder(tmp_path, "gsm8k")
    process = subprocess.Popen(
        [EXE, "serve", "--port", "0", "datasets=[gsm8k]", f"hydra.searchpath=[file://{tmp_path}]"],
        cwd=tmp_path,
        env={"PATH": str(Path(sys.executable).parent), "HOME": str(tmp_path)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], 60)
        assert ready, "no line on stdout within 60 s"
        first = process.stdout.readline()
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=60)
    assert first.startswith("rewardrouter serve: listening on http://127.0.0.1:"), first + stderr
    assert "datasets=gsm8k merges" in " ".join(stderr.split())  # the warning: on stderr


def test_a_dataset_map_of_your_own_name_is_named_with_its_file(tmp_path: Path) -> None:
    mine = _search_folder(tmp_path, "my_gsm8k")
    overrides = ["datasets=[my_gsm8k]", f"hydra.searchpath=[file://{tmp_path}]"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RewardRouterWarning)
        assert compose_job(overrides).router().routes["gsm8k"].match == ["mine"]
        assert dataset_maps(overrides) == [DatasetMap("my_gsm8k", str(mine))]


MISPLACED = """
default_route: fallback
routes:
  gsm8k:
    match: [openai/gsm8k]
    rewards:
      correct: {kind: exact_match}
  fallback:
    rewards:
      correct: {kind: f1}
"""


def test_the_job_counts_rows_whose_routing_field_is_out_of_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: RunCli
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "1000")  # a path on one line of the output
    (tmp_path / "router.yaml").write_text(MISPLACED)
    rows = [
        {"response": "4", "label": "4", "data_source": "openai/gsm8k"},  # verl's layout
        {"response": "4", "label": "4", "metadata": {"dataset": "openai/gsm8k"}},
        {"response": "4", "label": "4", "data_source": "openai/gsm8k"},
    ]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    status, out = run_cli(
        "--config", "router.yaml", "data.path=data.jsonl", f"hydra.run.dir={tmp_path / 'out'}"
    )
    assert status == 0, out
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    message = (
        "routes.fallback: 2 sample(s): scored by default_route, likely not the route meant: no "
        "route_by field is in their metadata, yet they carry one elsewhere: 'data_source' is a "
        "top-level field of the sample, and routing reads route_by fields from `metadata` — move "
        'it into the row\'s metadata ({"metadata": {"data_source": ...}})'
    )
    assert summary["warnings"] == [
        {
            "code": "misplaced_route_field",
            "where": "routes.fallback",
            "count": 2,
            "status": None,
            "lines": [1, 3],
            "message": message,
        }
    ]
    assert f"warning: {message} (lines 1, 3)" in out
    assert "warnings counted (summary.json lists them): misplaced_route_field 2" in out


def test_a_dataset_map_without_its_package_line_names_the_file_and_the_line(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "1000")
    # Without `# @package _global_`, Hydra merges the map's keys under `datasets:`; the message
    # once read "unknown key 'datasets' ... did you mean 'data'?"
    (tmp_path / "datasets").mkdir()
    mine = tmp_path / "datasets" / "mine.yaml"
    mine.write_text(MY_MAP.removeprefix("# @package _global_\n"))
    overrides = ["datasets=[mine]", f"hydra.searchpath=[file://{tmp_path}]"]
    with pytest.raises(ConfigError) as refused:
        compose_job(overrides)
    [problem] = refused.value.problems
    assert problem.path == "datasets" and str(mine) in problem.message
    assert problem.hint == (
        f"add `# @package _global_` as the first line of {mine}, as the shipped "
        f"conf/datasets/*.yaml files have"
    )
    status, out = run_cli(*overrides, f"hydra.run.dir={tmp_path / 'out'}")  # the job too
    assert status == 2 and "add `# @package _global_` as the first line of" in out, out
    assert "did you mean 'data'" not in out


def test_a_search_path_one_folder_too_deep_names_the_folder_above(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # a path on one line of the output
    (tmp_path / "router").mkdir()
    (tmp_path / "router" / "mine.yaml").write_text(MY_MAP)
    status, out = run_cli(f"hydra.searchpath=[file://{tmp_path / 'router'}]", "router=mine")
    assert status == 2, out
    assert "no option 'mine' in config group 'router'" in out
    assert f"hydra.searchpath=[file://{tmp_path}] (then router=mine reads" in out, out
