"""Command-line mistakes about routing and where configs come from: each is a located error or
a word in the job's output, never a job scored with a config other than the one meant."""

from __future__ import annotations

from pathlib import Path

import pytest

from rewardrouter import ConfigError
from rewardrouter.cli import validate
from rewardrouter.cli.compose import compose_job

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
