"""Worked solutions in many languages through ``math`` (``extract: any``) and the peers' readers.

The cases are read at run time from the peers' own sources (nothing of theirs is copied into the
project):

- **MGSM**'s native chain-of-thought exemplars (``mgsm/exemplars.py`` of a
  google-research/url-nlp checkout): 8 solutions in each of 11 languages, each ending with the
  language's answer sentence ("La réponse est 11.", "答えは5です。", "సమాధానం 11."), graded
  against its answer (expected 1) and against the answer plus one (expected 0);
- **lighteval**'s multilingual extraction tests (``tests/unit/metrics/test_extractive_match.py``
  of a huggingface/lighteval checkout: ``test_multilingual_extraction_math`` and
  ``test_multilingual_extraction_math_latex_numbers``): model outputs in Chinese, Arabic, French,
  Hindi and English with the verdict lighteval expects; one expected right is also graded against
  its gold plus one (expected 0) where the gold is a whole number.

Graders, on the same cases: ``math`` with ``extract: any``; plain math-verify
(``verify(parse(gold), parse(pred))``); for MGSM, lm-eval's own filters of its
``mgsm_native_cot_<lang>`` tasks (the installed package's YAML: ``strict-match``, the language's
answer sentence, and ``flexible-extract``, the last number), and simple-evals' MGSM reader
(``parse_answer`` after the language's answer prefix, then ``score_mgsm``; ``--simple-evals``).

    python benchmarks/math_languages.py --url-nlp /tmp/url-nlp --lighteval /tmp/lighteval \\
        --simple-evals /tmp/simple-evals
"""

from __future__ import annotations

import argparse
import ast
import re
import runpy
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import choice_suites
import external_suites


@dataclass(frozen=True)
class MathCase:
    """One solution, the answer it is graded against, and the verdict expected."""

    suite: str
    gold: str
    pred: str
    expected: bool
    lang: str = ""  # MGSM's language code, for its readers
    derived: bool = False  # another answer than the source's, expected 0


def _plus_one(case: MathCase) -> list[MathCase]:
    """The case, and the same solution against its whole-number gold plus one (expected 0)."""
    if not case.expected or not re.fullmatch(r"-?\d+", case.gold.strip()):
        return [case]
    other = str(int(case.gold) + 1)
    return [case, MathCase(case.suite, other, case.pred, False, case.lang, derived=True)]


def mgsm_cases(checkout: Path) -> list[MathCase]:
    """MGSM's native exemplars: each solution against its answer, and against another."""
    exemplars = runpy.run_path(str(checkout / "mgsm" / "exemplars.py"))
    answers = exemplars["EXEMPLAR_NUMBER_ANSWERS"]
    cases: list[MathCase] = []
    for lang, solutions in exemplars["MGSM_EXEMPLARS"].items():
        for number, exemplar in solutions.items():
            gold = str(answers[int(number) - 1])
            cases += _plus_one(MathCase(f"MGSM {lang}", gold, exemplar["a"], True, lang))
    return cases


def lighteval_cases(checkout: Path) -> list[MathCase]:
    """lighteval's multilingual math extraction rows (gold, prediction, expected verdict)."""
    path = checkout / "tests" / "unit" / "metrics" / "test_extractive_match.py"
    wanted = (
        "test_multilingual_extraction_math",
        "test_multilingual_extraction_math_latex_numbers",
    )
    cases: list[MathCase] = []
    for function in choice_suites._functions(path):
        if function.name not in wanted:
            continue
        for row in choice_suites._parametrized(function, {}):
            where = f"lighteval {function.name} {row['language']}"
            case = MathCase(where, str(row["gold"]), str(row["pred"]), bool(row["expected"]))
            cases += _plus_one(case)
    return cases


# -- the graders -------------------------------------------------------------------------------

Grader = Callable[[MathCase], bool]


def _math(case: MathCase) -> bool:
    from rewardrouter.rewards.math.kind import math_answer

    return math_answer(case.pred, case.gold, {}, extract="any") == 1.0


def _math_verify(case: MathCase) -> bool:
    from math_verify import parse, verify

    return bool(verify(parse(case.gold), parse(case.pred)))


def lm_eval_mgsm() -> dict[str, Grader]:
    """lm-eval's ``strict-match`` and ``flexible-extract`` filters of ``mgsm_native_cot_<lang>``
    (regex, then its first match; compared as its ``exact_match`` with ``ignore_case`` and
    ``ignore_punctuation``, on the answer as a number)."""
    import yaml
    from lm_eval.tasks.mgsm import utils as mgsm

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    folder = Path(mgsm.__file__).parent / "native_cot"
    filters: dict[str, dict[str, tuple[re.Pattern[str], int]]] = {}
    for path in folder.glob("mgsm_native_cot_*.yaml"):
        config = yaml.load(path.read_text(encoding="utf-8"), Loader)
        for entry in config["filter_list"]:
            regex = entry["filter"][0]
            select = int(regex.get("group_select", 0))
            filters.setdefault(entry["name"], {})[config["dataset_name"]] = (
                re.compile(regex["regex_pattern"]),
                select,
            )

    def grader(name: str) -> Grader:
        def grade(case: MathCase) -> bool:
            pattern, select = filters[name][case.lang]
            found = pattern.findall(case.pred)
            if not found:
                return False
            match = found[select]
            text = next((m for m in match if m), "") if isinstance(match, tuple) else match
            return _punctuation_free(text) == _punctuation_free(case.gold)

        return grade

    return {f"lm-eval mgsm {name}": grader(name) for name in filters}


def _punctuation_free(text: str) -> str:
    return re.sub(r"[^\w]", "", text.strip().lower())


def simple_evals_mgsm(checkout: Path) -> Grader:
    """simple-evals' MGSM reader: its ``parse_answer`` after the language's answer prefix, then
    its ``score_mgsm`` (defined from ``mgsm_eval.py`` alone)."""
    path = checkout / "mgsm_eval.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    names = {"LANG_TO_ANSWER_PREFIX", "parse_answer", "score_mgsm"}
    kept = [
        node
        for node in tree.body
        if getattr(node, "name", None) in names
        or any(isinstance(t, ast.Name) and t.id in names for t in getattr(node, "targets", []))
    ]
    namespace: dict[str, Any] = {"re": re}
    exec(compile(ast.Module(kept, []), str(path), "exec"), namespace)

    def grade(case: MathCase) -> bool:
        prefix = namespace["LANG_TO_ANSWER_PREFIX"][case.lang]
        return bool(
            namespace["score_mgsm"](case.gold, namespace["parse_answer"](case.pred, prefix))
        )

    return grade


@dataclass
class Tally:
    """One grader's verdicts on a set of cases."""

    right: int = 0
    false_positives: int = 0
    total: int = 0


def tally(grade: Grader, cases: list[MathCase]) -> Tally:
    """How ``grade`` fares on ``cases`` (a grader that raises or overruns gives 0)."""
    result = Tally()
    for case in cases:
        try:
            with external_suites._deadline(external_suites.CALL_SECONDS):
                verdict = grade(case)
        except (Exception, external_suites._Overrun):
            verdict = False
        result.total += 1
        result.right += verdict == case.expected
        result.false_positives += verdict and not case.expected
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url-nlp", type=Path, help="a google-research/url-nlp checkout (MGSM)")
    parser.add_argument("--lighteval", type=Path, help="a huggingface/lighteval checkout")
    parser.add_argument("--simple-evals", type=Path, help="an openai/simple-evals checkout")
    args = parser.parse_args(argv)
    suites: dict[str, tuple[list[MathCase], dict[str, Grader]]] = {}
    common: dict[str, Grader] = {"math (extract: any)": _math, "math-verify": _math_verify}
    if args.url_nlp:
        peers = {**common, **lm_eval_mgsm()}
        if args.simple_evals:
            peers["simple-evals mgsm"] = simple_evals_mgsm(args.simple_evals.resolve())
        suites["MGSM exemplars"] = (mgsm_cases(args.url_nlp.resolve()), peers)
    if args.lighteval:
        suites["lighteval multilingual"] = (lighteval_cases(args.lighteval.resolve()), common)
    if not suites:
        parser.error("give at least one checkout")
    print(f"{'suite':<24}{'grader':<34}{'right':>14}{'false +':>9}")
    for name, (cases, graders) in suites.items():
        for grader, grade in graders.items():
            result = tally(grade, cases)
            print(f"{name:<24}{grader:<34}{result.right:>7} / {result.total:<4}"
                  f"{result.false_positives:>7}")  # fmt: skip
        wrong = [c for c in cases if _math(c) != c.expected]
        for case in wrong:
            print(f"  math differs: [{case.suite}] {case.pred[-90:]!r} against {case.gold!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
