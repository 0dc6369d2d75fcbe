"""Compose the job config (for the main job and the subcommands) and normalize overrides.

Every command reads its router the same way: ``--config FILE`` (a router YAML of your own) or
the ``router=`` group of the shipped tree, then ``key=value`` overrides. ``--config FILE``
registers the file as the ``router`` option :data:`FILE_OPTION`, so config groups
(``datasets=[...]``, ``shaping=...``), overrides and sweeps work on it as on a shipped router.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.resources
import re
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override, OverrideType
from hydra.errors import HydraException
from hydra.types import RunMode
from omegaconf import DictConfig, open_dict
from omegaconf.errors import OmegaConfBaseException

from rewardrouter.cli.paths import conf_dir
from rewardrouter.config.job import JobConfig
from rewardrouter.config.load import read_yaml, to_container, validate
from rewardrouter.config.models import RouterConfig
from rewardrouter.config.overrides import created_names, existing_routes
from rewardrouter.errors import ConfigError, Problem, RewardRouterWarning, did_you_mean

#: The ``router`` option that ``--config FILE`` stands for.
FILE_OPTION = "_config_file"


def config_groups() -> set[str]:
    """Names of the config groups in the shipped tree (``router``, ``datasets``, ...)."""
    return {p.name for p in conf_dir().iterdir() if p.is_dir()}


def upsert_overrides(argv: Sequence[str], groups: set[str] | None = None) -> list[str]:
    """Rewrite ``key=value`` value overrides as ``++key=value`` (set, or add if absent).

    Router fields have defaults on the models, so a YAML need not spell them; Hydra's struct
    mode would refuse ``routes.gsm8k.rewards.format.weight=0.2`` then. Typos are still caught:
    the composed config is validated with ``extra="forbid"`` and a "did you mean", and a plain
    override naming a route or term that does not exist is refused (:func:`created_problems`).
    Group choices (``router=mixed``), ``hydra.*`` settings, flags and explicit ``+``/``++``/``~``
    stay as given.
    """
    groups = config_groups() if groups is None else groups
    out = []
    for arg in argv:
        key, eq, _ = arg.partition("=")
        plain = eq and not arg.startswith(("-", "+", "~")) and not _is_hydra(key)
        if plain and key.split("@")[0] not in groups and key.split("/")[0] not in groups:
            arg = "++" + arg
        out.append(arg)
    return out


def _parse(overrides: Sequence[str]) -> list[Override]:
    """The overrides Hydra's grammar reads (flags and unparsable words are Hydra's to report)."""
    parser = OverridesParser.create()
    parsed = []
    for text in overrides:
        if text.startswith("-"):
            continue
        try:
            parsed += parser.parse_overrides([text])
        except HydraException:
            continue
    return parsed


def syntax_problems(overrides: Sequence[str]) -> list[Problem]:
    """Each ``key=value`` that Hydra's override grammar cannot read, named with what to do
    (Hydra's own error names the token, not the override)."""
    parser = OverridesParser.create()
    problems = []
    for text in overrides:
        if text.startswith("-") or "=" not in text:
            continue
        try:
            parser.parse_overrides([text])
        except HydraException as exc:
            why = " ".join(str(exc).split()).split(" See https://")[0]
            key, _, value = text.lstrip("+~").partition("=")
            hint = (
                f"Hydra's grammar reads no `~` in a value: quote the path, "
                f"'{key}=\"{value}\"' (rewardrouter expands `~`), or write it from /"
                if value.startswith("~")
                else "close every bracket, and quote a value that holds brackets, braces or "
                "commas meant as text: 'key=\"a,b\"' (a bare a,b is a sweep)"
            )
            problems.append(Problem(key, f"the override {text!r} cannot be read: {why}", hint))
    return problems


def plain_value_keys(overrides: Sequence[str]) -> set[str]:
    """Keys of the plain ``key=value`` overrides of config values (not groups, not hydra)."""
    groups = config_groups()
    return {
        o.key_or_group
        for o in _parse(overrides)
        if o.type == OverrideType.CHANGE
        and not _is_hydra(o.key_or_group)
        and o.key_or_group.split(".")[0] not in groups
        and o.key_or_group.split("/")[0] not in groups
    }


def _is_hydra(key: str) -> bool:
    """``hydra.run.dir``, ``hydra/sweeper``: Hydra's own settings and groups."""
    return key.split(".")[0].split("/")[0] == "hydra"


#: Overrides that choose the router, as ``--config FILE`` does.
ROUTER_CHOICE = ("router=", "+router=", "++router=")


def config_file_problems(config_file: Path | None, overrides: Sequence[str]) -> list[Problem]:
    """``--config FILE`` given with ``router=NAME`` (two routers: one would be dropped without
    a word), or a ``--config`` value that is a flag or an override (``--config router=mixed``:
    its file was left out), each as a :class:`Problem`; the same for every command."""
    if config_file is None:
        return []
    value = str(config_file)
    if not config_file.exists() and (value.startswith("-") or "=" in value):
        return [
            Problem(
                "--config",
                f"needs a router YAML file, found {value!r}",
                "write the file right after it: --config my_router.yaml",
            )
        ]
    if config_file.is_file():
        problems = _defaults_problems(config_file)
        if problems:
            return problems
    choice = [o for o in overrides if o.startswith(ROUTER_CHOICE)]
    if choice:
        return [
            Problem(
                "router",
                f"both --config {value} and {choice[0]} name the router",
                "keep one: --config FILE for a YAML of your own, router=NAME for a shipped one",
            )
        ]
    return []


def _as_override(entry: object) -> str | None:
    """A ``defaults:`` entry as the command-line override that makes the same choice
    (``{datasets: [gsm8k]}`` → ``datasets=[gsm8k]``); None for ``_self_``."""
    if isinstance(entry, Mapping) and len(entry) == 1:
        [(group, option)] = entry.items()
        group = str(group).removeprefix("override ").strip().lstrip("/")
        if isinstance(option, list):
            return f"{group}=[{','.join(map(str, option))}]"
        return f"{group}={'null' if option is None else option}"
    if isinstance(entry, str) and entry != "_self_":
        group, _, option = entry.lstrip("/").rpartition("/")
        return f"{group}={option}" if group else entry
    return None


def _defaults_problems(config_file: Path) -> list[Problem]:
    """A ``defaults:`` list in a ``--config`` file: Hydra would not apply it (the file becomes
    the ``router`` option of the job, whose own defaults list chooses the groups), so its choices
    would be dropped without a word and the job scored without them."""
    try:
        data = yaml.safe_load(config_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return []  # reading the file again reports it
    if not isinstance(data, dict) or "defaults" not in data:
        return []
    entries = data["defaults"] if isinstance(data["defaults"], list) else [data["defaults"]]
    fix = [o for o in map(_as_override, entries) if o is not None]
    return [
        Problem(
            "defaults",
            f"--config {config_file} has a `defaults:` list ({data['defaults']!r}), which is "
            f"not applied to a --config file: its choices would be dropped without a word",
            "remove `defaults:` from the file and make the choices on the command line"
            + (f": rewardrouter --config {config_file} {' '.join(fix)}" if fix else ""),
        )
    ]


def register_config_file(path: Path) -> str:
    """Make a router YAML the ``router`` option :data:`FILE_OPTION`; returns that override."""
    ConfigStore.instance().store(
        group="router", name=FILE_OPTION, node=read_yaml(path), package="_global_"
    )
    return f"router={FILE_OPTION}"


_MISSING_OPTION = re.compile(r"Could not (?:find|load) '([^'/]+)/([^']+)'")


#: The lines OmegaConf appends to say where an error is; the problem's key says it.
_CONTEXT_LINES = ("full_key:", "object_type=", "reference_type=")


def search_path(overrides: Sequence[str]) -> list[str]:
    """The folders ``hydra.searchpath=[...]`` names on the command line, as written."""
    folders: list[str] = []
    for override in _parse(overrides):
        if override.key_or_group == "hydra.searchpath":
            value = override.value()
            folders += [str(v) for v in value] if isinstance(value, list) else [str(value)]
    return folders


def _too_deep(group: str, option: str, folders: Sequence[str]) -> str | None:
    """Where a search-path folder is a group folder itself (it holds ``option.yaml``, or is
    named ``group``): the fix, naming the folder above it."""
    for entry in folders:
        if not entry.startswith("file://"):
            continue
        folder = Path(entry.removeprefix("file://"))
        if (folder / f"{option}.yaml").is_file() or folder.name == group:
            return (
                f"hydra.searchpath names {entry}, which is a {group!r} folder itself; a search "
                f"path names the folder that holds the group folders: "
                f"hydra.searchpath=[file://{folder.parent}] (then {group}={option} reads "
                f"{folder.parent / group / option}.yaml)"
            )
    return None


def hydra_problem(
    exc: Exception,
    options: Callable[[str], list[str]] | None = None,
    folders: Sequence[str] = (),
) -> Problem:
    """Hydra's or OmegaConf's own error as a :class:`Problem` at its key when it names one,
    with a "did you mean" for a group option that does not exist (``shaping=grpoo``) when
    ``options(group)`` lists a group's options, and the fix when a folder of the search path
    (``folders``) is one level too deep."""
    text = str(exc)
    found = _MISSING_OPTION.search(text)
    if found and options is not None:
        group, option = found.groups()
        known = options(group)
        close = did_you_mean(option, known)
        hint = _too_deep(group, option, folders) or (
            f"{close + ' ' if close else ''}options: {', '.join(known) or 'none'}"
        )
        return Problem(group, f"no option {option!r} in config group {group!r}", hint)
    lines = [line for line in text.splitlines() if not line.strip().startswith(_CONTEXT_LINES)]
    return Problem(
        str(getattr(exc, "full_key", None) or "<overrides>"),
        " ".join(" ".join(lines).split()) or type(exc).__name__,
        "fix the override or the YAML key it names (an interpolation `${a.b}` must name a "
        "key of the config); rewardrouter --cfg job prints the composed config",
    )


def _compose(overrides: Sequence[str]) -> DictConfig:
    return _composed(overrides, maps=False)[0]


def _composed(overrides: Sequence[str], maps: bool = True) -> tuple[DictConfig, list[DatasetMap]]:
    """The job config of ``overrides``, composed once, and the dataset maps it merges
    (``maps``: else none are looked for)."""
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        try:
            cfg = compose("config", overrides=list(overrides), return_hydra_config=True)
            found = dataset_maps_of(cfg.hydra.runtime.config_sources, overrides) if maps else []
        except (HydraException, OmegaConfBaseException) as exc:
            loader = GlobalHydra.instance().config_loader()
            problem = hydra_problem(exc, loader.get_group_options, search_path(overrides))
        else:
            with open_dict(cfg):  # as compose() leaves it without return_hydra_config
                del cfg["hydra"]
            return cfg, found
        raise ConfigError([problem], "the command line")


@dataclass(frozen=True)
class DatasetMap:
    """A ``datasets/NAME.yaml`` reward map the job merges: the file used, the files of the same
    name later on the search path that it hides (Hydra takes the first one found), and how to
    merge the first of those instead (``fix``)."""

    name: str
    path: str
    hidden: tuple[str, ...] = ()
    fix: str = ""

    def warning(self) -> str | None:
        """The message for a map whose name more than one search-path folder holds."""
        if not self.hidden:
            return None
        one = len(self.hidden) == 1
        return (
            f"datasets={self.name} merges {self.path}; {', '.join(self.hidden)} "
            f"{'has' if one else 'have'} the same name and {'is' if one else 'are'} not used "
            f"(the first search-path folder holding datasets/{self.name}.yaml wins) — {self.fix}"
        )

    def describe(self) -> str:
        """``gsm8k: FILE`` (and the files it hides): how the job's output names the map."""
        hidden = f"  (hides {', '.join(self.hidden)})" if self.hidden else ""
        return f"{self.name}: {self.path}{hidden}"

    def as_dict(self) -> dict[str, object]:
        """The map as ``summary.json`` lists it."""
        return {"name": self.name, "path": self.path, "hidden": list(self.hidden)}


def _file(schema: str, folder: str, config_path: str) -> str | None:
    """The file of ``config_path`` (``datasets/gsm8k``) in one search-path folder, if it has it."""
    if schema == "file":
        file = Path(folder) / f"{config_path}.yaml"
        return str(file) if file.is_file() else None
    if schema == "pkg":
        package, _, sub = folder.partition("/")
        try:
            root = importlib.resources.files(package)
        except ModuleNotFoundError:
            return None
        found = root.joinpath(*filter(None, sub.split("/")), f"{config_path}.yaml")
        return str(found) if found.is_file() else None
    return None  # structured configs (ConfigStore) have no file


#: How Hydra's provider names begin for the folders of ``hydra.searchpath`` (given on the
#: command line, or in the primary config).
_SEARCHPATH = "hydra.searchpath in "


def _fix(name: str, winner: Any, hidden: Any, sources: Sequence[Any]) -> str:
    """How to merge the map in config source ``hidden`` rather than the one in ``winner``."""
    if not str(winner.provider).startswith(_SEARCHPATH):  # the shipped tree comes first
        return (
            f"to merge yours, rename it (datasets/my_{name}.yaml) and choose "
            f"datasets=[my_{name}]: the shipped folder always comes before hydra.searchpath"
        )
    folders = [s for s in sources if str(s.provider).startswith(_SEARCHPATH)]
    order = [hidden, *(s for s in folders if s is not hidden)]
    listed = ",".join(f"{s.schema}://{s.path}" for s in order)
    return (
        f"to merge {_file(hidden.schema, hidden.path, f'datasets/{name}')} instead, put its "
        f"folder first: hydra.searchpath=[{listed}] (or rename one of them)"
    )


def dataset_maps_of(config_sources: Sequence[Any], overrides: Sequence[str]) -> list[DatasetMap]:
    """The dataset maps that ``overrides`` merge, each with the file it comes from, given the
    search path Hydra composed them with (``hydra.runtime.config_sources``). Hydra must be
    initialized (inside ``compose``, or in the running job): its loader computes the defaults
    list, which loads each chosen file but composes nothing."""
    loader = GlobalHydra.instance().config_loader()
    chosen = loader.compute_defaults_list("config", list(overrides), RunMode.RUN)
    sources = list(config_sources)
    maps = []
    for default in chosen.defaults:
        config_path = default.config_path or ""
        if not config_path.startswith("datasets/"):
            continue
        found = [(s, f) for s in sources if (f := _file(s.schema, s.path, config_path))]
        if not found:
            continue
        name = config_path.partition("/")[2]
        (winner, path), rest = found[0], found[1:]
        fix = _fix(name, winner, rest[0][0], sources) if rest else ""
        maps.append(DatasetMap(name, path, tuple(f for _, f in rest), fix))
    return maps


def dataset_maps(overrides: Sequence[str]) -> list[DatasetMap]:
    """The dataset maps that ``overrides`` merge, each with the file it comes from."""
    return _composed(overrides)[1]


def precheck(argv: Sequence[str]) -> None:
    """Compose a single run's config once before Hydra runs it, so that a group option that
    does not exist (``shaping=grpoo``) is a :class:`ConfigError` with a "did you mean", like
    every other mistake. Sweeps (``-m``, ``a=1,2``) are left to Hydra."""
    problems = syntax_problems(argv)
    if problems:
        raise ConfigError(problems, "the command line")
    if any(a in ("-m", "--multirun") or a.startswith("-") for a in argv):
        return
    if any(o.is_sweep_override() for o in _parse(argv)):
        return
    _compose(upsert_overrides(argv))  # the job itself names the dataset maps it merges


def created_problems(
    overrides: Sequence[str],
    plain: set[str],
    compose_base: Callable[[list[str]], DictConfig] = _compose,
) -> list[Problem]:
    """Routes and terms that the plain overrides (keys in ``plain``) would create: the config
    is composed without them, and each of their keys is looked up in it."""
    keys = [k for k in plain if k.split(".")[0] == "routes"]
    if not keys:
        return []
    base = [
        o
        for o in overrides
        if o.lstrip("+").partition("=")[0] not in plain or not o.startswith("++")
    ]
    return created_names(existing_routes(compose_base(base)), sorted(keys))


def compose_job(overrides: Sequence[str] = (), config_file: Path | None = None) -> JobConfig:
    """The job config that ``rewardrouter [--config FILE] [overrides]`` would run, validated."""
    return composed_job(overrides, config_file)[0]


def composed_job(
    overrides: Sequence[str] = (), config_file: Path | None = None
) -> tuple[JobConfig, list[DatasetMap]]:
    """:func:`compose_job`, and the dataset maps the job merges (composed once); warns
    (:class:`RewardRouterWarning`, on stderr) for each map that hides another of its name."""
    overrides = list(overrides)
    problems = syntax_problems(overrides) + config_file_problems(config_file, overrides)
    if problems:
        raise ConfigError(problems, "the command line")
    if config_file is not None:
        overrides = [register_config_file(config_file), *overrides]
    plain = plain_value_keys(overrides)
    overrides = upsert_overrides(overrides)
    created = created_problems(overrides, plain)
    if created:
        raise ConfigError(created, "the command line")
    cfg, maps = _composed(overrides)
    bare = unpackaged(cfg, maps)
    if bare:
        raise ConfigError(bare, source_name(config_file))
    for found in maps:
        message = found.warning()
        if message is not None:
            warnings.warn(message, RewardRouterWarning, stacklevel=3)
    source = source_name(config_file)
    return validate(to_container(cfg, source), JobConfig, source), maps


#: The first line a config file merged at the top level must have (Hydra's package header).
GLOBAL_PACKAGE = "# @package _global_"


def unpackaged(cfg: DictConfig, maps: Sequence[DatasetMap]) -> list[Problem]:
    """A group's file without ``# @package _global_``: Hydra merges its keys under the group's
    name (``datasets: {routes: ...}``) rather than at the top, where the router reads them."""
    problems = []
    for group in sorted(config_groups() & set(cfg)):
        files = [m.path for m in maps if group == "datasets"]
        bare = [f for f in files if not Path(f).read_text().lstrip().startswith(GLOBAL_PACKAGE)]
        where = ", ".join(bare) or f"the {group} file chosen"
        problems.append(
            Problem(
                group,
                f"the keys of {where} were merged under `{group}:`, not at the top where the "
                f"router reads them: its first line is not `{GLOBAL_PACKAGE}`",
                f"add `{GLOBAL_PACKAGE}` as the first line of {where}, as the shipped "
                f"conf/{group}/*.yaml files have",
            )
        )
    return problems


def source_name(config_file: Path | None) -> str:
    """How errors name the composed config."""
    return "composed config" + (f" (--config {config_file})" if config_file else "")


@contextlib.contextmanager
def named(source: str) -> Iterator[None]:
    """Give the :class:`ConfigError` s raised inside (compiling: an import path, a kind, a
    route name) the name of the config they are about, as loading does."""
    try:
        yield
    except ConfigError as exc:
        if exc.source is not None:
            raise
        raise ConfigError(exc.problems, source) from None


def router_config(config_file: Path | None, overrides: Sequence[str]) -> RouterConfig:
    """The router of ``[--config FILE] [overrides]``, the same for every subcommand."""
    return compose_job(overrides, config_file).router()


class _OneConfig(argparse.Action):
    """``--config FILE`` given once: a second one is refused, as by the main job (argparse
    would keep the last and drop the first without a word)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        if getattr(namespace, self.dest, None) is not None:
            raise ConfigError(
                [Problem("--config", "given twice; name one router file")], "the command line"
            )
        setattr(namespace, self.dest, values)


def add_config_option(parser: argparse.ArgumentParser, help: str) -> None:
    """``--config FILE``, given at most once."""
    parser.add_argument(
        "--config", type=Path, default=None, metavar="FILE", action=_OneConfig, help=help
    )


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """``--config FILE`` and trailing ``key=value`` overrides, shared by every command."""
    add_config_option(
        parser, "a router YAML file of your own (instead of router=NAME from the shipped conf/)"
    )
    parser.add_argument(
        "overrides",
        nargs="*",
        help="overrides, e.g. router=mixed routes.gsm8k.rewards.correct.weight=0.5; "
        "+routes.new.rewards.x.kind=f1 adds a route or term",
    )
