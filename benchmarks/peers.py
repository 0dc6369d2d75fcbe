"""The answer classes of the test tables, graded by rewardrouter and by its peers, class by class.

The math classes are the rows of ``tests/rewards/test_rewards_math_classes.py`` (exactness past
floating point, multi-part boxes, inequalities for intervals, repeating decimals, digit grouping,
trailing points, implicit products, percentages, decimal commas, tuples, sets, intervals,
matrices), each a right answer and a wrong one of the same shape. The choice classes are the
rows of ``tests/rewards/test_rewards_choice.py``'s final-choice table. Each row is graded by:

- ``math`` (or ``gpqa``), the built-ins;
- plain math-verify, ``verify(parse(f"${label}$"), parse(response))``;
- slime's ``rm_hub`` (``grade_answer_verl`` for math, ``compute_gpqa_reward`` for choices) and
  verl's ``reward_score`` (``math_reward``, ``prime_math``, ``math_verify``), imported from
  checkouts as ``benchmarks/external_suites.py`` imports them.

It prints how many rows of each class every grader gets right, and marks a class where a peer
gets more right than rewardrouter.

    python benchmarks/peers.py --slime /tmp/slime --verl /tmp/verl
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import external_suites
from external_suites import Case, Grader

ROOT = Path(__file__).resolve().parents[1]


def _table_module(name: str) -> ModuleType:
    path = ROOT / "tests" / "rewards" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rows(
    params: list[Any], shape: Callable[[tuple[Any, ...]], tuple[str, str, bool]]
) -> list[Case]:
    """Cases from ``pytest.param`` rows whose ids are ``class-i-right`` / ``class-i-wrong``."""
    cases = []
    for param in params:
        response, label, expected = shape(tuple(param.values))
        cases.append(Case(param.id.rsplit("-", 2)[0], label, response, expected))
    return cases


def math_cases() -> list[Case]:
    module = _table_module("test_rewards_math_classes")
    exact = _rows(
        module.EXACTNESS,
        lambda v: (f"The answer is $\\boxed{{{v[0]}}}$.", v[1], v[2] == 1.0),
    )
    rest = _rows(module.EXTRACTION + module.STRUCTURED, lambda v: (v[0], v[1], v[2] == 1.0))
    return exact + rest


def choice_cases() -> list[Case]:
    module = _table_module("test_rewards_choice")
    return _rows(module.FINAL_CHOICE, lambda v: (v[0], v[1], v[2] == 1.0))


def _plain_math_verify(gold: str, pred: str) -> bool:
    """math-verify as its README shows it, the bare label put in math delimiters."""
    return external_suites._plain_math_verify(f"${gold}$", pred)


def _gpqa(gold: str, pred: str) -> bool:
    from rewardrouter.rewards.choice.kind import gpqa

    return gpqa(pred, gold, {}) == 1.0


def _slime_gpqa(checkout: Path) -> Grader:
    external_suites._slime(checkout)  # registers the rm_hub package without its __init__
    module = importlib.import_module("slime.rollout.rm_hub.gpqa")

    def grade(gold: str, pred: str) -> bool:
        return bool(module.compute_gpqa_reward(pred, gold, metadata={}) == 1.0)

    return grade


def _table(title: str, cases: list[Case], graders: dict[str, Grader]) -> None:
    right: dict[str, dict[str, int]] = {g: defaultdict(int) for g in graders}
    classes: dict[str, int] = defaultdict(int)
    for case in cases:
        classes[case.suite] += 1
        for name, grader in graders.items():
            right[name][case.suite] += external_suites.run(grader, case)
    names = list(graders)
    width = max(map(len, classes)) + 2
    print(f"\n{title}\n{'class':<{width}}{'rows':>5}" + "".join(f"{n[:20]:>22}" for n in names))
    for suite, rows in classes.items():
        ours = right[names[0]][suite]
        beaten = any(right[n][suite] > ours for n in names[1:])
        cells = "".join(f"{right[n][suite]:>22}" for n in names)
        print(f"{suite:<{width}}{rows:>5}{cells}{'  <- a peer does better' if beaten else ''}")
    totals = "".join(f"{sum(right[n].values()):>22}" for n in names)
    print(f"{'total':<{width}}{len(cases):>5}{totals}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slime", type=Path, help="a slime checkout (THUDM/slime)")
    parser.add_argument("--verl", type=Path, help="a verl checkout (volcengine/verl)")
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)

    math_graders: dict[str, Grader] = {
        "math": external_suites._ours("boxed"),
        "plain math-verify": _plain_math_verify,
    }
    choice_graders: dict[str, Grader] = {"gpqa": _gpqa}
    if args.slime:
        math_graders["slime rm_hub math"] = external_suites._slime(args.slime.resolve())
        choice_graders["slime rm_hub gpqa"] = _slime_gpqa(args.slime.resolve())
    if args.verl:
        math_graders.update(external_suites._verl(args.verl.resolve()))
    _table("math: right verdicts per class (a right answer and a wrong one per row pair)",
           math_cases(), math_graders)  # fmt: skip
    _table("multiple choice: right verdicts per class", choice_cases(), choice_graders)
    return 0


if __name__ == "__main__":
    sys.exit(main())
