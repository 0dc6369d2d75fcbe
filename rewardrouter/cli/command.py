"""What every subcommand's argument parser shares: its name, its description and ``--version``.

>>> command_parser("check", "Run the hand-scored examples.").prog
'rewardrouter check'
"""

from __future__ import annotations

import argparse
from importlib.metadata import PackageNotFoundError, version


def installed_version() -> str:
    """The installed distribution's version (what ``rewardrouter --version`` prints)."""
    try:
        return version("rewardrouter")
    except PackageNotFoundError:  # a source tree that was never installed
        return "(not installed: run `pip install -e .`)"


def command_parser(name: str, description: str) -> argparse.ArgumentParser:
    """The parser of ``rewardrouter NAME``, with ``--version`` / ``-V`` as the command has it
    (argparse's own usage errors exit 2, the status of every command-line mistake)."""
    parser = argparse.ArgumentParser(prog=f"rewardrouter {name}", description=description)
    parser.add_argument(
        "-V",
        "--version",
        action="version",
        version=f"rewardrouter {installed_version()}",
        help="print the installed version and exit",
    )
    return parser
