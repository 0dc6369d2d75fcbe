"""Throughput of every built-in grader, and of ``math`` against plain math-verify, per answer mix.

Generates GRPO groups of 8 responses per problem (``benchmarks/answer_mix.py``: a chain of
thought of about 1,000 characters ending in a boxed answer; about half right, in the label's or
another spelling, the wrong ones of the same shape), grades them with each built-in, and prints
samples/s. For ``math`` it also times plain math-verify, ``verify(parse(label),
parse(response))`` on every sample, on three mixes:

- ``numeric``: integers, fractions, decimals, radicals, multiples of pi;
- ``realistic``: a third numeric, a third structured (ordered pairs, sets, intervals,
  inequalities, polynomials, matrices), a third text, units and percentages;

and prints the share of samples ``math`` decides without math-verify (its exact fast path),
and how often each side's verdict matches how the answer was generated.

    python benchmarks/graders.py            # 2,000 responses per mix, about a minute on 2 cores
    python benchmarks/graders.py --samples 500 --seed 3 --repeat 1

Every rate is the best of ``--repeat`` runs, each with cold caches (the graders' and sympy's):
what a worker process that has graded nothing yet does with one batch.
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import answer_mix

from rewardrouter.rewards import BUILTINS, known_kinds
from rewardrouter.rewards.boxes import final_answer
from rewardrouter.rewards.math.equivalence import clear_caches, quick_verdict
from rewardrouter.rewards.registry import BoxedAnswer, last_boxed

RESPONSES_PER_PROBLEM = 8  # one GRPO group per problem


@dataclass(frozen=True)
class Case:
    """One generated response and its label; ``correct`` is how it was generated."""

    thought: str
    ending: str
    final: str
    label: str
    correct: bool

    @property
    def response(self) -> str:
        """The chain of thought, then the boxed final answer."""
        return f"{self.thought}\n\n{self.ending.format(answer=self.final)}"

    @property
    def thinking_response(self) -> str:
        """The same inside ``<think>`` tags (what ``deepscaler`` and ``think_format`` expect)."""
        return f"<think>\n{self.thought}\n</think>\n\n{self.ending.format(answer=self.final)}"

    @property
    def dapo_response(self) -> str:
        """The same ending on an ``Answer:`` line (what ``dapo`` reads)."""
        return f"{self.thought}\n\nAnswer: {self.final}"


def generate(count: int, seed: int = 0, mix: str = "numeric") -> list[Case]:
    """``count`` responses in groups of 8 per problem, about half with a correct final answer."""
    rng = random.Random(seed)
    cases: list[Case] = []
    while len(cases) < count:
        problem = answer_mix.problem(rng, mix)
        for final, correct in answer_mix.group_answers(rng, problem, RESPONSES_PER_PROBLEM):
            thought = answer_mix.chain_of_thought(rng)
            cases.append(
                Case(thought, rng.choice(answer_mix.ENDINGS), final, problem.label, correct)
            )
    return cases[:count]


@dataclass(frozen=True)
class _Sample:
    response: str
    label: Any
    metadata: dict[str, Any]


def _samples_for(kind: str, cases: list[Case]) -> list[_Sample]:
    """The responses in the shape each grader reads (thinking tags, ``Answer:`` lines)."""
    if kind in ("gpqa", "multiple_choice"):
        return [_Sample(c.response, "B", {"choices": ["1", "2", "3", "4"]}) for c in cases]
    if kind in ("deepscaler", "think_format"):
        return [_Sample(c.thinking_response, c.label, {}) for c in cases]
    if kind == "dapo":
        return [_Sample(c.dapo_response, c.label, {}) for c in cases]
    return [_Sample(c.response, c.label, {}) for c in cases]


def _best_rate(run: Callable[[], object], count: int, repeat: int) -> float:
    """Samples/s of the fastest of ``repeat`` runs, every one with cold caches (ours and sympy's)."""
    from sympy.core.cache import clear_cache

    best = 0.0
    for _ in range(repeat):
        clear_caches()
        clear_cache()
        start = time.perf_counter()
        run()
        best = max(best, count / (time.perf_counter() - start))
    return best


def _grader_rate(kind: str, cases: list[Case], repeat: int) -> float:
    """Samples/s of built-in ``kind`` (``boxed_`` ones get the box's content, as the router does)."""
    name = kind if kind in BUILTINS else kind.removeprefix("boxed_")
    grade = BUILTINS[name].grade
    calls = [
        (BoxedAnswer(last_boxed(s.response) or "") if name != kind else s.response, s)
        for s in _samples_for(name, cases)
    ]

    def run() -> None:
        for response, sample in calls:
            grade(response, sample.label, sample.metadata)

    return _best_rate(run, len(calls), repeat)


def plain_math_verify(cases: list[Case]) -> list[bool]:
    """math-verify as its README shows it, label and whole response parsed for every sample."""
    from math_verify import parse, verify

    return [bool(verify(parse(f"${c.label}$"), parse(c.response))) for c in cases]


def _math_row(mix: str, args: argparse.Namespace) -> dict[str, Any]:
    """``math`` against plain math-verify on one mix: rates, fast-path share, verdicts."""
    cases = generate(args.samples, args.seed, mix)
    grade = BUILTINS["math"].grade
    ours = [grade(c.response, c.label, {}) == 1.0 for c in cases]
    reference = plain_math_verify(cases)
    math_rate = _best_rate(
        lambda: [grade(c.response, c.label, {}) for c in cases], len(cases), args.repeat
    )
    plain_rate = _best_rate(lambda: plain_math_verify(cases), len(cases), args.repeat)
    decided = sum(quick_verdict(final_answer(c.response) or "", c.label) is not None for c in cases)
    differing = [i for i, (a, b) in enumerate(zip(ours, reference, strict=True)) if a != b]
    return {
        "mix": mix,
        "cases": cases,
        "math": math_rate,
        "plain": plain_rate,
        "fast": decided / len(cases),
        "ours_right": sum(o == c.correct for o, c in zip(ours, cases, strict=True)),
        "plain_right": sum(r == c.correct for r, c in zip(reference, cases, strict=True)),
        "differing": [(cases[i], ours[i], reference[i]) for i in differing],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=2, help="best of this many timed runs")
    args = parser.parse_args(argv)
    logging.getLogger("math_verify").setLevel(logging.ERROR)  # the "timeouts are off" notice

    cases = generate(args.samples, args.seed, "realistic")
    plain_math_verify(cases[:20])  # import and warm sympy before any timing
    print(f"{len(cases)} responses of the realistic mix, "
          f"{sum(c.correct for c in cases)} correct by construction\n")  # fmt: skip
    print(f"{'grader':<24}{'samples/s':>12}")
    for kind in sorted(known_kinds()):
        print(f"{kind:<24}{_grader_rate(kind, cases, args.repeat):>12,.0f}", flush=True)

    rows = [_math_row(mix, args) for mix in ("numeric", "structured", "text", "realistic")]
    print(f"\n{'mix':<12}{'math/s':>10}{'plain m-v/s':>13}{'speed-up':>10}{'fast path':>11}"
          f"{'math right':>12}{'m-v right':>11}")  # fmt: skip
    for row in rows:
        n = len(row["cases"])
        print(
            f"{row['mix']:<12}{row['math']:>10,.0f}{row['plain']:>13,.0f}"
            f"{row['math'] / row['plain']:>9.1f}x{row['fast']:>11.1%}"
            f"{row['ours_right'] / n:>12.1%}{row['plain_right'] / n:>11.1%}"
        )
    print("\nfast path: samples math decides without math-verify; right: verdicts matching how the"
          " answer was generated (our generator: a check on the benchmark, not a proof)")  # fmt: skip
    for row in rows:
        shown = row["differing"][:3]
        if shown:
            print(
                f"{row['mix']}: {len(row['differing'])} verdicts differ from plain math-verify, e.g."
            )
        for case, ours, plain in shown:
            print(f"  label {case.label!r}, answer {case.final!r}: math {ours}, math-verify {plain}"
                  f" (generated {'right' if case.correct else 'wrong'})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
