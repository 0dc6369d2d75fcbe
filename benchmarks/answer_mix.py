"""Realistic GRPO batches for the speed benchmarks: math answers of every shape, multiple choice,
short QA.

A *problem* has a label, other spellings of it, and plausible wrong answers of the same shape.
Math problems come in three equal thirds:

- numeric: integers (some past 2^53), fractions, decimals, radicals, multiples of pi;
- structured: ordered pairs and triples, sets, intervals (and inequalities for them),
  polynomials, matrices;
- text, units and percentages: ``5 \\text{ cm}``, ``28\\%``, ``90^\\circ``, ``\\$1{,}250``,
  ``\\text{Tuesday}``.

A GRPO group holds the responses to one prompt. Like a model's samples, they repeat themselves:
about half are right (the label or another spelling of it) and the wrong ones share a few wrong
answers, so a group of 16 holds a handful of distinct final answers. Each response is a chain of
thought of about 1,000 characters ending in a boxed answer. This generator is ours: it measures
speed, never correctness (that is measured against exact truth and Math-Verify's own suite).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any


@dataclass(frozen=True)
class Problem:
    """A label, other spellings of it, and wrong answers of the same shape."""

    shape: str
    label: str
    same: tuple[str, ...]
    wrong: tuple[str, ...]


def _frac(q: Fraction) -> str:
    sign = "-" if q < 0 else ""
    return f"{sign}\\frac{{{abs(q.numerator)}}}{{{q.denominator}}}"


# ------------------------------------------------------------------------------------- numeric


def _integer(rng: random.Random) -> Problem:
    n = rng.choice([rng.randint(-60, 400), rng.randint(1000, 99999), 2**53 + rng.randint(1, 99)])
    same = [f"{n:,}".replace(",", "{,}")] if abs(n) >= 1000 else [f"{n}.0"]
    wrong = (str(n + rng.randint(1, 9)), str(-n or 1), str(2 * n + 1))
    return Problem("integer", str(n), tuple(same), wrong)


def _fraction(rng: random.Random) -> Problem:
    q = Fraction(rng.randint(1, 40), rng.choice([3, 4, 5, 6, 7, 8, 9, 12]))
    if q.denominator == 1:
        q += Fraction(1, 3)
    same = [_frac(q).replace("\\frac", "\\dfrac"), f"{q.numerator}/{q.denominator}"]
    if q.denominator in (4, 5, 8):
        same.append(str(float(q)))
    return Problem("fraction", _frac(q), tuple(same), (_frac(q + 1), _frac(1 / q), _frac(q / 2)))


def _decimal(rng: random.Random) -> Problem:
    cents = rng.randint(1, 99999)
    text = f"{cents / 100:.2f}"
    return Problem(
        "decimal", text, (text + "0", _frac(Fraction(cents, 100))),
        (f"{cents / 100 + 0.01:.2f}", f"{cents / 10:.1f}"),
    )  # fmt: skip


def _radical(rng: random.Random) -> Problem:
    a, b = rng.randint(2, 9), rng.choice([2, 3, 5, 6, 7, 10, 11, 13])
    return Problem(
        "radical", f"{a}\\sqrt{{{b}}}", (f"\\sqrt{{{a * a * b}}}", f"{a} \\sqrt{{{b}}}"),
        (f"{a + 1}\\sqrt{{{b}}}", f"\\sqrt{{{a * b}}}", f"{a}\\sqrt{{{b + 1}}}"),
    )  # fmt: skip


def _pi(rng: random.Random) -> Problem:
    p, q = rng.randint(1, 12), rng.choice([2, 3, 4, 6])
    return Problem(
        "pi", f"\\frac{{{p}\\pi}}{{{q}}}", (f"\\frac{{{p}}}{{{q}}}\\pi",),
        (f"\\frac{{{p + 1}\\pi}}{{{q}}}", f"{p}\\pi"),
    )  # fmt: skip


# ---------------------------------------------------------------------------------- structured


def _pair(rng: random.Random) -> Problem:
    a, b = rng.randint(-9, 20), rng.randint(-9, 20)
    if a == b:
        b += 1
    return Problem(
        "ordered_pair", f"({a}, {b})", (f"({a},{b})", f"\\left( {a}, {b} \\right)"),
        (f"({b}, {a})", f"({a}, {b + 1})", f"({a - 1}, {b})"),
    )  # fmt: skip


def _triple(rng: random.Random) -> Problem:
    a, b, c = (rng.randint(-9, 9) for _ in range(3))
    return Problem(
        "triple", f"({a}, {b}, {c})", (f"({a},{b},{c})",),
        (f"({c}, {b}, {a + 1})", f"({a}, {b}, {c + 1})"),
    )  # fmt: skip


def _set(rng: random.Random) -> Problem:
    items = rng.sample(range(-10, 20), rng.randint(2, 4))
    shuffled = list(items)
    rng.shuffle(shuffled)
    wrong = list(items)
    wrong[0] += 1
    label = "\\{" + ", ".join(map(str, items)) + "\\}"
    return Problem(
        "set", label, ("\\{" + ", ".join(map(str, shuffled)) + "\\}", ", ".join(map(str, shuffled))),
        ("\\{" + ", ".join(map(str, wrong)) + "\\}", ", ".join(map(str, items[:-1]))),
    )  # fmt: skip


def _interval(rng: random.Random) -> Problem:
    a = rng.randint(-10, 5)
    b = a + rng.randint(1, 10)
    if rng.random() < 0.5:
        return Problem(
            "interval", f"[{a}, {b})", (f"[{a},{b})", f"{a} \\le x < {b}"),
            (f"({a}, {b}]", f"[{a}, {b}]", f"[{a}, {b + 1})"),
        )  # fmt: skip
    return Problem(
        "interval", f"({a}, \\infty)", (f"x > {a}", f"({a},\\infty)"),
        (f"[{a}, \\infty)", f"(-\\infty, {a})", f"x \\ge {a}"),
    )  # fmt: skip


def _polynomial(rng: random.Random) -> Problem:
    p, q = rng.randint(2, 9), rng.randint(1, 9)
    return Problem(
        "expression", f"x^2-{2 * q}x+{q * q}", (f"(x-{q})^2", f"x^2 - {2 * q}x + {q * q}"),
        (f"(x+{q})^2", f"x^2-{q}x+{q * q}", f"{p}x+{q}"),
    )  # fmt: skip


def _matrix(rng: random.Random) -> Problem:
    a, b, c, d = (rng.randint(-5, 9) for _ in range(4))

    def m(w: int, x: int, y: int, z: int, env: str = "pmatrix") -> str:
        return f"\\begin{{{env}}} {w} & {x} \\\\ {y} & {z} \\end{{{env}}}"

    return Problem(
        "matrix", m(a, b, c, d), (m(a, b, c, d, "bmatrix"),),
        (m(a, c, b, d + 1), m(a, b, c, d + 1)),
    )  # fmt: skip


# ----------------------------------------------------------------------------------------- text


def _units(rng: random.Random) -> Problem:
    n = rng.randint(2, 500)
    unit = rng.choice(["cm", "meters", "hours", "square units", "km"])
    return Problem(
        "units", f"{n} \\text{{ {unit}}}", (str(n), f"{n}\\,\\text{{{unit}}}"),
        (f"{n + 1} \\text{{ {unit}}}", f"{n * 10} \\text{{ {unit}}}"),
    )  # fmt: skip


def _percent(rng: random.Random) -> Problem:
    n = rng.randint(1, 99)
    return Problem(
        "percent", f"{n}\\%", (str(n), f"{n} percent", f"{n}\\%"),
        (f"{n + 5}\\%", f"{100 - n}\\%" if n != 50 else "40\\%"),
    )  # fmt: skip


def _degrees(rng: random.Random) -> Problem:
    n = rng.choice([30, 45, 60, 72, 90, 108, 120, 135, 150])
    return Problem(
        "degrees",
        f"{n}^\\circ",
        (str(n), f"{n}^{{\\circ}}"),
        (f"{n + 10}^\\circ", f"{n // 2}^\\circ"),
    )


def _money(rng: random.Random) -> Problem:
    n = rng.randint(1001, 9999)
    return Problem(
        "money", f"\\${n:,}".replace(",", "{,}"), (str(n), f"{n:,}"),
        (f"\\${n + 10:,}".replace(",", "{,}"), str(n - 100)),
    )  # fmt: skip


def _word(rng: random.Random) -> Problem:
    words = ["Tuesday", "Evelyn", "north", "rhombus", "Carla", "impossible"]
    word = rng.choice(words)
    others = [w for w in words if w != word]
    return Problem(
        "text", f"\\text{{{word}}}", (f"\\text{{{word.lower()}}}", word),
        tuple(f"\\text{{{w}}}" for w in rng.sample(others, 2)),
    )  # fmt: skip


NUMERIC: tuple[Callable[[random.Random], Problem], ...] = (
    _integer, _fraction, _decimal, _radical, _pi,
)  # fmt: skip
STRUCTURED: tuple[Callable[[random.Random], Problem], ...] = (
    _pair, _triple, _set, _interval, _polynomial, _matrix,
)  # fmt: skip
TEXT: tuple[Callable[[random.Random], Problem], ...] = (
    _units, _percent, _degrees, _money, _word,
)  # fmt: skip
MIXES = {"numeric": NUMERIC, "structured": STRUCTURED, "text": TEXT}


def problem(rng: random.Random, mix: str) -> Problem:
    """A problem of one third (``numeric``, ``structured``, ``text``) or of all (``realistic``)."""
    kinds = MIXES[mix] if mix != "realistic" else MIXES[rng.choice(list(MIXES))]
    return rng.choice(kinds)(rng)


# ------------------------------------------------------------------------------------ responses

_STEPS = (
    "First, we rewrite the condition as an equation in terms of the unknown quantity.",
    "Let $n = {a}$ denote the number of terms, so the sum is $\\frac{{n(n+1)}}{{2}} = {b}$.",
    "Substituting $x = {a}$ gives ${a}^2 - {b} = {c}$, which is consistent with the constraint.",
    "By the triangle inequality, the third side must be less than ${a} + {b} = {c}$.",
    "We factor the quadratic: $x^2 - {c}x + {b} = (x - {a})(x - {d})$.",
    "Checking the case $k = {a}$ separately, we find no additional solutions.",
    "Since ${a}$ and ${b}$ are coprime, the fraction is already in lowest terms.",
    "Wait, let me double-check the arithmetic: ${a} \\cdot {d} = {e}$.",
    "Using the Pythagorean theorem, $c^2 = {a}^2 + {b}^2$.",
)
ENDINGS = (
    "Therefore, the final answer is $\\boxed{{{answer}}}$.",
    "So the answer is $\\boxed{{{answer}}}$.",
    "Thus we obtain \\[\\boxed{{{answer}}}\\]",
    "The answer is \\boxed{{{answer}}}.",
)


def chain_of_thought(rng: random.Random, length: int = 1000) -> str:
    """About ``length`` characters of plausible working."""
    parts: list[str] = []
    size = 0
    while size < length:
        a, b, d = rng.randint(2, 99), rng.randint(2, 99), rng.randint(2, 30)
        step = rng.choice(_STEPS).format(a=a, b=b, c=a + b, d=d, e=a * d)
        parts.append(step)
        size += len(step) + 1
    return " ".join(parts)


@dataclass
class Sample:
    """A rollout sample with the fields slime's ``Sample`` has (those the router reads)."""

    prompt: str
    response: str
    label: Any
    metadata: dict[str, Any] = field(default_factory=dict)
    status: str = "completed"
    group_index: int = 0
    index: int = 0
    reward: Any = None
    response_length: int = 0
    correct: bool = False  # how it was generated (not read by any grader)


def group_answers(rng: random.Random, item: Problem, size: int) -> list[tuple[str, bool]]:
    """``size`` final answers for one prompt: about half right, repeating like a model's."""
    wrong_pool = rng.sample(list(item.wrong), min(len(item.wrong), rng.randint(1, 3)))
    right_pool = [item.label, *rng.sample(list(item.same), min(len(item.same), 1))]
    answers: list[tuple[str, bool]] = []
    for _ in range(size):
        if rng.random() < 0.5:
            answers.append((rng.choice(right_pool), True))
        else:
            answers.append((rng.choice(wrong_pool), False))
    return answers


def math_group(rng: random.Random, mix: str, size: int, group: int) -> list[Sample]:
    """One prompt's ``size`` responses, each a chain of thought ending in a boxed answer."""
    item = problem(rng, mix)
    return [
        Sample(
            prompt=f"Problem {group}",
            response=f"{chain_of_thought(rng)}\n\n{rng.choice(ENDINGS).format(answer=answer)}",
            label=item.label,
            metadata={"dataset": "math", "shape": item.shape},
            group_index=group,
            correct=right,
        )
        for answer, right in group_answers(rng, item, size)
    ]


_OPTIONS = "ABCD"
_CHOICE_ENDINGS = (
    "The answer is ({letter}).",
    "Answer: {letter}",
    "So I'll go with option {letter}.",
    "Therefore, the correct choice is **{letter}**.",
)


def choice_group(rng: random.Random, size: int, group: int) -> list[Sample]:
    """One multiple-choice prompt's responses: reasoning, then the chosen letter."""
    correct = rng.choice(_OPTIONS)
    others = [c for c in _OPTIONS if c != correct]
    samples = []
    for _ in range(size):
        right = rng.random() < 0.5
        letter = correct if right else rng.choice(others)
        text = (
            f"{chain_of_thought(rng, 600)}\n\n{rng.choice(_CHOICE_ENDINGS).format(letter=letter)}"
        )
        samples.append(
            Sample(
                f"Question {group}",
                text,
                correct,
                {"dataset": "gpqa"},
                group_index=group,
                correct=right,
            )
        )
    return samples


_ANSWERS = (
    ("Paris", "Lyon"), ("the Treaty of Versailles", "the Treaty of Paris"),
    ("photosynthesis", "respiration"), ("Marie Curie", "Pierre Curie"), ("1815", "1805"),
)  # fmt: skip


def qa_group(rng: random.Random, size: int, group: int) -> list[Sample]:
    """One short-answer prompt's responses: brief thinking, then the answer."""
    right_answer, wrong_answer = rng.choice(_ANSWERS)
    samples = []
    for _ in range(size):
        right = rng.random() < 0.5
        answer = right_answer if right else wrong_answer
        text = f"<think>{chain_of_thought(rng, 300)}</think>\n{answer}"
        samples.append(
            Sample(
                f"Question {group}",
                text,
                right_answer,
                {"dataset": "squad"},
                group_index=group,
                correct=right,
            )
        )
    return samples


def step_batch(prompts: int, size: int, seed: int, mix: str = "realistic") -> list[Sample]:
    """A rollout batch: 60% math prompts of ``mix``, 20% multiple choice, 20% short QA."""
    rng = random.Random(seed)
    samples: list[Sample] = []
    for group in range(prompts):
        roll = rng.random()
        if roll < 0.6:
            samples += math_group(rng, mix, size, group)
        elif roll < 0.8:
            samples += choice_group(rng, size, group)
        else:
            samples += qa_group(rng, size, group)
    for i, sample in enumerate(samples):
        sample.index = i
        sample.response_length = len(sample.response) // 4
    return samples
