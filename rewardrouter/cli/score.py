"""The main job: score a JSONL file with a composed router, write results, print the summary.

Nothing is scored until the whole file reads as rows and every row can be routed and
post-processed (:meth:`Router.check`, and the grouping checks that the trainer hooks run too:
:func:`~rewardrouter.checks.data_problems`). A reward call that fails under ``on_error: raise`` stops
the job after its batch: every row scored so far is written, with the failures listed in the
terminal and in ``summary.json``, and the exit status is 1.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress

from rewardrouter.checks import data_problems, unlabeled
from rewardrouter.cli.compose import DatasetMap, named, unpackaged
from rewardrouter.cli.figure import write_figure
from rewardrouter.cli.jsonl import DataError, Rows, located, read_rows, writable, write_rows
from rewardrouter.cli.objective import column_problems, objective
from rewardrouter.cli.paths import example_data
from rewardrouter.cli.summary import RouteStats, json_safe, print_summary, route_stats
from rewardrouter.config.job import JobConfig, ObjectiveConfig
from rewardrouter.config.load import to_container, validate
from rewardrouter.config.summary import (
    AdvantageCheck,
    DatasetMapEntry,
    FailureEntry,
    JobSummary,
    ObjectiveValue,
    RouteSummary,
    WarningEntry,
)
from rewardrouter.errors import ConfigError, RewardRouterError, did_you_mean
from rewardrouter.results import RewardResult, ScoreWarning, count_warnings
from rewardrouter.router import Router, compile_router
from rewardrouter.sample import as_sample

if TYPE_CHECKING:
    from rewardrouter.shape.processor import PostProcessResult

PROGRESS_FROM = 1000

#: Failures listed in the terminal (all of them go to ``summary.json``, up to ``KEPT``).
SHOWN, KEPT = 10, 1000


class JobFailed(RewardRouterError):
    """Reward calls failed under ``on_error: raise`` (or the job was interrupted); what was
    scored is written. Exit status 1 (130 when interrupted)."""

    def __init__(self, message: str, exit_status: int = 1) -> None:
        super().__init__(message)
        self.exit_status = exit_status


@dataclass
class Scored:
    """What the scoring loop produced: one result per scored row (a prefix of the input)."""

    results: list[RewardResult] = field(default_factory=list)
    failures: list[int] = field(default_factory=list)  # row indices
    interrupted: bool = False

    @property
    def complete(self) -> bool:
        return not self.failures and not self.interrupted


def output_row(
    row: dict[str, Any], result: RewardResult, shaped: float | None, advantage: float | None
) -> dict[str, Any]:
    """The input row with the result's fields added (they replace same-named input columns)."""
    out = dict(row)
    out.update(
        reward=result.reward,
        route=result.route,
        level=result.level,
        status=result.status,
        terms=result.terms,
        shaped=json_safe(shaped),  # strict JSON: a non-finite value (from 1e308 rewards) is null
        advantage=json_safe(advantage),
    )
    if isinstance(result.raw, dict | list):
        out["raw"] = result.raw
    if result.error_message:
        out["error"] = result.error_message
    return out


@contextmanager
def heartbeat(
    console: Console, every: float | None, router: Router, done: list[int], total: int
) -> Iterator[None]:
    """Print a 'still scoring' line every ``every`` seconds until the block ends, so that a
    slow call is never minutes of silence."""
    if every is None:
        yield
        return
    timeouts = [t.timeout for r in router.routes.values() for t in r.terms] or [
        router.config.timeout
    ]
    stop = threading.Event()
    start = time.monotonic()

    def beat() -> None:
        while not stop.wait(every):
            console.print(
                f"still scoring after {time.monotonic() - start:.0f} s: {done[0]} of {total} "
                f"rows done; a call gives up after {max(timeouts):g} s (`timeout`)",
                highlight=False,
            )

    thread = threading.Thread(target=beat, name="rewardrouter-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def score_rows(
    router: Router, job: JobConfig, rows: list[dict[str, Any]], console: Console
) -> Scored:
    """Score ``rows`` in batches of ``data.batch_size``, with a progress bar on long inputs.

    Stops after a batch in which a call failed under ``on_error: raise`` (those failures are
    recorded, not raised), or at Ctrl-C; the results cover the rows scored until then.
    """
    show = job.output.progress if job.output.progress is not None else len(rows) >= PROGRESS_FROM
    scored = Scored()
    done = [0]
    size = job.data.batch_size
    with (
        heartbeat(console, job.output.heartbeat, router, done, len(rows)),
        Progress(console=console, disable=not show, transient=True) as progress,
    ):
        task = progress.add_task("scoring", total=len(rows))
        for start in range(0, len(rows), size):
            batch = rows[start : start + size]
            try:
                results = router.score_sync(
                    batch, evaluation=job.output.evaluation, failures="record"
                )
            except KeyboardInterrupt:
                scored.interrupted = True
                break
            scored.results += results
            scored.failures += [start + i for i in results.failures]
            done[0] += len(batch)
            progress.advance(task, len(batch))
            if results.failures:
                break
    return scored


def run(
    cfg: DictConfig,
    output_dir: Path,
    console: Console,
    source: str = "composed config",
    maps: Sequence[DatasetMap] = (),
) -> float:
    """Validate the composed config and run the job (:func:`run_job`)."""
    bare = unpackaged(cfg, maps)
    if bare:
        raise ConfigError(bare, source)
    job = validate(to_container(cfg, source), JobConfig, source)
    with named(source):
        return run_job(job, output_dir, console, maps)


@dataclass
class Inputs:
    """What a job reads and where it writes: the data file, its rows, the rewards file."""

    data: Path
    rows: Rows
    out: Path


@dataclass
class Scoring:
    """What a job scored: the results, the post-processing (None where it did not run) or its
    error, the advantage stage, and what grades each term."""

    scored: Scored
    processed: PostProcessResult | None
    post_error: JobFailed | None
    estimator: str | None
    shaping: bool
    graders: dict[str, str]


def run_job(
    job: JobConfig, output_dir: Path, console: Console, maps: Sequence[DatasetMap] = ()
) -> float:
    """Check the data, score it, post-process, write the outputs and summarize.

    Writes ``rewards.jsonl`` (or ``output.path``; each row gains reward, route, status, terms,
    shaped reward and advantage), ``summary.json`` (:class:`JobSummary`) and ``report.png`` to
    the job's output folder, and returns the objective (for Hydra sweepers). ``maps`` are the
    dataset maps the job's config merged (:class:`DatasetMap`): each is named with its file, and
    one that hides another of its name is a counted warning. Raises :class:`DataError` before
    scoring for rows that cannot be scored, :class:`JobFailed` after writing for failed calls,
    and :class:`AdvantageCheckError` if a constant prompt group got a non-zero advantage.
    """
    for found in maps:  # first: what the job scores with, whatever happens next
        console.print(f"dataset map {escape(found.describe())}", highlight=False)
    inputs = read_inputs(job, output_dir)
    outcome = score_inputs(job, inputs, console)
    summary = report(job, inputs, outcome, output_dir, maps, console)
    if not outcome.scored.complete:
        raise _failed(outcome.scored, inputs.rows)
    if outcome.post_error is not None:
        raise outcome.post_error
    return summary.objective.value if summary.objective.value is not None else float("nan")


def read_inputs(job: JobConfig, output_dir: Path) -> Inputs:
    """The job's rows, read whole, and a rewards file it can write (:class:`DataError` else)."""
    data = Path(job.data.path) if job.data.path is not None else example_data()
    rows = read_rows(data, job.data.limit, job.data.columns)
    out = (
        Path(job.output.path).expanduser()  # `~/out.jsonl`, not a folder named `~`
        if job.output.path is not None
        else output_dir / "rewards.jsonl"
    )
    writable(out, "output.path")
    column_missing(job.objective, rows)
    return Inputs(data, rows, out)


def score_inputs(job: JobConfig, inputs: Inputs, console: Console) -> Scoring:
    """Compile the router, check every row (nothing is scored when one cannot be), score them
    and post-process what was scored (a stage that fails keeps the rewards)."""
    rows = inputs.rows
    with compile_router(job.router()) as router:
        problems = (
            router.check(rows.rows)
            + column_problems(job.objective, rows.rows)
            + data_problems(
                router.config,
                [as_sample(row, i) for i, row in enumerate(rows.rows)],
                lambda i: f"line {rows.lines[i]}",
            )
        )
        if problems:
            located(rows, sorted(problems), "in rows that cannot be scored; nothing was scored")
        scored = score_rows(router, job, rows.rows, console)
        processed, post_error = None, None
        if scored.complete:
            try:
                processed = router.post_process(rows.rows, scored.results)
            except RewardRouterError as exc:  # a custom stage that fails: keep what was scored
                post_error = _post_process_failed(exc, rows)
        chain = router.post_processor if processed is not None else None
        # what grades each term (for `code`: the sandbox's walls in force)
        graders = {term.where: term.fn.name for r in router.routes.values() for term in r.terms}
    return Scoring(
        scored,
        processed,
        post_error,
        chain.estimator.kind if chain is not None and chain.estimator is not None else None,
        chain is not None and bool(chain.stages or chain.route_stages),
        graders,
    )


def report(
    job: JobConfig,
    inputs: Inputs,
    outcome: Scoring,
    output_dir: Path,
    maps: Sequence[DatasetMap],
    console: Console,
) -> JobSummary:
    """Write the rewards, ``summary.json`` and ``report.png``; print the table and the lines
    under it. :class:`AdvantageCheckError` when a constant group got a non-zero advantage."""
    rows, scored, processed = inputs.rows, outcome.scored, outcome.processed
    n = len(scored.results)
    none = [None] * n
    shaped = processed.shaped if processed else [r.reward for r in scored.results]
    advantages = processed.advantages if processed else none
    write_rows(
        inputs.out,
        map(
            output_row,
            rows.rows,
            scored.results,
            processed.shaped if processed else none,
            advantages,
        ),
    )
    stats = route_stats(rows.rows, scored.results, shaped)
    failed = set(scored.failures)
    warnings = count_warnings((i, r) for i, r in enumerate(scored.results) if i not in failed)
    summary = _summary(job, inputs, outcome, shaped, stats, warnings, maps)
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / "summary.json").write_text(summary.json_text())
    write_figure(
        output_dir / "report.png",
        {s.route: s.shaped for s in stats if s.shaped},
        _advantages(processed) if outcome.estimator is not None else None,
        "shaped reward" if outcome.shaping else "reward",
    )
    print_summary(stats, console)
    _print_lines(summary, scored, rows, warnings, console)
    check = processed.constant_groups if processed else None
    if check is not None:
        verdict = (
            "all exactly 0" if check.all_zero else f"max |advantage| {check.max_abs_advantage}"
        )
        console.print(
            f"advantage stage {outcome.estimator or '-'}: {check.groups} constant group(s), "
            f"their advantages {verdict}"
        )
        if not check.all_zero:
            raise AdvantageCheckError(
                f"{check.groups} prompt group(s) hold one reward value but got advantages up to "
                f"{check.max_abs_advantage}; expected exactly 0 — please report this with the data"
            )
    value = summary.objective.value
    console.print(f"objective {job.objective.name} = {'-' if value is None else f'{value:.4f}'}")
    console.print(
        f"scored {n} of {len(rows)} rows from {inputs.data}; wrote {inputs.out}, "
        f"{output_dir}/summary.json and {output_dir}/report.png (reward and advantage histograms)"
    )
    return summary


def _summary(
    job: JobConfig,
    inputs: Inputs,
    outcome: Scoring,
    shaped: Sequence[float | None],
    stats: Sequence[RouteStats],
    warnings: Sequence[ScoreWarning],
    maps: Sequence[DatasetMap],
) -> JobSummary:
    rows, scored, processed = inputs.rows, outcome.scored, outcome.processed
    check = processed.constant_groups if processed else None
    hint = label_hint(rows, scored.results)
    value = objective(job.objective, rows.rows, scored.results, shaped)
    return JobSummary(
        data=str(inputs.data),
        rows=len(rows),
        scored=len(scored.results),
        complete=scored.complete and outcome.post_error is None,
        post_process_error=str(outcome.post_error) if outcome.post_error is not None else None,
        objective=ObjectiveValue(name=job.objective.name, value=value),
        advantage=AdvantageCheck(
            stage=outcome.estimator,
            constant_groups=check.groups if check else None,
            max_abs_advantage_in_constant_groups=check.max_abs_advantage if check else None,
        ),
        routes=[RouteSummary.model_validate(s.as_dict()) for s in stats],
        graders=outcome.graders,
        dataset_maps=[DatasetMapEntry.model_validate(found.as_dict()) for found in maps],
        warnings=[_warning_entry(w, rows) for w in warnings]
        + [_map_warning(found) for found in maps if found.hidden],
        hints=[hint] if hint else [],
        failures=[_failure_entry(i, scored.results[i], rows) for i in scored.failures[:KEPT]],
    )


def _print_lines(
    summary: JobSummary,
    scored: Scored,
    rows: Rows,
    warnings: Sequence[ScoreWarning],
    console: Console,
) -> None:
    """The lines under the table: the code sandbox's walls, each warning with its lines (and
    what a failure was), the counts by code, a hint."""
    for where, grader in summary.graders.items():
        if grader.startswith("code local"):
            console.print(f"{escape(where)}: {escape(grader)}", highlight=False)
    for warning in warnings:
        lines = ", ".join(str(rows.lines[i]) for i in warning.samples)
        more = ", …" if warning.count > len(warning.samples) else ""
        at = f"line{'s' if warning.count > 1 else ''} {lines}{more}"
        cause = (
            scored.results[warning.samples[0]].error_message if warning.code == "failed" else None
        )
        if cause:  # what a failure was, not only that there was one
            at += f"; the first: {cause}" if warning.count > 1 else f": {cause}"
        console.print(f"[yellow]warning:[/] {escape(str(warning))} ({escape(at)})", highlight=False)
    hidden = [entry for entry in summary.warnings if entry.code == "hidden_dataset_map"]
    for entry in hidden:
        console.print(f"[yellow]warning:[/] {escape(entry.message)}", highlight=False)
    counted = Counter[str]()
    for entry in summary.warnings:
        counted[entry.code] += entry.count
    if counted:
        each = ", ".join(f"{code} {count}" for code, count in counted.items())
        console.print(f"warnings counted (summary.json lists them): {each}", highlight=False)
    for hint in summary.hints:
        console.print(f"[yellow]hint:[/] {escape(hint)}", highlight=False)


def label_hint(rows: Rows, results: Sequence[RewardResult]) -> str | None:
    """The likely cause when graders did not apply to rows without a label
    (:func:`~rewardrouter.checks.unlabeled`, the check the trainer hooks run) and
    no row of the file has a ``label`` (after ``data.columns``): the answers are in a column of
    another name, or not in the file."""
    if any("label" in row for row in rows.rows):
        return None
    scored = [as_sample(row, i) for i, row in enumerate(rows.rows[: len(results)])]
    if not unlabeled(scored, results):
        return None
    keys = _columns(rows)
    return (
        f"no row of {rows.path} has a `label` (columns: {', '.join(keys)}), and graders that "
        f"compare with one return None (not applicable) without it; if the answers are in "
        f"another column, map it: data.columns.label=<column>"
    )


def column_missing(config: ObjectiveConfig, rows: Rows) -> None:
    """Raise :class:`DataError` when the objective reads a hand-scored column no row has (a
    typo'd ``objective.column`` would otherwise make the objective silently unmeasurable)."""
    if not config.needs_column or any(config.column in row for row in rows.rows):
        return
    keys = _columns(rows)
    close = did_you_mean(config.column, keys)
    raise DataError(
        f"objective.column: objective {config.name} reads column {config.column!r}, which no "
        f"row of {rows.path} has; {close + ' ' if close else ''}columns: {', '.join(keys)}"
    )


def _columns(rows: Rows) -> list[str]:
    """Every column some row has, sorted."""
    return sorted({str(k) for row in rows.rows for k in row})


def _advantages(processed: PostProcessResult | None) -> list[float]:
    if processed is None:
        return []
    return [a for a, r in zip(processed.advantages, processed.raw, strict=True) if r is not None]


def _warning_entry(warning: ScoreWarning, rows: Rows) -> WarningEntry:
    return WarningEntry(
        code=warning.code,
        where=warning.where,
        count=warning.count,
        status=warning.status,
        lines=[rows.lines[i] for i in warning.samples],
        message=str(warning),
    )


def _map_warning(found: DatasetMap) -> WarningEntry:
    """A dataset map that hides another of its name, as ``summary.json`` lists warnings."""
    return WarningEntry(
        code="hidden_dataset_map",
        where=f"datasets={found.name}",
        count=len(found.hidden),
        lines=[],
        message=found.warning() or "",
    )


def _failure_entry(i: int, result: RewardResult, rows: Rows) -> FailureEntry:
    return FailureEntry(
        line=rows.lines[i], route=result.route, status=result.status, error=result.error_message
    )


def _post_process_failed(exc: RewardRouterError, rows: Rows) -> JobFailed:
    index = getattr(exc, "index", None)
    where = f"{rows.at(index)}: " if isinstance(index, int) and 0 <= index < len(rows) else ""
    return JobFailed(
        f"post-processing failed: {where}{exc}; every scored row is written with its reward, "
        f"without shaped rewards and advantages"
    )


def _failed(scored: Scored, rows: Rows) -> JobFailed:
    left = len(rows) - len(scored.results)
    tail = f"; {left} row(s) after it were not scored" if left else ""
    if scored.interrupted:
        return JobFailed(
            f"interrupted: the {len(scored.results)} row(s) scored are written{tail}", 130
        )
    listed = "\n".join(
        f"  - {rows.at(i)}: route {scored.results[i].route!r}: {scored.results[i].status}: "
        f"{scored.results[i].error_message}"
        for i in scored.failures[:SHOWN]
    )
    more = f"\n  … and {len(scored.failures) - SHOWN} more" if len(scored.failures) > SHOWN else ""
    return JobFailed(
        f"{len(scored.failures)} reward call(s) failed under `on_error: raise`; the job stopped "
        f"after their batch{tail}. Every scored row is written (status and error per row):\n"
        f"{listed}{more}"
    )


class AdvantageCheckError(RewardRouterError):
    """Constant prompt groups got non-zero advantages: a numerical bug, never a user mistake."""
