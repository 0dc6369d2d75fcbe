"""``judge``: an LLM judge on a real chat-completions server on 127.0.0.1.

The server's judge reads the number the tests hid in each response ("quality 7") and answers in
the shape the parser under test expects, so every expected reward is known in advance.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from rr_remote import Reply, ScriptedServer, Seen

from rewardrouter import ConfigError, RewardError
from rewardrouter.cli.check import check_examples
from rewardrouter.cli.paths import conf_dir
from rewardrouter.config import JobConfig, to_container, validate
from rewardrouter.rewards.judge import JudgeSettings, UnreadableScore, read_score

RUBRIC = "Rate 0-10.\nQuestion: {prompt}\nReference: {label}\nAnswer: {response}"


def completion(content: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
    }


def hidden_quality(seen: Seen) -> str:
    """The number after "quality" in the rubric the server received."""
    user = seen.body["messages"][-1]["content"]
    found = re.search(r"quality (-?\d+)", user)
    return found.group(1) if found else "none"


SHAPES: dict[str, Callable[[str], str]] = {
    "number": lambda q: f"The answer is partly right. Score: {q}/10",
    "tag": lambda q: f"Some thoughts.\n<score>{q}</score>",
    "json": lambda q: f'Verdict: {{"score": {q}, "reason": "fine"}}',
    "mt_bench": lambda q: f"Accurate, if brief; 2 steps lack detail. Rating: [[{q}]]",
    "prometheus": lambda q: f"Feedback: the steps hold, 1 is unexplained. [RESULT] {q}",
}


@pytest.fixture
def judge_server() -> Iterator[Callable[..., ScriptedServer]]:
    started: list[ScriptedServer] = []

    def start(shape: str = "number", fail_first: int = 0, status: int = 503) -> ScriptedServer:
        def script(seen: Seen, attempt: int) -> Reply:
            if attempt < fail_first:
                return Reply({"error": "busy"}, status=status)
            return Reply(completion(SHAPES[shape](hidden_quality(seen))), delay=0.02)

        server = ScriptedServer(script)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def judge_router(make_router: Any, server: ScriptedServer, **kwargs: Any) -> Any:
    settings = {"url": server.url("/v1"), "model": "judge-7b", "template": RUBRIC, "backoff": 0.01}
    term: dict[str, Any] = {"kind": "judge", "kwargs": {**settings, **kwargs}}
    if "on_error" in kwargs:
        term["on_error"] = term["kwargs"].pop("on_error")
    return make_router({"routes": {"chat": {"rewards": {"judge": term}}}})


def rows(*responses: str, prompt: Any = "What is 2+2?", label: Any = "4") -> list[dict[str, Any]]:
    return [
        {
            "prompt": prompt,
            "response": r,
            "label": label,
            "metadata": {"dataset": "chat", "topic": "math"},
        }
        for r in responses
    ]


@pytest.mark.parametrize("shape", list(SHAPES))
def test_parsers(make_router: Any, judge_server: Any, shape: str) -> None:
    server = judge_server(shape)
    router = judge_router(make_router, server, parser=shape)
    results = router.score_sync(rows("quality 7", "quality 0", "quality 10"))
    assert [r.reward for r in results] == [pytest.approx(0.7), 0.0, 1.0]


def test_request_is_a_chat_completion(make_router: Any, judge_server: Any) -> None:
    server = judge_server()
    router = judge_router(
        make_router, server, system="You are strict.", temperature=0.3, extra_body={"seed": 1}
    )
    router.score_sync(rows("<think>draft quality 1</think>quality 6"))
    [seen] = server.seen
    assert seen.path == "/v1/chat/completions"
    assert seen.body["model"] == "judge-7b"
    assert (seen.body["temperature"], seen.body["seed"]) == (0.3, 1)
    assert seen.body["messages"] == [
        {"role": "system", "content": "You are strict."},
        {
            "role": "user",
            "content": "Rate 0-10.\nQuestion: What is 2+2?\nReference: 4\nAnswer: quality 6",
        },
    ]


def test_jinja_template_with_chat_prompt_and_metadata(make_router: Any, judge_server: Any) -> None:
    server = judge_server()
    template = "{% if metadata.topic == 'math' %}Math. {% endif %}{{ prompt }} => {{ response }}"
    router = judge_router(make_router, server, template=template, template_format="jinja")
    chat = [{"role": "user", "content": "2+2?"}]
    assert router.score_sync(rows("quality 5", prompt=chat))[0].reward == pytest.approx(0.5)
    assert server.seen[0].body["messages"][0]["content"] == "Math. user: 2+2? => quality 5"


def test_identical_requests_are_judged_once(make_router: Any, judge_server: Any) -> None:
    server = judge_server()
    router = judge_router(make_router, server)
    group = rows("quality 3", "quality 3", "quality 8", "quality 3", "quality 8")
    assert [r.reward for r in router.score_sync(group)] == pytest.approx([0.3, 0.3, 0.8, 0.3, 0.8])
    assert len(server.seen) == 2
    router.score_sync(group)  # a later batch: answered from the cache
    assert len(server.seen) == 2


def test_cache_can_be_switched_off(make_router: Any, judge_server: Any) -> None:
    server = judge_server()
    router = judge_router(make_router, server, cache_size=0)
    router.score_sync(rows("quality 3"))
    router.score_sync(rows("quality 3"))
    assert len(server.seen) == 2


def test_concurrency_cap(make_router: Any, judge_server: Any) -> None:
    server = judge_server()
    router = judge_router(make_router, server, concurrency=2)
    router.score_sync(rows(*(f"quality {i % 11} #{i}" for i in range(12))))
    assert len(server.seen) == 12
    assert server.in_flight_max <= 2


def test_retries_a_busy_server(make_router: Any, judge_server: Any) -> None:
    server = judge_server(fail_first=2)
    router = judge_router(make_router, server)
    assert router.score_sync(rows("quality 9"))[0].reward == pytest.approx(0.9)
    assert len(server.seen) == 3


def test_no_retry_on_a_rejected_request(make_router: Any, judge_server: Any) -> None:
    server = judge_server(fail_first=5, status=400)
    router = judge_router(make_router, server)
    with pytest.raises(RewardError, match="4xx reply: not retried"):
        router.score_sync(rows("quality 9"))
    assert len(server.seen) == 1


BAD_VERDICTS = [
    pytest.param("quality 11", "outside [0, 10]", id="out_of_range"),
    pytest.param("quality none", "no number in the reply", id="unreadable"),
]


@pytest.mark.parametrize(("response", "message"), BAD_VERDICTS)
def test_bad_verdict_is_invalid_not_a_reward(
    make_router: Any, judge_server: Any, response: str, message: str
) -> None:
    server = judge_server()
    router = judge_router(make_router, server, on_error={"value": 0.0})
    result = router.score_sync(rows(response))[0]
    assert (result.status, result.reward) == ("invalid", 0.0)
    assert message in (result.error_message or "")


def test_credential_is_sent_and_never_shown(
    make_router: Any, judge_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_KEY", "sk-judge-secret")
    server = judge_server(fail_first=5, status=401)
    router = judge_router(make_router, server, auth_env="JUDGE_KEY")
    with pytest.raises(RewardError) as error:
        router.score_sync(rows("quality 1"))
    assert server.seen[0].headers["Authorization"] == "Bearer sk-judge-secret"
    assert "sk-judge-secret" not in str(error.value)


SETTINGS_ERRORS = [
    pytest.param({"template": "Rate {answer}"}, "names answer", id="unknown_field"),
    pytest.param(
        {"template": "Rate {prompt}"}, "never shows the judge the response", id="no_response"
    ),
    pytest.param(
        {"template": "{{ response", "template_format": "jinja"}, "does not parse", id="jinja_syntax"
    ),
    pytest.param({"min": 5, "max": 5}, "must be below", id="empty_range"),
    # the rubric's scale is the term's: a 1-5 rubric read on 0-10 would make 4 of 5 read 0.4
    pytest.param(
        {"template": "Rate the answer from 1 to 5.\n{response}"},
        "the rubric asks for scores 1 to 5, but the term's scale is min 0, max 10; set `min: 1`",
        id="rubric_on_another_scale",
    ),
    pytest.param(
        {"template": "Give it a score out of 100.\n{response}"},
        "the rubric asks for scores 0 to 100",
        id="rubric_out_of_another_top",
    ),
    pytest.param({"parsr": "tag"}, "kwargs.parsr", id="typo"),
    pytest.param({"auth_env": "NOT_SET_ANYWHERE"}, "is not set or empty", id="credential_unset"),
]


@pytest.mark.parametrize(("kwargs", "message"), SETTINGS_ERRORS)
def test_settings_errors_at_compile_time(
    make_router: Any, judge_server: Any, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as error:
        judge_router(make_router, judge_server(), **kwargs)
    assert "routes.chat.rewards.judge.kwargs" in str(error.value)


READS = [
    pytest.param("Score: 7/10", "number", 7.0, id="fraction_reads_numerator"),
    pytest.param("Score: 7 out of 10", "number", 7.0, id="out_of_reads_numerator"),
    pytest.param("I give it 8.5", "number", 8.5, id="decimal"),
    pytest.param(
        "The 2 answers differ.\nScore: 6.\nThanks!", "number", 6.0, id="last_line_with_a_number"
    ),
    pytest.param(
        "<score>4</score> and again <score> 4.0 </score>", "tag", 4.0, id="tags_that_agree"
    ),
    pytest.param("<score><score>3</score>", "tag", 3.0, id="innermost_tag"),
    pytest.param("Format: <score>N</score>\n<score>5</score>", "tag", 5.0, id="rubric_placeholder"),
    pytest.param('{"why": "a } brace", "score": 2}', "json", 2.0, id="json_brace_in_string"),
    pytest.param('a set {1, 2 and {"score": 3}', "json", 3.0, id="json_after_stray_brace"),
    pytest.param('{"score": "9"}', "json", 9.0, id="json_numeric_string"),
    pytest.param(
        "I thought <score>1</score></think><score>8</score>", "tag", 8.0, id="after_thinking"
    ),
    pytest.param("<f>Score: 10</f>\nScore: 3", "number", 3.0, id="fenced_quote_skipped"),
    pytest.param("Score: 3\n<f>\nScore: 10", "number", 3.0, id="unclosed_fence_skipped"),
]


# The forms a judge writes a score in, each read the one way and refused the other (the table
# of forms x parsers in rewardrouter/rewards/judge/parse.py), on the scale 0-10:
# ``(form, parser, a reply in that form and its score, the form gone wrong and why)``.
FORMS = [
    ("labelled", "number", ("Fine overall.\nScore: 7", 7.0), ("Score: 7\nScore: 4", "ambiguous")),
    (
        "labelled_markdown",
        "number",
        ("**Final rating:** 6", 6.0),
        ("**Rating:** 6, **Rating:** 9", "ambiguous"),
    ),
    # the numbers of the explanation are not scores once one is labelled
    (
        "labelled_then_explained",
        "number",
        ("Score: 7\nThe 2 slips cost 3 points.", 7.0),
        ("7\nThe 2 slips cost 3 points.", "ambiguous"),
    ),
    (
        "last_line",
        "number",
        ("Mostly right.\nI give it 8.5", 8.5),
        ("I give it 8.5 or 9", "ambiguous"),
    ),
    ("fraction", "number", ("Score: 7/10", 7.0), ("Score: 7/5", "the scale tops at 10")),
    ("out_of", "number", ("7 out of 10", 7.0), ("7 out of 100", "the scale tops at 10")),
    ("percent", "number", ("Score: 85%", 8.5), ("Score: 120%", "outside 0-100%")),
    (
        "percent_word",
        "number",
        ("I'd say 60 percent.", 6.0),
        ("I'd say 60 percent, or 70 percent.", "ambiguous"),
    ),
    ("scale_note", "number", ("Score: 7 (0-10)", 7.0), ("Score: 7 (0-5)", "grades on 0-5")),
    ("scale_out_of", "number", ("7 (out of 10)", 7.0), ("7 (out of 5)", "grades on 0-5")),
    (
        "scale_phrase",
        "number",
        ("I rate it 7 on a scale of 0 to 10.", 7.0),
        ("I rate it 4 on a scale of 1 to 5.", "grades on 1-5"),
    ),
    ("one_score_not_a_range", "number", ("Score: 8", 8.0), ("Score: 7-8", "a range")),
    ("tag", "tag", ("<score>7</score>", 7.0), ("<score>7</score> <score>9</score>", "ambiguous")),
    ("tag_fraction", "tag", ("<score>7/10</score>", 7.0), ("<score>7/9</score>", "scale tops")),
    (
        "tag_out_of",
        "tag",
        ("<score>7 out of 10</score>", 7.0),
        ("<score>7 out of 8</score>", "scale tops"),
    ),
    ("tag_percent", "tag", ("<score>85%</score>", 8.5), ("<score>185%</score>", "0-100%")),
    (
        "tag_scale_note",
        "tag",
        ("<score>7 (0-10)</score>", 7.0),
        ("<score>7 (1-5)</score>", "grades on 1-5"),
    ),
    ("tag_range", "tag", ("<score>7</score>", 7.0), ("<score>7 to 8</score>", "a range")),
    ("json", "json", ('{"score": 7}', 7.0), ('{"score": 7} {"score": 8}', "ambiguous")),
    ("json_string", "json", ('{"score": "7/10"}', 7.0), ('{"score": "7-8"}', "a range")),
    ("json_percent", "json", ('{"score": "85%"}', 8.5), ('{"score": "185%"}', "0-100%")),
    # MT-Bench's convention (FastChat): [[N]], its other numbers an explanation
    (
        "mt_bench",
        "mt_bench",
        ("It covers 3 of the 4 cases. Rating: [[6]]", 6.0),
        ("Rating: [[6]]; on reflection [[8]]", "ambiguous"),
    ),
    ("mt_bench_decimal", "mt_bench", ("[[6.5]]", 6.5), ("[[6.5/5]]", "the scale tops at 10")),
    ("mt_bench_words", "mt_bench", ("Rating: [[6]]", 6.0), ("Rating: [[six]]", "not a number")),
    # without [[N]], FastChat's fallback [N]; an index, a link and bracketed words are no score
    (
        "mt_bench_single",
        "mt_bench",
        ("As in x[2], fine. See [docs](u), [1](u). Rating: [6]", 6.0),
        ("Per [2], fine. Rating: [6]", "ambiguous"),
    ),
    # Prometheus' convention: the number after [RESULT], which may name it or wrap it
    (
        "prometheus",
        "prometheus",
        ("Feedback: 2 of the 3 steps hold. [RESULT] 6", 6.0),
        ("[RESULT] 6\n[RESULT] 8", "ambiguous"),
    ),
    ("prometheus_named", "prometheus", ("[Result]: Score: 6", 6.0), ("[RESULT] (6", "closed")),
    ("prometheus_wrapped", "prometheus", ("[RESULT] (6/10)", 6.0), ("[RESULT] 6/7", "scale tops")),
    ("prometheus_marked", "prometheus", ("[RESULT] 6", 6.0), ("Score: 6", "no [RESULT] N")),
    # a score stated in a negated clause is no score: refused, never guessed
    ("negated", "number", ("It earns a 6.", 6.0), ("It does not earn a 6.", "negated clause")),
    (
        "negated_clause_ends",
        "number",
        ("Not flawless, but a 6.", 6.0),
        ("Flawless it is not, nor a 6.", "negated clause"),
    ),
    (
        "negated_beside_a_score",
        "number",
        ("It is a 6, never a 9.", 6.0),
        ("It isn't a 6 or a 9.", "negated clause"),
    ),
]


@pytest.mark.parametrize(
    ("parser", "reply", "score"),
    [pytest.param(parser, *read, id=f"{form}-read") for form, parser, read, _ in FORMS],
)
def test_a_score_form_is_read(parser: Any, reply: str, score: float) -> None:
    assert read_score(reply, parser, top=10) == score


@pytest.mark.parametrize(
    ("parser", "reply", "message"),
    [pytest.param(parser, *wrong, id=f"{form}-refused") for form, parser, _, wrong in FORMS],
)
def test_a_score_form_gone_wrong_is_refused(parser: Any, reply: str, message: str) -> None:
    with pytest.raises(UnreadableScore, match=re.escape(message)):
        read_score(reply, parser, top=10)


def test_a_percentage_is_a_share_of_the_scale() -> None:
    assert read_score("Score: 85%", "number", top=5, bottom=1) == pytest.approx(4.4)
    assert read_score("<score>0%</score>", "tag", top=5, bottom=1) == 1.0


# Replies a judge writes without being asked twice, each a score of 7 on 0-10, through a real
# server: none may be misread, refused, or read as another number with status ok.
ORDINARY_REPLIES = [
    "Score: 7 out of 10",
    "Score: 7\nIt misses 2 of the 3 points the reference makes.",
    "Score: 7 (out of 10). Two minor slips.",
    "I'd give it 70%.",
    "Overall: solid.\n**Score:** 7/10",
    "The answer is mostly right, so 7 on a scale of 0 to 10.",
    "Rating = 7",
]


def test_ordinary_replies_are_read_through_the_router(make_router: Any) -> None:
    def script(seen: Seen, attempt: int) -> Reply:
        index = int(re.search(r"reply (\d+)", seen.body["messages"][-1]["content"]).group(1))  # type: ignore[union-attr]
        return Reply(completion(ORDINARY_REPLIES[index]))

    server = ScriptedServer(script)
    try:
        router = judge_router(make_router, server, on_error={"value": 0.0})
        results = router.score_sync(rows(*(f"reply {i}" for i in range(len(ORDINARY_REPLIES)))))
    finally:
        server.stop()
    assert [(r.status, r.reward) for r in results] == [("ok", pytest.approx(0.7))] * len(
        ORDINARY_REPLIES
    )


@pytest.mark.parametrize(("reply", "parser", "score"), READS)
def test_read_score(reply: str, parser: Any, score: float) -> None:
    assert read_score(reply, parser, fence="f", top=10, placeholders={"N"}) == score


REFUSALS = [
    pytest.param("<score>1</score> then <score>4</score>", "tag", "ambiguous", id="two_tags"),
    pytest.param('{"score": 2} and later {"score": 3}', "json", "ambiguous", id="two_json"),
    pytest.param("7 (3 points off)", "number", "ambiguous", id="two_numbers_on_a_line"),
    pytest.param("Score: 7/5", "number", "the scale tops at 10", id="off_scale_denominator"),
    pytest.param("<score>ten</score>", "tag", "holds 'ten', not a number", id="tag_in_words"),
    pytest.param("<score>\u0661\u0660</score>", "tag", "not a number", id="non_ascii_digits"),
    pytest.param("<score>1e1</score>", "tag", "not a number", id="exponent"),
    pytest.param('{"score": 1e999}', "json", "not a number", id="json_overflow"),
    pytest.param('{"score": true}', "json", "not a number", id="json_bool"),
    pytest.param('{"score": NaN}', "json", "no JSON object", id="json_nan"),
    pytest.param("Score: " + "9" * 60, "number", "on no scale", id="thousand_digits"),
    pytest.param("<score>" + " " * 10_000, "tag", "no <score>N</score>", id="unclosed_tag"),
    pytest.param("{" * 10_000, "json", "no JSON object", id="brace_bomb"),
    pytest.param('{"a": "{' * 3_000, "json", "never balance", id="string_bomb"),
    pytest.param('{"score": ' + "[" * 5_000 + "]" * 5_000 + "}", "json", "no JSON", id="deep_json"),
    pytest.param("<f>Score: 10", "number", "outside the quoted response", id="only_a_quote"),
]


# Replies of max_reply_chars (65,536) built to make a scan go back over what it read; each is
# read in linear time (a search for a scale note once tried every space of a run, reading the
# rest of the run from each: 31 s for 40,000 spaces).
FLOODS = [
    pytest.param("number", "7" + " " * 65_535, id="number_spaces_after_a_score"),
    pytest.param("number", "not 1, " * 9_362, id="number_negated_clauses"),
    pytest.param("number", ". 1" * 21_845, id="number_sentences"),
    pytest.param("number", "7 (0-10) " * 7_281, id="number_scale_notes"),
    pytest.param("mt_bench", "[[" * 32_768, id="mt_bench_unclosed"),
    pytest.param("mt_bench", "[ " * 32_768, id="mt_bench_single_unclosed"),
    pytest.param("mt_bench", "a[1] " * 13_107, id="mt_bench_indices"),
    pytest.param("prometheus", "[RESULT] score " * 4_369, id="prometheus_markers"),
    pytest.param("prometheus", "[RESULT]" + " " * 65_528, id="prometheus_spaces"),
]


@pytest.mark.parametrize(("parser", "reply"), FLOODS)
def test_every_parser_reads_a_flood_in_linear_time(parser: Any, reply: str) -> None:
    started = time.perf_counter()
    with contextlib.suppress(UnreadableScore):
        read_score(reply, parser, top=10)
    assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize(("reply", "parser", "message"), REFUSALS)
def test_read_score_refuses(reply: str, parser: Any, message: str) -> None:
    with pytest.raises(UnreadableScore, match=re.escape(message)):
        read_score(reply, parser, fence="f", top=10)


def test_shipped_judged_examples_pass_against_a_judge(
    judge_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """conf/datasets/judged.yaml, composed by Hydra, its hand-scored examples run by `check`
    against a loopback judge that gives 10 to an answer naming the reference, 0 otherwise."""

    def script(seen: Seen, attempt: int) -> Reply:
        text = seen.body["messages"][-1]["content"]
        reference = re.search(r"Reference answer \(trusted\):\n(.*)", text).group(1)  # type: ignore[union-attr]
        answer = FENCED.search(text).group(2)  # type: ignore[union-attr]
        return Reply(completion(f"Fine.\n<score>{10 if reference in answer else 0}</score>"))

    server = ScriptedServer(script)
    try:
        monkeypatch.setenv("JUDGE_URL", server.url("/v1"))
        with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
            cfg = compose("config", overrides=["datasets=[judged]"])
        checked = check_examples(validate(to_container(cfg), JobConfig).router())
        assert [c.passed for c in checked] == [True, True]
        assert len(server.seen) == 2
    finally:
        server.stop()


#: The fenced response in a rubric: ``<response-HEX>`` line, the response, ``</response-HEX>``.
FENCED = re.compile(r"<(response-[0-9a-f]{16})>\n(.*)\n</\1>", re.S)


def test_fence_is_secret_per_router_and_stable_within_one(
    make_router: Any, judge_server: Any
) -> None:
    server = judge_server()
    fenced = "Rate 0-10.\n<{fence}>\n{response}\n</{fence}>"
    first = judge_router(make_router, server, template=fenced)
    second = judge_router(make_router, server, template=fenced)
    first.score_sync(rows("quality 4"))
    first.score_sync(rows("quality 4", "quality 5"))
    second.score_sync(rows("quality 4"))
    fences = [FENCED.search(seen.body["messages"][-1]["content"]) for seen in server.seen]
    assert [f.group(2) if f else None for f in fences] == ["quality 4", "quality 5", "quality 4"]
    names = [f.group(1) for f in fences if f]
    assert names[0] == names[1] != names[2]


def test_reply_longer_than_the_bound_is_not_read(make_router: Any) -> None:
    def script(seen: Seen, attempt: int) -> Reply:
        padding = " " * 100 if "long" in seen.body["messages"][-1]["content"] else ""
        return Reply(completion(f"{padding}<score>7</score>"))

    server = ScriptedServer(script)
    try:
        router = judge_router(
            make_router, server, parser="tag", max_reply_chars=40, on_error={"value": 0.0}
        )
        short, long = router.score_sync(rows("short", "long"))
    finally:
        server.stop()
    assert short.reward == pytest.approx(0.7)
    assert (long.status, long.reward) == ("invalid", 0.0)
    assert "reply is 116 characters, over `max_reply_chars` (40)" in (long.error_message or "")


ENDPOINTS = [
    pytest.param("http://h:8000/v1", "http://h:8000/v1/chat/completions", id="base"),
    pytest.param("http://h/v1/", "http://h/v1/chat/completions", id="trailing_slash"),
    pytest.param(
        "https://h/openai/deployments/j?api-version=2024-06-01",
        "https://h/openai/deployments/j/chat/completions?api-version=2024-06-01",
        id="query_kept",
    ),
    pytest.param(
        "https://h/v1/chat/completions?api-version=1",
        "https://h/v1/chat/completions?api-version=1",
        id="full_url_as_is",
    ),
]


@pytest.mark.parametrize(("url", "endpoint"), ENDPOINTS)
def test_endpoint_url(url: str, endpoint: str) -> None:
    settings = JudgeSettings(url=url, model="m", template="{response}")
    assert settings.endpoint_url == endpoint
