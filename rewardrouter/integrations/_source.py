"""Where an integration finds its router config: a trainer's arguments, or the environment.

Every framework hands its reward hooks some argument object (slime's ``args`` namespace, verl's
``reward_kwargs``); the first of these that is set wins:

1. the framework's own field (``args.rewardrouter_config``, ``reward_kwargs.rewardrouter_config``);
2. the ``REWARDROUTER_CONFIG`` environment variable.

Overrides (``key.path=value`` dotlist entries, as on the command line) come from
``..._overrides`` next to the config field, else from ``REWARDROUTER_OVERRIDES``; a list or one
string separated by commas or spaces.

>>> source = config_source({"rewardrouter_config": "router.yaml"}, "reward_kwargs")
>>> source.path, source.origin
('router.yaml', 'reward_kwargs.rewardrouter_config')
>>> parse_overrides("routes.gsm8k.rewards.format.weight=0.2, routes.qa.match=[a,b]")
('routes.gsm8k.rewards.format.weight=0.2', 'routes.qa.match=[a,b]')
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rewardrouter.errors import ConfigError, Problem

ENV_CONFIG = "REWARDROUTER_CONFIG"
ENV_OVERRIDES = "REWARDROUTER_OVERRIDES"
CONFIG_FIELD = "rewardrouter_config"
OVERRIDES_FIELD = "rewardrouter_overrides"

_OPEN, _CLOSE = "[{(", "]})"


@dataclass(frozen=True)
class ConfigSource:
    """A router config path, its overrides, and where each came from (for error messages)."""

    path: str
    overrides: tuple[str, ...] = ()
    origin: str = ENV_CONFIG


def parse_overrides(value: str | Iterable[str] | None) -> tuple[str, ...]:
    """Dotlist overrides from a list, or from one string split at top-level commas or spaces.

    Commas inside brackets or quotes belong to the value (``match=[a,b]``).
    """
    if value is None:
        return ()
    if not isinstance(value, str):
        return tuple(str(v).strip() for v in value if str(v).strip())
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    quote: str | None = None
    for char in value:
        if quote is not None:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth -= 1
        elif depth == 0 and (char == "," or char.isspace()):
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return tuple(p for p in parts if p)


def _field(holder: Any, name: str) -> Any:
    if holder is None:
        return None
    if isinstance(holder, Mapping):
        return holder.get(name)
    return getattr(holder, name, None)


def config_source(holder: Any, where: str) -> ConfigSource:
    """The config named by ``holder`` (an args object or a mapping), else by the environment.

    ``where`` names the holder in messages (``args``, ``reward_kwargs``). Raises
    :class:`ConfigError` saying what to set when neither names a config.
    """
    env_overrides = parse_overrides(os.environ.get(ENV_OVERRIDES))
    path = _field(holder, CONFIG_FIELD)
    if path:
        overrides = parse_overrides(_field(holder, OVERRIDES_FIELD))
        return ConfigSource(str(path), overrides or env_overrides, f"{where}.{CONFIG_FIELD}")
    path = os.environ.get(ENV_CONFIG)
    if path:
        return ConfigSource(path, env_overrides, ENV_CONFIG)
    raise ConfigError(
        [
            Problem(
                CONFIG_FIELD,
                f"no router config was given: neither {where}.{CONFIG_FIELD} nor the "
                f"{ENV_CONFIG} environment variable is set",
                f"set {where}.{CONFIG_FIELD} to the router YAML, or export "
                f"{ENV_CONFIG}=/abs/path/router.yaml in the environment of the trainer's workers",
            )
        ]
    )


def missing_file(source: ConfigSource) -> ConfigError | None:
    """A :class:`ConfigError` naming the setting to fix when ``source.path`` is not a file."""
    if os.path.isfile(source.path):
        return None
    resolved = os.path.abspath(source.path)
    return ConfigError(
        [
            Problem(
                source.origin,
                f"router config {source.path!r} not found (looked for {resolved}; current "
                f"folder {os.getcwd()})",
                f"point {source.origin} at an existing router YAML; an absolute path is safest, "
                f"because trainer workers may run in another folder",
            )
        ],
        source.path,
    )
