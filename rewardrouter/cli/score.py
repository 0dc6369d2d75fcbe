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
from rewardrouter.compile.compiler import compile_router
from rewardrouter.config.job import JobConfig
from rewardrouter.config.load import to_container, validate
from rewardrouter.execute.result import RewardResult

PROGRESS_FROM = 1000


def output_row(row: dict[str, Any], result: RewardResult) -> dict[str, Any]:
    """The input row with the result's fields added (they replace same-named input columns)."""
    out = dict(row)
    out.update(
        reward=result.reward,
        route=result.route,
        level=result.level,
        status=result.status,
        terms=result.terms,
    )
    if isinstance(result.raw, dict | list):
        out["raw"] = result.raw
    if result.error_message:
        out["error"] = result.error_message
    return out


def score_rows(job: JobConfig, rows: list[dict[str, Any]], console: Console) -> list[RewardResult]:
    """Score ``rows`` in batches of ``data.batch_size``, with a progress bar on long inputs."""
    show = job.output.progress if job.output.progress is not None else len(rows) >= PROGRESS_FROM
    results: list[RewardResult] = []
    with (
        compile_router(job.router()) as router,
        Progress(console=console, disable=not show, transient=True) as progress,
    ):
        task = progress.add_task("scoring", total=len(rows))
        for batch in chunks(rows, job.data.batch_size):
            results += router.score_sync(batch, evaluation=job.output.evaluation)
            progress.advance(task, len(batch))
    return results


def run(cfg: DictConfig, output_dir: Path, console: Console) -> float:
    """Validate the composed config, score the data, write the outputs, print the summary.

    Writes ``rewards.jsonl`` (or ``output.path``), ``summary.json`` and ``report.png`` to the
    job's output folder, and returns the objective (for Hydra sweepers).
    """
    job = validate(to_container(cfg, "composed config"), JobConfig, "composed config")
    data = Path(job.data.path) if job.data.path is not None else example_data()
    rows = read_rows(data, job.data.limit)
    results = score_rows(job, rows, console)
    out = Path(job.output.path) if job.output.path is not None else output_dir / "rewards.jsonl"
    write_rows(out, (output_row(row, res) for row, res in zip(rows, results, strict=True)))
    stats = route_stats(rows, results)
    value = objective(job.objective, rows, results)
    summary = {
        "data": str(data),
        "rows": len(rows),
        "objective": {"name": job.objective.name, "value": value},
        "routes": [s.as_dict() for s in stats],
    }
    (output_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    write_figure(output_dir / "report.png", {s.route: s.rewards for s in stats if s.rewards})
    print_summary(stats, console)
    console.print(f"objective {job.objective.name} = {value:.4f}")
    console.print(f"scored {len(rows)} rows from {data}; wrote {out} and {output_dir}/summary.json")
    return value
