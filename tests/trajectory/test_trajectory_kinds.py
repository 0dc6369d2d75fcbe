"""The trajectory kinds: ``tool_call_format``, ``tool_success`` and ``turns``, each through a
compiled router."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from rr_trajectory import weather_tool

from rewardrouter import ConfigError, Sample, compile_router
from rewardrouter.rewards.tool_use.calls import ToolCallFormat, ToolFormatSettings
from rewardrouter.trajectory import Conversation, Message, ToolCall

WEATHER = weather_tool(
    {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
    additionalProperties=False,
)


def calls(*arguments: Any, name: str = "get_weather") -> list[dict[str, Any]]:
    """A trajectory whose one assistant message makes one call per ``arguments``."""
    made = [
        {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": a}}
        for i, a in enumerate(arguments)
    ]
    return [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": made},
        {"role": "assistant", "content": "Sunny."},
    ]


def score_one(term: dict[str, Any], sample: dict[str, Any]) -> Any:
    config = {"default_route": "r", "routes": {"r": {"rewards": {"t": term}}}}
    with compile_router(config) as router:
        return router.score_sync([sample], failures="record")[0]


def fmt(**kwargs: Any) -> dict[str, Any]:
    return {"kind": "tool_call_format", "key": "score", "kwargs": {"tools": [WEATHER], **kwargs}}


FORMAT_CASES = [
    # (arguments of each call, score, the start of `failed`)
    pytest.param(['{"city": "Paris"}'], 1.0, "", id="valid_string_arguments"),
    pytest.param(
        [{"city": "Paris", "days": 2}], 1.0, "", id="valid_object_arguments_as_trl_writes"
    ),
    pytest.param(
        ['{"city": "Paris"'],
        0.0,
        "call 0 'get_weather' (message 1): arguments are not JSON",
        id="not_json",
    ),
    pytest.param(
        ['["Paris"]'],
        0.0,
        "call 0 'get_weather' (message 1): arguments are a JSON list",
        id="not_object",
    ),
    pytest.param(
        ['{"days": 2}'],
        0.0,
        "call 0 'get_weather' (message 1): arguments at $ fail the schema's `required`",
        id="missing",
    ),
    pytest.param(
        ['{"city": "Paris", "days": 0}'],
        0.0,
        "arguments at $.days fail the schema's `minimum`",
        id="out_of_range",
    ),
    pytest.param(['{"city": "P", "x": 1}'], 0.0, "`additionalProperties`", id="unknown_argument"),
    pytest.param(['{"city": "Paris"}', "{"], 0.0, "call 1 'get_weather'", id="second_call_named"),
]


@pytest.mark.parametrize(("arguments", "score", "failed"), FORMAT_CASES)
def test_tool_call_format(arguments: list[Any], score: float, failed: str) -> None:
    result = score_one(fmt(), {"response": calls(*arguments)})
    assert (result.reward, result.status) == (score, "ok")
    assert failed in result.raw["failed"] if failed else result.raw["failed"] == ""


OPEN = weather_tool({"city": {"type": "string"}, "days": {"type": "integer"}})

STRICT_CASES = [
    # (the tool, the call's arguments, reward by default, reward with strict: true)
    pytest.param(OPEN, '{"city": "Paris", "days": 2}', 1.0, 1.0, id="well_formed"),
    pytest.param(OPEN, '{"city": "Paris", "days": 2.0}', 1.0, 0.0, id="float_for_an_integer"),
    pytest.param(OPEN, '{"city": "Paris", "days": 2e0}', 1.0, 0.0, id="exponent_for_an_integer"),
    pytest.param(OPEN, '{"city": "Paris", "units": "C"}', 1.0, 0.0, id="undeclared_argument"),
    pytest.param(OPEN, '{"city": "Paris", "days": true}', 0.0, 0.0, id="boolean_for_an_integer"),
    pytest.param(
        weather_tool({"days": {"type": "array", "items": {"type": "integer"}}}, required=[]),
        '{"days": [1, 2.0]}',
        1.0,
        0.0,
        id="float_in_an_array_of_integers",
    ),
    pytest.param(
        weather_tool({"temperature": {"type": "number"}}, required=[]),
        '{"temperature": 21}',
        1.0,
        1.0,
        id="integer_for_a_number",
    ),
    # a schema that says which other arguments it takes keeps its word
    pytest.param(
        weather_tool({"city": {"type": "string"}}, additionalProperties={"type": "string"}),
        '{"city": "Paris", "units": "C"}',
        1.0,
        1.0,
        id="additional_properties_declared",
    ),
    pytest.param(
        weather_tool({"city": {"type": "string"}}, patternProperties={"^x-": {}}),
        '{"city": "Paris", "x-trace": 1}',
        1.0,
        1.0,
        id="pattern_properties_declared",
    ),
    pytest.param(
        {"type": "function", "function": {"name": "get_weather"}},
        '{"anything": 1.0}',
        1.0,
        1.0,
        id="no_parameters_declared",
    ),
]


@pytest.mark.parametrize(("tool", "arguments", "by_default", "strict"), STRICT_CASES)
def test_strict_grades_as_bfcl_does(
    tool: dict[str, Any], arguments: str, by_default: float, strict: float
) -> None:
    lenient = score_one(fmt(tools=[tool]), {"response": calls(arguments)})
    graded = score_one(fmt(tools=[tool], strict=True), {"response": calls(arguments)})
    assert (lenient.reward, graded.reward) == (by_default, strict)


def test_strict_applies_to_tools_declared_in_the_samples_metadata() -> None:
    term = {"kind": "tool_call_format", "key": "score", "kwargs": {"strict": True}}
    sample = {"response": calls('{"city": "Paris", "days": 2.0}'), "metadata": {"tools": [OPEN]}}
    result = score_one(term, sample)
    assert (result.reward, result.raw["failed"]) == (
        0.0,
        "call 0 'get_weather' (message 1): arguments at $.days fail the schema's `type`",
    )


def test_fraction_counts_the_well_formed_calls() -> None:
    result = score_one(
        fmt(score="fraction"),
        {"response": calls('{"city": "A"}', "{", '{"city": 1}', '{"city": "B"}')},
    )
    assert (result.reward, result.raw["calls"], result.raw["valid"]) == (0.5, 4, 2)


def test_a_call_to_an_undeclared_tool_is_malformed() -> None:
    result = score_one(fmt(), {"response": calls('{"cmd": "ls"}', name="shell")})
    assert result.reward == 0.0
    assert "not a declared tool (declared: get_weather)" in result.raw["failed"]


def test_tools_declared_in_the_samples_metadata() -> None:
    term = {"kind": "tool_call_format", "key": "score"}
    sample = {"response": calls('{"city": "Paris"}'), "metadata": {"tools": [WEATHER]}}
    assert score_one(term, sample).reward == 1.0
    undeclared = score_one(term, {"response": calls('{"city": "Paris"}')})
    assert undeclared.status == "error"
    assert (
        undeclared.error_message is not None and "no tool is declared" in undeclared.error_message
    )


def test_no_call_is_not_applicable() -> None:
    result = score_one(fmt(), {"response": "Sunny."})
    assert (result.reward, result.status) == (None, "skipped")


def test_arguments_nested_beyond_max_depth() -> None:
    deep = '{"city": "P", "x": ' + "[" * 40 + "]" * 40 + "}"
    assert "max_depth=32" in score_one(fmt(), {"response": calls(deep)}).raw["failed"]
    assert (
        score_one(
            fmt(max_depth=64, tools=[{"name": "get_weather"}]), {"response": calls(deep)}
        ).reward
        == 1.0
    )


@pytest.mark.parametrize(
    ("kwargs", "found"),
    [
        pytest.param({"tools": [{"parameters": {}}]}, "needs a `name`", id="tool_without_name"),
        pytest.param(
            {"tools": [{"name": "f", "parameters": {"type": "objekt"}}]},
            "not a valid JSON Schema",
            id="bad_schema",
        ),
        pytest.param({"score": "most"}, "kwargs.score", id="unknown_score"),
    ],
)
def test_tool_declarations_are_checked_when_the_router_compiles(
    kwargs: dict[str, Any], found: str
) -> None:
    with pytest.raises(ConfigError) as info:
        compile_router(
            {
                "routes": {
                    "r": {
                        "rewards": {
                            "t": {"kind": "tool_call_format", "key": "score", "kwargs": kwargs}
                        }
                    }
                }
            }
        )
    assert found in str(info.value)


def test_the_format_term_needs_its_key() -> None:
    with pytest.raises(ConfigError, match="set `key: score`"):
        compile_router(
            {
                "routes": {
                    "r": {
                        "rewards": {
                            "t": {"kind": "tool_call_format", "kwargs": {"tools": [WEATHER]}}
                        }
                    }
                }
            }
        )


def test_a_call_repeating_a_key_fails_in_a_conversation_built_without_the_router() -> None:
    # the router refuses such a conversation before any term reads it; the kind, handed one
    # built by hand, reads the arguments with the same parser and names the fault
    call = ToolCall("get_weather", '{"city": 7, "city": "Paris"}', "c0", 0, 0)
    convo = Conversation((Message("assistant", "", (call,)),))
    result = ToolCallFormat(ToolFormatSettings(tools=[WEATHER]))(None, Sample(response=convo))
    assert (result["score"], result["failed"]) == (
        0.0,
        "call 0 'get_weather' (message 0): arguments repeat a key within one object",
    )


def test_the_format_callable_pickles() -> None:
    reward = ToolCallFormat(ToolFormatSettings(tools=[WEATHER]))
    assert pickle.loads(pickle.dumps(reward)).settings == reward.settings


def results(*contents: str) -> list[dict[str, Any]]:
    """One assistant message calling the tool once per result, then the results in order,
    without ids (each answers the oldest unanswered call, as in TRL's tool loop), then the
    answer."""
    made = calls(*['{"city": "Paris"}'] * len(contents))[:2]
    return [
        *made,
        *({"role": "tool", "name": "get_weather", "content": c} for c in contents),
        {"role": "assistant", "content": "a"},
    ]


SUCCESS_CASES = [
    pytest.param(results("22 C", "rain"), {}, 1.0, id="all_succeed"),
    pytest.param(results("22 C", "Error: city not found"), {}, 0.5, id="error_prefix"),
    pytest.param(results("{'error': 'Tool x not found.'}"), {}, 0.0, id="trl_error_dict"),
    pytest.param(
        results("  Traceback (most recent call last):\n ..."),
        {},
        0.0,
        id="traceback_after_whitespace",
    ),
    pytest.param(results("no error here"), {}, 1.0, id="error_inside_text_counts_not"),
    pytest.param(
        results("Error during execution: name 'f' is not defined"), {}, 0.0, id="bfcl_raised"
    ),
    pytest.param(
        results('{"temperature": null, "unit": "C", "error": "city not found"}'),
        {},
        0.0,
        id="json_error_key_not_first",
    ),
    pytest.param(
        results('{"temperature": 21, "error": null, "errors": []}'),
        {},
        1.0,
        id="json_error_keys_unset",
    ),
    pytest.param(
        results("FAILED: timeout", "ok"),
        {"error_prefixes": ["failed:"], "ignore_case": True},
        0.5,
        id="configured",
    ),
    pytest.param("plain answer", {}, None, id="no_tool_result_not_applicable"),
]


@pytest.mark.parametrize(("response", "kwargs", "reward"), SUCCESS_CASES)
def test_tool_success(response: Any, kwargs: dict[str, Any], reward: float | None) -> None:
    result = score_one({"kind": "tool_success", "kwargs": kwargs}, {"response": response})
    assert result.reward == reward


TURN_CASES = [
    pytest.param(
        {}, calls("{}", "{}", "{}"), -0.30000000000000004, id="every_call_costs_by_default"
    ),
    pytest.param({"budget": 3}, calls("{}", "{}", "{}"), 0.0, id="within_budget"),
    pytest.param(
        {"budget": 1, "penalty": 0.5, "max_penalty": 0.6},
        calls("{}", "{}", "{}"),
        -0.6,
        id="capped",
    ),
    pytest.param(
        {"count": "assistant_turns", "budget": 1, "penalty": 1.0},
        calls("{}"),
        -1.0,
        id="assistant_turns",
    ),
    pytest.param(
        {"count": "assistant_turns", "budget": 1}, "plain text", 0.0, id="plain_text_is_one_turn"
    ),
]


@pytest.mark.parametrize(("kwargs", "response", "reward"), TURN_CASES)
def test_turns(kwargs: dict[str, Any], response: Any, reward: float) -> None:
    assert score_one({"kind": "turns", "kwargs": kwargs}, {"response": response}).reward == reward
