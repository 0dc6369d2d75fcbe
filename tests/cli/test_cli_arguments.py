"""The command line's arguments in any order: ``--config``, overrides and flags mean the same
wherever they are written, or end in an error that says what to write instead.

Run in-process through :func:`rewardrouter.cli.main.main` (what the console script calls); every
case here stops before a reward is scored or a server starts.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from rewardrouter.cli import main as cli

ROUTER = (
    "default_route: exact\nroutes:\n  exact:\n    rewards:\n      correct: {kind: exact_match}\n"
)


@pytest.fixture
def router_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my.yaml").write_text(ROUTER)
    return "my.yaml"


@pytest.mark.parametrize("command", [[], ["check"], ["explain", "--response", "x"], ["serve"]])
@pytest.mark.parametrize("file_first", [True, False], ids=["config_first", "config_last"])
def test_a_router_file_and_a_router_choice_are_refused_in_either_order(
    run_cli: Callable[..., tuple[int, str]],
    router_file: str,
    command: list[str],
    file_first: bool,
) -> None:
    argv = (
        ["--config", router_file, "router=mixed"]
        if file_first
        else ["router=mixed", "--config", router_file]
    )
    status, out = run_cli(*command, *argv)
    assert status == 2
    assert "- router: both --config my.yaml and router=mixed name the router" in out
    assert "keep one: --config FILE for a YAML of your own, router=NAME for a shipped one" in out


@pytest.mark.parametrize("file_first", [True, False], ids=["config_first", "config_last"])
def test_validate_refuses_a_router_file_and_a_router_choice(
    capsys: pytest.CaptureFixture[str], router_file: str, file_first: bool
) -> None:
    from rewardrouter.cli import validate

    argv = (
        ["--config", router_file, "router=mixed"]
        if file_first
        else ["router=mixed", "--config", router_file]
    )
    assert validate.main(argv) == 1
    assert "both --config my.yaml and router=mixed name the router" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "found"),
    [
        pytest.param(["--config", "router=mixed"], "router=mixed", id="override_for_a_file"),
        pytest.param(["--config", "--cfg", "job"], "--cfg", id="flag_for_a_file"),
        pytest.param(["check", "--config", "router=mixed"], "router=mixed", id="subcommand"),
    ],
)
def test_a_config_value_that_is_not_a_file_is_named(
    run_cli: Callable[..., tuple[int, str]], argv: list[str], found: str
) -> None:
    status, out = run_cli(*argv)
    assert status == 2
    assert f"--config: needs a router YAML file, found {found!r}" in out
    assert "write the file right after it: --config my_router.yaml" in out


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param(
            ["router=mixed", "check"],
            "'check' is a command, written after other arguments write the command first: "
            "rewardrouter check router=mixed",
            id="command_last",
        ),
        pytest.param(
            ["--config", "my.yaml", "serve", "--port", "9"],
            "write the command first: rewardrouter serve --config my.yaml --port 9",
            id="command_after_config",
        ),
        pytest.param(
            ["router=mixed", "chek"],
            "'chek' is neither a command nor a key=value override did you mean 'check'?",
            id="typo_after_an_override",
        ),
    ],
)
def test_a_command_written_after_other_arguments_is_named(
    run_cli: Callable[..., tuple[int, str]],
    router_file: str,
    argv: list[str],
    expected: str,
) -> None:
    status, out = run_cli(*argv)
    assert status == 2
    assert expected in out
    assert "missing EQUAL" not in out  # not Hydra's parse error


@pytest.mark.parametrize("position", ["first", "last"])
def test_help_and_version_are_ours_wherever_they_are_written(
    run_cli: Callable[..., tuple[int, str]], position: str
) -> None:
    def where(flag: str) -> list[str]:
        return [flag, "data.limit=1"] if position == "first" else ["data.limit=1", flag]

    status, out = run_cli(*where("--help"))
    assert status == 0
    assert "usage: rewardrouter" in out and "powered by Hydra" not in out
    status, out = run_cli(*where("--version"))
    assert status == 0
    assert out.startswith("rewardrouter ") and "Hydra" not in out


@pytest.mark.parametrize("command", [[], ["check"], ["validate"]])
@pytest.mark.parametrize(
    ("override", "why"),
    [
        pytest.param("routes.exact.rewards.correct.weight=[0.5", "'[0.5'", id="open_bracket"),
        pytest.param("data.path={x", "'{x'", id="open_brace"),
        pytest.param("data.limit=1,", "mismatched input '<EOF>'", id="trailing_comma"),
    ],
)
def test_an_override_hydra_cannot_read_is_named(
    run_cli: Callable[..., tuple[int, str]],
    command: list[str],
    override: str,
    why: str,
) -> None:
    status, out = run_cli(*command, override)
    key = override.partition("=")[0]
    assert status == (1 if command == ["validate"] else 2)  # validate: 1 for what is invalid
    assert f"{key}: the override {override!r} cannot be read: " in out
    assert why in out
    assert "close every bracket, and quote a value that holds brackets" in out


@pytest.mark.parametrize("command", [[], ["check"], ["explain"], ["validate"], ["serve"]])
def test_a_second_config_file_is_refused_by_every_command(
    run_cli: Callable[..., tuple[int, str]],
    router_file: str,
    command: list[str],
) -> None:
    # argparse kept the last --config and dropped the first without a word
    Path("other.yaml").write_text(ROUTER)
    argv = ["--config", router_file, "--config", "other.yaml"]
    status, out = run_cli(*command, *argv)
    assert status == 2
    assert "- --config: given twice; name one router file" in out


@pytest.mark.parametrize("flag", ["--info", "-i"])
def test_hydras_info_topic_is_no_stray_word_after_either_spelling(flag: str) -> None:
    assert cli.word_problems([flag, "defaults", "data.limit=1"]) == []
    [problem] = cli.word_problems([flag, "defaults", "chek"])
    assert problem.message == "'chek' is neither a command nor a key=value override"
