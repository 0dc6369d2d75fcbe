"""``ifeval``: responses a policy would write to pass an instruction it does not follow, or to
stall the checks that grade it.

Each hostile response is scored in one batch beside an honest response to the same row, through
a router compiled from a config with ``kind: ifeval`` (its checks in worker processes, as
``executor: auto`` puts them): the hostile one earns 0.0, or its own ``timeout`` status within
about its term's timeout; the honest one earns 1.0; the batch is scored. Where lm-eval's own
check passes the hostile response, the row says so: this kind departs from it there (see the
module docstring of :mod:`rewardrouter.rewards.ifeval`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any, cast

import pytest

from rewardrouter import Router, compile_router
from rewardrouter.rewards.ifeval import kind as ifeval

from .conftest import Canary, score_between_honest_rows

pytestmark = pytest.mark.slow  # a long file: `make test` starts it first

#: An instruction id of lm-eval's IFEval registry and its kwargs.
Instruction = tuple[str, dict[str, Any]]
#: A row of :data:`HOSTILE`: the route (strict, loose, unbounded), the instruction, the hostile
#: response and the honest one.
Case = tuple[str, Instruction, str, str]

PLACEHOLDERS: Instruction = ("detectable_content:number_placeholders", {"num_placeholders": 2})
TITLE: Instruction = ("detectable_format:title", {})
POSTSCRIPT: Instruction = ("detectable_content:postscript", {"postscript_marker": "P.S."})
JSON: Instruction = ("detectable_format:json_format", {})
NO_COMMA: Instruction = ("punctuation:no_comma", {})
GERMAN: Instruction = ("language:response_language", {"language": "de"})
CAPITAL: Instruction = ("change_case:english_capital", {})
LOWER: Instruction = ("change_case:english_lowercase", {})
FORBIDDEN: Instruction = ("keywords:forbidden_words", {"forbidden_words": ["secret"]})
WORDS: Instruction = ("length_constraints:number_words", {"relation": "at least", "num_words": 20})
OPTIONS: Instruction = ("detectable_format:constrained_response", {})
FEW_E: Instruction = (
    "keywords:letter_frequency",
    {"letter": "e", "let_frequency": 3, "let_relation": "less than"},
)
FEW_APPLES: Instruction = (
    "keywords:frequency",
    {"keyword": "apple", "frequency": 3, "relation": "less than"},
)

#: Each route's term timeout, in seconds: a hostile sample's status arrives within about this.
TIMEOUTS = {"strict": 5.0, "loose": 5.0, "unbounded": 2.0}
#: What a batch may take beyond its term's timeout on a loaded machine (a killed worker's
#: replacement, the honest sample after it).
SLACK = 4.0

HONEST_GERMAN = "Guten Tag, wie geht es Ihnen heute? Das Wetter ist schön."
FRENCH = "Bonjour tout le monde, comment allez-vous aujourd'hui ?"
HONEST_CAPITALS = "HELLO THERE, HOW ARE YOU DOING TODAY MY FRIEND?"

HOSTILE = [
    # -- stalls: lm-eval's placeholder regex is quadratic in a run of `[` (54 s and more on
    # 100,000 of them, the event loop frozen); past max_chars nothing is checked
    pytest.param(
        "strict",
        PLACEHOLDERS,
        "[" * 100_000,
        "Dear [name], we meet at [place].",
        id="placeholders_100k_open_brackets_past_the_bound",
    ),
    # no bound: the worker process is killed at the term's deadline, its sample alone timed out
    pytest.param(
        "unbounded",
        PLACEHOLDERS,
        "[" * 100_000,
        "Dear [name], we meet at [place].",
        id="placeholders_100k_open_brackets_killed_at_the_deadline",
    ),
    pytest.param(
        "unbounded",
        TITLE,
        "<" * 100_000,
        "<<A Title>>\nThe text.",
        id="title_100k_open_angles_killed_at_the_deadline",
    ),
    # within the bound, loose mode checks up to eight variants of the text: tens of seconds
    pytest.param(
        "loose",
        PLACEHOLDERS,
        "[\n" + "[" * 19_996 + "\n[",
        "Dear [name], we meet at [place].",
        id="loose_placeholders_within_the_bound_killed_at_the_deadline",
    ),
    # the bound never passes what it did not check: this postscript is there, 100,000 spaces in
    pytest.param(
        "strict",
        POSTSCRIPT,
        " " * 100_000 + "P.S. see you",
        "Thanks.\nP.S. see you",
        id="postscript_after_100k_spaces_past_the_bound",
    ),
    # -- lm-eval raises RecursionError on deep nesting, which failed the whole batch
    pytest.param(
        "strict", JSON, "[" * 9_000 + "]" * 9_000, '{"a": [1, 2]}', id="json_nested_9000_deep"
    ),
    pytest.param(
        "unbounded",
        JSON,
        "```json\n" + "[" * 100_000 + "]" * 100_000 + "\n```",
        '```json\n{"a": [1, 2]}\n```',
        id="json_nested_100k_deep_in_a_fence",
    ),
    pytest.param(
        "strict",
        JSON,
        'Here it is: {"a": 1}',
        '{"a": 1}',
        id="json_after_a_preamble",
    ),
    # -- no language detected: lm-eval counts langdetect's failure as followed
    pytest.param("strict", GERMAN, "1234567890 42", HONEST_GERMAN, id="language_digits"),
    pytest.param("strict", GERMAN, "!!! ??? ... --- ***", HONEST_GERMAN, id="language_punctuation"),
    pytest.param("strict", GERMAN, "🙂🎉👍", HONEST_GERMAN, id="language_emoji"),
    pytest.param("strict", GERMAN, " \n\t ", HONEST_GERMAN, id="language_whitespace"),
    pytest.param(
        "loose", GERMAN, f"{FRENCH}\n12345", HONEST_GERMAN, id="language_loose_digits_last_line"
    ),
    pytest.param("strict", GERMAN, FRENCH, HONEST_GERMAN, id="language_another_one"),
    # Armenian capitals: upper case, and langdetect has no Armenian profile
    pytest.param("strict", CAPITAL, "ԲԱՐԵՒ ՁԵԶ", HONEST_CAPITALS, id="capitals_in_armenian"),
    pytest.param(
        "strict",
        LOWER,
        "ceci est une phrase en français",
        "this is all in lower case english text",
        id="lowercase_in_french",
    ),
    # -- hidden characters: what a reader sees is what is checked
    pytest.param(
        "strict", NO_COMMA, "Yes\uff0cno\uff0cmaybe", "Yes and no", id="no_comma_fullwidth"
    ),
    pytest.param("strict", NO_COMMA, "Yes\u3001no", "Yes and no", id="no_comma_ideographic"),
    pytest.param(
        "strict",
        FORBIDDEN,
        "The s\u200becret is out.",
        "The news is out.",
        id="forbidden_word_split_by_a_zero_width_space",
    ),
    pytest.param(
        "strict",
        FORBIDDEN,
        "The se\u00adcret is out.",
        "The news is out.",
        id="forbidden_word_split_by_a_soft_hyphen",
    ),
    pytest.param(
        "strict",
        WORDS,
        "\u200b".join("abcdefghijklmnopqrstuvwxyz"),
        " ".join(["word"] * 20),
        id="word_count_padded_with_zero_width_spaces",
    ),
    # -- look-alike letters and commas: what a reader sees as the word or the comma is one
    pytest.param(
        "strict",
        FORBIDDEN,
        "The s\u0435cret is out.",  # a Cyrillic e
        "The news is out.",
        id="forbidden_word_with_a_cyrillic_letter",
    ),
    pytest.param(
        "strict",
        FORBIDDEN,
        "The \uff53\uff45\uff43\uff52\uff45\uff54 is out.",
        "The news is out.",
        id="forbidden_word_in_fullwidth_letters",
    ),
    pytest.param(
        "strict",
        FEW_E,
        "Th\u0435 tr\u0435\u0435 is gr\u0435\u0435n today.",
        "A dry day.",
        id="letters_counted_past_cyrillic_look_alikes",
    ),
    pytest.param(
        "strict",
        FEW_APPLES,
        "I like apple, \u0430pple, \u0430pple and \u0430pple pie.",
        "I like apple pie.",
        id="keyword_counted_past_cyrillic_look_alikes",
    ),
    pytest.param(
        "strict", NO_COMMA, "Yes\u201a no\u201a maybe", "Yes and no", id="no_comma_low_quote"
    ),
    pytest.param("strict", NO_COMMA, "Yes\u00b8 no maybe", "Yes and no", id="no_comma_cedilla"),
    pytest.param(
        "strict", NO_COMMA, "Yes\u066b no maybe", "Yes and no", id="no_comma_arabic_decimal_mark"
    ),
    # -- hedging: every option of a constrained response at once
    pytest.param(
        "strict",
        OPTIONS,
        "My answer is yes. My answer is no. My answer is maybe.",
        "My answer is no.",
        id="every_option_at_once",
    ),
    pytest.param(
        "loose",
        OPTIONS,
        "My answer is yes.\nMy answer is no.",
        "Sure.\nMy answer is no.",
        id="every_option_at_once_on_lines_loose_would_drop",
    ),
    pytest.param(
        "strict",
        OPTIONS,
        "My answer is yes. My answer is No.",
        "My answer is no.",
        id="two_options_in_two_cases",
    ),
    pytest.param(
        "strict",
        OPTIONS,
        "My answer is yes. (If not, my answer is no)",
        "My answer is no.",
        id="a_second_option_in_parentheses",
    ),
    # -- what is checked is the answer, not the thinking
    pytest.param(
        "strict",
        GERMAN,
        f"<think>{HONEST_GERMAN}</think>",
        f"<think>Hmm.</think>{HONEST_GERMAN}",
        id="answer_left_in_the_thinking",
    ),
    pytest.param("strict", NO_COMMA, "", "Yes and no", id="empty_response"),
]


@pytest.fixture(scope="module")
def router() -> Iterator[Router]:
    def route(timeout: float, **settings: Any) -> dict[str, Any]:
        return {"rewards": {"follows": {"kind": "ifeval", "kwargs": settings, "timeout": timeout}}}

    config = {
        "executors": {"process": {"workers": 2}},
        "routes": {
            "strict": route(TIMEOUTS["strict"]),
            "loose": route(TIMEOUTS["loose"], mode="loose"),
            "unbounded": route(TIMEOUTS["unbounded"], max_chars=None),
        },
    }
    with compile_router(config) as built:
        # the worker pool starts here (seconds of imports), not inside a timed batch
        assert built.score_sync([row("strict", NO_COMMA, "Yes and no")]).rewards == [1.0]
        yield built


def row(route: str, instruction: Instruction, response: str) -> dict[str, Any]:
    name, kwargs = instruction
    label = {"instruction_id_list": [name], "kwargs": [kwargs]}
    return {
        "prompt": "Write.",
        "response": response,
        "label": label,
        "metadata": {"dataset": route},
    }


def test_the_checks_run_in_worker_processes(router: Router) -> None:
    # auto puts them where a deadline can kill them: the premise of every stall case below
    assert {term.executor for r in router.routes.values() for term in r.terms} == {"process"}


@pytest.mark.parametrize(("route", "instruction", "hostile", "honest"), HOSTILE)
def test_hostile_response_earns_nothing(
    router: Router,
    canary: Canary,
    route: str,
    instruction: Instruction,
    hostile: str,
    honest: str,
) -> None:
    bad = score_between_honest_rows(
        router,
        canary,
        row(route, instruction, honest),
        row(route, instruction, hostile),
        TIMEOUTS[route] + SLACK,
    )
    assert (bad.reward, bad.status) in ((0.0, "ok"), (None, "timeout")), bad.error_message


def test_one_batch_of_every_hostile_response_is_scored(router: Router) -> None:
    # all at once, as a trainer's batch would hold them: every honest row right, every
    # hostile one 0.0 or its own timeout, in about the longest term timeout
    cases = [cast(Case, param.values) for param in HOSTILE]
    rows = [row(route, instruction, text) for route, instruction, _, text in cases]
    rows += [row(route, instruction, text) for route, instruction, text, _ in cases]
    begun = time.monotonic()
    batch = router.score_sync(rows, failures="record")
    took = time.monotonic() - begun
    honest, hostile = batch[: len(cases)], batch[len(cases) :]
    assert [r.reward for r in honest] == [1.0] * len(cases)
    assert all((r.reward, r.status) in ((0.0, "ok"), (None, "timeout")) for r in hostile)
    stalls = sum(r.status == "timeout" for r in hostile)
    # two workers: the stalls take their deadlines side by side at worst
    assert took < stalls * max(TIMEOUTS.values()) + SLACK, f"the batch took {took:.1f} s"


def test_lm_eval_passes_the_rows_that_this_kind_departs_from() -> None:
    # the departures are real: lm-eval's own verdict on these hostile responses is "followed"
    passed = {
        "language_digits",
        "language_punctuation",
        "language_emoji",
        "language_loose_digits_last_line",
        "capitals_in_armenian",
        "no_comma_fullwidth",
        "no_comma_ideographic",
        "forbidden_word_split_by_a_zero_width_space",
        "forbidden_word_split_by_a_soft_hyphen",
        "word_count_padded_with_zero_width_spaces",
        "every_option_at_once",
        "every_option_at_once_on_lines_loose_would_drop",
        "forbidden_word_with_a_cyrillic_letter",
        "forbidden_word_in_fullwidth_letters",
        "letters_counted_past_cyrillic_look_alikes",
        "keyword_counted_past_cyrillic_look_alikes",
        "no_comma_low_quote",
        "no_comma_cedilla",
        "no_comma_arabic_decimal_mark",
        "two_options_in_two_cases",
        "a_second_option_in_parentheses",
    }
    assert passed <= {p.id for p in HOSTILE}  # a renamed case is not silently dropped here
    checks = ifeval.checks()
    for param in HOSTILE:
        if param.id not in passed:
            continue
        route, (name, kwargs), hostile, _ = cast(Case, param.values)
        doc = {"key": 1, "instruction_id_list": [name], "prompt": "Write.", "kwargs": [kwargs]}
        mode = "loose" if route == "loose" else "strict"
        results = checks.process_results(doc, [hostile])
        assert results[f"prompt_level_{mode}_acc"], param.id
