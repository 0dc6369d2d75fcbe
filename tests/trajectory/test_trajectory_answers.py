"""A conversation is well formed or malformed as a whole: every ``tool`` message answers a call
made before it and not answered yet, and no call's arguments repeat a key. The shapes the
trainers write (read in their sources, named per case) pass; forged ones are refused, each
saying which message and what was expected."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardrouter.config.models import TrajectoryConfig
from rewardrouter.trajectory import (
    MALFORMED,
    DuplicateKeyError,
    TrajectoryError,
    parse_arguments,
    parse_conversation,
)

ASK = {"role": "user", "content": "Weather in Paris and Oslo?"}


def calling(*ids: str | None, arguments: Any = '{"city": "Paris"}') -> dict[str, Any]:
    """An assistant message making one call per id (``None``: a call without an id)."""
    made = []
    for call_id in ids:
        call: dict[str, Any] = {"type": "function"}
        call["function"] = {"name": "get_weather", "arguments": arguments}
        if call_id is not None:
            call["id"] = call_id
        made.append(call)
    return {"role": "assistant", "content": "", "tool_calls": made}


def answering(call_id: str | None, content: Any = "sunny") -> dict[str, Any]:
    """A tool message answering ``call_id`` (``None``: no id, named as TRL names it)."""
    if call_id is None:
        return {"role": "tool", "name": "get_weather", "content": content}
    return {"role": "tool", "tool_call_id": call_id, "content": content}


FINAL = {"role": "assistant", "content": "Sunny in both."}

WELL_FORMED = [
    pytest.param([ASK, calling("c1"), answering("c1"), FINAL], id="openai_one_call_its_result"),
    pytest.param(
        [ASK, calling("c1", "c2"), answering("c2"), answering("c1"), FINAL],
        id="openai_parallel_calls_answered_out_of_order",
    ),
    # trl 1.16 GRPOTrainer._tool_call_loop: calls without ids, arguments as objects, results
    # {"role": "tool", "name", "content"}; async tools' results after the sync ones. verl 0.9.1's
    # ToolAgentLoop with its Hermes, Qwen3 XML or GLM parser writes no ids either.
    pytest.param(
        [
            calling(None, None, arguments={"city": "Paris"}),
            answering(None),
            answering(None, str({"error": "boom"})),
            calling(None, arguments={"city": "Oslo"}),
            answering(None),
            FINAL,
        ],
        id="trl_calls_and_results_without_ids",
    ),
    # verl 0.9.1 ToolAgentLoop: the id is the parser's raw name (Kimi's `functions.name:0`),
    # numbered again each turn, set on the call and its result alike; multimodal results
    pytest.param(
        [
            ASK,
            calling("functions.get_weather:0"),
            answering("functions.get_weather:0", [{"type": "text", "text": "sunny"}]),
            calling("functions.get_weather:0"),
            answering("functions.get_weather:0"),
            FINAL,
        ],
        id="verl_ids_numbered_again_each_turn",
    ),
    pytest.param(
        [ASK, calling("x", "x"), answering("x"), answering("x"), FINAL],
        id="one_id_given_two_calls_answered_twice",
    ),
    # a generate function that keeps the parser's call ids but writes results without them
    pytest.param(
        [ASK, calling("c1", "c2"), answering(None), answering(None), FINAL],
        id="ids_on_calls_results_in_order",
    ),
    pytest.param([ASK, calling("c1", "c2"), answering("c1")], id="rollout_cut_before_a_result"),
    pytest.param([ASK, calling("c1"), calling("c2"), answering("c2")], id="a_call_left_unanswered"),
    pytest.param(
        [ASK, calling("c1", arguments='{"city": Paris'), answering("c1", "Error: bad JSON")],
        id="arguments_not_json_are_a_bad_call_not_a_bad_conversation",
    ),
    pytest.param(
        [ASK, calling("c1", arguments='{"at": {"day": 1}, "days": [{"day": 2}]}')],
        id="one_key_in_several_objects",
    ),
]


@pytest.mark.parametrize("messages", WELL_FORMED)
def test_the_shapes_trainers_write_are_well_formed(messages: list[dict[str, Any]]) -> None:
    convo = parse_conversation(messages, TrajectoryConfig())
    assert len(convo.tool_results) == sum(m["role"] == "tool" for m in messages)


MALFORMED_CASES = [
    pytest.param(
        [ASK, answering(None), answering(None), FINAL],
        "message 1 is a tool result, but no message before it made a tool call",
        id="results_without_any_call",
    ),
    pytest.param(
        [ASK, {"role": "assistant", "content": "", "tool_calls": []}, answering(None)],
        "message 2 is a tool result, but no message before it made a tool call",
        id="result_after_an_empty_list_of_calls",
    ),
    pytest.param(
        [ASK, answering("c1"), calling("c1"), FINAL],
        "message 1 is a tool result whose `tool_call_id` names no tool call before it",
        id="result_before_its_call",
    ),
    pytest.param(
        [ASK, calling("c1"), answering("c9"), FINAL],
        "message 2 is a tool result whose `tool_call_id` names no tool call before it",
        id="id_never_made",
    ),
    pytest.param(
        [ASK, calling("c1"), answering("c1"), answering("c1"), FINAL],
        "message 3 is a tool result whose `tool_call_id` names call 0 of message 1, answered "
        "already",
        id="one_call_answered_twice",
    ),
    pytest.param(
        [calling(None), answering(None), answering(None), FINAL],
        "message 2 is a tool result, but every tool call before it is answered already",
        id="more_results_than_calls_without_ids",
    ),
    pytest.param(
        [ASK, calling("c1"), answering(None), answering("c1"), FINAL],
        "message 3 is a tool result whose `tool_call_id` names call 0 of message 1, answered "
        "already",
        id="answered_in_order_then_by_its_id",
    ),
    pytest.param(
        [ASK, calling("c1", arguments='{"city": 7, "city": "Paris"}')],
        "message 1, tool call 0: its arguments repeat a key within one object",
        id="duplicate_key",
    ),
    pytest.param(
        [ASK, calling("c1", arguments='{"city": "P", "at": [{"d": 1, "d": 1}]}')],
        "message 1, tool call 0: its arguments repeat a key within one object",
        id="duplicate_key_nested_with_the_same_value",
    ),
    pytest.param(
        [ASK, calling("c1", arguments='{"city": 7, "\\u0063ity": "Paris"}')],
        "message 1, tool call 0: its arguments repeat a key within one object",
        id="duplicate_key_spelled_with_an_escape",
    ),
    pytest.param(
        [ASK, calling("c1", arguments={True: 1, "true": 2})],
        "message 1, tool call 0: its arguments repeat a key within one object",
        id="object_keys_that_collide_as_json",
    ),
]


@pytest.mark.parametrize(("messages", "says"), MALFORMED_CASES)
def test_a_forged_or_ambiguous_conversation_is_malformed(
    messages: list[dict[str, Any]], says: str
) -> None:
    with pytest.raises(TrajectoryError) as info:
        parse_conversation(messages, TrajectoryConfig())
    assert str(info.value).startswith(f"{MALFORMED}: {says}")


@pytest.mark.parametrize(
    ("text", "error"),
    [
        pytest.param('{"a": 1, "a": 2}', DuplicateKeyError, id="duplicate_key"),
        pytest.param('[{"a": {"b": 1, "b": 1}}]', DuplicateKeyError, id="duplicate_key_deep"),
        pytest.param('{"a": NaN}', ValueError, id="nan"),
        pytest.param('{"a": -Infinity}', ValueError, id="infinity"),
        pytest.param('{"a": 1', json.JSONDecodeError, id="not_json"),
        pytest.param("[" * 100_000 + "]" * 100_000, RecursionError, id="deeper_than_the_parser"),
    ],
)
def test_the_arguments_parser_refuses(text: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        parse_arguments(text)


# -- every tool message answers a call: generated loops ----------------------------------------
# A tool loop's conversation, generated: each step the assistant makes calls (ids from a small
# alphabet, so ids repeat, or none), then the loop answers some of the unanswered ones in any
# order, by id or, for calls without one, in order. Such a conversation is well formed; one more
# result than there are unanswered calls is refused.

IDS = st.sampled_from(["a", "b", "c"])


@st.composite
def tool_loops(draw: st.DrawFn) -> tuple[list[dict[str, Any]], int]:
    """A loop's messages, and how many calls are left unanswered at its end."""
    with_ids = draw(st.booleans())
    messages: list[dict[str, Any]] = [ASK]
    open_calls: list[str | None] = []
    for _ in range(draw(st.integers(1, 6))):
        made: list[str | None] = (
            list(draw(st.lists(IDS, min_size=1, max_size=3)))
            if with_ids
            else [None] * draw(st.integers(1, 3))
        )
        messages.append(calling(*made))
        open_calls += made
        if with_ids:
            answered = draw(st.permutations(open_calls))[: draw(st.integers(0, len(open_calls)))]
        else:
            answered = open_calls[: draw(st.integers(0, len(open_calls)))]
        for call_id in answered:
            messages.append(answering(call_id))
            open_calls.remove(call_id)
    return messages, len(open_calls)


@settings(max_examples=200, deadline=None)
@given(tool_loops())
def test_a_loop_that_answers_its_own_calls_is_well_formed(
    loop: tuple[list[dict[str, Any]], int],
) -> None:
    messages, _ = loop
    convo = parse_conversation(messages, TrajectoryConfig())
    assert len(convo.tool_results) <= len(convo.tool_calls)


@settings(max_examples=200, deadline=None)
@given(tool_loops(), IDS | st.none())
def test_one_result_more_than_the_calls_left_is_refused(
    loop: tuple[list[dict[str, Any]], int], call_id: str | None
) -> None:
    messages, unanswered = loop
    extra = [answering(call_id)] * (unanswered + 1)
    with pytest.raises(TrajectoryError, match="is a tool result"):
        parse_conversation([*messages, *extra], TrajectoryConfig())
