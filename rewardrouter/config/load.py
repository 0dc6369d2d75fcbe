"""Load and validate router configs: OmegaConf in, frozen pydantic out.

This is the one validation boundary. It never initializes Hydra, so it is safe to call inside a
trainer that runs Hydra itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException
from pydantic import BaseModel, ValidationError

from rewardrouter.config.models import RouterConfig
from rewardrouter.config.overrides import created_names, existing_routes, split_dotlist
from rewardrouter.config.problems import problems_from_validation, yaml_path
from rewardrouter.errors import ConfigError, Problem

M = TypeVar("M", bound=BaseModel)


def _unresolvable(cfg: DictConfig | ListConfig, prefix: list[str | int]) -> list[Problem]:
    """Every ``???`` and every interpolation that does not resolve, with its YAML path."""
    problems: list[Problem] = []
    keys: Iterable[Any] = cfg.keys() if isinstance(cfg, DictConfig) else range(len(cfg))
    for key in keys:
        path = [*prefix, key]
        if OmegaConf.is_missing(cfg, key):
            problems.append(
                Problem(
                    yaml_path(path),
                    "mandatory value `???` was never set",
                    f"set it in the YAML or on the command line: {yaml_path(path)}=...",
                )
            )
            continue
        try:
            node = cfg[key]
        except OmegaConfBaseException as exc:
            raw = OmegaConf.to_container(cfg, resolve=False)[key]  # type: ignore[index]
            message = str(exc).splitlines()[0]
            problems.append(
                Problem(
                    yaml_path(path),
                    f"interpolation {raw!r} does not resolve: {message}",
                    "fix the reference, or define the key it points to",
                )
            )
            continue
        if isinstance(node, DictConfig | ListConfig):
            problems.extend(_unresolvable(node, path))
    return problems


def to_container(cfg: DictConfig | Mapping[str, Any], source: str | None = None) -> dict[str, Any]:
    """Resolve an OmegaConf config into plain containers, reporting every unresolvable value."""
    if not isinstance(cfg, DictConfig):
        cfg = OmegaConf.create(dict(cfg))
    problems = _unresolvable(cfg, [])
    if problems:
        raise ConfigError(problems, source)
    data = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    assert isinstance(data, dict)
    return {str(k): v for k, v in data.items()}


def validate(data: Mapping[str, Any], model: type[M], source: str | None = None) -> M:
    """Validate plain data against ``model``; every problem is reported with its YAML path."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(problems_from_validation(exc, data, model), source) from None


def read_yaml(path: str | Path) -> DictConfig:
    """A router YAML as an OmegaConf mapping, unvalidated, without Hydra's own keys
    (``defaults``, ``hydra``: they mean nothing outside a compose).

    Raises :class:`ConfigError` for a file that is missing, not YAML, or not a mapping.
    """
    file = Path(path)
    source = str(file)
    if not file.is_file():
        raise ConfigError(
            [
                Problem(
                    "",
                    f"file not found: {source}",
                    "check the path (relative to the current folder)",
                )
            ],
            source,
        )
    try:
        cfg = OmegaConf.load(file)
    except Exception as exc:  # yaml.YAMLError and OmegaConf's own errors
        message = " ".join(str(exc).split())
        raise ConfigError([Problem("", f"cannot parse YAML: {message}")], source) from None
    if not isinstance(cfg, DictConfig):
        raise ConfigError([Problem("", "the top level must be a mapping of router fields")], source)
    for hydra_key in ("defaults", "hydra"):
        cfg.pop(hydra_key, None)
    return cfg


def load_config(
    path: str | Path,
    overrides: Sequence[str] = (),
    model: type[M] = RouterConfig,  # type: ignore[assignment]  # (a default for a TypeVar)
) -> M:
    """Load a router YAML, apply dotlist ``overrides`` and validate it.

    >>> cfg = load_config("conf/router/mixed.yaml", ["routes.gsm8k.rewards.format.weight=0.2"])

    An override may set any field of an existing route or term; one that would create a route
    or a term must say so with ``+`` (``+routes.new.rewards.correct.kind=math``), so that a
    typo'd name is reported with a "did you mean" instead of silently adding one.

    Raises :class:`ConfigError` listing every problem: unreadable file, bad override syntax,
    an override creating a name without ``+``, ``???`` left unset, interpolations that do not
    resolve, and schema violations.
    """
    source = str(path)
    if isinstance(overrides, str | bytes):  # a str is a Sequence: "a=b" would be 3 overrides
        raise ConfigError(
            [
                Problem(
                    "<overrides>",
                    f"got the string {overrides!r}; expected a list of overrides",
                    f"wrap it in a list: load_config({source!r}, [{overrides!r}])",
                )
            ],
            source,
        )
    cfg = read_yaml(path)
    if overrides:
        dotlist, plain = split_dotlist(overrides)
        created = created_names(existing_routes(cfg), plain)
        if created:
            raise ConfigError(created, f"{source} with overrides")
        try:
            merged = OmegaConf.merge(cfg, OmegaConf.from_dotlist(dotlist))
        except OmegaConfBaseException as exc:
            raise ConfigError(
                [Problem("", f"bad override in {list(overrides)}: {exc}", "use key.path=value")],
                source,
            ) from None
        assert isinstance(merged, DictConfig)
        cfg = merged
    return validate(to_container(cfg, source), model, source)
