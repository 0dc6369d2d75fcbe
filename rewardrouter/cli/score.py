"""The main job: score a JSONL file with a composed router, write results, print the summary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from omegaconf import DictConfig
from rich.console import Console
from rich.progress import Progress

from rewardrouter.cli.figure import write_figure
from rewardrouter.cli.jsonl import chunks, read_rows, write_rows
from rewardrouter.cli.objective import objective
from rewardrouter.cli.paths import example_data
from rewardrouter.cli.summary import print_summary, route_stats
from rewardrouter.config.job import JobConfig
from rewardrouter.config.load import to_container, validate
from rewardrouter.errors import RewardRouterError
from rewardrouter.results import RewardResult
from rewardrouter.router import Router, compile_router

PROGRESS_FROM = 1000


def output_row(
    row: dict[str, Any], result: RewardResult, shaped: float | None, advantage: float
) -> dict[str, Any]:
    """The input row with the result's fields added (they replace same-named input columns)."""
    out = dict(row)
    out.update(
        reward=result.reward,
        route=result.route,
        level=result.level,
        status=result.status,
        terms=result.terms,
        shaped=shaped,
        advantage=advantage,
    )
    if isinstance(result.raw, dict | list):
        out["raw"] = result.raw
    if result.error_message:
        out["error"] = result.error_message
    return out


def score_rows(
    router: Router, job: JobConfig, rows: list[dict[str, Any]], console: Console
) -> list[RewardResult]:
    """Score ``rows`` in batches of ``data.batch_size``, with a progress bar on long inputs."""
    show = job.output.progress if job.output.progress is not None else len(rows) >= PROGRESS_FROM
    results: list[RewardResult] = []
    with Progress(console=console, disable=not show, transient=True) as progress:
        task = progress.add_task("scoring", total=len(rows))
        for batch in chunks(rows, job.data.batch_size):
            results += router.score_sync(batch, evaluation=job.output.evaluation)
            progress.advance(task, len(batch))
    return results


def run(cfg: DictConfig, output_dir: Path, console: Console) -> float:
    """Validate the composed config, score the data, post-process, write outputs, summarize.

    Writes ``rewards.jsonl`` (or ``output.path``; each row gains reward, route, status, terms,
    shaped reward and advantage), ``summary.json`` and ``report.png`` to the job's output
    folder, and returns the objective (for Hydra sweepers). Raises :class:`AdvantageCheckError`
    if a constant prompt group got a non-zero advantage.
    """
    job = validate(to_container(cfg, "composed config"), JobConfig, "composed config")
    data = Path(job.data.path) if job.data.path is not None else example_data()
    rows = read_rows(data, job.data.limit)
    with compile_router(job.router()) as router:
        results = score_rows(router, job, rows, console)
        processed = router.post_process(rows, results)
        estimator = router.post_processor.estimator
    out = Path(job.output.path) if job.output.path is not None else output_dir / "rewards.jsonl"
    write_rows(
        out,
        map(output_row, rows, results, processed.shaped, processed.advantages),
    )
    stats = route_stats(rows, results)
    value = objective(job.objective, rows, results)
    check = processed.constant_groups
    summary = {
        "data": str(data),
        "rows": len(rows),
        "objective": {"name": job.objective.name, "value": value},
        "advantage": {
            "stage": estimator.kind if estimator else None,
            "constant_groups": check.groups if check else None,
            "max_abs_advantage_in_constant_groups": check.max_abs_advantage if check else None,
        },
        "routes": [s.as_dict() for s in stats],
    }
    (output_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    advantages = [
        a for a, r in zip(processed.advantages, processed.raw, strict=True) if r is not None
    ]
    write_figure(
        output_dir / "report.png",
        {s.route: s.rewards for s in stats if s.rewards},
        advantages if estimator is not None else None,
    )
    print_summary(stats, console)
    if check is not None:
        verdict = (
            "all exactly 0" if check.all_zero else f"max |advantage| {check.max_abs_advantage}"
        )
        console.print(
            f"advantage stage {estimator.kind if estimator else '-'}: "
            f"{check.groups} constant group(s), their advantages {verdict}"
        )
        if not check.all_zero:
            raise AdvantageCheckError(
                f"{check.groups} prompt group(s) hold one reward value but got advantages up to "
                f"{check.max_abs_advantage}; expected exactly 0 — please report this with the data"
            )
    console.print(f"objective {job.objective.name} = {value:.4f}")
    console.print(
        f"scored {len(rows)} rows from {data}; wrote {out}, {output_dir}/summary.json and "
        f"{output_dir}/report.png (reward and advantage histograms)"
    )
    return value


class AdvantageCheckError(RewardRouterError):
    """Constant prompt groups got non-zero advantages: a numerical bug, never a user mistake."""
