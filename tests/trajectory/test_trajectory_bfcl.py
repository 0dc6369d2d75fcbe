"""The tool kinds beside BFCL's own code: ``tool_call_format`` with ``strict: true`` against
BFCL's AST checker on calls built from BFCL's own test data (``benchmarks/bfcl_suite.py``, which
prints the table), and ``tool_success`` on what BFCL's multi-turn executor answers calls with.

BFCL is the installed bfcl-eval (``make test`` installs it without its dependencies); read at
run time, never copied here. Without it, each test skips and says how to install it.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
import rr_benchmarks

from rewardrouter.rewards.tool_use.calls import ToolSuccess, ToolSuccessSettings
from rewardrouter.sample import Sample
from rewardrouter.trajectory import Conversation, Message, ToolCall

pytestmark = pytest.mark.slow  # BFCL's whole test data through its own checker

pytest.importorskip(
    "bfcl_eval", reason="BFCL's checker: pip install --no-deps bfcl-eval (make test installs it)"
)


@pytest.fixture(scope="module")
def found() -> Any:
    suite: ModuleType = rr_benchmarks.load("bfcl_suite")
    return suite.compare()


def test_strict_grades_every_call_of_an_answer_changed_in_one_thing_as_bfcl_does(
    found: Any,
) -> None:
    # an undeclared argument, 5.0 for an integer (alone or in an array), 5 for a float, a
    # required argument left out, a string for a number, a number for a string, true for an
    # integer: thousands of each, made of the answers both BFCL and `strict` take
    assert found.value_questions == {}  # each call differs from its answer in a type or name
    assert found.decided > 10_000
    assert [d for d in found.differences if d.kind != "answer"] == []
    assert found.false_positives == []


def test_where_they_differ_bfcls_answer_breaks_its_own_function_doc(found: Any) -> None:
    # BFCL's possible answers give null for an argument whose default is None, a value of the
    # answer's own type where the doc declares another ("dontcare" for an integer, a variable
    # named in a string for an array, false for a string), or a value outside the doc's enum.
    # Its checker takes a value of the answer's type (its `is_variable`) and never reads
    # `enum`; a schema holds the call to the function's declaration, as the model was shown.
    assert {(d.kind, d.bfcl, d.ours) for d in found.differences} <= {
        ("answer", "valid", "type (null)"),
        ("answer", "valid", "type"),
        ("answer", "valid", "enum"),
    }
    assert len(found.differences) < 0.06 * found.calls["answer"]


def test_without_strict_json_schema_takes_what_bfcl_refuses(found: Any) -> None:
    for kind in ("undeclared", "float_for_integer", "float_items"):
        assert found.calls[kind] > 0
        assert (found.agree[kind], found.agree_default[kind]) == (found.calls[kind], 0)


#: Calls to BFCL's own tools (its MathAPI and GorillaFileSystem), each with whether it fails by
#: the tool's documented behaviour.
BFCL_CALLS = [
    pytest.param("add(a=1, b=2)", False, id="sum"),
    pytest.param("mean(numbers=[])", True, id="mean_of_nothing"),
    pytest.param("no_such_tool(x=1)", True, id="undefined_tool_raises"),
    pytest.param("cd(folder='nowhere')", True, id="missing_folder"),
    pytest.param("ls()", False, id="list_a_folder"),
]


def test_tool_success_counts_the_calls_bfcls_executor_answers_as_failed() -> None:
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import (
        execute_multi_turn_func_call,
    )

    calls = [param.values[0] for param in BFCL_CALLS]
    results, _ = execute_multi_turn_func_call(
        calls,
        {"GorillaFileSystem": {"root": {"home": {"type": "directory", "contents": {}}}}},
        ["MathAPI", "GorillaFileSystem"],
        "rewardrouter",
        "tool_success",
    )
    success = ToolSuccess(ToolSuccessSettings())
    seen = []
    for param, result in zip(BFCL_CALLS, results, strict=True):
        call, fails = param.values
        made = ToolCall(str(call).partition("(")[0], "{}", "c0", 0, 0)
        conversation = Conversation(
            (Message("assistant", "", (made,)), Message("tool", str(result), (), "c0"))
        )
        seen.append((call, result, fails, success(None, Sample(response=conversation)) == 0.0))
    assert [(call, result, fails) for call, result, fails, _ in seen] == [
        (call, result, failed) for call, result, _, failed in seen
    ]
