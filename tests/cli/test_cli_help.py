"""``rewardrouter help COMMAND``, ``--version`` on every command, and ``python -m rewardrouter``:
each entry to the command line answers as the console script does."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from rewardrouter.cli.command import installed_version
from rewardrouter.cli.main import SUBCOMMANDS

pytestmark = pytest.mark.slow  # a long file: `make test` starts it first

RunCli = Callable[..., tuple[int, str]]
ERROR = "error: invalid reward router config in the command line (1 problem): - <command>: "
EXE = shutil.which("rewardrouter", path=str(Path(sys.executable).parent)) or "rewardrouter"


@pytest.mark.parametrize("command", list(SUBCOMMANDS))
def test_help_command_shows_that_commands_options(run_cli: RunCli, command: str) -> None:
    status, out = run_cli("help", command)
    assert status == 0
    assert out.startswith(f"usage: rewardrouter {command} ")
    assert "--config FILE" in out and "Config groups" not in out  # not the main usage text
    assert (status, out) == run_cli(command, "--help")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param(
            ["help", "chek"],
            ERROR + "`rewardrouter help chek`: 'chek' is "
            "not a command did you mean 'check'? commands: check, explain, validate, serve; "
            "rewardrouter help COMMAND shows one's options, rewardrouter help the main job's",
            id="typo",
        ),
        pytest.param(
            ["help", "router=mixed"],
            ERROR + "`rewardrouter help router=mixed`: "
            "'router=mixed' is not a command commands: check, explain, validate, serve; "
            "rewardrouter help COMMAND shows one's options, rewardrouter help the main job's",
            id="an_override",
        ),
        pytest.param(
            ["help", "check", "serve"],
            ERROR + "`rewardrouter help check serve`: "
            "help takes one command, found 2 words name one: rewardrouter help check",
            id="two_commands",
        ),
    ],
)
def test_help_for_what_is_not_a_command_is_a_usage_error(
    run_cli: RunCli, argv: list[str], expected: str
) -> None:
    assert run_cli(*argv) == (2, expected)


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_help_is_the_main_usage(run_cli: RunCli, flag: str) -> None:
    status, out = run_cli("help", flag)
    assert status == 0 and out.startswith("usage: rewardrouter [--config FILE]")


@pytest.mark.parametrize("flag", ["--version", "-V"])
@pytest.mark.parametrize(
    "argv",
    [[], ["check"], ["explain", "--response", "x"], ["validate", "router=mixed"], ["serve"]],
    ids=["job", "check", "explain", "validate", "serve"],
)
def test_every_command_prints_the_version(run_cli: RunCli, argv: list[str], flag: str) -> None:
    assert run_cli(*argv, flag) == (0, f"rewardrouter {installed_version()}")


@pytest.mark.parametrize(
    ("argv", "status"),
    [
        pytest.param(["--version"], 0, id="version"),
        pytest.param(["help", "validate"], 0, id="help_command"),
        pytest.param(["validate", "router=mixed"], 0, id="valid"),
        pytest.param(["validate", "router=mixed", "default_route=nope"], 1, id="invalid"),
        pytest.param(["shaping=grpoo"], 2, id="usage_error"),
    ],
)
def test_python_m_rewardrouter_is_the_console_script(
    tmp_path: Path, argv: list[str], status: int
) -> None:
    def run(*command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command, *argv],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            env={"PATH": str(Path(sys.executable).parent), "COLUMNS": "200", "HOME": str(tmp_path)},
        )

    script, module = run(EXE), run(sys.executable, "-m", "rewardrouter")
    assert (module.returncode, script.returncode) == (status, status), module.stderr
    assert (module.stdout, module.stderr) == (script.stdout, script.stderr)


def test_the_routing_pages_pasted_errors_are_what_the_commands_print(run_cli: RunCli) -> None:
    """docs/routing.md pastes the errors of a typo in a term's key and of an override that would
    create a term; the commands print them (line-wrapped: compared word for word)."""
    page = (Path(__file__).parents[2] / "docs" / "routing.md").read_text()
    [pasted] = [b for b in re.findall(r"```text\n(.*?)```", page, re.S) if "wieght" in b]
    printed = [
        run_cli(override)
        for override in (
            "routes.exact.rewards.correct.wieght=1",
            "routes.exact.rewards.corect.weight=1",
        )
    ]
    assert [status for status, _ in printed] == [2, 2]
    assert " ".join(out for _, out in printed) == " ".join(pasted.split())
