"""Other projects' judge verdicts and parser tests through ``judge``'s parsers, beside the
peers' own parsers.

Reads, at run time (nothing of theirs is copied into this project):

- FastChat's MT-Bench judge, ``fastchat/llm_judge/common.py`` of a FastChat checkout: its
  patterns for a single-answer verdict (``one_score_pattern``, ``one_score_pattern_backup``),
  compiled from the checkout's source and applied as its ``run_judge_single`` applies them (the
  first ``[[N]]``, else the first ``[N]``, read by ``ast.literal_eval``; none: -1), and its
  judge prompts (``data/judge_prompts.jsonl``), the rubric each judgment was asked with;
- public MT-Bench runs: GPT-4's single-answer judgments as FastChat wrote them
  (``model_judgment/gpt-4_single*.jsonl``), each with the score FastChat recorded then;
- Prometheus' parser (``libs/prometheus-eval/prometheus_eval/parser.py``, imported from the
  checkout) and its tests' cases (``libs/prometheus-eval/tests/test_parser.py``: the
  ``parametrize`` table of ``test_parse_output``, read with ``ast``).

Each judgment is read by ``parser: mt_bench`` on MT-Bench's scale (1-10) with the rubric's
placeholders, each Prometheus case by ``parser: prometheus`` on Prometheus' (1-5); a score off
the scale is refused, as the judge term refuses it. Beside each: the peer's verdict. A *false
positive* is a score of ours that the peer's verdict is not (the peer reads another score, or
none); a *miss*, a score the peer reads that ours refuses.

    python benchmarks/judge_suites.py --fastchat /tmp/FastChat \\
        --runs /tmp/MTBench /tmp/FastChat-run /tmp/fastchat-eval --prometheus /tmp/prometheus-eval
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import re
import sys
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewardrouter.rewards.judge.parse import (
    Parser,
    UnreadableScore,
    read_score,
    rubric_placeholders,
)

#: FastChat's judge: its code and its judge prompts, in a checkout.
FASTCHAT_JUDGE = "fastchat/llm_judge/common.py"
FASTCHAT_PROMPTS = "fastchat/llm_judge/data/judge_prompts.jsonl"
#: Where a FastChat run keeps its judgments.
JUDGMENTS = "fastchat/llm_judge/data/*/model_judgment/gpt-4_single*.jsonl"
PROMETHEUS_PARSER = "libs/prometheus-eval/prometheus_eval/parser.py"
PROMETHEUS_TESTS = "libs/prometheus-eval/tests/test_parser.py"


@dataclass(frozen=True)
class Verdict:
    """One reply, the peer's score of it and ours (None: no score read)."""

    source: str
    reply: str
    peer: float | None
    ours: float | None
    why: str = ""  # why ours read none


@dataclass
class Tally:
    """How our verdicts compare with the peer's over a suite."""

    name: str
    cases: int = 0
    peer_reads: int = 0
    ours_reads: int = 0
    agreements: int = 0  # the same score, or both none
    false_positives: list[Verdict] = field(default_factory=list)
    misses: list[Verdict] = field(default_factory=list)

    def add(self, verdict: Verdict) -> None:
        self.cases += 1
        self.peer_reads += verdict.peer is not None
        self.ours_reads += verdict.ours is not None
        if verdict.ours == verdict.peer:
            self.agreements += 1
        elif verdict.ours is not None:
            self.false_positives.append(verdict)
        else:
            self.misses.append(verdict)

    def row(self) -> str:
        return (
            f"{self.name:<44}{self.cases:>7}{self.peer_reads:>11}{self.ours_reads:>11}"
            f"{self.agreements:>12}{len(self.false_positives):>8}{len(self.misses):>8}"
        )


HEADER = (
    f"{'suite':<44}{'cases':>7}{'peer reads':>11}{'ours reads':>11}{'agreements':>12}"
    f"{'false+':>8}{'misses':>8}"
)


def ours(reply: str, parser: Parser, bottom: float, top: float, **kwargs: Any) -> Verdict:
    """Our verdict on ``reply`` (the peer's left None), refusing a score off the scale as the
    judge term does."""
    try:
        score: float | None = read_score(reply, parser, bottom=bottom, top=top, **kwargs)
    except UnreadableScore as exc:
        return Verdict("", reply, None, None, str(exc))
    if score is not None and not bottom <= score <= top:
        return Verdict("", reply, None, None, f"{score:g} is off the scale {bottom:g}-{top:g}")
    return Verdict("", reply, None, score)


# --- MT-Bench: FastChat's judge and public runs ---------------------------------------------


def fastchat_reader(checkout: Path) -> Callable[[str], float | None]:
    """FastChat's reading of a single-answer judgment: its two patterns, compiled from the
    checkout's ``common.py``, applied as ``run_judge_single`` applies them."""
    patterns: dict[str, re.Pattern[str]] = {}
    with warnings.catch_warnings():  # its patterns are plain strings that escape "["
        warnings.simplefilter("ignore", (DeprecationWarning, SyntaxWarning))
        tree = ast.parse((checkout / FASTCHAT_JUDGE).read_text())
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in ("one_score_pattern", "one_score_pattern_backup")
            and isinstance(node.value, ast.Call)
        ):
            patterns[node.targets[0].id] = re.compile(ast.literal_eval(node.value.args[0]))
    if len(patterns) != 2:
        raise SystemExit(f"{checkout / FASTCHAT_JUDGE}: FastChat's two score patterns not found")
    first, backup = patterns["one_score_pattern"], patterns["one_score_pattern_backup"]

    def read(judgment: str) -> float | None:
        match = re.search(first, judgment)
        if not match:
            match = re.search(backup, judgment)
        return float(ast.literal_eval(match.groups()[0])) if match else None

    return read


def fastchat_rubrics(checkout: Path) -> dict[str, str]:
    """FastChat's judge prompts by name: the system prompt and the template, as one rubric."""
    rubrics = {}
    for line in (checkout / FASTCHAT_PROMPTS).read_text().splitlines():
        prompt = json.loads(line)
        rubrics[prompt["name"]] = prompt["system_prompt"] + "\n" + prompt["prompt_template"]
    return rubrics


@dataclass(frozen=True)
class Judgment:
    source: str  # repository file:line
    judge: str  # the judge prompt's name
    text: str
    recorded: float | None  # the score FastChat recorded (-1: none)


def judgments(runs: Iterable[Path]) -> list[Judgment]:
    """Every single-answer judgment of the runs' judgment files, each distinct text once."""
    found: dict[str, Judgment] = {}
    for run in runs:
        for path in sorted(run.glob(JUDGMENTS)):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                row = json.loads(line)
                score = row["score"]
                judgment = Judgment(
                    f"{run.name}/{path.relative_to(run)}:{number}",
                    row["judge"][1],
                    row["judgment"],
                    None if score == -1 else float(score),
                )
                found.setdefault(judgment.text, judgment)
    return list(found.values())


def mt_bench(fastchat: Path, runs: Iterable[Path]) -> tuple[Tally, list[Judgment]]:
    """``mt_bench`` beside FastChat's reading on every distinct judgment of the runs; and the
    judgments whose recorded score is not what FastChat's reading of its text gives."""
    read = fastchat_reader(fastchat)
    rubrics = fastchat_rubrics(fastchat)
    placeholders = {name: rubric_placeholders(r, "mt_bench") for name, r in rubrics.items()}
    tally = Tally("MT-Bench GPT-4 judgments: mt_bench / FastChat")
    unlike_record = []
    for judgment in judgments(runs):
        peer = read(judgment.text)
        if peer != judgment.recorded:
            unlike_record.append(judgment)
        verdict = ours(
            judgment.text, "mt_bench", 1, 10, placeholders=placeholders.get(judgment.judge, ())
        )
        tally.add(Verdict(judgment.source, judgment.text, peer, verdict.ours, verdict.why))
    return tally, unlike_record


# --- Prometheus: its parser and its parser's tests ------------------------------------------


def prometheus_cases(checkout: Path) -> list[tuple[str, str, Any]]:
    """``(output, mode, expected)`` of the ``parametrize`` table of ``test_parse_output``."""
    tree = ast.parse((checkout / PROMETHEUS_TESTS).read_text())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "test_parse_output":
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and len(decorator.args) == 2:
                    cases: list[tuple[str, str, Any]] = ast.literal_eval(decorator.args[1])
                    return cases
    raise SystemExit(f"{checkout / PROMETHEUS_TESTS}: no parametrize table of test_parse_output")


def prometheus_parser(checkout: Path) -> Callable[[str, str], Any]:
    """Prometheus' ``parse_output(output, mode)`` result, imported from the checkout."""
    spec = importlib.util.spec_from_file_location(
        "prometheus_eval_parser", checkout / PROMETHEUS_PARSER
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return lambda output, mode: module.parse_output(output, mode)[1]


def prometheus(checkout: Path) -> tuple[Tally, list[tuple[str, str, Any, Any]]]:
    """``prometheus`` beside Prometheus' parser on its tests' cases (a pairwise case's verdict,
    ``A`` or ``B``, is no score); and the cases where Prometheus' parser is not what its
    test expects."""
    parse = prometheus_parser(checkout)
    tally = Tally("Prometheus parser tests: prometheus / theirs")
    failing = []
    for number, (output, mode, expected) in enumerate(prometheus_cases(checkout)):
        theirs = parse(output, mode)
        if theirs != expected:
            failing.append((output, mode, expected, theirs))
        peer = float(theirs) if isinstance(theirs, int) else None
        verdict = ours(output, "prometheus", 1, 5)
        source = f"test_parse_output[{number}] ({mode})"
        tally.add(Verdict(source, output, peer, verdict.ours, verdict.why))
    return tally, failing


def _show(tally: Tally, limit: int) -> None:
    for kind, verdicts in (("false positive", tally.false_positives), ("miss", tally.misses)):
        for verdict in verdicts[:limit]:
            print(f"  {kind}: {verdict.source}: peer {verdict.peer}, ours {verdict.ours} "
                  f"({verdict.why[:90]}); reply ends {verdict.reply[-90:]!r}")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fastchat", type=Path, help="a FastChat checkout (lm-sys/FastChat)")
    parser.add_argument("--runs", type=Path, nargs="*", default=[], help="FastChat run checkouts")
    parser.add_argument("--prometheus", type=Path, help="a prometheus-eval checkout")
    parser.add_argument("--show", type=int, default=20, help="differences to list per suite")
    args = parser.parse_args(argv)
    tallies = []
    if args.fastchat and args.runs:
        tally, unlike = mt_bench(args.fastchat.resolve(), [r.resolve() for r in args.runs])
        tallies.append(tally)
        print(f"MT-Bench: {tally.cases} distinct judgments; FastChat's reading differs from the "
              f"score it recorded on {len(unlike)}")  # fmt: skip
    if args.prometheus:
        tally, failing = prometheus(args.prometheus.resolve())
        tallies.append(tally)
        print(f"Prometheus: {tally.cases} cases; its parser fails its own test on {len(failing)}")
    print(HEADER)
    for tally in tallies:
        print(tally.row())
        _show(tally, args.show)
    return 1 if any(t.false_positives for t in tallies) else 0


if __name__ == "__main__":
    sys.exit(main())
