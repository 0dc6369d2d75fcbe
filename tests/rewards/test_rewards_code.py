"""``code``: the program in a response run against the tests in its label, through a router.

Expected outputs are computed here by Python itself (``str(a + b)``), never by the code under
test; the SandboxFusion tests run against a real server on 127.0.0.1 that speaks its API.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from rr_sandbox_fusion import FusionServer

from rewardrouter import ConfigError, RewardError, compile_router
from rewardrouter.rewards.code import LabelError, extract_program, parse_tests
from rewardrouter.rewards.code.compare import same_output, same_return
from rewardrouter.rewards.code.harness import decode, encode
from rewardrouter.rewards.code.settings import CodeLimits

pytestmark = pytest.mark.slow  # a long file: `make test` starts it first

LIMITS = {"timeout": 1.5, "memory_mb": 256, "processes": 8, "output_kb": 64, "disk_mb": 8}


def fenced(program: str, tag: str = "python") -> str:
    return f"Here is my solution.\n```{tag}\n{program}\n```\n"


def router_for(make_router: Any, **kwargs: Any) -> Any:
    kwargs.setdefault("limits", LIMITS)
    return make_router(
        {"routes": {"code": {"rewards": {"tests": {"kind": "code", "kwargs": kwargs}}}}}
    )


def score(router: Any, response: str, label: Any) -> Any:
    row = {"response": response, "label": label, "metadata": {"dataset": "code"}}
    return router.score_sync([row])[0]


# -- which block is the program -----------------------------------------------------------------

EXTRACT = [
    # the last block tagged with the language
    pytest.param("```python\na\n```\n```python\nb\n```", "python", "b\n", id="last_tagged"),
    # a later block in another language (sample output) is not the program
    pytest.param("```py\na\n```\n```text\n3\n```", "python", "a\n", id="skips_other_language"),
    # an untagged block when none is tagged
    pytest.param("```\na\n```", "python", "a\n", id="untagged"),
    # a program cut off mid-block is no program, not the earlier draft
    pytest.param("```python\na\n```\n```python\nb", "python", None, id="truncated"),
    # blocks inside the thinking are drafts
    pytest.param("<think>```python\na\n```</think>no code", "python", None, id="after_thinking"),
    # a longer fence holds a shorter one
    pytest.param("````python\n```\nx\n```\n````", "python", "```\nx\n```\n", id="nested_fence"),
    # language tags are matched by alias
    pytest.param("```c++\nint main(){}\n```", "cpp", "int main(){}\n", id="cpp_alias"),
    # no fence at all
    pytest.param("print(1)", "python", None, id="no_fence"),
]


@pytest.mark.parametrize(("response", "language", "program"), EXTRACT)
def test_extract_program(response: str, language: str, program: str | None) -> None:
    assert extract_program(response, language) == program


def test_whole_answer_is_the_program_without_require_fence() -> None:
    assert extract_program("print(1)", "python", require_fence=False) == "print(1)"


# -- what the label holds -------------------------------------------------------------------------

LABELS = [
    # APPS / TACO stdin-stdout, as a JSON string (how verl's parquet stores it)
    pytest.param(
        json.dumps({"inputs": ["1\n"], "outputs": ["2\n"]}), [("stdin", "2\n")], id="apps_stdin"
    ),
    # APPS call-based: arguments as a list, the expected value wrapped in a list
    pytest.param(
        {"inputs": [[1, 2]], "outputs": [[3]], "fn_name": "add"}, [("call", [3])], id="apps_call"
    ),
    # LiveCodeBench functional: one JSON argument per line, the output as JSON text
    pytest.param(
        {
            "tests": [{"input": "[1, 2]\n3", "output": "6", "testtype": "functional"}],
            "fn_name": "f",
        },
        [("call", 6)],
        id="lcb_functional",
    ),
    # LiveCodeBench stdin, as a bare list
    pytest.param(
        [{"input": "x", "output": "y", "testtype": "stdin"}], [("stdin", "y")], id="lcb_stdin"
    ),
    # MBPP asserts with setup code
    pytest.param(
        {"test_list": ["assert f(1) == 1", "assert f(2) == 2"], "test_setup_code": "import math"},
        [("checks", ["assert f(1) == 1"]), ("checks", ["assert f(2) == 2"])],
        id="mbpp",
    ),
    # pytest-style file: one case per test function
    pytest.param(
        {
            "test": "from solution import f\ndef test_a():\n    assert f()\ndef test_b():\n    assert f()\n"
        },
        [("checks", ["assert f()"]), ("checks", ["assert f()"])],
        id="pytest_file",
    ),
]


@pytest.mark.parametrize(("label", "expected"), LABELS)
def test_parse_tests(label: Any, expected: list[tuple[str, Any]]) -> None:
    # an assert-style case expects its checks, named here by their source
    found = [
        (case.kind, [c.source for c in case.expected] if case.kind == "checks" else case.expected)
        for case in parse_tests(label)
    ]
    assert found == expected


IMPORTS = [
    # `from math import` gives the checks math's functions, under their names or others
    pytest.param("from math import sqrt\nassert f(4) == sqrt(16)", [4], [5], id="math_function"),
    pytest.param(
        "from math import isclose as close\nassert close(f(1), 2.0)", [2.0], [2.5], id="renamed"
    ),
    # `from solution import f as g`: g is the program's f
    pytest.param(
        "from solution import f as g\ndef test_a():\n    assert g(1) == 2\n",
        [2],
        [3],
        id="program_alias",
    ),
]


@pytest.mark.parametrize(("test", "right", "wrong"), IMPORTS)
def test_imported_names_in_assert_style_tests(
    test: str, right: list[Any], wrong: list[Any]
) -> None:
    [case] = parse_tests({"test": test})
    assert [c["call"] for c in case.run["calls"]] == ["f"]  # never a call the program lacks
    [check] = case.expected
    assert check.holds(right) and not check.holds(wrong)


BAD_LABELS = [
    pytest.param("3", "is int 3", id="number"),
    pytest.param("not json", "not JSON", id="not_json"),
    pytest.param({"inputs": ["1"], "outputs": []}, "1 inputs but 0 outputs", id="unpaired"),
    pytest.param({"answer": "42"}, "has keys ['answer']", id="unknown_keys"),
    pytest.param({"inputs": [], "outputs": []}, "holds no tests", id="empty"),
    pytest.param({"test": "def test_a(:"}, "does not parse", id="test_syntax"),
    # a name imported from a module the checks cannot evaluate is refused, not sent to the program
    pytest.param(
        {"test": "from collections import Counter\nassert Counter(f(1)) == {}"},
        "a call of 'Counter', imported from collections.Counter",
        id="foreign_import",
    ),
    # an argument that cannot cross to the sandbox
    pytest.param({"asserts": ["assert f(range(3)) == 3"]}, "an argument fails", id="range_arg"),
    pytest.param(
        [{"input": "1", "output": "1", "testtype": "functional"}], "names no `fn_name`", id="no_fn"
    ),
]


@pytest.mark.parametrize(("label", "message"), BAD_LABELS)
def test_bad_labels_say_what_they_found(label: Any, message: str) -> None:
    with pytest.raises(LabelError, match=re.escape(message)):
        parse_tests(label)


# -- comparison -----------------------------------------------------------------------------------

OUTPUTS = [
    pytest.param("3\n", "3", "tokens", True, id="trailing_newline"),
    pytest.param("1  2\n", "1 2", "tokens", True, id="spacing"),
    pytest.param("0.3333333\n", "0.33333333", "tokens", True, id="float_tolerance"),
    pytest.param("0.34\n", "0.33", "tokens", False, id="float_off"),
    pytest.param("1 2\n", "1\n2\n", "lines", False, id="lines_strict"),
    pytest.param("YES\n", "yes\n", "tokens", False, id="case_matters"),
    pytest.param("", "0", "tokens", False, id="nothing_printed"),
    # integers are exact: a relative tolerance let 1000000001 pass for 1000000000
    pytest.param("1000000001\n", "1000000000", "tokens", False, id="integer_off_by_one"),
    pytest.param("123456889", "123456789", "tokens", False, id="integer_off_by_a_hundred"),
    pytest.param("1000000001.0", "1000000000", "tokens", False, id="integer_as_a_close_float"),
    pytest.param("+007 -0", "7 0", "tokens", True, id="integer_sign_and_zeros"),
    pytest.param("1.5e3 7.0", "1500 7", "tokens", True, id="integer_written_as_a_decimal"),
    pytest.param("1e99999999999999999999", "1", "tokens", False, id="integer_huge_exponent"),
    pytest.param("9" * 5000, "9" * 4999 + "8", "tokens", False, id="integer_of_5000_digits"),
    pytest.param("1_000", "1000", "tokens", False, id="python_underscores_are_no_number"),
    pytest.param("1e400", "1e401", "tokens", False, id="floats_beyond_range"),
]


@pytest.mark.parametrize(("got", "want", "compare", "same"), OUTPUTS)
def test_same_output(got: str, want: str, compare: Any, same: bool) -> None:
    assert same_output(got, want, compare, 1e-6) is same


def test_same_return() -> None:
    assert same_return(3, [3], 1e-9)  # APPS wraps the expected value
    assert same_return([1, 2], [1, 2], 1e-9)
    assert not same_return(True, 1, 1e-9)  # a bool is not the number 1
    assert same_return({"a": 0.1 + 0.2}, {"a": 0.3}, 1e-9)
    assert not same_return(1000000001, 1000000000, 1e-6)  # integers exactly
    assert not same_return(10**400, 1e308, 1e-6)  # beyond a float: unequal, not OverflowError
    assert not same_return(1e308, 10**400, 1e-6)
    assert same_return(3.0, 3, 1e-9) and not same_return(3.0000001, 3, 1e-6)


_SIGNS = st.sampled_from(["", "+", "-"])
_DIGITS = st.text("0123456789", min_size=1, max_size=60)


@settings(max_examples=300, deadline=None)
@given(_SIGNS, _DIGITS, _SIGNS, _DIGITS)
def test_integer_tokens_compare_as_python_integers(
    sign_a: str, digits_a: str, sign_b: str, digits_b: str
) -> None:
    got, want = sign_a + digits_a, sign_b + digits_b
    assert same_output(got, want, "tokens", 0.5) is (int(got) == int(want))


@settings(max_examples=300, deadline=None)
@given(
    _SIGNS,
    _DIGITS,
    st.text("0123456789", max_size=8),
    st.integers(-12, 12),
    _SIGNS,
    _DIGITS,
)
def test_a_decimal_token_equals_an_integer_exactly(
    sign: str, whole: str, fraction: str, exponent: int, sign_b: str, digits_b: str
) -> None:
    """The truth is Fraction's: a printed 7.0 or 15e2 is that integer, 7.000001 is not."""
    got = f"{sign}{whole}.{fraction}e{exponent}"
    want = sign_b + digits_b
    assert same_output(got, want, "tokens", 0.5) is (Fraction(got) == int(want))


# -- through a router -----------------------------------------------------------------------------

ADD = json.dumps(
    {
        "inputs": [f"{a} {b}\n" for a, b in [(1, 2), (5, 7), (-3, 3)]],
        "outputs": [f"{a + b}\n" for a, b in [(1, 2), (5, 7), (-3, 3)]],
    }
)
READ_ADD = "a, b = map(int, input().split())\n"

GRADED = [
    pytest.param(fenced(READ_ADD + "print(a + b)"), ADD, 1.0, id="right"),
    pytest.param(fenced(READ_ADD + "print(a * b)"), ADD, 0.0, id="wrong"),
    # right on the first test of three only
    pytest.param(fenced(READ_ADD + "print(a + b if a == 1 else -1)"), ADD, 1 / 3, id="partial"),
    pytest.param("I could not solve it.", ADD, 0.0, id="no_program"),
    pytest.param(fenced("raise SystemExit(3)"), ADD, 0.0, id="crash"),
    pytest.param(
        fenced("def add(a, b):\n    return a + b"),
        {"inputs": [[1, 2], [2, 2]], "outputs": [[3], [4]], "fn_name": "add"},
        1.0,
        id="call_based",
    ),
    pytest.param(
        fenced("def f(n):\n    return n * n"),
        {"test": "def check(candidate):\n    assert candidate(3) == 9\n", "entry_point": "f"},
        1.0,
        id="humaneval_check",
    ),
    pytest.param(
        fenced("def f(n):\n    return n"),
        {"asserts": ["assert f(1) == 1", "assert f(2) == 4"]},
        0.5,
        id="mbpp_one_of_two",
    ),
]


@pytest.mark.parametrize(("response", "label", "reward"), GRADED)
def test_graded(make_router: Any, response: str, label: Any, reward: float) -> None:
    result = score(router_for(make_router), response, label)
    assert (result.status, result.reward) == ("ok", pytest.approx(reward))


def test_scoring_all(make_router: Any) -> None:
    router = router_for(make_router, scoring="all")
    partial = fenced(READ_ADD + "print(a + b if a == 1 else -1)")
    assert score(router, partial, ADD).reward == 0.0
    assert score(router, fenced(READ_ADD + "print(a + b)"), ADD).reward == 1.0


def test_hostile_programs_do_not_touch_the_other_samples(make_router: Any) -> None:
    router = router_for(make_router, workers=2)
    hostile = [
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
        "x = []\nwhile True:\n    x.append(bytearray(1 << 24))",
        "while True:\n    print('y' * 4096)",
        "while True:\n    pass",
    ]
    good = fenced(READ_ADD + "print(a + b)")
    responses = [good, *map(fenced, hostile), good]
    rows = [{"response": r, "label": ADD, "metadata": {"dataset": "code"}} for r in responses]
    results = router.score_sync(rows)
    assert [r.reward for r in results] == [1.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    assert {r.status for r in results} == {"ok"}


def test_bad_label_is_an_error_naming_the_sample(make_router: Any) -> None:
    router = router_for(make_router)
    rows = [
        {"response": fenced("print(1)"), "label": {"answer": 1}, "metadata": {"dataset": "code"}}
    ]
    with pytest.raises(RewardError, match=r"sample 0.*has keys \['answer'\]"):
        router.score_sync(rows)


def test_bad_label_with_a_fallback_is_recorded(make_router: Any) -> None:
    config = {"kind": "code", "kwargs": {"limits": LIMITS}, "on_error": {"value": 0.0}}
    router = make_router({"routes": {"code": {"rewards": {"tests": config}}}})
    result = score(router, fenced("print(1)"), "[]")
    assert (result.status, result.reward) == ("error", 0.0)
    assert "holds no tests" in (result.error_message or "")


SETTINGS_ERRORS = [
    pytest.param({"limits": {"timout": 3}}, "kwargs.limits.timout", id="typo_in_limits"),
    pytest.param({"backend": "sandbox_fusion"}, "needs `server", id="fusion_without_server"),
    pytest.param({"language": "cpp"}, "needs `backend: sandbox_fusion`", id="local_cpp"),
    pytest.param({"scoring": "most"}, "kwargs.scoring", id="bad_scoring"),
]


@pytest.mark.parametrize(("kwargs", "message"), SETTINGS_ERRORS)
def test_settings_errors_at_compile_time(
    make_router: Any, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as error:
        router_for(make_router, **kwargs)
    assert "routes.code.rewards.tests.kwargs" in str(error.value)


#: Limits with their units are read as written; a bare number far beyond what one program
#: could use is refused with the unit it was likely written in.
UNITS = [
    pytest.param({"timeout": "1500ms"}, {"timeout": 1.5}, id="milliseconds"),
    pytest.param({"timeout": "2s", "deadline": "1min"}, {"timeout": 2, "deadline": 60}, id="s_min"),
    pytest.param({"memory_mb": "2GiB", "disk_mb": "100MB"}, {"memory_mb": 2048, "disk_mb": 96}, id="sizes"),
    pytest.param({"output_kb": "1MiB"}, {"output_kb": 1024}, id="kib_field"),
    pytest.param({"memory_mb": 512, "timeout": 6}, {"memory_mb": 512, "timeout": 6}, id="bare"),
]  # fmt: skip


@pytest.mark.parametrize(("limits", "read"), UNITS)
def test_limits_take_explicit_units(limits: dict[str, Any], read: dict[str, Any]) -> None:
    settings = CodeLimits.model_validate(limits)
    assert {k: getattr(settings, k) for k in read} == read


IMPLAUSIBLE = [
    pytest.param({"memory_mb": 536870912}, "memory_mb", "in bytes `512MiB`", id="memory_in_bytes"),
    pytest.param({"memory_mb": 524288}, "memory_mb", "in KiB `512MiB`", id="memory_in_kib"),
    pytest.param({"disk_mb": 67108864}, "disk_mb", "in bytes `64MiB`", id="disk_in_bytes"),
    pytest.param({"output_kb": 1048576}, "output_kb", "in bytes `1MiB`", id="output_in_bytes"),
    pytest.param({"timeout": 2000}, "timeout", "in milliseconds, write `2s`", id="timeout_in_ms"),
    pytest.param({"deadline": 60000}, "deadline", "in milliseconds, write `60s`", id="deadline_in_ms"),
    pytest.param({"timeout": "2 furlongs"}, "timeout", "write it like `2s`", id="unknown_unit"),
]  # fmt: skip


@pytest.mark.parametrize(("limits", "field", "fix"), IMPLAUSIBLE)
def test_implausible_bare_numbers_are_refused_with_the_likely_unit(
    make_router: Any, limits: dict[str, Any], field: str, fix: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        router_for(make_router, limits=limits)
    message = str(refused.value)
    assert f"routes.code.rewards.tests.kwargs.limits.{field}:" in message and fix in message


#: The sandbox's worst case against the term's timeout, when the router compiles: one test and
#: the runner's allowance (11 s: start-up, clean-up, the report) must fit, and so must a
#: `deadline` set by hand; unset, the cases' deadline is derived from the call's own.
BUDGETS = [
    pytest.param({"timeout": 6}, 17, None, id="one_test_fits"),
    pytest.param({"timeout": 6}, 16, "need 17 s, more than the term's timeout (16 s)", id="no_test_fits"),
    pytest.param({"timeout": 2, "deadline": 30}, 43, None, id="deadline_fits"),
    pytest.param(
        {"timeout": 2, "deadline": 30}, 42,
        "need 43 s, more than the term's timeout (42 s)", id="deadline_does_not_fit",
    ),
    pytest.param({"timeout": 6}, 60, None, id="conf_apps_under_the_default_timeout"),
]  # fmt: skip


@pytest.mark.parametrize(("limits", "timeout", "problem"), BUDGETS)
def test_budgets_are_checked_against_each_other_at_compile_time(
    make_router: Any, limits: dict[str, Any], timeout: float, problem: str | None
) -> None:
    term = {"kind": "code", "kwargs": {"limits": limits}, "timeout": timeout}
    config = {"routes": {"code": {"rewards": {"tests": term}}}}
    if problem is None:
        make_router(config)
        return
    with pytest.raises(ConfigError) as refused:
        make_router(config)
    message = str(refused.value)
    assert "routes.code.rewards.tests.timeout:" in message and problem in message, message
    assert "set `timeout:" in message  # and the fix, with its number


def test_the_budget_error_shown_in_the_docs_is_what_the_compiler_says() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "kinds" / "code.md").read_text()
    shown = page.split("(`timeout: 10` on the term above):\n\n```text\n", 1)[1].split("```")[0]
    term = {"kind": "code", "kwargs": {"limits": {"timeout": 6}}, "timeout": 10}
    with pytest.raises(ConfigError) as refused:
        compile_router({"routes": {"apps": {"rewards": {"tests": term}}}})
    assert str(refused.value) == shown.rstrip("\n")


# -- SandboxFusion --------------------------------------------------------------------------------


@pytest.fixture
def fusion() -> Iterator[FusionServer]:
    server = FusionServer()
    yield server
    server.stop()


def fusion_router(make_router: Any, server: FusionServer, **kwargs: Any) -> Any:
    settings = {"url": server.url("/run_code"), "backoff": 0.01, **kwargs.pop("server", {})}
    return router_for(make_router, backend="sandbox_fusion", server=settings, **kwargs)


def test_fusion_python_runs_each_program_in_one_request(
    make_router: Any, fusion: FusionServer
) -> None:
    router = fusion_router(make_router, fusion)
    rows = [
        {"response": fenced(READ_ADD + op), "label": ADD, "metadata": {"dataset": "code"}}
        for op in ("print(a + b)", "print(a - b)")
    ]
    assert [r.reward for r in router.score_sync(rows)] == [1.0, 0.0]
    assert len(fusion.requests) == 2
    assert {r["language"] for r in fusion.requests} == {"python"}


def test_fusion_call_based_and_asserts(make_router: Any, fusion: FusionServer) -> None:
    router = fusion_router(make_router, fusion)
    call = {"inputs": [[2]], "outputs": [[4]], "fn_name": "f"}
    asserts = {"asserts": ["assert f(2) == 4", "assert f(3) == 9"]}
    assert score(router, fenced("def f(x):\n    return x * 2"), call).reward == 1.0
    assert score(router, fenced("def f(x):\n    return x * 2"), asserts).reward == 0.5


def test_fusion_other_languages_one_request_per_case(
    make_router: Any, fusion: FusionServer
) -> None:
    router = fusion_router(make_router, fusion, language="bash")
    program = fenced("read a b\necho $((a + b))", tag="bash")
    assert score(router, program, ADD).reward == 1.0
    assert [r["stdin"] for r in fusion.requests] == ["1 2\n", "5 7\n", "-3 3\n"]
    assert {r["run_timeout"] for r in fusion.requests} == {LIMITS["timeout"]}


def test_fusion_retries_an_overloaded_service(make_router: Any) -> None:
    server = FusionServer(fail_first=2)
    try:
        router = fusion_router(make_router, server)
        assert score(router, fenced(READ_ADD + "print(a + b)"), ADD).reward == 1.0
        assert len(server.requests) == 3
    finally:
        server.stop()


def test_fusion_sandbox_error_fails_the_call(make_router: Any) -> None:
    server = FusionServer(sandbox_error=True)
    try:
        router = fusion_router(make_router, server)
        with pytest.raises(RewardError, match="executor pod lost"):
            score(router, fenced("print(1)"), ADD)
    finally:
        server.stop()


def test_readme_code_block_compiles(make_router: Any) -> None:
    page = (Path(__file__).parents[2] / "docs" / "kinds" / "code.md").read_text()
    section = page.split("# Code with tests (`kind: code`)", 1)[1]
    block = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    router = make_router(yaml.safe_load(block))
    assert (
        router.score_sync(
            [
                {
                    "response": fenced("print(input())"),
                    "label": {"inputs": ["7"], "outputs": ["7"]},
                    "metadata": {"dataset": "codeparrot/apps"},
                }
            ]
        )[0].reward
        == 1.0
    )


# Python itself is the truth for a converted assert: for every value a program could return,
# the check the grader evaluates outside the program must agree with running the assert.
ASSERTS = [
    "assert f(1) == 2",
    "assert f([3, 1]) == [1, 3]",
    "assert f('ab') == ('a', 'b')",
    "assert set(f(0)) == {1, 2}",
    "assert sorted(f(0)) == [1, 2]",
    "assert abs(f(0) - 0.5) < 1e-6",
    "assert math.isclose(f(0), 0.1 + 0.2)",
    "assert f(0) is None",
    "assert not f(0)",
    "assert f(0)",
    "assert len(f(0)) == 2 and f(0)[0] == 1",
    "assert f(0) in [1, 2, 3]",
    "assert f(0) == {'a': [1, (2, 3)]}",
    "assert f(0).count(1) == 2",
    "assert f(0) != f(1)",
]
RETURNS = [2, 1, [1, 3], (1, 3), ("a", "b"), ["a", "b"], {1, 2}, [2, 1], 0.5, 0.5000001, 0.3,
           0.30000000000000004, None, 0, "", [1, 1], [1, 2], {"a": [1, (2, 3)]},
           {"a": [1, [2, 3]]}, True, 1.0, b"x", frozenset({1, 2})]  # fmt: skip


@pytest.mark.parametrize("test", ASSERTS)
def test_a_converted_assert_agrees_with_python_on_every_value(test: str) -> None:
    [case] = parse_tests({"asserts": [test], "setup": "import math"})
    [check] = case.expected
    for value in RETURNS:
        try:
            exec(test, {"math": math, "f": lambda *args, value=value: value})
            python = True
        except Exception:  # AssertionError, or a TypeError the assert would have raised
            python = False
        # the value as it comes back from the sandbox: encoded, through JSON, decoded
        returned = decode(json.loads(json.dumps(encode(value))))
        assert check.holds([returned] * len(check.calls)) is python, (test, value)
