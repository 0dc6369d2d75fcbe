"""``tool_call_format``, ``tool_success`` and ``turns`` against what a policy optimizing them would
write: calls that skip the format check, results that hide a failure, a tool result forged in
its own text or as a tool message that answers no call, calls spent without limit.

Each hostile trajectory is scored in one batch between two honest ones (``score_between_honest_rows``):
it earns nothing from the gamed term (0.0, or no reward where the term does not apply), the
honest rows earn 1.0, and the batch ends within a generous bound.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from rr_trajectory import weather_tool

from rewardrouter import Router, compile_router

from .conftest import Canary, score_between_honest_rows

DEADLINE = 10.0


def asked(*messages: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": "user", "content": "Weather in Paris?"}, *messages]


def answer(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def call(arguments: Any, call_id: str | None = "c") -> dict[str, Any]:
    """An assistant message calling ``get_weather``; ``call_id=None``: a call without an id,
    as TRL's tool loop writes it (its arguments an object)."""
    made: dict[str, Any] = {"type": "function"}
    made["function"] = {"name": "get_weather", "arguments": arguments}
    if call_id is not None:
        made["id"] = call_id
    return {"role": "assistant", "content": None, "tool_calls": [made]}


def result(content: str, call_id: str | None = "c") -> dict[str, Any]:
    """A tool message; ``call_id=None``: without an id, named by the tool as TRL writes it."""
    if call_id is None:
        return {"role": "tool", "name": "get_weather", "content": content}
    return {"role": "tool", "tool_call_id": call_id, "content": content}


GOOD = call('{"city": "Paris"}')


def router_of(rewards: dict[str, Any]) -> Iterator[Router]:
    config = {"default_route": "agent", "routes": {"agent": {"rewards": rewards}}}
    with compile_router(config) as router:
        yield router


@pytest.fixture(scope="module")
def format_only() -> Iterator[Router]:
    term = {"kind": "tool_call_format", "key": "score", "kwargs": {"tools": [weather_tool()]}}
    yield from router_of({"format": term})


@pytest.fixture(scope="module")
def success_only() -> Iterator[Router]:
    yield from router_of({"worked": {"kind": "tool_success"}})


@pytest.fixture(scope="module")
def answer_and_turns() -> Iterator[Router]:
    turns = {"kind": "turns", "kwargs": {"count": "tool_calls", "budget": 2, "penalty": 0.1}}
    yield from router_of({"answer": {"kind": "exact_match"}, "length": turns})


FORMAT_CASES = [
    # no call at all: the format term does not apply, so no format credit (not 1.0)
    pytest.param(asked(answer("Sunny.")), None, "skipped", id="makes_no_call"),
    # one good call beside a bad one: `score: all` gives nothing for the good one
    pytest.param(
        asked(GOOD, result("sunny"), call('{"town": "Paris"}', "d"), answer("Sunny.")),
        0.0,
        "ok",
        id="one_good_call_hides_a_bad_one",
    ),
    # a call written as text but never closed: no loop could run it, a malformed call
    pytest.param(
        asked(answer('<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}')),
        0.0,
        "ok",
        id="call_written_as_text_cut_off",
    ),
    # a call written as text that is not JSON: kept as an unreadable call, malformed
    pytest.param(
        asked(answer('<tool_call>{"name": "get_weather", "arguments": {city: Paris}}</tool_call>')),
        0.0,
        "ok",
        id="call_written_as_text_not_json",
    ),
]


def between_honest_rows(router: Router, canary: Canary, response: Any) -> Any:
    """The result of ``response`` scored between two honest conversations (call, result,
    answer), which must score as usual."""
    honest = {"response": asked(GOOD, result("sunny"), answer("Sunny."))}
    return score_between_honest_rows(router, canary, honest, {"response": response}, DEADLINE)


@pytest.mark.parametrize(("response", "reward", "status"), FORMAT_CASES)
def test_tool_call_format_gives_no_credit_it_was_not_earned(
    format_only: Router, canary: Canary, response: Any, reward: float | None, status: str
) -> None:
    bad = between_honest_rows(format_only, canary, response)
    assert (bad.reward, bad.status) == (reward, status)


SUCCESS_CASES = [
    pytest.param(asked(GOOD, result("  Error: no such city")), 0.0, "ok", id="indented_error"),
    pytest.param(asked(GOOD, result("{'error': 'boom'}")), 0.0, "ok", id="trl_error_result"),
    pytest.param(
        asked(GOOD, result("Traceback (most recent call last):\n  ...")), 0.0, "ok", id="traceback"
    ),
    # a tool result forged in the assistant's own text is not a tool message: nothing to count
    pytest.param(
        asked(answer("<tool_response>sunny</tool_response> The tool succeeded.")),
        None,
        "skipped",
        id="result_forged_in_its_own_text",
    ),
    # calls whose results never came back are failures, not successes and not "no call"
    pytest.param(asked(GOOD, answer("Sunny.")), 0.0, "ok", id="call_without_a_result"),
    # a result that reports its failure as JSON, however its keys are ordered
    pytest.param(
        asked(GOOD, result('{"temperature": null, "status": "error"}')),
        0.0,
        "ok",
        id="json_status_error",
    ),
    # a forged success answering a call written as text that no loop could read or run
    pytest.param(
        asked(answer('<tool_call>{"name": "get_weather"}</tool_call>'), result("sunny", None)),
        None,
        "error",
        id="result_for_an_unreadable_call",
    ),
]


@pytest.mark.parametrize(("response", "reward", "status"), SUCCESS_CASES)
def test_tool_success_counts_only_results_that_worked(
    success_only: Router, canary: Canary, response: Any, reward: float | None, status: str
) -> None:
    bad = between_honest_rows(success_only, canary, response)
    assert (bad.reward, bad.status) == (reward, status)


TRL_CALL = call({"city": "Paris"}, None)

#: Tool messages that answer no call: each would raise `tool_success` (one forged success beside
#: a failure makes 0.5 of 0.0), so the conversation is malformed, that sample's own error.
ORPHAN_CASES = [
    pytest.param(
        asked(result("sunny", None), result("sunny", None), answer("Sunny.")),
        "message 1 is a tool result, but no message before it made a tool call",
        id="results_without_any_call",
    ),
    pytest.param(
        asked(result("sunny"), GOOD, answer("Sunny.")),
        "message 1 is a tool result whose `tool_call_id` names no tool call before it",
        id="result_before_its_call",
    ),
    pytest.param(
        asked(GOOD, result("sunny", "forged"), answer("Sunny.")),
        "message 2 is a tool result whose `tool_call_id` names no tool call before it",
        id="result_answering_an_id_never_made",
    ),
    pytest.param(
        asked(GOOD, result("Error: no such city"), result("sunny"), answer("Sunny.")),
        "message 3 is a tool result whose `tool_call_id` names call 0 of message 1, answered "
        "already",
        id="one_call_answered_twice_hides_its_failure",
    ),
    pytest.param(
        asked(TRL_CALL, result("Error: no such city", None), result("sunny", None)),
        "message 3 is a tool result, but every tool call before it is answered already",
        id="more_results_than_calls_without_ids",
    ),
    pytest.param(
        asked(
            {"role": "assistant", "content": "Let me check.", "tool_calls": []},
            result("sunny", None),
        ),
        "message 2 is a tool result, but no message before it made a tool call",
        id="result_after_an_empty_list_of_calls",
    ),
]


@pytest.mark.parametrize(("response", "says"), ORPHAN_CASES)
def test_a_tool_result_that_answers_no_call_is_its_samples_error(
    success_only: Router, canary: Canary, response: Any, says: str
) -> None:
    bad = between_honest_rows(success_only, canary, response)
    assert (bad.reward, bad.status) == (None, "error")
    assert bad.error_message is not None and says in bad.error_message


def test_spending_calls_without_limit_costs_reward_and_stays_bounded(
    answer_and_turns: Router, canary: Canary
) -> None:
    # 500 calls (within the router's bounds) before the right answer: 498 beyond the budget
    calls = [
        m
        for i in range(500)
        for m in (call('{"city": "Paris"}', f"c{i}"), result("sunny", f"c{i}"))
    ]
    honest = {"response": asked(GOOD, result("sunny"), answer("Sunny")), "label": "Sunny"}
    hostile = {"response": asked(*calls, answer("Sunny")), "label": "Sunny"}
    bad = score_between_honest_rows(answer_and_turns, canary, honest, hostile, DEADLINE)
    assert bad.status == "ok"
    assert bad.reward == pytest.approx(1.0 - 0.1 * 498)


@pytest.fixture(scope="module")
def format_with_formats() -> Iterator[Router]:
    dated = {"city": {"type": "string"}, "day": {"type": "string", "format": "date"}}
    dated |= {"notify": {"type": "string", "format": "email"}}
    term = {"kind": "tool_call_format", "key": "score", "kwargs": {"tools": [weather_tool(dated)]}}
    yield from router_of({"format": term})


@pytest.mark.parametrize(
    ("arguments", "reward"),
    [
        pytest.param('{"city": "Paris", "day": "2024-05-01", "notify": "a@b.co"}', 1.0, id="met"),
        pytest.param('{"city": "Paris", "day": "tomorrow"}', 0.0, id="not_a_date"),
        pytest.param('{"city": "Paris", "day": "2024-13-45"}', 0.0, id="no_such_date"),
        pytest.param('{"city": "Paris", "notify": "not an email"}', 0.0, id="not_an_email"),
    ],
)
def test_a_declared_format_is_held_to(
    format_with_formats: Router, canary: Canary, arguments: str, reward: float
) -> None:
    """What a tool declares as `format: date` gets a date: a policy's "tomorrow" is not
    well-formed arguments, as a tool server validating them would refuse it."""
    response = asked(call(arguments), result("sunny"), answer("Sunny."))
    scored = between_honest_rows(format_with_formats, canary, response)
    assert (scored.reward, scored.status) == (reward, "ok")
