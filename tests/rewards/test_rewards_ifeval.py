"""``ifeval``: IFEval rows graded through a router and compared with lm-eval's own
``process_results`` (its task's scoring entry point) on the same rows."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import nltk
import pytest

from rewardrouter import ConfigError, RewardError
from rewardrouter.rewards import ifeval

NO_COMMA = "punctuation:no_comma"
WORDS = "length_constraints:number_words"
QUOTED = "startend:quotation"
LOWER = "change_case:english_lowercase"

ROWS = [
    # follows both
    pytest.param(
        "one two three four five six",
        [NO_COMMA, WORDS],
        [{}, {"relation": "at least", "num_words": 5}],
        id="both",
    ),
    # a comma and too few words
    pytest.param(
        "one, two", [NO_COMMA, WORDS], [{}, {"relation": "at least", "num_words": 5}], id="neither"
    ),
    # quoted only after a first line: strict fails, loose (first line dropped) passes
    pytest.param('Here it is:\n"all quoted"', [QUOTED], [{}], id="loose_only"),
    # lower case, checked with language detection
    pytest.param(
        "this is all in lower case english text", [LOWER, NO_COMMA], [{}, {}], id="lowercase"
    ),
    pytest.param("This Has Capitals, and a comma", [LOWER, NO_COMMA], [{}, {}], id="capitals"),
    # a JSON-string label with null kwargs, as the IFEval data stores them
    pytest.param(
        "a reply without commas",
        [NO_COMMA, WORDS],
        [{"num_words": None}, {"relation": "less than", "num_words": 10}],
        id="null_kwargs",
    ),
]


def router_for(make_router: Any, **kwargs: Any) -> Any:
    return make_router(
        {"routes": {"ifeval": {"rewards": {"follows": {"kind": "ifeval", "kwargs": kwargs}}}}}
    )


def row(
    response: str, ids: list[str], kwargs: list[dict[str, Any]], as_json: bool = False
) -> dict[str, Any]:
    label: Any = {"instruction_id_list": ids, "kwargs": kwargs}
    return {
        "prompt": "Write.",
        "response": response,
        "label": json.dumps(label) if as_json else label,
        "metadata": {"dataset": "ifeval"},
    }


@pytest.mark.parametrize(("response", "ids", "kwargs"), ROWS)
def test_matches_lm_eval_process_results(
    make_router: Any, response: str, ids: list[str], kwargs: list[dict[str, Any]]
) -> None:
    doc = {"key": 1, "instruction_id_list": ids, "prompt": "Write.", "kwargs": kwargs}
    theirs = ifeval.checks().process_results(doc, [response])
    ours = {}
    for mode in ("strict", "loose"):
        for score in ("all", "fraction"):
            router = router_for(make_router, mode=mode, score=score)
            ours[mode, score] = router.score_sync([row(response, ids, kwargs, as_json=True)])[
                0
            ].reward
    assert ours["strict", "all"] == float(theirs["prompt_level_strict_acc"])
    assert ours["loose", "all"] == float(theirs["prompt_level_loose_acc"])
    strict, loose = theirs["inst_level_strict_acc"], theirs["inst_level_loose_acc"]
    assert ours["strict", "fraction"] == pytest.approx(sum(strict) / len(strict))
    assert ours["loose", "fraction"] == pytest.approx(sum(loose) / len(loose))


def test_hand_scored(make_router: Any) -> None:
    # what a reader checks by eye, independent of lm-eval's own outputs
    router = router_for(make_router, score="fraction")
    rows = [
        row(
            "one two three four five six",
            [NO_COMMA, WORDS],
            [{}, {"relation": "at least", "num_words": 5}],
        ),
        row("one, two", [NO_COMMA, WORDS], [{}, {"relation": "at least", "num_words": 5}]),
        row("short, and fine", [NO_COMMA, WORDS], [{}, {"relation": "less than", "num_words": 5}]),
    ]
    assert [r.reward for r in router.score_sync(rows)] == [1.0, 0.0, 0.5]


def test_one_instruction_as_a_term(make_router: Any) -> None:
    terms = {
        "follows": {"kind": "ifeval"},
        "no_comma": {"kind": "ifeval", "weight": 0.0, "kwargs": {"score": NO_COMMA}},
    }
    router = make_router({"routes": {"ifeval": {"rewards": terms}}})
    with_comma = row("a, b", [NO_COMMA], [{}])
    other = row("ALL CAPS", [LOWER], [{}])
    first, second = router.score_sync([with_comma, other])
    assert first.terms == {"follows": 0.0, "no_comma": 0.0}
    assert second.terms == {"follows": 0.0, "no_comma": None}  # not asked for: not applicable


def test_thinking_is_not_checked(make_router: Any) -> None:
    router = router_for(make_router)
    response = "<think>Hmm, commas, commas.</think>no commas here"
    assert router.score_sync([row(response, [NO_COMMA], [{}])])[0].reward == 1.0


def test_sentence_counts_need_punkt_data(make_router: Any) -> None:
    router = router_for(make_router)
    sample = row(
        "One. Two. Three.",
        ["length_constraints:number_sentences"],
        [{"relation": "at least", "num_sentences": 2}],
    )
    try:
        nltk.data.find("tokenizers/punkt_tab")
    except LookupError:
        with pytest.raises(RewardError, match=r"python -m nltk.downloader punkt_tab"):
            router.score_sync([sample])
    else:
        assert router.score_sync([sample])[0].reward == 1.0


BAD_LABELS = [
    pytest.param({"answer": 1}, "no `instruction_id_list`", id="no_instructions"),
    pytest.param(
        {"instruction_id_list": ["punctuation:no_comas"], "kwargs": [{}]},
        "did you mean",
        id="typo_id",
    ),
    pytest.param(
        {"instruction_id_list": [NO_COMMA], "kwargs": []},
        "1 instructions but 0 kwargs",
        id="unpaired",
    ),
]


@pytest.mark.parametrize(("label", "message"), BAD_LABELS)
def test_bad_labels_are_errors_naming_the_sample(
    make_router: Any, label: Any, message: str
) -> None:
    router = router_for(make_router)
    sample = {"response": "text", "label": label, "metadata": {"dataset": "ifeval"}}
    with pytest.raises(RewardError, match=rf"sample 0(.|\n)*{message}"):
        router.score_sync([sample])


def test_unknown_instruction_as_score_is_a_config_error(make_router: Any) -> None:
    with pytest.raises(ConfigError, match=r"kwargs.score(.|\n)*punctuation:no_comma"):
        router_for(make_router, score="punctuation:no_comas")


@pytest.mark.parametrize("module", ifeval.EXTRA_MODULES)
def test_missing_extra_names_the_install_line(
    make_router: Any, monkeypatch: pytest.MonkeyPatch, module: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # what `import` then refuses, find_spec too
    with pytest.raises(ConfigError, match=rf"{module}(.|\n)*pip install 'rewardrouter\[ifeval\]'"):
        router_for(make_router)


def test_instruction_ids_read_from_source_are_the_registrys() -> None:
    # read without importing lm-eval (compile stays fast); the registry itself is the truth
    imported = ifeval.checks().instructions_registry.INSTRUCTION_DICT
    assert ifeval.registry_source_ids() == frozenset(imported)


def test_compiling_imports_nothing_of_lm_eval_and_the_first_row_does() -> None:
    code = (
        "import sys, rewardrouter\n"
        "term = {'kind': 'ifeval', 'kwargs': {'score': 'punctuation:no_comma'}}\n"
        "r = rewardrouter.compile_router({'default_route': 'i', 'routes': {'i': {'rewards': "
        "{'t': term}}}})\n"
        "heavy = {'lm_eval', 'nltk', 'langdetect'}\n"
        "assert not heavy & set(sys.modules), heavy & set(sys.modules)\n"
        "label = {'instruction_id_list': ['punctuation:no_comma'], 'kwargs': [{}]}\n"
        "assert r.score_sync([{'response': 'a, b', 'label': label}]).rewards == [0.0]\n"
        "assert heavy <= set(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_the_first_rows_checked_at_once_see_every_language_profile() -> None:
    # langdetect loads its profiles on first use and is not thread-safe while it does: rows
    # scored together in a fresh process, as a trainer's first batch is, must all be judged
    # with every profile loaded, and the same way each run.
    code = (
        "import rewardrouter\n"
        "term = {'kind': 'ifeval'}\n"
        "r = rewardrouter.compile_router({'default_route': 'i', 'routes': {'i': {'rewards': "
        "{'t': term}}}})\n"
        "label = {'instruction_id_list': ['change_case:english_lowercase'], 'kwargs': [{}]}\n"
        "rows = [{'response': 'the sea is wide and blue and never still', 'label': label}] * 32\n"
        "rewards = r.score_sync(rows).rewards\n"
        "assert rewards == [1.0] * 32, rewards\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
