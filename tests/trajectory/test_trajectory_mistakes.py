"""Mistakes a new user makes with trajectories, each of which once gave a plausible reward: every
one now ends in the right reward, a clear error naming the fix, or that sample's error status.

The route is the one the trajectory docs build: the final answer, every call well formed (0.5),
the tools worked (0.25) and a turn budget; a clean run scores 1.75."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rr_trajectory import weather_tool

from rewardrouter import RewardError, compile_router
from rewardrouter.config.models import TrajectoryConfig
from rewardrouter.rewards.tool_use.calls import ToolSuccess, ToolSuccessSettings
from rewardrouter.trajectory import TrajectoryError, parse_conversation, parse_text_response

CLEAN = 1.0 + 0.5 + 0.25
ASK = {"role": "user", "content": "Weather in Paris?"}
HERMES_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


def rewards(**trajectory: Any) -> dict[str, Any]:
    return {
        "default_route": "weather",
        "trajectory": trajectory,
        "routes": {
            "weather": {
                "rewards": {
                    "answer": {"kind": "exact_match"},
                    "format": {
                        "kind": "tool_call_format",
                        "key": "score",
                        "weight": 0.5,
                        "kwargs": {"tools": [weather_tool()]},
                    },
                    "tools_worked": {"kind": "tool_success", "weight": 0.25},
                    "length": {"kind": "turns", "kwargs": {"budget": 2, "penalty": 0.1}},
                }
            }
        },
    }


def call(arguments: str = '{"city": "Paris"}') -> dict[str, Any]:
    function = {"name": "get_weather", "arguments": arguments}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "function": function}],
    }


def run(result: str | None = "sunny", answer: str = "Sunny") -> list[dict[str, Any]]:
    """A tool run in OpenAI's form: the call, its result (none: the rollout was cut), the answer."""
    replied = [] if result is None else [{"role": "tool", "tool_call_id": "c1", "content": result}]
    return [ASK, call(), *replied, {"role": "assistant", "content": answer}]


def hermes_run() -> list[dict[str, Any]]:
    """The same run as a loop keeps it when its parser leaves the call in the text (Hermes, Qwen2.5
    and Qwen3 chat templates): the tool message answers the call without an id."""
    return [
        ASK,
        {"role": "assistant", "content": f"Let me check.\n{HERMES_CALL}"},
        {"role": "tool", "content": "sunny"},
        {"role": "assistant", "content": "Sunny"},
    ]


def score(sample: dict[str, Any], **trajectory: Any) -> Any:
    with compile_router(rewards(**trajectory)) as router:
        return router.score_sync([{"label": "Sunny", **sample}], failures="record")[0]


SCORED = [
    # (trajectory settings, sample, status, reward, tool_success's value, what the error says)
    pytest.param({}, {"response": run()}, "ok", CLEAN, 1.0, None, id="clean_run"),
    pytest.param(
        {}, {"response": hermes_run()}, "ok", CLEAN, 1.0, None, id="calls_written_as_text_read"
    ),
    pytest.param(
        {"format": "none"},
        {"response": hermes_run()},
        "error",
        None,
        None,
        "writes a tool call as text (`<tool_call>` at character 14), which trajectory.format: "
        "none does not read; set trajectory.format: auto",
        id="format_none_refuses_calls_written_as_text",
    ),
    pytest.param(
        {}, {"response": run(result=None)}, "ok", 1.5, 0.0, None, id="a_call_without_a_reply_failed"
    ),
    pytest.param(
        {},
        {"response": run(result='{"status": "error", "detail": "no such city"}')},
        "ok",
        1.5,
        0.0,
        None,
        id="a_reply_that_says_error_in_json_failed",
    ),
    pytest.param(
        {},
        {"response": json.dumps(run())},
        "error",
        None,
        None,
        "the sample's response is a string holding a JSON list of 4 chat messages",
        id="conversation_encoded_as_json_text",
    ),
    pytest.param(
        {"messages_field": "messages"},
        {"response": "<tool_call>...", "metadata": {"messages": json.dumps(run())}},
        "ok",
        CLEAN,
        1.0,
        None,
        id="messages_field_holding_json_text_decoded",
    ),
    pytest.param(
        {"messages_field": "messages"},
        {"response": "Sunny", "metadata": {"messages": "[not json"}},
        "error",
        None,
        None,
        "metadata field 'messages' holds a string that is not a JSON list of chat messages",
        id="messages_field_holding_other_text",
    ),
]


@pytest.mark.parametrize(
    ("trajectory", "sample", "status", "reward", "tools_worked", "error"), SCORED
)
def test_each_mistake_ends_right(
    trajectory: dict[str, Any],
    sample: dict[str, Any],
    status: str,
    reward: float | None,
    tools_worked: float | None,
    error: str | None,
) -> None:
    result = score(sample, **trajectory)
    assert (result.status, result.reward) == (status, reward)
    assert result.terms.get("tools_worked") == tools_worked
    if error is None:
        assert result.error_message is None
    else:
        assert result.error_message is not None and error in result.error_message


RAISED = [
    # (trajectory settings, sample, what the error says): the setup's fault, raised for the batch
    pytest.param(
        {"messages_field": "messages"},
        {"response": f"{HERMES_CALL}user\nsunny\nassistant\nSunny", "metadata": {"index": 0}},
        "trajectory.messages_field is 'messages', but the sample's metadata has no 'messages' "
        "(its fields: 'index') and its response is text, while this term grades the conversation",
        id="messages_field_set_no_messages_on_the_sample",
    ),
    pytest.param(
        {},
        {"response": f"{HERMES_CALL}user\n<tool_response>\nsunny\n</tool_response>\nSunny"},
        "the conversation was read from a text response, one assistant turn that carries no "
        "tool results",
        id="tool_success_on_a_text_response_with_calls",
    ),
]


@pytest.mark.parametrize(("trajectory", "sample", "error"), RAISED)
def test_a_conversation_the_trainer_does_not_hand_over_is_an_error_naming_the_fix(
    trajectory: dict[str, Any], sample: dict[str, Any], error: str
) -> None:
    with (
        compile_router(rewards(**trajectory)) as router,
        pytest.raises(RewardError, match="sample 0, route 'weather'") as info,
    ):
        router.score_sync([{"label": "Sunny", **sample}])
    assert error in str(info.value)


def test_a_single_turn_written_as_text_is_graded_for_its_calls() -> None:
    """Function calling without a tool loop: the response is text, its call is read."""
    config = rewards()
    del config["routes"]["weather"]["rewards"]["tools_worked"]  # no tool ran: nothing to ask
    with compile_router(config) as router:
        good, bad = router.score_sync(
            [
                {"response": HERMES_CALL, "label": "Sunny"},
                {"response": HERMES_CALL.replace("city", "town"), "label": "Sunny"},
            ]
        )
    assert (good.terms, bad.terms["format"]) == (
        {"answer": 0.0, "format": 1.0, "length": 0.0},
        0.0,
    )
    assert "call 0 'get_weather' (message 0): arguments at $ fail" in bad.raw["format"]["failed"]


def test_without_messages_the_terms_of_a_text_route_read_the_text() -> None:
    """``messages_field`` is router-wide: a text route's samples need no messages. A term that
    reads the conversation without grading the trajectory (a reward model, this function) gets
    the text as one assistant turn."""
    counted = {"path": "rr_trajectory_fns.message_count", "reads": "conversation"}
    config = {
        "default_route": "plain",
        "trajectory": {"messages_field": "messages"},
        "routes": {"plain": {"rewards": {"answer": {"kind": "exact_match"}, "turns": counted}}},
    }
    with compile_router(config) as router:
        [result] = router.score_sync([{"response": "Sunny", "label": "Sunny"}])
    assert (result.status, result.terms) == ("ok", {"answer": 1.0, "turns": 1.0})


# -- tool calls written as text -----------------------------------------------------------------

LIMITS = TrajectoryConfig()


def written(text: str) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": text}]


TEXT_CALLS = [
    # (assistant text, calls read as (name, arguments), unreadable calls' problems, text left)
    pytest.param(
        f"Checking.{HERMES_CALL}",
        [("get_weather", '{"city": "Paris"}')],
        [],
        "Checking.",
        id="hermes_block_read_and_removed",
    ),
    pytest.param(
        HERMES_CALL + HERMES_CALL.replace("Paris", "Rome"),
        [("get_weather", '{"city": "Paris"}'), ("get_weather", '{"city": "Rome"}')],
        [],
        "",
        id="two_blocks_two_calls",
    ),
    pytest.param(
        '<tool_call>{"name": "get_weather", "arguments": "{\\"city\\": 1}"}</tool_call>',
        [("get_weather", '"{\\"city\\": 1}"')],
        [],
        "",
        id="string_arguments_kept_as_the_json_string_tool_loops_pass_on",
    ),
    pytest.param(
        '<tool_call>{"name": "get_weather", "arguments": {"city": Paris}}</tool_call>',
        [],
        ["a `<tool_call>` block that is not JSON"],
        '<tool_call>{"name": "get_weather", "arguments": {"city": Paris}}</tool_call>',
        id="not_json_unreadable_and_kept",
    ),
    pytest.param(
        '<tool_call>{"name": "get_weather"}</tool_call>',
        [],
        ["a `<tool_call>` block whose JSON is not an object with `name` and `arguments`"],
        '<tool_call>{"name": "get_weather"}</tool_call>',
        id="no_arguments_unreadable",
    ),
    pytest.param(
        '<tool_call>{"name": 7, "arguments": {}}</tool_call>',
        [],
        ["a `<tool_call>` block whose `name` is not a non-empty string"],
        '<tool_call>{"name": 7, "arguments": {}}</tool_call>',
        id="name_not_a_string_unreadable",
    ),
    pytest.param(
        'Sure.<tool_call>{"name": "get_weather", "arguments": {"ci',
        [],
        ["a `<tool_call>` block not closed by `</tool_call>`"],
        'Sure.<tool_call>{"name": "get_weather", "arguments": {"ci',
        id="cut_off_unreadable",
    ),
    pytest.param(
        "No call here: <tool_response>", [], [], "No call here: <tool_response>", id="none"
    ),
]


@pytest.mark.parametrize(("text", "calls", "problems", "left"), TEXT_CALLS)
def test_calls_written_as_text(
    text: str, calls: list[tuple[str, str]], problems: list[str], left: str
) -> None:
    for convo in (parse_conversation(written(text), LIMITS), parse_text_response(text, LIMITS)):
        [message] = convo.messages
        assert [(c.name, c.arguments) for c in message.tool_calls] == calls
        assert [c.problem for c in message.unreadable_calls] == problems
        assert [c.position for c in convo.attempted_calls] == list(range(len(calls + problems)))
        assert message.text == left


@pytest.mark.parametrize(
    ("text", "found"),
    [
        pytest.param(
            '<tool_call>{"name": "a", "name": "b", "arguments": {}}</tool_call>',
            "message 0, tool call 0: its JSON repeats a key within one object",
            id="duplicate_key",
        ),
        pytest.param(
            "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
            "</function>\n</tool_call>",
            "message 0, tool call 0 is written in Qwen3-Coder's XML form (<function=...>), which "
            "is not read",
            id="qwen3_coder_xml",
        ),
    ],
)
def test_calls_written_as_text_that_make_the_conversation_unreadable(text: str, found: str) -> None:
    with pytest.raises(TrajectoryError, match="the sample's conversation is malformed") as info:
        parse_conversation(written(text), LIMITS)
    assert found in str(info.value)


def test_a_tool_result_answers_a_call_written_as_text_never_an_unreadable_one() -> None:
    """A loop never runs a call its parser could not read, so a result after it is an orphan."""
    broken = '<tool_call>{"name": "get_weather", "arguments": {"city": Paris}}</tool_call>'
    with pytest.raises(TrajectoryError, match="no message before it made a tool call"):
        parse_conversation([*written(broken), {"role": "tool", "content": "sunny"}], LIMITS)


def test_structured_calls_win_over_text_in_the_same_message() -> None:
    """A message with ``tool_calls`` is read as the trainer's parser left it: its text is text."""
    message = {**call(), "content": HERMES_CALL}
    convo = parse_conversation([message], LIMITS)
    assert (len(convo.tool_calls), convo.messages[0].text) == (1, HERMES_CALL)


# -- what tool_success counts as a failure -------------------------------------------------------

RESULTS = [
    # (a tool's result text, whether it failed)
    pytest.param("sunny, 21 C", False, id="plain_text"),
    pytest.param("Error: no such city", True, id="error_prefix"),
    pytest.param("  Traceback (most recent call last):\n ...", True, id="traceback"),
    pytest.param(str({"error": "missing city"}), True, id="trl_python_dict_of_an_exception"),
    pytest.param(
        "Unknown function 'get_forecast'. Available tools: ['get_weather']",
        True,
        id="verl_call_to_no_tool",
    ),
    pytest.param(
        "Invalid JSON in arguments for 'get_weather': Expecting value", True, id="verl_bad_json"
    ),
    pytest.param("Error executing tool 'get_weather': boom", True, id="verl_tool_raised"),
    pytest.param('{"error": "missing city"}', True, id="json_error"),
    pytest.param('{"result": null, "error": "boom"}', True, id="json_error_not_first"),
    pytest.param('{"error": null, "result": 21}', False, id="json_error_null_is_success"),
    pytest.param('{"error": {}, "result": 21}', False, id="json_error_empty_object"),
    pytest.param('{"errors": [{"message": "x"}]}', True, id="json_errors_list"),
    pytest.param('{"status": "error", "message": "x"}', True, id="json_status_error"),
    pytest.param('{"status": "FAILED"}', True, id="json_status_failed_any_case"),
    pytest.param('{"status": "ok", "temp": 21}', False, id="json_status_ok"),
    pytest.param('{"success": false}', True, id="json_success_false"),
    pytest.param('{"ok": false, "reason": "x"}', True, id="json_ok_false"),
    pytest.param(
        '{"content": [{"type": "text", "text": "x"}], "isError": true}', True, id="mcp_is_error"
    ),
    pytest.param('{"isError": false, "content": []}', False, id="mcp_not_error"),
    pytest.param('{"status": "error"', False, id="not_json_not_read"),
    pytest.param('{"a": ' * 5000 + "1" + "}" * 5000, False, id="nested_beyond_the_parser"),
]


@pytest.mark.parametrize(("result", "failed"), RESULTS)
def test_which_tool_results_are_failures(result: str, failed: bool) -> None:
    convo = parse_conversation(run(result=result), LIMITS)
    reward = ToolSuccess(ToolSuccessSettings())
    assert reward(None, type("S", (), {"response": convo})()) == (0.0 if failed else 1.0)


def test_json_errors_off_reads_prefixes_alone() -> None:
    convo = parse_conversation(run(result='{"status": "error"}'), LIMITS)
    reward = ToolSuccess(ToolSuccessSettings(json_errors=False))
    assert reward(None, type("S", (), {"response": convo})()) == 1.0


UNANSWERED = [
    # (conversation, unanswered setting, tool_success)
    pytest.param(run(result=None), "failed", 0.0, id="cut_run_failed"),
    pytest.param(run(result=None), "ignored", None, id="cut_run_ignored_no_result"),
    pytest.param(
        [*run()[:3], call(), {"role": "assistant", "content": "Sunny"}],
        "failed",
        0.5,
        id="second_call_unanswered",
    ),
    pytest.param(
        [*run()[:3], call(), {"role": "assistant", "content": "Sunny"}],
        "ignored",
        1.0,
        id="second_call_ignored",
    ),
    pytest.param(
        [*run(), *written('<tool_call>{"name": "x"}</tool_call>')],
        "ignored",
        0.5,
        id="unreadable_call_failed_either_way",
    ),
    pytest.param([ASK, {"role": "assistant", "content": "Sunny"}], "failed", None, id="no_call"),
]


@pytest.mark.parametrize(("messages", "unanswered", "value"), UNANSWERED)
def test_calls_without_a_reply(
    messages: list[dict[str, Any]], unanswered: Any, value: float | None
) -> None:
    convo = parse_conversation(messages, LIMITS)
    reward = ToolSuccess(ToolSuccessSettings(unanswered=unanswered))
    assert reward(None, type("S", (), {"response": convo})()) == value
