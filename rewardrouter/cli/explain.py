"""``rewardrouter explain``: how one sample is scored, step by step.

Shows which precedence level chose the route and why, each term's function, raw return, value
and weight, the reward, and (given the sample's group from a data file) the shaping stages and
the advantage::

    rewardrouter explain router=mixed --data examples/data/mixed.jsonl --line 3
    rewardrouter explain router=mixed --response '\\boxed{72}' --label 72 --metadata '{"dataset": "gsm8k"}'
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rewardrouter.cli.command import command_parser
from rewardrouter.cli.compose import (
    add_config_arguments,
    composed_job,
    named,
    source_name,
)
from rewardrouter.cli.jsonl import read_rows
from rewardrouter.config.stages import PostProcessStage
from rewardrouter.errors import RewardRouterError
from rewardrouter.router import Router, compile_router
from rewardrouter.sample import as_sample


class ExplainError(RewardRouterError):
    """The sample to explain could not be read from the arguments."""


def _sample_rows(
    opts: argparse.Namespace, columns: Mapping[Any, str]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The row to explain and the rows of its prompt group (just itself without a data file);
    ``columns`` is the job's ``data.columns``, read as the job reads it."""
    given = [
        f"--{f}"
        for f in ("response", "label", "prompt", "metadata")
        if getattr(opts, f) is not None
    ]
    if opts.data is not None:
        if given:
            raise ExplainError(
                f"{', '.join(given)} and --data both give the sample; with --data FILE the sample "
                f"is the file's row on --line: drop {', '.join(given)}, or drop --data"
            )
        line = 1 if opts.line is None else opts.line
        rows = read_rows(opts.data, columns=columns, setting="--data")
        if line not in rows.lines:
            raise ExplainError(
                f"--line {line}: {opts.data} has no row on line {line} (rows are on "
                f"lines {rows.lines[0]} to {rows.lines[-1]}; blank lines hold none)"
            )
        row = rows.rows[rows.lines.index(line)]
        group = row.get("group_index")
        members = [r for r in rows.rows if group is not None and r.get("group_index") == group]
        if not members:
            row = _alone(row)
            members = [row]
        return row, members
    if opts.line is not None:
        raise ExplainError(
            f"--line {opts.line} picks a row of --data FILE, and no --data was given: add "
            f"--data FILE, or drop --line"
        )
    if opts.response is None:
        raise ExplainError("give a sample: --data FILE --line N, or --response TEXT [--label ...]")
    example = """e.g. --metadata '{"dataset": "gsm8k"}'"""
    try:
        metadata = json.loads(opts.metadata) if opts.metadata is not None else {}
    except json.JSONDecodeError as exc:
        raise ExplainError(
            f"--metadata: {opts.metadata!r} is not JSON ({exc.msg}); pass a JSON object, {example}"
        ) from None
    if not isinstance(metadata, dict):
        raise ExplainError(
            f"--metadata: found a JSON {type(metadata).__name__}; pass a JSON object, {example}"
        )
    row = {
        "prompt": opts.prompt if opts.prompt is not None else "",
        "response": opts.response,
        "label": opts.label,
        "metadata": metadata,
    }
    row = _alone(row)
    return row, [row]


def _alone(row: dict[str, Any]) -> dict[str, Any]:
    """A row explained without its prompt group: a group of its own."""
    return row if row.get("group_index") is not None else {**row, "group_index": 0}


def explain(
    router: Router, row: dict[str, Any], group: list[dict[str, Any]], console: Console
) -> None:
    """Print the explanation of ``row`` (scored alone, and with its ``group`` for advantages)."""
    sample = as_sample(row)
    decision = router.decide(sample)
    console.print(
        "[bold]route[/]",
        escape(f"{decision.route.name}  (precedence level: {decision.level}; {decision.reason})"),
    )
    [result] = router.score_sync([sample])
    if result.route is None:  # aborted, or it carries a reward already: no term ran
        why = f": {result.error_message}" if result.error_message else ""
        console.print("[bold]reward[/]", escape(f"{result.reward}  status {result.status}{why}"))
        return
    table = Table(title="terms")
    for column in ("term", "function", "mode", "kwargs", "raw return", "value", "weight"):
        table.add_column(column)
    several = len(decision.route.terms) > 1 and isinstance(result.raw, dict)
    raws = result.raw if several else {decision.route.terms[0].name: result.raw}
    for term in decision.route.terms:
        cells = (
            term.name,
            term.fn.name,
            term.fn.mode,
            json.dumps(dict(term.kwargs)) if term.kwargs else "",
            repr(raws.get(term.name)),
            repr(result.terms.get(term.name)),
            f"{term.weight:g}",
        )
        table.add_row(*map(escape, cells))
    console.print(table)
    error = f"  error: {result.error_message}" if result.error_message else ""
    console.print("[bold]reward[/]", escape(f"{result.reward}  status {result.status}{error}"))
    if result.reward is not None:
        _explain_post_process(router, row, group, console)


def _explain_post_process(
    router: Router, row: dict[str, Any], group: list[dict[str, Any]], console: Console
) -> None:
    """Each shaping stage's output for ``row``, then its advantage within ``group``."""
    from rewardrouter.shape.processor import PostProcessor  # torch, for this step only

    position = next(i for i, member in enumerate(group) if member is row)
    results = router.score_sync(group)
    route = results[position].route
    route_stages = list(router.routes[route].shaping) if route in router.routes else []
    post = list(router.config.post_process)
    estimator = router.post_processor.estimator
    shaping = post[:-1] if estimator is not None else post
    table = Table(title=f"post-processing (group of {len(group)})")
    for column in ("stage", "kind", "output"):
        table.add_column(column)
    steps: list[tuple[str, PostProcessStage, int, int]] = [
        (f"routes.{route}.shaping[{i}]", st, i + 1, 0) for i, st in enumerate(route_stages)
    ]
    steps += [(f"post_process[{i}]", st, len(route_stages), i + 1) for i, st in enumerate(shaping)]
    for where, stage, n_route, n_post in steps:
        partial = PostProcessor.compile(
            {route: route_stages[:n_route]} if route else {}, post[:n_post]
        )
        value = router.post_process(group, results, partial).shaped[position]
        table.add_row(escape(where), stage.kind, repr(value))
    processed = router.post_process(group, results)
    label = f"post_process[{len(post) - 1}]" if estimator is not None else "(no advantage stage)"
    table.add_row(
        label, estimator.kind if estimator else "none", repr(processed.advantages[position])
    )
    console.print(table)
    if len(group) == 1:
        console.print(
            "advantage computed for the sample alone; pass --data with its group for more"
        )


def main(argv: list[str]) -> int:
    parser = command_parser("explain", __doc__.splitlines()[0])
    add_config_arguments(parser)
    parser.add_argument("--data", type=Path, help="a JSONL file holding the sample")
    parser.add_argument("--line", type=int, default=None, help="1-based row of --data (default 1)")
    parser.add_argument("--response", help="the response text (instead of --data)")
    parser.add_argument("--label", default=None)
    parser.add_argument("--prompt", default=None)
    parser.add_argument("--metadata", default=None, help="a JSON object (default {})")
    opts = parser.parse_intermixed_args(argv)
    job, maps = composed_job(opts.overrides, opts.config)  # warns for a hidden map, on stderr
    row, group = _sample_rows(opts, job.data.columns)
    console = Console()
    for found in maps:
        console.print("[bold]dataset map[/]", escape(found.describe()))
    with named(source_name(opts.config)), compile_router(job.router()) as router:
        explain(router, row, group, console)
    return 0
