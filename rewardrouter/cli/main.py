"""The ``rewardrouter`` command.

``rewardrouter [overrides...]`` runs the main job (a Hydra app over the shipped ``conf/`` tree):
``rewardrouter router=mixed routes.gsm8k.rewards.correct.weight=0.5 data.path=my.jsonl``.
``rewardrouter check|explain|validate|serve ...`` run the subcommands (``--help`` on each).
User mistakes (config problems, unroutable samples, unreadable data) print without a traceback
and exit with status 2.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig
from rich.console import Console
from rich.markup import escape

from rewardrouter.cli import check, explain, score, validate
from rewardrouter.cli.compose import upsert_overrides
from rewardrouter.cli.paths import conf_dir
from rewardrouter.errors import RewardRouterError

USAGE_ERROR = 2


def _serve(argv: list[str]) -> int:
    from rewardrouter.serve import serve_main  # aiohttp is imported for this command only

    return serve_main(argv)


#: ``rewardrouter NAME ...`` runs ``SUBCOMMANDS[NAME](argv)``, which returns the exit status.
SUBCOMMANDS: dict[str, Callable[[list[str]], int]] = {
    "check": check.main,
    "explain": explain.main,
    "validate": validate.main,
    "serve": _serve,
}


def fail(error: RewardRouterError) -> NoReturn:
    """Print a user-facing error without a traceback and exit with status 2."""
    Console(stderr=True, highlight=False).print("[bold red]error:[/]", escape(str(error)))
    sys.exit(USAGE_ERROR)


@hydra.main(config_path=str(conf_dir()), config_name="config", version_base="1.3")
def _job(cfg: DictConfig) -> float:
    try:
        return score.run(cfg, Path(HydraConfig.get().runtime.output_dir), Console())
    except RewardRouterError as exc:
        fail(exc)


def main() -> None:
    """Entry point of the console script."""
    argv = sys.argv[1:]
    if argv and argv[0] in SUBCOMMANDS:
        try:
            sys.exit(SUBCOMMANDS[argv[0]](argv[1:]))
        except RewardRouterError as exc:
            fail(exc)
    sys.argv[1:] = upsert_overrides(argv)
    _job()


if __name__ == "__main__":
    main()
