"""Throughput of every built-in grader, and of ``math`` against plain math-verify.

Generates unique, realistic math responses (a chain of thought of about 1,000 characters ending
in a boxed answer: integers, fractions, decimals, radicals, expressions; half of them wrong, the
right ones partly in another form than the label: ``0.75`` for ``\\frac{3}{4}``, ``\\sqrt{12}`` for
``2\\sqrt{3}``, ``1{,}000`` for ``1000``), grades them with each built-in, and prints samples/s.
For ``math`` it also times plain math-verify, ``verify(parse(label), parse(response))`` on every
sample, and counts the samples where the two verdicts differ (the contract: none).

    python benchmarks/graders.py            # 2,000 responses, under a minute on two cores
    python benchmarks/graders.py --samples 500 --seed 3 --repeat 1

Every rate is the best of ``--repeat`` runs, each with cold caches (the graders' and sympy's).
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from rewardrouter.rewards import BUILTINS, known_kinds
from rewardrouter.rewards.equivalence import clean_answer, clear_caches, quick_verdict
from rewardrouter.rewards.registry import BoxedAnswer, last_boxed

RESPONSES_PER_PROBLEM = 8  # one GRPO group per problem


@dataclass(frozen=True)
class Answer:
    """A problem's label, equivalent spellings of it, and plausible wrong answers."""

    label: str
    same: tuple[str, ...]
    wrong: tuple[str, ...]


def _frac(value: Fraction) -> str:
    sign = "-" if value < 0 else ""
    return f"{sign}\\frac{{{abs(value.numerator)}}}{{{value.denominator}}}"


def _integer(rng: random.Random) -> Answer:
    n = rng.choice([rng.randint(-60, 400), rng.randint(1000, 99999)])
    same = [f"{n:,}".replace(",", "{,}"), f"{n:,}"] if abs(n) >= 1000 else [f"{n}.0"]
    # forms only math-verify reads: an equation, a unit
    same += [f"x = {n}", f"{n} \\text{{ cm}}"]
    return Answer(str(n), tuple(same), (str(n + rng.randint(1, 9)), str(-n or 1), str(2 * n + 1)))


def _fraction(rng: random.Random) -> Answer:
    value = Fraction(rng.randint(1, 40), rng.choice([2, 3, 4, 5, 6, 7, 8, 9, 12]))
    if value.denominator == 1:
        value += Fraction(1, 3)
    same = [_frac(value).replace("\\frac", "\\dfrac"), f"{value.numerator}/{value.denominator}"]
    if value.denominator in (2, 4, 5, 8):
        same.append(str(float(value)))
    wrong = (_frac(value + 1), _frac(1 / value), str(round(float(value), 1) + 0.1))
    return Answer(_frac(value), tuple(same), wrong)


def _decimal(rng: random.Random) -> Answer:
    cents = rng.randint(1, 99999)
    value = Fraction(cents, 100)
    text = f"{cents / 100:.2f}"
    return Answer(
        text, (text + "0", _frac(value)), (f"{cents / 100 + 0.01:.2f}", f"{cents / 10:.1f}")
    )


def _radical(rng: random.Random) -> Answer:
    a, b = rng.randint(2, 9), rng.choice([2, 3, 5, 6, 7, 10, 11, 13])
    if rng.random() < 0.5:
        return Answer(
            f"{a}\\sqrt{{{b}}}", (f"\\sqrt{{{a * a * b}}}", f"{a} \\sqrt{{{b}}}"),
            (f"{a + 1}\\sqrt{{{b}}}", f"{a}\\sqrt{{{b + 1}}}", f"\\sqrt{{{a * b}}}"),
        )  # fmt: skip
    return Answer(
        f"\\frac{{\\sqrt{{{b}}}}}{{{a}}}", (f"\\dfrac{{\\sqrt{{{b}}}}}{{{a}}}",),
        (f"\\frac{{\\sqrt{{{b}}}}}{{{a + 1}}}", f"\\frac{{{a}}}{{\\sqrt{{{b}}}}}"),
    )  # fmt: skip


def _expression(rng: random.Random) -> Answer:
    p, q = rng.randint(2, 9), rng.randint(1, 9)
    forms = [
        (f"{p}x+{q}", (f"{q}+{p}x", f"{p}x + {q}"), (f"{p}x-{q}", f"{q}x+{p}")),
        (f"x^2-{2 * q}x+{q * q}", (f"(x-{q})^2",), (f"(x+{q})^2", f"x^2-{q}x+{q * q}")),
        (f"{p}\\pi", (f"{p} \\pi",), (f"{p + 1}\\pi", f"\\frac{{{p}}}{{\\pi}}")),
        (
            f"\\frac{{x+{q}}}{{{p}}}",
            (f"\\frac{{1}}{{{p}}}x+\\frac{{{q}}}{{{p}}}",),
            (f"\\frac{{x}}{{{p}}}",),
        ),
    ]
    label, same, wrong = rng.choice(forms)
    return Answer(label, same, wrong)


_KINDS: tuple[Callable[[random.Random], Answer], ...] = (
    _integer, _fraction, _decimal, _radical, _expression,
)  # fmt: skip

_STEPS = (
    "First, we rewrite the condition as an equation in terms of the unknown quantity.",
    "Let $n = {a}$ denote the number of terms, so the sum is $\\frac{{n(n+1)}}{{2}} = {b}$.",
    "Substituting $x = {a}$ gives ${a}^2 - {b} = {c}$, which is consistent with the constraint.",
    "By the triangle inequality, the third side must be less than ${a} + {b} = {c}$.",
    "We factor the quadratic: $x^2 - {c}x + {b} = (x - {a})(x - {d})$.",
    "Checking the case $k = {a}$ separately, we find no additional solutions.",
    "The area of the rectangle is ${a} \\times {b} = {c}$ square units.",
    "Since ${a}$ and ${b}$ are coprime, the fraction is already in lowest terms.",
    "Multiplying both sides by ${d}$ clears the denominators.",
    "Hence the probability is the ratio of favorable outcomes to total outcomes.",
    "Wait, let me double-check the arithmetic: ${a} \\cdot {d} = {e}$.",
    "Using the Pythagorean theorem, $c^2 = {a}^2 + {b}^2$.",
    "Taking the derivative and setting it to zero locates the minimum at $t = {d}$.",
)
_ENDINGS = (
    "Therefore, the final answer is $\\boxed{{{answer}}}$.",
    "So the answer is $\\boxed{{{answer}}}$.",
    "Thus we obtain \\[\\boxed{{{answer}}}\\]",
    "The answer is \\boxed{{{answer}}}.",
)


def _chain_of_thought(rng: random.Random, length: int = 1000) -> str:
    parts: list[str] = []
    while sum(map(len, parts)) < length:
        a, b, d = rng.randint(2, 99), rng.randint(2, 99), rng.randint(2, 30)
        step = rng.choice(_STEPS).format(a=a, b=b, c=a + b, d=d, e=a * d)
        parts.append(step)
    return " ".join(parts)


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


def generate(count: int, seed: int = 0) -> list[Case]:
    """``count`` unique responses, about half with a correct final answer."""
    rng = random.Random(seed)
    cases: list[Case] = []
    seen: set[str] = set()
    while len(cases) < count:
        answer = rng.choice(_KINDS)(rng)
        for _ in range(RESPONSES_PER_PROBLEM):
            correct = rng.random() < 0.5
            if correct:
                final = answer.label if rng.random() < 0.7 else rng.choice(answer.same)
            else:
                final = rng.choice(answer.wrong)
            case = Case(_chain_of_thought(rng), rng.choice(_ENDINGS), final, answer.label, correct)
            if case.response not in seen and len(cases) < count:
                seen.add(case.response)
                cases.append(case)
    return cases


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=2, help="best of this many timed runs")
    args = parser.parse_args(argv)
    logging.getLogger("math_verify").setLevel(logging.ERROR)  # the "timeouts are off" notice

    cases = generate(args.samples, args.seed)
    math_grade = BUILTINS["math"].grade
    plain_math_verify(cases[:20])  # import and warm sympy before any timing
    print(f"{len(cases)} responses, {sum(c.correct for c in cases)} correct by construction\n")
    print(f"{'grader':<24}{'samples/s':>12}")
    for kind in sorted(known_kinds()):
        print(f"{kind:<24}{_grader_rate(kind, cases, args.repeat):>12,.0f}", flush=True)

    reference = plain_math_verify(cases)
    plain_rate = _best_rate(lambda: plain_math_verify(cases), len(cases), args.repeat)
    ours = [math_grade(c.response, c.label, {}) == 1.0 for c in cases]
    math_rate = _best_rate(
        lambda: [math_grade(c.response, c.label, {}) for c in cases], len(cases), args.repeat
    )
    disagreements = [i for i, (a, b) in enumerate(zip(ours, reference, strict=True)) if a != b]
    consulted = sum(
        quick_verdict(clean_answer(last_boxed(c.response) or ""), clean_answer(c.label)) is None
        for c in cases
    )
    print(f"{'plain math-verify':<24}{plain_rate:>12,.0f}")
    print(
        f"\nmath called directly {math_rate:,.0f}/s vs plain math-verify {plain_rate:,.0f}/s: "
        f"{math_rate / plain_rate:.1f}x faster"
    )
    print(f"math-verify consulted by math on {consulted} of {len(cases)} samples")
    print(f"verdict disagreements: {len(disagreements)} of {len(cases)}")
    for i in disagreements[:5]:
        print(f"  label {cases[i].label!r}, answer {last_boxed(cases[i].response)!r}: "
              f"math {ours[i]}, math-verify {reference[i]}")  # fmt: skip
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
