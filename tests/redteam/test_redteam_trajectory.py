"""Trajectories: conversations a policy (or a broken agent loop) would hand the router to earn a
reward it did not, or to stall or crash the batch.

Each hostile trajectory is scored in one batch between two honest ones, through a router that
grades the final answer (``exact_match``) or the tool calls (``tool_call_format``): it earns 0.0 or
gets its own ``error`` status that says what is wrong without quoting it, the honest rows earn
1.0, and the batch ends within a generous bound.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from rr_trajectory import weather_tool

from rewardrouter import Router, compile_router

from .conftest import Canary, score_between_honest_rows

#: Seconds a batch of three may take on a loaded machine: validation is linear and bounded.
DEADLINE = 10.0

WEATHER = weather_tool()


def asked(*messages: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": "user", "content": "Capital of France? Use the tools."}, *messages]


def answer(text: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def call(arguments: Any, name: str = "get_weather") -> dict[str, Any]:
    function = {"name": name, "arguments": arguments}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c", "type": "function", "function": function}],
    }


HONEST_ANSWER = {"response": asked(answer("Paris")), "label": "Paris"}
HONEST_CALL = {"response": asked(call('{"city": "Paris"}'), answer("Sunny."))}


@pytest.fixture(scope="module")
def answers() -> Iterator[Router]:
    config = {
        "default_route": "qa",
        "routes": {"qa": {"rewards": {"answer": {"kind": "exact_match"}}}},
    }
    with compile_router(config) as router:
        yield router


@pytest.fixture(scope="module")
def tool_calls() -> Iterator[Router]:
    term = {"kind": "tool_call_format", "key": "score", "kwargs": {"tools": [WEATHER]}}
    config = {"default_route": "tools", "routes": {"tools": {"rewards": {"format": term}}}}
    with compile_router(config) as router:
        yield router


#: (the response, the reward, the status, what the error message says or the `failed` entry)
ANSWER_CASES = [
    pytest.param(
        asked(*[answer("Paris")] * 5000),
        None,
        "error",
        "5001 messages, more than trajectory.max_messages=1024",
        id="thousands_of_messages",
    ),
    pytest.param(
        [answer("Paris")] * 200_000,
        None,
        "error",
        "trajectory.max_messages",
        id="200k_messages_refused_before_any_is_read",
    ),
    pytest.param(
        asked(answer("x" * 5_000_000), answer("Paris")),
        None,
        "error",
        "trajectory.max_chars=1000000",
        id="huge_string",
    ),
    pytest.param(
        asked({"role": "Assistant", "content": "Paris"}),
        None,
        "error",
        "message 1 has role 'Assistant'",
        id="role_the_schema_does_not_know",
    ),
    pytest.param(
        asked({"role": "tool", "content": "Paris", "tool_calls": call("{}")["tool_calls"]}),
        None,
        "error",
        "only assistant messages call tools",
        id="tool_calls_in_a_tool_message",
    ),
    pytest.param(
        asked(answer([{"type": "text", "text": {"answer": "Paris"}}])),
        None,
        "error",
        "content part 0 (text) has no string `text`",
        id="text_part_holding_an_object",
    ),
    pytest.param(
        asked(
            answer(
                [
                    {
                        "type": "image_url",
                        "image_url": {"url": "data:image/png;base64," + "A" * 3_000_000},
                    }
                ]
            )
        ),
        0.0,
        "ok",
        None,
        id="image_only_answer_has_no_text",
    ),
    pytest.param(
        asked(
            answer(
                [
                    {"type": "image_url", "image_url": {"url": "data:,Paris"}},
                    {"type": "text", "text": "Lyon"},
                ]
            )
        ),
        0.0,
        "ok",
        None,
        id="answer_in_an_image_url_is_not_text",
    ),
    pytest.param(
        asked(answer("Paris"), answer("")),
        0.0,
        "ok",
        None,
        id="answer_in_an_earlier_turn_is_not_the_final_answer",
    ),
    pytest.param(
        asked(answer("Lyon"), {"role": "user", "content": "Paris"}),
        0.0,
        "ok",
        None,
        id="answer_in_a_user_turn_is_not_the_final_answer",
    ),
    pytest.param(
        asked(answer([{"type": "text", "text": "x"}] * 10_000)),
        None,
        "error",
        "trajectory.max_parts=4096",
        id="ten_thousand_content_parts",
    ),
]


@pytest.mark.parametrize(("response", "reward", "status", "says"), ANSWER_CASES)
def test_hostile_trajectories_graded_on_the_final_answer(
    answers: Router,
    canary: Canary,
    response: Any,
    reward: float | None,
    status: str,
    says: str | None,
) -> None:
    hostile = {"response": response, "label": "Paris"}
    bad = score_between_honest_rows(answers, canary, HONEST_ANSWER, hostile, DEADLINE)
    assert (bad.reward, bad.status) == (reward, status)
    if says is not None:
        assert bad.error_message is not None and says in bad.error_message


DEEP = 100_000

CALL_CASES = [
    pytest.param(
        call('{"city": Paris}'),
        "call 0 'get_weather' (message 1): arguments are not JSON",
        id="not_json",
    ),
    pytest.param(call("Paris"), "arguments are not JSON", id="bare_text_arguments"),
    pytest.param(
        call('{"city": ' + "[" * DEEP + "]" * DEEP + "}"),
        "arguments nested deeper than JSON parsing allows",
        id="arguments_100k_deep",
    ),
    pytest.param(
        call('{"city": "Paris", "x": ' + "[" * 200 + "]" * 200 + "}"),
        "nested deeper than max_depth=32",
        id="arguments_deeper_than_max_depth",
    ),
    pytest.param(
        call('{"city": "Paris"}', name="get_weather; rm -rf /"),
        "not a declared tool",
        id="undeclared_tool",
    ),
    pytest.param(
        call('{"city": 7}'), "arguments at $.city fail the schema's `type`", id="wrong_type"
    ),
    pytest.param(
        call('"{\\"city\\": \\"Paris\\"}"'), "arguments are a JSON str", id="json_string_of_json"
    ),
    pytest.param(call('{"city": NaN}'), "arguments are not JSON", id="nan_is_not_json"),
]


@pytest.mark.parametrize(("message", "failed"), CALL_CASES)
def test_hostile_tool_calls_earn_nothing_and_are_named(
    tool_calls: Router, canary: Canary, message: dict[str, Any], failed: str
) -> None:
    hostile = {"response": asked(message, answer("Sunny."))}
    bad = score_between_honest_rows(tool_calls, canary, HONEST_CALL, hostile, DEADLINE)
    assert (bad.reward, bad.status) == (0.0, "ok")
    assert failed in bad.raw["failed"]
    assert len(bad.raw["failed"]) < 300


MANY = ", ".join(['{"unit": "C"}'] * 60_000)

#: Arguments that repeat a key in one object: Python's parser keeps the last value, others the
#: first or refuse, so the schema would pass what the tool may read otherwise (the first `city`
#: a number). Such a call has no single meaning: the conversation is malformed, for every term.
DUPLICATE_CASES = [
    pytest.param('{"city": 7, "city": "Paris"}', "message 1, tool call 0", id="top_level"),
    pytest.param(
        '{"city": "Paris", "units": {"scale": "kelvin", "scale": "C"}}',
        "message 1, tool call 0",
        id="nested_object",
    ),
    pytest.param(
        '{"city": "Paris", "days": [1, {"at": 9, "at": 10}]}',
        "message 1, tool call 0",
        id="object_inside_an_array",
    ),
    pytest.param(
        '{"city": 7, "\\u0063ity": "Paris"}',
        "message 1, tool call 0",
        id="second_key_spelled_with_an_escape",
    ),
    pytest.param(
        {1: "Lyon", "1": "Paris", "city": "Paris"},
        "message 1, tool call 0",
        id="object_whose_keys_collide_as_json",
    ),
    pytest.param(
        '{"city": "Paris", "hours": [' + MANY + ', {"unit": "C", "unit": "F"}]}',
        "message 1, tool call 0",
        id="after_60k_objects",
    ),
]


@pytest.mark.parametrize(("arguments", "says"), DUPLICATE_CASES)
def test_arguments_repeating_a_key_are_their_samples_error(
    tool_calls: Router, canary: Canary, arguments: Any, says: str
) -> None:
    hostile = {"response": asked(call(arguments), answer("Sunny."))}
    bad = score_between_honest_rows(tool_calls, canary, HONEST_CALL, hostile, DEADLINE)
    assert (bad.reward, bad.status) == (None, "error")
    assert bad.error_message is not None
    assert f"{says}: its arguments repeat a key within one object" in bad.error_message


def test_arguments_that_stall_a_schema_check_time_out_alone(canary: Canary) -> None:
    # jsonschema compares the items of an array of objects pairwise for `uniqueItems`: 30k of
    # them stall the check for minutes; the check runs in a worker killed at the term's timeout.
    tool = {
        "name": "tag",
        "parameters": {"type": "object", "properties": {"ids": {"uniqueItems": True}}},
    }
    term = {"kind": "tool_call_format", "key": "score", "timeout": 3.0, "kwargs": {"tools": [tool]}}
    config = {"default_route": "tools", "routes": {"tools": {"rewards": {"format": term}}}}
    items = ", ".join(f'{{"i": {i}}}' for i in range(30_000))
    honest = {"response": asked(call('{"ids": [{"i": 1}, {"i": 2}]}', name="tag"), answer("Done."))}
    hostile = {"response": asked(call('{"ids": [' + items + "]}", name="tag"), answer("Done."))}
    with compile_router(config) as router:
        bad = score_between_honest_rows(router, canary, honest, hostile, 3.0 + DEADLINE)
    assert (bad.reward, bad.status) == (None, "timeout"), bad.error_message


def nested(depth: int) -> dict[str, Any]:
    """Arguments given as an object nested ``depth`` deep (built without recursion)."""
    inner: dict[str, Any] = {}
    for _ in range(depth):
        inner = {"a": inner}
    return {"city": "Paris", "x": inner}


def test_arguments_object_100k_deep_is_its_samples_error(tool_calls: Router) -> None:
    # Arguments already parsed (as TRL passes them) nested beyond what JSON can write: repr and
    # str of such an object raise RecursionError, so this row is checked here, not by the helper.
    hostile = {"response": asked(call(nested(DEEP)), answer("Sunny."))}
    begun = time.monotonic()
    first, bad, last = tool_calls.score_sync([HONEST_CALL, hostile, HONEST_CALL], failures="record")
    assert time.monotonic() - begun < DEADLINE
    assert [first.reward, last.reward] == [1.0, 1.0]
    assert (bad.reward, bad.status) == (None, "error")
    assert bad.error_message is not None
    assert "its arguments are nested too deeply to write as JSON" in bad.error_message
    assert sys.getrecursionlimit() < DEEP  # the case is beyond what recursion could follow
