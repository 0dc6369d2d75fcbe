"""``rewardrouter validate``: check YAML files (or the composed config) for CI.

Each file is checked against the JSON Schema its modeline names (the router schema when it has
none), then against the models, then compiled (import paths, signatures, references)::

    rewardrouter validate conf/router/mixed.yaml my_router.yaml
    rewardrouter validate router=mixed datasets=[gsm8k]
    rewardrouter validate --config my_router.yaml shaping=grpo

Every line names its target (the file, or the composed config with its router and overrides).
Exit status: 0 when everything is valid, 1 otherwise; 2 for files given with overrides.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from rich.console import Console
from rich.markup import escape

from rewardrouter.cli.command import command_parser
from rewardrouter.cli.compose import ROUTER_CHOICE, add_config_option, compose_job
from rewardrouter.config.job import JobConfig
from rewardrouter.config.load import load_config
from rewardrouter.config.models import RouterConfig
from rewardrouter.config.problems import yaml_path
from rewardrouter.errors import ConfigError, Problem, RewardRouterError
from rewardrouter.router import compile_router
from rewardrouter.schema import schema_for

_MODELINE = re.compile(r"^# yaml-language-server: \$schema=(\S+)$", re.M)


def _schema_errors(document: Any, is_job: bool) -> list[str]:
    validator = jsonschema.Draft202012Validator(
        schema_for(JobConfig if is_job else RouterConfig, hydra_keys=is_job)
    )
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    return [f"{yaml_path(e.absolute_path) or '<root>'}: {e.message}" for e in errors]


def validate_file(path: Path) -> list[str]:
    """Every problem of one YAML file, schema first; an empty list when it is valid."""
    if not path.exists():
        return ["<root>: file not found; check the path (relative to the current folder)"]
    if path.is_dir():
        return ["<root>: is a folder; name a YAML file"]
    try:
        text = path.read_text()
        document = yaml.safe_load(text) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        return [f"<root>: cannot read YAML: {' '.join(str(exc).split())}"]
    if not isinstance(document, dict):
        return [
            f"<root>: found a YAML {type(document).__name__}; expected a mapping of router fields"
        ]
    modeline = _MODELINE.search(text)
    is_job = bool(modeline and "job.schema" in modeline.group(1)) or "defaults" in document
    problems = _schema_errors(document, is_job)
    if problems:
        return problems
    try:
        config = load_config(path, model=JobConfig if is_job else RouterConfig)
        router = config.router() if isinstance(config, JobConfig) else config
        compile_router(router).close()
    except ConfigError as exc:
        return [str(p) for p in exc.problems]
    return []


def composed_label(config_file: Path | None, overrides: list[str]) -> str:
    """How the composed config is named: its router and the overrides on it."""
    chosen = config_file is not None or any(o.startswith(ROUTER_CHOICE) for o in overrides)
    router = [] if chosen else ["router=default"]
    given = [f"--config {config_file}"] if config_file is not None else []
    return f"composed config {' '.join([*given, *router, *overrides])}"


def _report(console: Console, target: str, problems: list[str]) -> None:
    """``valid TARGET``, or ``invalid TARGET (n problems):`` and each problem, which names the
    target too, so that a line read alone (a CI log) says which target failed."""
    if not problems:
        console.print("[green]valid[/]", escape(target))
        return
    count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
    console.print("[red]invalid[/]", escape(f"{target} ({count}):"))
    for problem in problems:
        console.print(escape(f"  - {target}: {problem}"))


def main(argv: list[str]) -> int:
    parser = command_parser("validate", __doc__.splitlines()[0])
    add_config_option(parser, "a router YAML of your own")
    parser.add_argument(
        "targets", nargs="*", help="YAML files, or overrides for the composed config"
    )
    opts = parser.parse_intermixed_args(argv)
    console = Console(highlight=False, soft_wrap=True)  # a problem stays one line in CI logs
    # a word without '=' is a file (a ~key deletion is an override)
    files = [Path(t) for t in opts.targets if "=" not in t and not t.startswith("~")]
    overrides = [t for t in opts.targets if "=" in t or t.startswith("~")]
    if files and overrides:
        file, override = files[0], overrides[0]
        raise ConfigError(
            [
                Problem(
                    "<targets>",
                    f"{file} is a file and {override} an override: overrides apply to the "
                    f"composed config, not to files",
                    f"validate a file with overrides as --config FILE: rewardrouter validate "
                    f"--config {file} {' '.join(overrides)}; or validate the files alone",
                )
            ],
            "the command line",
        )
    results: list[tuple[str, list[str]]] = [(str(path), validate_file(path)) for path in files]
    if overrides or opts.config is not None or not files:
        label = composed_label(opts.config, overrides)
        try:
            compile_router(compose_job(overrides, opts.config).router()).close()
            problems = []
        except ConfigError as exc:
            problems = [str(p) for p in exc.problems]
        except RewardRouterError as exc:
            problems = [str(exc)]
        results.append((label, problems))
    for target, problems in results:
        _report(console, target, problems)
    failed = [target for target, problems in results if problems]
    if failed and len(results) > 1:
        console.print(
            escape(f"{len(failed)} of {len(results)} targets invalid: {', '.join(failed)}")
        )
    return 1 if failed else 0
