"""Math-Verify's own test cases through ``math``, plain math-verify and the peers' math graders.

Reads the gold/prediction pairs of a Math-Verify checkout's ``tests/`` at run time (the
``pytest.mark.parametrize`` tables of every test function with ``gold`` and ``pred`` arguments)
and grades each prediction against its gold with:

- ``math`` with ``extract: any`` (the prediction as a whole response) and with the default
  ``extract: boxed`` (a prediction without a box scores 0);
- plain math-verify, ``verify(parse(gold), parse(pred))`` with its defaults;
- the peers, when given their checkouts: slime's ``rm_hub`` math grader (``grade_answer_verl``),
  and verl's ``reward_score`` ``math_reward``, ``prime_math`` and ``math_verify`` graders, imported
  from the checkout (their own helpers are not installed; slime's and verl's package
  ``__init__`` files, which import the training stacks, are skipped).

It prints, per test function (a class of cases) and in total, how many verdicts agree with the
suite's expectation, and lists the cases where a peer agrees and ``math`` does not. Last, it
lists any of the suite's pairs found in the project's ``tests/`` (exit status 1 if one is): the
suite is read here at run time, and the project's tests hold cases of their own.

    git clone https://github.com/huggingface/Math-Verify /tmp/Math-Verify
    python benchmarks/external_suites.py /tmp/Math-Verify
    python benchmarks/external_suites.py /tmp/Math-Verify --slime /tmp/slime --verl /tmp/verl

The multiple-choice suites (slime's, NeMo-RL's, lm-eval's, lighteval's and rofa's tests of
reading an option letter, through ``gpqa``, slime, NeMo-RL's verifiers, lm-eval's GPQA and
MMLU-Pro filters and rofa's parser) are ``benchmarks/choice_suites.py``'s, which uses this
module's loaders.

Peers need ``pylatexenc`` (``pip install pylatexenc``); a peer that cannot load is reported and
left out. Every grader call runs under a 10-second alarm; an overrun counts as a wrong verdict.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import itertools
import logging
import re
import signal
import sys
import types
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

CALL_SECONDS = 10.0


@dataclass(frozen=True)
class Case:
    """One gold/prediction pair of the suite and its expected verdict."""

    suite: str  # module::function
    gold: str
    pred: str
    expected: bool


def _load_package(name: str, folder: Path) -> types.ModuleType:
    """Register ``folder`` as package ``name`` without running its ``__init__``."""
    package = types.ModuleType(name)
    package.__path__ = [str(folder)]
    sys.modules[name] = package
    return package


def read_cases(checkout: Path) -> tuple[list[Case], Counter[str]]:
    """Every gold/pred pair of the checkout's tests, and the test functions without such pairs."""
    tests = checkout / "tests"
    if not tests.is_dir():
        raise SystemExit(f"{checkout} has no tests/ folder: pass a Math-Verify checkout")
    spec = importlib.util.spec_from_file_location(
        "tests", tests / "__init__.py", submodule_search_locations=[str(tests)]
    )
    assert spec is not None and spec.loader is not None
    package = importlib.util.module_from_spec(spec)
    sys.modules["tests"] = package
    spec.loader.exec_module(package)
    cases: list[Case] = []
    skipped: Counter[str] = Counter()
    for path in sorted(tests.glob("test_*.py")):
        module = importlib.import_module(f"tests.{path.stem}")
        for name, function in vars(module).items():
            if not name.startswith("test_") or not callable(function):
                continue
            for mark in getattr(function, "pytestmark", []):
                if mark.name != "parametrize":
                    continue
                names, rows = mark.args[0], mark.args[1]
                if isinstance(names, str):
                    names = [n.strip() for n in names.split(",")]
                names = list(names)
                key = next((k for k in ("expected", "result") if k in names), None)
                if "gold" not in names or "pred" not in names or key is None:
                    skipped[f"{path.stem}::{name}"] += len(rows)
                    continue
                for row in rows:
                    values = getattr(row, "values", row)
                    args = dict(zip(names, values, strict=True))
                    cases.append(
                        Case(
                            f"{path.stem}::{name}",
                            str(args["gold"]),
                            str(args["pred"]),
                            bool(int(args[key])),
                        )
                    )
    return cases, skipped


def _bare(text: str) -> str:
    """A case's answer without what only wraps it (spaces, ``$``, ``\\(``, one ``\\boxed{}``),
    so that a pair copied and re-wrapped is still the same pair."""
    text = re.sub(r"\s+", "", text)
    for wrapper in ("$", "\\(", "\\)", "\\[", "\\]"):
        text = text.replace(wrapper, "")
    boxed = re.fullmatch(r"\\boxed\{(.*)\}", text)
    return boxed.group(1) if boxed else text


def copied_pairs(cases: list[Case], tests: Path) -> list[tuple[str, int, Case]]:
    """Where the project's ``tests`` hold one of the suite's gold/prediction pairs: two string
    literals of one tuple, list or call that are the pair's answers (either order, re-wrapped or
    not). The project writes its own cases; the suite is read here, at run time, only."""
    pairs = {
        frozenset((_bare(c.gold), _bare(c.pred))): c
        for c in cases
        if _bare(c.gold) != _bare(c.pred)
    }
    found = []
    for path in sorted(tests.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call):
                items = [*node.args, *(k.value for k in node.keywords)]
            elif isinstance(node, ast.Tuple | ast.List):
                items = list(node.elts)
            else:
                continue
            texts = [
                i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)
            ]
            for a, b in itertools.combinations(texts, 2):
                case = pairs.get(frozenset((_bare(a), _bare(b))))
                if case is not None:
                    found.append((str(path), node.lineno, case))
    return sorted(found, key=lambda f: (f[0], f[1]))


class _Overrun(BaseException):
    """A grader call ran past CALL_SECONDS."""


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    def fire(signum: int, frame: object) -> None:
        raise _Overrun

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


Grader = Callable[[str, str], bool]


def _ours(extract: Literal["boxed", "any"]) -> Grader:
    from rewardrouter.rewards.math import math_answer

    def grade(gold: str, pred: str) -> bool:
        return bool(math_answer(pred, gold, {}, extract=extract) == 1.0)

    return grade


def _plain_math_verify(gold: str, pred: str) -> bool:
    from math_verify import parse, verify

    return bool(verify(parse(gold), parse(pred)))


def _slime(checkout: Path) -> Grader:
    _load_package("slime", checkout / "slime")
    _load_package("slime.rollout", checkout / "slime" / "rollout")
    _load_package("slime.rollout.rm_hub", checkout / "slime" / "rollout" / "rm_hub")
    math_utils = importlib.import_module("slime.rollout.rm_hub.math_utils")

    def grade(gold: str, pred: str) -> bool:
        return bool(math_utils.grade_answer_verl(pred, gold))

    return grade


def _verl(checkout: Path) -> dict[str, Grader]:
    root = checkout / "verl"
    _load_package("verl", root)
    _load_package("verl.utils", root / "utils")
    _load_package("verl.utils.reward_score", root / "utils" / "reward_score")
    # prime_math imports verl.utils.py_functional for a timeout decorator; the deadline here
    # bounds every call instead, so a pass-through stands in for it
    shim = types.ModuleType("verl.utils.py_functional")
    shim.timeout_limit = lambda *a, **k: lambda fn: fn  # type: ignore[attr-defined]
    sys.modules["verl.utils.py_functional"] = shim
    graders: dict[str, Grader] = {}
    for name in ("math_reward", "prime_math", "math_verify"):
        try:
            module = importlib.import_module(f"verl.utils.reward_score.{name}")
        except Exception as exc:  # a peer that cannot load is reported, not fatal
            print(f"verl {name}: not loaded ({type(exc).__name__}: {exc})")
            continue
        graders[f"verl {name}"] = _score_grader(module.compute_score)
    return graders


def _score_grader(compute_score: Callable[[str, str], Any]) -> Grader:
    def grade(gold: str, pred: str) -> bool:
        result = compute_score(pred, gold)
        if isinstance(result, dict):
            result = result.get("score", 0)
        if isinstance(result, tuple):
            result = result[0]
        return bool(result) and float(result) > 0

    return grade


def run(grader: Grader, case: Case) -> bool:
    """Whether ``grader`` agrees with the expectation (a crash or an overrun does not)."""
    try:
        with _deadline(CALL_SECONDS):
            verdict = grader(case.gold, case.pred)
    except (Exception, _Overrun):
        return False
    return verdict == case.expected


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("math_verify", type=Path, help="a Math-Verify checkout")
    parser.add_argument("--slime", type=Path, help="a slime checkout (THUDM/slime)")
    parser.add_argument("--verl", type=Path, help="a verl checkout (volcengine/verl)")
    parser.add_argument("--show", type=int, default=20, help="cases to list where math is wrong")
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)  # math-verify logs every parse failure

    cases, skipped = read_cases(args.math_verify.resolve())
    graders: dict[str, Grader] = {
        "math (extract: any)": _ours("any"),
        "math (extract: boxed)": _ours("boxed"),
        "plain math-verify": _plain_math_verify,
    }
    if args.slime:
        try:
            graders["slime rm_hub math"] = _slime(args.slime.resolve())
        except Exception as exc:
            print(f"slime: not loaded ({type(exc).__name__}: {exc})")
    if args.verl:
        graders.update(_verl(args.verl.resolve()))

    right: dict[str, dict[str, list[bool]]] = {g: defaultdict(list) for g in graders}
    for case in cases:
        for name, grader in graders.items():
            right[name][case.suite].append(run(grader, case))

    print(f"{len(cases)} gold/prediction pairs from {len({c.suite for c in cases})} test "
          f"functions; not gold/prediction tables: {sum(skipped.values())} rows in "
          f"{len(skipped)} functions\n")  # fmt: skip
    names = list(graders)
    width = max(len(s) for s in {c.suite for c in cases}) + 2
    header = "".join(f"{n[:22]:>24}" for n in names)
    print(f"{'test function':<{width}}{'pairs':>6}{header}")
    for suite in sorted({c.suite for c in cases}):
        total = len(right[names[0]][suite])
        cells = "".join(f"{sum(right[n][suite]):>24}" for n in names)
        print(f"{suite:<{width}}{total:>6}{cells}")
    totals = "".join(
        f"{f'{sum(map(sum, right[n].values()))} ({sum(map(sum, right[n].values())) / len(cases):.1%})':>24}"
        for n in names
    )
    print(f"{'total':<{width}}{len(cases):>6}{totals}")

    ours = names[0]
    lost = []
    for i, case in enumerate(cases):
        position = [c for c in cases[: i + 1] if c.suite == case.suite]
        k = len(position) - 1
        if right[ours][case.suite][k]:
            continue
        peers = [n for n in names[2:] if right[n][case.suite][k]]
        lost.append((case, peers))
    with_peer = [(c, p) for c, p in lost if p]
    print(f"\n{ours} disagrees with the suite on {len(lost)} pairs; a peer agrees on "
          f"{len(with_peer)} of them:")  # fmt: skip
    for case, peers in with_peer[: args.show]:
        print(f"  [{case.suite}] gold {case.gold[:70]!r} pred {case.pred[-90:]!r} "
              f"expected {int(case.expected)}; right: {', '.join(peers)}")  # fmt: skip

    copies = copied_pairs(cases, Path(__file__).resolve().parents[1] / "tests")
    print(f"\npairs of this suite in the project's tests/: {len(copies)}")
    for where, line, case in copies:
        print(f"  {where}:{line}: [{case.suite}] {case.gold!r} / {case.pred!r}; write a case of "
              f"the same class of our own")  # fmt: skip
    return 1 if copies else 0


if __name__ == "__main__":
    sys.exit(main())
