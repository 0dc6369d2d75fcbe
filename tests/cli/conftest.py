"""What the command-line tests share: the command run in-process as the console script runs it."""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest

#: ``run_cli(*argv)``: the exit status and the output (stdout and stderr, one line).
RunCli = Callable[..., tuple[int, str]]


@pytest.fixture
def run_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> RunCli:
    """Run ``rewardrouter ARGV`` in-process through :func:`rewardrouter.cli.main.main` (what the
    console script calls): its exit status and its output (stdout and stderr, one line)."""

    def run(*argv: str) -> tuple[int, str]:
        from rewardrouter.cli import main as cli

        monkeypatch.setattr(sys, "argv", ["rewardrouter", *argv])
        try:
            cli.main()
            status = 0  # a job that ends well returns, as the console script then exits 0
        except SystemExit as exc:
            status = int(exc.code or 0)
        out = capsys.readouterr()
        return status, " ".join((out.out + out.err).split())

    return run
