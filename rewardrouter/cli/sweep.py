"""The best job of a sweep, for every sweeper: printed, and written to ``best.json``.

Hydra's grid sweeper reports nothing when its jobs are done; the Optuna sweeper prints its own
best parameters. :class:`BestJob` (a Hydra callback set in ``conf/config.yaml``) does the same for
both: after the last job it prints the best objective and the overrides that gave it, and writes
them next to the jobs' folders::

    best of 3 jobs: agreement = 0.8333 (higher is better) with routes.gsm8k.rewards.format.weight=0.0
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from hydra.core.utils import JobReturn, JobStatus
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from rewardrouter.config.job import ObjectiveConfig


class BestJob(Callback):
    """Collects each job's objective and reports the best one when the sweep ends."""

    def __init__(self) -> None:
        self.jobs: list[tuple[float, list[str], str]] = []

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        self.jobs.clear()

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
