"""The best job of a sweep, for every sweeper: printed, and written to ``best.json``; and a
grid's jobs checked before the first one runs (:func:`grid_problems`).

Hydra's grid sweeper reports nothing when its jobs are done; the Optuna sweeper prints its own
best parameters. :class:`BestJob` (a Hydra callback set in ``conf/config.yaml``) does the same for
both: after the last job it prints the best objective and the overrides that gave it, and writes
them next to the jobs' folders::

    best of 3 jobs: agreement = 0.8889 (higher is better) with routes.gsm8k.rewards.format.weight=0.0
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.utils import JobReturn, JobStatus
from hydra.errors import HydraException
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from rewardrouter.config.job import JobConfig, ObjectiveConfig
from rewardrouter.config.load import to_container, validate
from rewardrouter.errors import ConfigError, Problem
from rewardrouter.router import compile_router


class BestJob(Callback):
    """Collects each job's objective and reports the best one when the sweep ends."""

    def __init__(self) -> None:
        self.jobs: list[tuple[float, list[str], str]] = []

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        self.jobs.clear()
        problems = grid_problems(config)
        if problems:
            from rewardrouter.cli.main import fail

            fail(ConfigError(problems, "the sweep (no job was run)"))

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        value = job_return.return_value if job_return.status == JobStatus.COMPLETED else None
        if isinstance(value, float) and math.isfinite(value):
            folder = str(config.hydra.runtime.output_dir) if "hydra" in config else ""
            self.jobs.append((value, list(job_return.overrides or ()), folder))

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        objective = ObjectiveConfig.model_validate(OmegaConf.to_container(config.objective))
        name, maximize = objective.name, objective.maximize
        if not self.jobs:
            print(f"no job of the sweep returned a finite {name}")
            return
        value, overrides, folder = (max if maximize else min)(self.jobs, key=lambda job: job[0])
        # the swept settings: overrides that not every job shares
        common = set.intersection(*(set(job[1]) for job in self.jobs))
        shown = " ".join(o.lstrip("+") for o in overrides if o not in common)
        direction = "higher" if maximize else "lower"
        print(
            f"best of {len(self.jobs)} jobs: {name} = {value:.4f} ({direction} is better) "
            f"with {shown or 'the same settings as every other job'}",
            flush=True,
        )
        best = {"objective": name, "value": value, "overrides": overrides, "folder": folder}
        sweep_dir = Path(str(config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        (sweep_dir / "best.json").write_text(json.dumps(best, indent=2) + "\n")


def grid_problems(config: DictConfig) -> list[Problem]:
    """The problems of every job of a grid sweep (Hydra's basic sweeper), found before the first
    job runs: each job's config is composed as the sweeper will compose it, validated and
    compiled. A value that cannot be a weight would otherwise stop the sweep at its job, after
    the jobs before it had run. Other sweepers (Optuna) choose their values as they go."""
    sweeper = config.hydra.sweeper
    if not str(sweeper.get("_target_", "")).endswith(".BasicSweeper"):
        return []
    loader = GlobalHydra.instance().config_loader()
    params = [f"{key}={value}" for key, value in (sweeper.get("params") or {}).items()]
    task = list(OmegaConf.to_container(config.hydra.overrides.task, resolve=False))  # type: ignore[arg-type]
    parsed = OverridesParser.create(config_loader=loader).parse_overrides([*params, *task])
    jobs = [job for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]
    common = set.intersection(*(set(job) for job in jobs)) if len(jobs) > 1 else set()
    problems: list[Problem] = []
    for number, overrides in enumerate(jobs):
        swept = " ".join(o for o in overrides if o not in common)
        source = f"job {number}" + (f" ({swept})" if swept else "")
        try:
            composed = loader.load_sweep_config(config, list(overrides))
            cfg = OmegaConf.masked_copy(composed, [str(k) for k in composed if k != "hydra"])
            job = validate(to_container(cfg, source), JobConfig, source)
            compile_router(job.router()).close()
        except ConfigError as exc:
            problems += [Problem(f"{source}: {p.path}", p.message, p.hint) for p in exc.problems]
        except (HydraException, OmegaConfBaseException) as exc:  # the job cannot be composed
            what = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            problems.append(
                Problem(source, what, "each swept value must be one the key or group takes")
            )
    return problems
