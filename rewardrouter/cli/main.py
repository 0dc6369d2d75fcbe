"""The ``rewardrouter`` command.

``rewardrouter [--config FILE] [overrides...]`` runs the main job (a Hydra app over the shipped
``conf/`` tree): ``rewardrouter router=mixed routes.gsm8k.rewards.correct.weight=0.5
data.path=my.jsonl``. ``rewardrouter check|explain|validate|serve ...`` run the subcommands
(``--help`` on each). User mistakes (config problems, unroutable samples, unreadable data) print
without a traceback and exit with status 2; reward calls that failed under ``on_error: raise``
exit with status 1 after everything scored is written.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from rewardrouter.cli.command import installed_version
from rewardrouter.cli.paths import conf_dir
from rewardrouter.errors import ConfigError, Problem, RewardRouterError, did_you_mean

if TYPE_CHECKING:
    from omegaconf import DictConfig

# Hydra, OmegaConf, pydantic and rich are imported by the functions that use them, after the
# `--help` and `--version` branches of `main`: those answer in a few hundredths of a second.

#: Exit statuses, as the usage text gives them.
CALLS_FAILED = 1
USAGE_ERROR = 2

USAGE = """\
usage: rewardrouter          [--config FILE] [KEY=VALUE ...]    score a JSONL file (the main job)
       rewardrouter check    [--config FILE] [KEY=VALUE ...]    run the hand-scored examples
       rewardrouter explain  [--config FILE] [KEY=VALUE ...]    how one sample is scored
                             (--data FILE [--line N] | --response TEXT [--label L] [--metadata JSON])
       rewardrouter validate [--config FILE] [FILE.yaml ...] [KEY=VALUE ...]
       rewardrouter serve    [--config FILE] [KEY=VALUE ...] [--host H] [--port P]

Every command reads its router the same way: --config FILE (a router YAML of your own) or
router=NAME from the shipped configs, then overrides:

  rewardrouter router=mixed data.path=my.jsonl routes.gsm8k.rewards.format.weight=0.2
  rewardrouter --config my_router.yaml datasets=[gsm8k] shaping=grpo data.path=my.jsonl
  rewardrouter router=mixed +routes.extra.rewards.correct.kind=f1    # '+' adds a route or term

Config groups: router, datasets, shaping, sweep (rewardrouter --hydra-help lists their options).
Job settings: data.path, data.limit, data.batch_size, data.columns.<field>, output.path,
output.progress, output.evaluation, output.heartbeat, objective.name.

  rewardrouter COMMAND --help   a subcommand's options (or: rewardrouter help COMMAND)
  rewardrouter --hydra-help     Hydra's own flags (-m for sweeps, --cfg job, ...)
  rewardrouter --version        the installed version

Exit status (the job and every command):
  0  done (check: every example passed; validate: every target valid)
  1  reward calls failed under on_error: raise (what was scored is written), a check
     failed (check: an example's reward differs; validate: a target is invalid), or the
     server stopped (serve)
  2  a mistake in the config, the data or the command line, Hydra's own errors included
     (an unknown key or option, an override that cannot be read, an interpolation that
     cannot be resolved): nothing is scored
  130 interrupted (Ctrl-C): the rows scored before it are written
"""


#: ``rewardrouter NAME ...`` runs the function ``SUBCOMMANDS[NAME]`` (``module:function``,
#: imported then, so that ``--help`` and the other commands do not pay for torch or aiohttp)
#: with the remaining arguments; it returns the exit status.
SUBCOMMANDS: dict[str, str] = {
    "check": "rewardrouter.cli.check:main",
    "explain": "rewardrouter.cli.explain:main",
    "validate": "rewardrouter.cli.validate:main",
    "serve": "rewardrouter.cli.serve:main",
}


def run_subcommand(name: str, argv: list[str]) -> int:
    module, _, function = SUBCOMMANDS[name].partition(":")
    status: int = getattr(importlib.import_module(module), function)(argv)
    return status


#: The user's plain value overrides and --config file, for the job's own checks.
_plain: set[str] = set()
_config_file: list[Path] = []
#: The status :func:`fail` exited with, so that :func:`main` can tell it from Hydra's own
#: ``sys.exit(1)`` after an error it reported (an interpolation in ``hydra.run.dir``).
_failed: list[int] = []


def fail(error: RewardRouterError) -> NoReturn:
    """Print a user-facing error without a traceback and exit: status 2 for a mistake in the
    config, data or command line; an error may carry its own (``exit_status``: 1 when reward
    calls failed)."""
    from rich.console import Console
    from rich.markup import escape

    Console(stderr=True, highlight=False).print("[bold red]error:[/]", escape(str(error)))
    status: int = getattr(error, "exit_status", USAGE_ERROR)
    _failed.append(status)
    sys.exit(status)


def _job_overrides() -> tuple[list[str], list[str]]:
    """This job's task overrides (a sweep's job included), and its ``hydra.searchpath`` ones."""
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf

    overrides = HydraConfig.get().overrides
    # read as written: iterating the ListConfig would resolve a `${...}` inside an override
    hydra_overrides = [str(o) for o in OmegaConf.to_container(overrides.hydra, resolve=False)]  # type: ignore[union-attr]
    task = [str(o) for o in OmegaConf.to_container(overrides.task, resolve=False)]  # type: ignore[union-attr]
    return task, [o for o in hydra_overrides if o.startswith("hydra.searchpath")]


def _created_in_job(task: list[str], searchpath: list[str]) -> None:
    """The plain overrides of this job that would create a route or a term, composed inside
    the running app."""
    from hydra import compose

    from rewardrouter.cli.compose import created_problems

    def base(task: list[str]) -> DictConfig:
        return compose("config", overrides=[*task, *searchpath])

    problems = created_problems(task, _plain, base)
    if problems:
        raise ConfigError(problems, "the command line")


def _job(cfg: DictConfig) -> float:
    """The main job, as Hydra runs it (once, or once per job of a sweep): see :func:`_run_job`."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException
    from rich.console import Console

    from rewardrouter.cli.compose import dataset_maps_of, hydra_problem, source_name

    try:
        task, searchpath = _job_overrides()
        _created_in_job(task, searchpath)
        from rewardrouter.cli import score

        runtime = HydraConfig.get().runtime
        # the files this job's dataset maps come from, for its output and summary.json
        maps = dataset_maps_of(runtime.config_sources, [*task, *searchpath])
        source = source_name(_config_file[0] if _config_file else None)
        return score.run(cfg, Path(runtime.output_dir), Console(), source, maps)
    except RewardRouterError as exc:
        fail(exc)
    except (HydraException, OmegaConfBaseException) as exc:  # a config Hydra composed but
        fail(ConfigError([hydra_problem(exc)], "the command line"))  # cannot give as values


def _run_job() -> None:
    """Run :func:`_job` as a Hydra app over the shipped tree, reading ``sys.argv``."""
    import hydra

    app = hydra.main(config_path=str(conf_dir()), config_name="config", version_base="1.3")
    app(_job)()


def job_arguments(argv: list[str]) -> list[str]:
    """The main job's arguments with ``--config FILE`` read (anywhere among the others): the
    file becomes the ``router`` option, and naming both a file and ``router=`` is refused."""
    out: list[str] = []
    args = iter(argv)
    for arg in args:
        if arg == "--config" or arg.startswith("--config="):
            value = arg.partition("=")[2] if "=" in arg else next(args, "")
            if not value:
                raise ConfigError(
                    [Problem("--config", "needs a file: --config my_router.yaml")],
                    "the command line",
                )
            if _config_file:
                raise ConfigError(
                    [Problem("--config", "given twice; name one router file")], "the command line"
                )
            _config_file.append(Path(value))
        else:
            out.append(arg)
    if _config_file:
        from rewardrouter.cli.compose import config_file_problems, register_config_file

        problems = config_file_problems(_config_file[0], out)
        if problems:
            raise ConfigError(problems, "the command line")
        # last: Hydra reads its flags (-m, --cfg job) before the overrides
        out.append(register_config_file(_config_file[0]))
    return out


#: Flags that take the next word as their value (``--config FILE``, Hydra's ``--cfg job``).
_VALUE_FLAGS = {"--config", "--cfg", "-c", "--package", "-p", "--config-path", "-cp"}
_VALUE_FLAGS |= {"--config-name", "-cn", "--config-dir", "-cd", "--experimental-rerun"}
_HYDRA_INFO = {"all", "config", "defaults", "defaults-tree", "plugins", "searchpath"}


def word_problems(argv: list[str]) -> list[Problem]:
    """Words of the main job's command line that are neither a flag, a flag's value nor a
    ``key=value`` override (``rewardrouter router=mixed check``: the command written last)."""
    problems = []
    for i, arg in enumerate(argv):
        before = argv[i - 1] if i else ""
        if arg.startswith(("-", "+", "~")) or "=" in arg or before in _VALUE_FLAGS:
            continue
        if before in ("--info", "-i") and arg in _HYDRA_INFO:
            continue
        if arg in SUBCOMMANDS:  # what follows is the command's own arguments
            rest = " ".join([*argv[:i], *argv[i + 1 :]])
            return [
                Problem(
                    "<command>",
                    f"{arg!r} is a command, written after other arguments",
                    f"write the command first: rewardrouter {arg} {rest}".rstrip(),
                )
            ]
        close = did_you_mean(arg, SUBCOMMANDS)
        problems.append(
            Problem(
                "<command>",
                f"{arg!r} is neither a command nor a key=value override",
                f"{close + ' ' if close else ''}commands (written first): "
                f"{', '.join(SUBCOMMANDS)}; rewardrouter --help shows them",
            )
        )
    return problems


def help_target(words: list[str]) -> str:
    """The subcommand that ``rewardrouter help WORDS`` asks about; :class:`ConfigError` for a
    name that is not one (or more than one name)."""
    name = words[0]
    known = ", ".join(SUBCOMMANDS)
    if name not in SUBCOMMANDS:
        close = did_you_mean(name, SUBCOMMANDS)
        raise ConfigError(
            [
                Problem(
                    "<command>",
                    f"`rewardrouter help {name}`: {name!r} is not a command",
                    f"{close + ' ' if close else ''}commands: {known}; rewardrouter help "
                    f"COMMAND shows one's options, rewardrouter help the main job's",
                )
            ],
            "the command line",
        )
    if len(words) > 1:
        raise ConfigError(
            [
                Problem(
                    "<command>",
                    f"`rewardrouter help {' '.join(words)}`: help takes one command, found "
                    f"{len(words)} words",
                    f"name one: rewardrouter help {name}",
                )
            ],
            "the command line",
        )
    return name


def main() -> None:
    """Entry point of the console script (and of ``python -m rewardrouter``)."""
    # Reward modules next to the user's config import as they do under `python -m`: the
    # current folder comes first on the import path (worker processes inherit it).
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    argv = sys.argv[1:]
    _plain.clear()
    _config_file.clear()
    _failed.clear()
    job = not argv or argv[0] not in SUBCOMMANDS
    if argv[:1] == ["help"] and argv[1:2] not in ([], ["--help"], ["-h"]):
        try:
            sys.exit(run_subcommand(help_target(argv[1:]), ["--help"]))
        except RewardRouterError as exc:
            fail(exc)
    if argv[:1] == ["help"] or (job and {"--help", "-h"} & set(argv)):
        print(USAGE, end="")  # --help anywhere among the job's arguments, as when first
        sys.exit(0)
    if job and {"--version", "-V"} & set(argv):  # a subcommand's parser has its own
        print(f"rewardrouter {installed_version()}")
        sys.exit(0)
    if "--hydra-help" in argv:
        argv = ["--help", *(a for a in argv if a != "--hydra-help")]
    try:
        if argv and argv[0] in SUBCOMMANDS:
            sys.exit(run_subcommand(argv[0], argv[1:]))
    except RewardRouterError as exc:
        fail(exc)
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from rewardrouter.cli.compose import hydra_problem, plain_value_keys, precheck, upsert_overrides

    try:
        problems = word_problems(argv)
        if problems:
            raise ConfigError(problems, "the command line")
        argv = job_arguments(argv)
        precheck(argv)
    except RewardRouterError as exc:
        fail(exc)
    _plain.update(plain_value_keys(argv))
    sys.argv[1:] = upsert_overrides(argv)
    try:
        _run_job()
    except (HydraException, OmegaConfBaseException) as exc:  # raised past Hydra's own report
        fail(ConfigError([hydra_problem(exc)], "the command line"))
    except SystemExit as exc:
        # Hydra reports an error of its own (before or around the job) and exits 1, the
        # status of failed reward calls: a config mistake exits 2 like every other one.
        if exc.code == CALLS_FAILED and not _failed:
            sys.exit(USAGE_ERROR)
        raise


if __name__ == "__main__":
    main()
