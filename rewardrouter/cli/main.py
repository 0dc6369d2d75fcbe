"""The ``rewardrouter`` command.

``rewardrouter [overrides...]`` runs the main job (a Hydra app over the shipped ``conf/`` tree):
``rewardrouter router=mixed routes.gsm8k.rewards.correct.weight=0.5 data.path=my.jsonl``.
User mistakes (config problems, unroutable samples, unreadable data) print without a traceback
and exit with status 2.
"""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig
from rich.console import Console

from rewardrouter._errors import RewardRouterError
from rewardrouter.cli import score
from rewardrouter.cli.paths import conf_dir

USAGE_ERROR = 2


def fail(error: RewardRouterError) -> None:
    """Print a user-facing error without a traceback and exit with status 2."""
    Console(stderr=True, highlight=False).print(f"[bold red]error:[/] {error}", markup=True)
    sys.exit(USAGE_ERROR)


@hydra.main(config_path=str(conf_dir()), config_name="config", version_base="1.3")
def _job(cfg: DictConfig) -> None:
    try:
        score.run(cfg, Path(HydraConfig.get().runtime.output_dir), Console())
    except RewardRouterError as exc:
        fail(exc)


def config_groups() -> set[str]:
    """Names of the config groups in the shipped tree (``router``, ...)."""
    return {p.name for p in conf_dir().iterdir() if p.is_dir()}


def upsert_overrides(argv: list[str], groups: set[str]) -> list[str]:
    """Rewrite ``key=value`` value overrides as ``++key=value`` (set, or add if absent).

    Router fields have defaults on the models, so a YAML need not spell them; Hydra's struct
    mode would refuse ``routes.gsm8k.rewards.format.weight=0.2`` then. Typos are still caught:
    the composed config is validated with ``extra="forbid"`` and a "did you mean". Group choices
    (``router=mixed``), ``hydra.*`` settings, flags and explicit ``+``/``++``/``~`` stay as given.
    """
    out = []
    for arg in argv:
        key, eq, _ = arg.partition("=")
        plain = eq and not arg.startswith(("-", "+", "~")) and key.split(".")[0] != "hydra"
        if plain and key.split("@")[0] not in groups and key.split("/")[0] not in groups:
            arg = "++" + arg
        out.append(arg)
    return out


def main() -> None:
    """Entry point of the console script."""
    sys.argv[1:] = upsert_overrides(sys.argv[1:], config_groups())
    _job()


if __name__ == "__main__":
    main()
