"""The tests in a code sample's label, read into :class:`Case` s.

Labels come as the datasets store them, as a dict or as a JSON string of one:

================================================  ============================================
label                                             datasets
================================================  ============================================
``{"inputs": [...], "outputs": [...]}``           APPS, TACO, CodeContests, DeepCoder
                                                  (stdin → expected stdout)
``{"inputs": [[args]...], "outputs": [...],       APPS / TACO call-based: the return value of
"fn_name": "f"}``                                 ``f(*args)`` (or ``Solution().f``)
``[{"input", "output", "testtype"}, ...]`` or     LiveCodeBench, DeepCoder: ``stdin`` tests, or
``{"tests": [...], "fn_name": "f"}``              ``functional`` ones whose input holds one
                                                  JSON argument per line
``{"asserts": ["assert f(1) == 2", ...],          MBPP (``test_list`` and ``test_setup_code``
"setup": "import math"}``                         are read too): one case per assert
``{"test": "<code>", "entry_point": "f"}``        HumanEval (``check(f)``), KodCode and other
                                                  pytest-style files (one case per top-level
                                                  ``def test_*``), or plain assert code
================================================  ============================================

Assert-style tests never run inside the program's process: :mod:`.asserts` turns each into the
calls the sandbox makes and a check evaluated outside it on the returned values. Anything else
raises :class:`LabelError`, which says what was found: a label the grader cannot read is a data
error, never a silent 0.

>>> [c.run for c in parse_tests('{"inputs": ["1 2\\\\n"], "outputs": ["3\\\\n"]}')]
[{'stdin': '1 2\\n'}]
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rewardrouter.outcome import DataFault
from rewardrouter.rewards.code.asserts import Check, TestsError, checks_of
from rewardrouter.rewards.code.harness import encode

CaseKind = Literal["stdin", "call", "checks"]


class LabelError(DataFault):
    """A label that holds no tests the ``code`` kind can run."""


@dataclass(frozen=True)
class Case:
    """One test: what the sandbox runs (``run``) and what it must give back (``expected``: the
    printed output, the return value, or the :class:`~.asserts.Check` s of its values).

    ``expected`` never enters the sandbox: the program's output is compared outside it.
    """

    kind: CaseKind
    run: dict[str, Any]
    expected: Any = None


_FORMS = (
    'expected {"inputs": [...], "outputs": [...]} (with "fn_name" for call-based tests), '
    'a list of {"input", "output", "testtype"}, {"asserts": [...]}, or {"test": "<code>"}'
)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _text(value: Any, what: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value) + "\n"  # some datasets store lines
    raise LabelError(f"{what} is {type(value).__name__} {_short(value)}; expected a string")


def _call_args(value: Any, what: str) -> list[Any]:
    """Arguments of a call-based test: a JSON list, or one JSON value per line (LiveCodeBench)."""
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        try:
            return [json.loads(line) for line in value.splitlines() if line.strip()]
        except ValueError:
            raise LabelError(
                f"{what} {_short(value)} is not one JSON value per line (the arguments)"
            ) from None
    return [value]


def _expected_value(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _io_cases(inputs: Any, outputs: Any, fn_name: Any) -> list[Case]:
    if not isinstance(inputs, list) or not isinstance(outputs, list):
        raise LabelError(
            f"`inputs` and `outputs` must be lists; found {type(inputs).__name__} and "
            f"{type(outputs).__name__}"
        )
    if len(inputs) != len(outputs):
        raise LabelError(f"{len(inputs)} inputs but {len(outputs)} outputs; they must pair up")
    cases = []
    for i, (given, wanted) in enumerate(zip(inputs, outputs, strict=True)):
        if fn_name:
            args = _call_args(given, f"inputs[{i}]")
            cases.append(Case("call", _call(fn_name, args), _expected_value(wanted)))
        else:
            stdin = _text(given, f"inputs[{i}]")
            cases.append(Case("stdin", {"stdin": stdin}, _text(wanted, f"outputs[{i}]")))
    return cases


def _listed_cases(tests: Sequence[Any], fn_name: Any) -> list[Case]:
    cases = []
    for i, test in enumerate(tests):
        if not isinstance(test, Mapping) or "input" not in test or "output" not in test:
            raise LabelError(f"tests[{i}] is {_short(test)}; expected {{'input', 'output'}}")
        functional = test.get("testtype", "stdin") == "functional" or (
            fn_name and "testtype" not in test
        )
        if functional:
            name = test.get("fn_name") or fn_name
            if not name:
                raise LabelError(
                    f"tests[{i}] is a functional test but the label names no `fn_name`"
                )
            args = _call_args(test["input"], f"tests[{i}].input")
            cases.append(Case("call", _call(name, args), _expected_value(test["output"])))
        else:
            stdin = _text(test["input"], f"tests[{i}].input")
            cases.append(
                Case("stdin", {"stdin": stdin}, _text(test["output"], f"tests[{i}].output"))
            )
    return cases


def _call(name: str, args: list[Any]) -> dict[str, Any]:
    return {"calls": [{"call": name, "args": encode(args), "kwargs": encode({})}]}


def _check_groups(code: str, entry: Any, what: str) -> list[list[Check]]:
    try:
        return checks_of(code, entry if isinstance(entry, str) and entry else None)
    except TestsError as exc:
        raise LabelError(f"{what}: {exc}") from None


def _checks_case(checks: Sequence[Check]) -> Case:
    """One case that passes when all ``checks`` hold: their calls, in order, in one process."""
    return Case("checks", {"calls": [c for check in checks for c in check.calls]}, tuple(checks))


def _assert_cases(asserts: Any, setup: Any) -> list[Case]:
    if not isinstance(asserts, list) or not all(isinstance(a, str) for a in asserts):
        raise LabelError(f"`asserts` is {_short(asserts)}; expected a list of assert statements")
    prefix = f"{setup}\n" if isinstance(setup, str) and setup.strip() else ""
    return [
        _checks_case(
            [c for group in _check_groups(prefix + code, None, f"asserts[{i}]") for c in group]
        )
        for i, code in enumerate(asserts)
    ]


def _code_cases(test: Any, entry_point: Any) -> list[Case]:
    if not isinstance(test, str) or not test.strip():
        raise LabelError(f"`test` is {_short(test)}; expected test code")
    return [_checks_case(group) for group in _check_groups(test, entry_point, "`test`")]


def parse_tests(label: Any) -> list[Case]:
    """The cases of ``label`` (see the module docstring); :class:`LabelError` when it has none."""
    data = label
    if isinstance(label, str | bytes):
        try:
            data = json.loads(label)
        except ValueError:
            raise LabelError(
                f"the label is a string that is not JSON: {_short(label)}; {_FORMS}"
            ) from None
    cases: list[Case]
    if isinstance(data, list):
        cases = _listed_cases(data, None)
    elif not isinstance(data, Mapping):
        raise LabelError(f"the label is {type(data).__name__} {_short(data)}; {_FORMS}")
    elif "inputs" in data or "outputs" in data:
        cases = _io_cases(data.get("inputs"), data.get("outputs"), data.get("fn_name"))
    elif "tests" in data:
        tests = data["tests"]
        if isinstance(tests, str):
            tests = json.loads(tests)
        if not isinstance(tests, list):
            raise LabelError(f"`tests` is {_short(tests)}; expected a list")
        cases = _listed_cases(tests, data.get("fn_name") or data.get("func_name"))
    elif "asserts" in data or "test_list" in data:
        asserts = data.get("asserts", data.get("test_list"))
        cases = _assert_cases(asserts, data.get("setup", data.get("test_setup_code")))
    elif "test" in data:
        cases = _code_cases(data["test"], data.get("entry_point"))
    else:
        raise LabelError(f"the label has keys {sorted(map(str, data))}; {_FORMS}")
    if not cases:
        raise LabelError("the label holds no tests; a program cannot be graded against none")
    return cases
