"""``rewardrouter validate``: check YAML files (or the composed config) for CI.

Each file is checked against the JSON Schema its modeline names (the router schema when it has
none), then against the models, then compiled (import paths, signatures, references)::

    rewardrouter validate conf/router/mixed.yaml my_router.yaml
    rewardrouter validate router=mixed datasets=[gsm8k]
    rewardrouter validate --config my_router.yaml shaping=grpo

Exit status: 0 when everything is valid, 1 otherwise.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from rich.console import Console
from rich.markup import escape

from rewardrouter.cli.compose import compose_job, source_name
from rewardrouter.config.job import JobConfig
from rewardrouter.config.load import load_config
from rewardrouter.config.models import RouterConfig
from rewardrouter.config.problems import yaml_path
from rewardrouter.errors import ConfigError, RewardRouterError
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
    try:
        text = path.read_text()
        document = yaml.safe_load(text) or {}
    except (OSError, yaml.YAMLError) as exc:
        return [f"<root>: cannot read YAML: {' '.join(str(exc).split())}"]
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


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="rewardrouter validate", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--config", type=Path, default=None, metavar="FILE", help="a router YAML of your own"
    )
    parser.add_argument(
        "targets", nargs="*", help="YAML files, or overrides for the composed config"
    )
    opts = parser.parse_intermixed_args(argv)
    console = Console(highlight=False)
    files = [Path(t) for t in opts.targets if t.endswith((".yaml", ".yml")) and "=" not in t]
    overrides = [t for t in opts.targets if Path(t) not in files]
    failed = 0
    for path in files:
        problems = validate_file(path)
        failed += bool(problems)
        console.print("[red]invalid[/]" if problems else "[green]valid[/]", escape(str(path)))
        for problem in problems:
            console.print(escape(f"  - {problem}"))
    if overrides or opts.config is not None or not files:
        label = f"{source_name(opts.config)} ({' '.join(overrides) or 'defaults'})"
        try:
            compile_router(compose_job(overrides, opts.config).router()).close()
            console.print("[green]valid[/]", escape(label))
        except RewardRouterError as exc:
            failed += 1
            console.print("[red]invalid[/]", escape(f"{label}\n{exc}"))
    return 1 if failed else 0
