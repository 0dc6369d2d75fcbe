"""``rewardrouter check``: score every route's hand-scored ``examples`` and compare.

The way to test a custom reward on ten hand-scored answers before a long run::

    rewardrouter check router=mixed
    rewardrouter check --config my_router.yaml

Exit status: 0 when every example matches, 1 on any mismatch or when no route has examples.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rewardrouter.cli.command import command_parser
from rewardrouter.cli.compose import add_config_arguments, named, router_config, source_name
from rewardrouter.config.models import RouteExample, RouterConfig
from rewardrouter.errors import RewardError
from rewardrouter.router import compile_router
from rewardrouter.sample import Sample


@dataclass(frozen=True)
class CheckedExample:
    route: str
    number: int
    example: RouteExample
    got: float | None
    error: str | None

    @property
    def passed(self) -> bool:
        want = self.example.reward
        if self.error is not None or (want is None) != (self.got is None):
            return False
        return want is None or abs(want - self.got) <= self.example.tolerance  # type: ignore[operator]


def check_examples(config: RouterConfig) -> list[CheckedExample]:
    """Score each example through its own route (precedence bypassed); one result each."""
    checked: list[CheckedExample] = []
    with compile_router(config) as router:
        for name, route in config.routes.items():
            for number, example in enumerate(route.examples):
                sample = Sample(
                    prompt=example.prompt,
                    response=example.response,
                    label=example.label,
                    metadata=dict(example.metadata),
                )
                try:
                    [result] = router.score_sync([sample], route=name)
                except RewardError as exc:
                    checked.append(CheckedExample(name, number, example, None, str(exc)))
                    continue
                checked.append(
                    CheckedExample(name, number, example, result.reward, result.error_message)
                )
    return checked


def _short(text: object, width: int = 40) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def report(checked: list[CheckedExample], console: Console) -> None:
    table = Table(title="hand-scored examples")
    for column in ("route", "#", "response", "label", "expected", "got", ""):
        table.add_column(column)
    for c in checked:
        got = c.error if c.error else ("None" if c.got is None else f"{c.got:g}")
        want = "None" if c.example.reward is None else f"{c.example.reward:g}"
        verdict = "[green]ok[/]" if c.passed else "[bold red]MISMATCH[/]"
        cells = (
            c.route,
            str(c.number),
            _short(c.example.response),
            _short(c.example.label, 16),
            want,
            _short(got, 60),
        )
        table.add_row(*map(escape, cells), verdict)
    console.print(table)


def main(argv: list[str]) -> int:
    parser = command_parser("check", __doc__.splitlines()[0])
    add_config_arguments(parser)
    opts = parser.parse_intermixed_args(argv)
    console = Console()
    config = router_config(opts.config, opts.overrides)
    with named(source_name(opts.config)):
        checked = check_examples(config)
    if not checked:
        console.print("no route declares `examples:`; nothing was checked (add hand-scored cases)")
        return 1
    report(checked, console)
    failed = sum(not c.passed for c in checked)
    console.print(f"{len(checked) - failed} passed, {failed} failed")
    return 1 if failed else 0
