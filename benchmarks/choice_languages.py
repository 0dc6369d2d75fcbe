"""Multiple-choice answers in every language the public evaluations write them, through ``gpqa``
and the peers' own readers.

The cases are built at run time from the peers' own sources (nothing of theirs is copied into
the project):

- **MMLU-ProX** (lm-evaluation-harness, the installed ``lm_eval`` package): for each of its 29
  languages, the answer sentence its task templates ask a model to finish with
  (``lang_libs.LANG_LIBS[lang][5]``: "The answer is (X)", "答案是 (X)", "उत्तर ({}) हो।", ...)
  after the template's own opening ("Answer: Let's think step by step." in the language), once
  per option letter A to J;
- **simple-evals** (``common.py`` of an openai/simple-evals checkout): each of its localized
  answer prefixes (``MULTILINGUAL_ANSWER_REGEXES``: "Answer:", "الإجابة:", "উত্তরঃ", "答复" and a
  full-width colon, "Ìdáhùn:", ...), written out, followed by each letter its multilingual MMLU maps to A to D
  (``normalize_extracted_answer``: A-D, the Arabic أ ب ج د, the Bengali অ ব ড ঢ, the full-width
  A to D).

Each case is read as the letter it names (expected 1) and graded against another letter too
(expected 0: a grader that says 1 there makes a false positive).

Graders, on the same cases: ``gpqa`` (with the case's letters as ``valid_letters``); slime's
``compute_gpqa_reward`` (``--slime``); and each source's own reader: for MMLU-ProX the
``custom-extract`` regex of the language's task YAML (lm-eval takes its first match), for
simple-evals its own functions (``normalize_response``, the pattern template over each prefix
in turn, ``normalize_extracted_answer``) as its ``mmlu_eval.py`` applies them.

    python benchmarks/choice_languages.py --simple-evals /tmp/simple-evals --slime /tmp/slime
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import choice_suites
from choice_suites import ChoiceCase

MMLU_PROX_LETTERS = "ABCDEFGHIJ"


@dataclass(frozen=True)
class Source:
    """The cases built from one public source, and its own reader of them."""

    cases: list[ChoiceCase]
    reader: Callable[[ChoiceCase], str | None]  # the letter the source's own code reads


def _twins(case: ChoiceCase) -> list[ChoiceCase]:
    """The case, and the same response against the next letter (expected 0)."""
    other = case.letters[(case.letters.index(case.label) + 1) % len(case.letters)]
    return [case, ChoiceCase(case.suite, case.response, other, case.letters, False, derived=True)]


# -- MMLU-ProX ---------------------------------------------------------------------------------


def mmlu_prox() -> Source:
    """For each language of the installed lm-eval's MMLU-ProX tasks: the template's opening and
    its answer sentence, once per letter; read by the language's own ``custom-extract`` regex."""
    from lm_eval.tasks.mmlu_prox import lang_libs

    LANG_LIBS = lang_libs.LANG_LIBS
    folder = Path(lang_libs.__file__).parent
    cases: list[ChoiceCase] = []
    patterns: dict[str, re.Pattern[str]] = {}
    for lang, texts in LANG_LIBS.items():
        template = (folder / lang / f"_{lang}_template_yaml").read_text(encoding="utf-8")
        found = re.search(r"regex_pattern: '(.*)'", template)
        assert found is not None, f"no custom-extract regex in {lang}'s template"
        suite = f"MMLU-ProX {lang}"
        patterns[suite] = re.compile(found.group(1).replace("''", "'"))
        opening, sentence = texts[2], texts[5]
        for letter in MMLU_PROX_LETTERS:
            response = f"{opening}\n{sentence.format(letter)}"
            cases += _twins(ChoiceCase(suite, response, letter, MMLU_PROX_LETTERS, True))

    def read(case: ChoiceCase) -> str | None:
        match = patterns[case.suite].search(case.response)  # filter: regex, then take_first
        return match.group(1) if match else None

    return Source(cases, read)


# -- simple-evals ------------------------------------------------------------------------------

_NAMES = (
    "MULTILINGUAL_ANSWER_REGEXES",
    "MULTILINGUAL_ANSWER_PATTERN_TEMPLATE",
    "normalize_response",
    "normalize_extracted_answer",
)


def _kept(tree: ast.Module) -> list[ast.stmt]:
    """The statements of ``tree`` that define one of :data:`_NAMES`."""
    kept: list[ast.stmt] = []
    for node in tree.body:
        named = [t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)]
        if getattr(node, "name", None) in _NAMES or set(named) & set(_NAMES):
            kept.append(node)
    return kept


def simple_evals_functions(checkout: Path) -> dict[str, Any]:
    """simple-evals' answer prefixes, its pattern template and its two normalizers, defined from
    its ``common.py`` alone (nothing else of the file is run: it imports its samplers)."""
    path = checkout / "common.py"
    with warnings.catch_warnings():  # its prefixes are written "Answer\s*:", not raw strings
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        code = compile(ast.Module(_kept(tree), []), str(path), "exec")
    namespace: dict[str, Any] = {}
    exec(code, namespace)
    missing = [name for name in _NAMES if name not in namespace]
    assert not missing, f"simple-evals' common.py no longer defines {missing}"
    return namespace


def _written(prefix_regex: str) -> str:
    r"""A prefix regex of simple-evals written out as a model writes it (``Answer\s*:`` is
    ``Answer:``)."""
    return prefix_regex.replace("\\s*", "")


def _mapped_letters(normalize: Callable[[str], str]) -> dict[str, str]:
    """Each letter simple-evals reads as A to D: A to D themselves, and every character that
    its ``normalize_extracted_answer`` turns into one of them."""
    found = {}
    for code in range(0x20, 0x10000):
        char = chr(code)
        mapped = normalize(char)
        if mapped in ("A", "B", "C", "D") and (char == mapped or not char.isascii()):
            found[char] = mapped
    return found


def simple_evals(checkout: Path) -> Source:
    """Each answer prefix of simple-evals, then each letter it maps to A to D; read by its own
    functions as its multilingual MMLU applies them."""
    functions = simple_evals_functions(checkout)
    prefixes = list(dict.fromkeys(functions["MULTILINGUAL_ANSWER_REGEXES"]))
    letters = _mapped_letters(functions["normalize_extracted_answer"])
    cases: list[ChoiceCase] = []
    for prefix in prefixes:
        for written, letter in letters.items():
            response = f"{_written(prefix)} {written}"
            cases += _twins(ChoiceCase(f"simple-evals {prefix!r}", response, letter, "ABCD", True))
    template = functions["MULTILINGUAL_ANSWER_PATTERN_TEMPLATE"]

    def read(case: ChoiceCase) -> str | None:
        text = functions["normalize_response"](case.response)
        for prefix in functions["MULTILINGUAL_ANSWER_REGEXES"]:
            match = re.search(template.format(prefix), text)
            if match:
                return str(functions["normalize_extracted_answer"](match.group(1)))
        return None

    return Source(cases, read)


# -- the report --------------------------------------------------------------------------------


@dataclass
class Tally:
    """One grader's verdicts on a set of cases."""

    read: int = 0  # cases expected 1 that it credits
    right: int = 0  # verdicts equal to the expected one
    false_positives: int = 0  # 1 where 0 is expected
    total: int = 0


def tally(grade: Callable[[ChoiceCase], bool | None], cases: list[ChoiceCase]) -> Tally:
    """How ``grade`` fares on ``cases``."""
    result = Tally()
    for case in cases:
        verdict = grade(case)
        result.total += 1
        result.right += verdict == case.expected
        result.read += bool(verdict) and case.expected
        result.false_positives += bool(verdict) and not case.expected
    return result


def graders(source: Source, slime: Path | None) -> dict[str, Callable[[ChoiceCase], bool | None]]:
    """``gpqa``, the source's own reader, and slime's grader when a checkout is given."""
    found: dict[str, Callable[[ChoiceCase], bool | None]] = {
        "gpqa": lambda case: choice_suites.verdict(choice_suites._gpqa, case),
        "its own reader": lambda case: source.reader(case) == case.label,
    }
    if slime is not None:
        grade, _ = choice_suites.slime_grader(slime)
        found["slime compute_gpqa_reward"] = lambda case: choice_suites.verdict(grade, case)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--simple-evals", type=Path, help="an openai/simple-evals checkout")
    parser.add_argument("--slime", type=Path, help="a slime checkout (THUDM/slime)")
    parser.add_argument("--show", type=int, default=20, help="cases to list where gpqa is wrong")
    args = parser.parse_args(argv)
    sources = {"MMLU-ProX (lm-eval)": mmlu_prox()}
    if args.simple_evals:
        sources["simple-evals"] = simple_evals(args.simple_evals.resolve())
    slime = args.slime.resolve() if args.slime else None
    wrong: list[ChoiceCase] = []
    print(f"{'source':<22}{'grader':<28}{'read':>12}{'right':>14}{'false +':>9}")
    for name, source in sources.items():
        expected = sum(c.expected for c in source.cases)
        for grader, grade in graders(source, slime).items():
            result = tally(grade, source.cases)
            print(f"{name:<22}{grader:<28}{result.read:>6} / {expected:<4}"
                  f"{result.right:>6} / {result.total:<6}{result.false_positives:>5}")  # fmt: skip
            if grader == "gpqa":
                wrong += [c for c in source.cases if grade(c) != c.expected]
    print(f"\ngpqa differs from the expected verdict on {len(wrong)} cases")
    for case in wrong[: args.show]:
        print(f"  [{case.suite}] {case.response!r} against {case.label}: expected "
              f"{int(case.expected)}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
