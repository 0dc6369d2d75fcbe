"""Compose the job config outside ``@hydra.main`` (for subcommands) and normalize overrides."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.errors import HydraException
from omegaconf.errors import OmegaConfBaseException

from rewardrouter.cli.paths import conf_dir
from rewardrouter.config.job import JobConfig
from rewardrouter.config.load import load_config, to_container, validate
from rewardrouter.config.models import RouterConfig
from rewardrouter.errors import ConfigError, Problem


def config_groups() -> set[str]:
    """Names of the config groups in the shipped tree (``router``, ``datasets``, ...)."""
    return {p.name for p in conf_dir().iterdir() if p.is_dir()}


def upsert_overrides(argv: Sequence[str], groups: set[str] | None = None) -> list[str]:
    """Rewrite ``key=value`` value overrides as ``++key=value`` (set, or add if absent).

    Router fields have defaults on the models, so a YAML need not spell them; Hydra's struct
    mode would refuse ``routes.gsm8k.rewards.format.weight=0.2`` then. Typos are still caught:
    the composed config is validated with ``extra="forbid"`` and a "did you mean". Group choices
    (``router=mixed``), ``hydra.*`` settings, flags and explicit ``+``/``++``/``~`` stay as given.
    """
    groups = config_groups() if groups is None else groups
    out = []
    for arg in argv:
        key, eq, _ = arg.partition("=")
        plain = eq and not arg.startswith(("-", "+", "~")) and key.split(".")[0] != "hydra"
        if plain and key.split("@")[0] not in groups and key.split("/")[0] not in groups:
            arg = "++" + arg
        out.append(arg)
    return out


def compose_job(overrides: Sequence[str] = ()) -> JobConfig:
    """The job config that ``rewardrouter [overrides]`` would run, validated."""
    try:
        with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
            cfg = compose("config", overrides=upsert_overrides(overrides))
    except (HydraException, OmegaConfBaseException) as exc:
        message = " ".join(str(exc).split())
        raise ConfigError([Problem("<overrides>", message)], "the command line") from None
    return validate(to_container(cfg, "composed config"), JobConfig, "composed config")


def router_config(config_file: Path | None, overrides: Sequence[str]) -> RouterConfig:
    """A router YAML file with dotlist overrides, or else the composed job's router."""
    if config_file is not None:
        return load_config(config_file, overrides)
    return compose_job(overrides).router()


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """``--config FILE`` and trailing ``key=value`` overrides, shared by the subcommands."""
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        help="a router YAML file; default: the composed job config (conf/config.yaml)",
    )
    parser.add_argument(
        "overrides",
        nargs="*",
        help="overrides, e.g. router=mixed routes.gsm8k.rewards.correct.weight=0.5",
    )
