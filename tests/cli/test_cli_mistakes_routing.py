"""Command-line mistakes about routing and where configs come from: each is a located error or
a word in the job's output, never a job scored with a config other than the one meant."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from rewardrouter import ConfigError, RewardRouterWarning
from rewardrouter.cli import explain, validate
from rewardrouter.cli.compose import DatasetMap, compose_job, dataset_maps

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


def test_a_dataset_map_of_yours_hidden_by_a_shipped_one_is_warned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = _search_folder(tmp_path, "gsm8k")
    overrides = ["datasets=[gsm8k]", f"hydra.searchpath=[file://{tmp_path}]"]
    with pytest.warns(RewardRouterWarning) as caught:
        compose_job(overrides)
    with pytest.warns(RewardRouterWarning):
        [found] = dataset_maps(overrides)
    assert found.path.endswith("datasets/gsm8k.yaml") and found.hidden == (str(mine),)
    assert str(caught[0].message) == (
        f"datasets=gsm8k is {found.path}; {mine} has the same name and is not used (the first "
        f"folder on the search path wins) — rename your map (datasets/my_gsm8k.yaml, then "
        f"datasets=[my_gsm8k])"
    )
    with pytest.warns(RewardRouterWarning):
        explain.main([*overrides, "--response", "4", "--label", "4"])
    shown = "".join(capsys.readouterr().out.split())  # rich wraps long paths anywhere
    assert f"datasetmapgsm8k:{found.path}(hides{mine})" in shown


def test_a_dataset_map_of_your_own_name_is_named_with_its_file(tmp_path: Path) -> None:
    mine = _search_folder(tmp_path, "my_gsm8k")
    overrides = ["datasets=[my_gsm8k]", f"hydra.searchpath=[file://{tmp_path}]"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RewardRouterWarning)
        assert compose_job(overrides).router().routes["gsm8k"].match == ["mine"]
        assert dataset_maps(overrides) == [DatasetMap("my_gsm8k", str(mine))]
