"""``gpqa`` on multiple-choice answers in every language public evaluations write them, beside
the peers' own readers, the cases built at run time from the peers' sources
(``benchmarks/choice_languages.py``; nothing of theirs is copied here):

- MMLU-ProX's answer sentence in each of its 29 languages (the installed lm-eval's task
  templates), after the template's opening, once per option letter A to J;
- simple-evals' localized answer prefixes, each followed by every letter its multilingual MMLU
  maps to A to D (a checkout: ``tests/rr_checkouts.py``).

Each case is also graded against another letter: a 1 there is a false positive.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import rr_benchmarks
from rr_checkouts import SIMPLE_EVALS, SLIME, checkout


@pytest.fixture(scope="module")
def languages() -> Any:
    for needed in ("external_suites", "choice_suites"):  # what it imports, loaded the same way
        rr_benchmarks.load(needed)
    return rr_benchmarks.load("choice_languages")


def _mmlu_prox(module: Any) -> Any:
    pytest.importorskip(
        "lm_eval", reason="MMLU-ProX's templates are lm-eval's: pip install lm-eval"
    )
    return module.mmlu_prox()


def _simple_evals(module: Any) -> Any:
    return module.simple_evals(checkout(SIMPLE_EVALS))


SOURCES = [
    # (how the source is built, the cases it must give, the cases each names a letter)
    pytest.param(_mmlu_prox, 29 * 10, id="mmlu_prox_29_languages"),
    pytest.param(_simple_evals, 41 * 16, id="simple_evals_prefixes_and_letters"),
]


@pytest.mark.parametrize(("build", "stated"), SOURCES)
def test_gpqa_reads_every_answer_its_source_reads_and_credits_no_other_letter(
    languages: Any, build: Callable[[Any], Any], stated: int
) -> None:
    source = build(languages)
    assert sum(case.expected for case in source.cases) == stated
    own = languages.tally(lambda case: source.reader(case) == case.label, source.cases)
    gpqa = languages.graders(source, None)["gpqa"]
    ours = languages.tally(gpqa, source.cases)
    assert (own.read, own.false_positives) == (stated, 0)  # the source reads its own cases
    assert [c.response for c in source.cases if c.expected and not gpqa(c)] == []
    assert (ours.read, ours.right, ours.false_positives) == (stated, ours.total, 0)


@pytest.mark.parametrize(("build", "stated"), SOURCES)
def test_gpqa_reads_as_many_as_slime_and_makes_no_false_positive(
    languages: Any, build: Callable[[Any], Any], stated: int
) -> None:
    source = build(languages)
    root = checkout(SLIME)
    graders = languages.graders(source, Path(root))
    ours = languages.tally(graders["gpqa"], source.cases)
    theirs = languages.tally(graders["slime compute_gpqa_reward"], source.cases)
    print(f"gpqa {ours}; slime {theirs}")
    assert ours.read >= theirs.read
    assert ours.false_positives == 0
