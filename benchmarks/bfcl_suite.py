"""BFCL's own checker beside ``tool_call_format`` (``strict: true``, and the default), on calls
built from BFCL's own test data.

Reads, at run time, from the installed bfcl-eval (``pip install --no-deps bfcl-eval``; ``make
test`` installs it; nothing of it is copied into this project):

- its AST checker, ``bfcl_eval/eval_checker/ast_eval/ast_checker.py``, whose
  ``simple_function_checker`` grades one call against a function doc and its possible answers.
  It is loaded without its table of models (``constants/model_config.py`` imports every model
  vendor's client library); the stand-in keeps function names as written, as the checker does
  for a model that may write dots;
- its Python categories (``bfcl_eval/data``: simple_python, multiple, parallel,
  parallel_multiple and the live_ ones): each case's function docs and possible answers;
- its conversion of a function doc to the JSON Schema it sends OpenAI-style models:
  ``_cast_to_openai_type`` compiled from ``bfcl_eval/model_handler/utils.py`` alone, with its
  ``GORILLA_TO_OPENAPI`` table (``float`` becomes ``number``, ``dict`` ``object``, ``tuple``
  ``array``, ``any`` ``string``), and the arguments' ``type: object`` that ``convert_to_tool``
  sets.

Each expected call of each case (a function and its possible answers) gives the calls BFCL's
checker tells apart by type and name, each built from its first possible answer:

- ``answer``: the first option of each argument (an optional one left out where it may be);
- ``undeclared``: the answer and an argument the function does not declare;
- ``float_for_integer`` / ``float_items``: an ``integer`` (an array of them) written as floats
  (``5.0``), which JSON Schema counts an integer and BFCL does not;
- ``integer_for_float``: an integral ``float`` written as an integer (``5``), which both take;
- ``missing_required``: a required argument left out;
- ``string_for_number``, ``number_for_string``, ``bool_for_integer``: a value of another type.

BFCL's verdict is its checker's (valid, or its error type), ours ``tool_call_format``'s score
with the function as the one declared tool. BFCL also compares each value with the possible
answers: a call it refuses for a value (``value_error:*``, ``missing_optional``) asks what no
schema can, and is counted apart; so is a function doc that is no valid JSON Schema (the
router refuses to compile it).

    python benchmarks/bfcl_suite.py [--show 20]
"""

from __future__ import annotations

import argparse
import ast
import copy
import importlib
import importlib.metadata
import json
import sys
import types
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewardrouter.rewards.tool_use.calls import ToolCallFormat, ToolFormatSettings
from rewardrouter.sample import Sample
from rewardrouter.trajectory import Conversation, Message, ToolCall, TrajectoryError

#: BFCL's Python categories whose answers its AST checker grades.
CATEGORIES = (
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
)
#: BFCL's error types that a schema decides: a type, a missing or an undeclared argument.
SCHEMA_ERRORS = ("type_error", "simple_function_checker:missing_required")
UNDECLARED = "simple_function_checker:unexpected_param"
MODEL = "rewardrouter-check"  # the model name handed to BFCL's checker
NOT_DECLARED = "rr_not_declared"


def bfcl_package() -> Path:
    """The installed bfcl_eval package's folder; SystemExit naming the install line without."""
    try:
        spec = importlib.util.find_spec("bfcl_eval")
    except ValueError:
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("bfcl-eval is not installed: pip install --no-deps bfcl-eval")
    return Path(next(iter(spec.submodule_search_locations)))


def bfcl_checker() -> types.ModuleType:
    """BFCL's ``ast_checker`` module, its table of models replaced (see the module doc)."""
    name = "bfcl_eval.constants.model_config"
    if name not in sys.modules:
        stand_in = types.ModuleType(name)
        keep_names = types.SimpleNamespace(underscore_to_dot=False)
        stand_in.MODEL_CONFIG_MAPPING = defaultdict(lambda: keep_names)  # type: ignore[attr-defined]
        sys.modules[name] = stand_in
    return importlib.import_module("bfcl_eval.eval_checker.ast_eval.ast_checker")


def bfcl_to_json_schema(package: Path) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """BFCL's own conversion of a function doc's ``parameters`` to the JSON Schema it sends an
    OpenAI-style model (see the module doc)."""
    source = (package / "model_handler" / "utils.py").read_text()
    (cast,) = (
        node
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef) and node.name == "_cast_to_openai_type"
    )
    mapping = importlib.import_module("bfcl_eval.constants.type_mappings").GORILLA_TO_OPENAPI
    namespace: dict[str, Any] = {"GORILLA_TO_OPENAPI": mapping}
    exec(
        compile(ast.Module([cast], []), str(package / "model_handler/utils.py"), "exec"), namespace
    )

    def convert(parameters: dict[str, Any]) -> dict[str, Any]:
        schema = copy.deepcopy(parameters)
        schema["type"] = "object"
        schema["properties"] = namespace["_cast_to_openai_type"](schema["properties"], mapping)
        return schema

    return convert


@dataclass(frozen=True)
class Expected:
    """One expected call of a BFCL case: the function's doc and its possible answers."""

    case: str
    function: dict[str, Any]
    answer: dict[str, list[Any]]


def expected_calls(package: Path) -> Iterator[Expected]:
    """Every expected call of BFCL's Python categories, in order."""
    data = package / "data"
    for category in CATEGORIES:
        cases = [json.loads(line) for line in (data / f"BFCL_v4_{category}.json").open()]
        answers = {
            row["id"]: row["ground_truth"]
            for row in map(
                json.loads, (data / "possible_answer" / f"BFCL_v4_{category}.json").open()
            )
        }
        for case in cases:
            docs = {function["name"]: function for function in case["function"]}
            for call in answers[case["id"]]:
                ((name, answer),) = call.items()
                yield Expected(case["id"], docs[name], answer)


_MISSING = object()


def _first(options: list[Any]) -> Any:
    """The first option that is not BFCL's "may be left out" ("")."""
    return next((option for option in options if option != ""), _MISSING)


def _realized(value: Any, doc: dict[str, Any]) -> Any:
    """An answer's value as a call writes it: a dict's keys (and a list of dicts' keys) hold
    options in the possible answers, of which the first is taken."""
    if doc.get("type") == "dict" and isinstance(value, dict):
        return {k: v for k, o in value.items() if (v := _first(o)) is not _MISSING}
    items = doc.get("items", {})
    if isinstance(value, list) and items.get("type") == "dict":
        return [_realized(item, items) for item in value]
    return value


def answer_call(expected: Expected) -> dict[str, Any]:
    """The call made of each argument's first option."""
    properties = expected.function["parameters"]["properties"]
    arguments = {}
    for name, options in expected.answer.items():
        value = _first(options)
        if value is not _MISSING:
            arguments[name] = _realized(value, properties.get(name, {}))
    return arguments


def variants(expected: Expected, answer: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The answer call, and the calls made of it that BFCL's checker tells apart by type and
    name (see the module doc); one of each kind, on the first argument it applies to."""
    properties = expected.function["parameters"]["properties"]
    required = expected.function["parameters"].get("required", [])
    yield "answer", answer
    yield "undeclared", {**answer, NOT_DECLARED: 1}
    kinds: dict[str, tuple[str, Any]] = {}
    for name, value in answer.items():
        declared = properties.get(name, {}).get("type")
        items = properties.get(name, {}).get("items", {}).get("type")
        candidates = {
            "float_for_integer": declared == "integer" and type(value) is int,
            "bool_for_integer": declared == "integer" and type(value) is int,
            "string_for_number": declared in ("integer", "float") and type(value) in (int, float),
            "integer_for_float": declared == "float"
            and type(value) is float
            and value.is_integer(),
            "number_for_string": declared == "string" and type(value) is str,
            "float_items": declared == "array"
            and items == "integer"
            and bool(value)
            and all(type(v) is int for v in value),
            "missing_required": name in required,
        }
        for kind, applies in candidates.items():
            if applies and kind not in kinds:
                kinds[kind] = (name, value)
    changed = {
        "float_for_integer": lambda v: float(v),
        "bool_for_integer": lambda v: True,
        "string_for_number": lambda v: str(v),
        "integer_for_float": lambda v: int(v),
        "number_for_string": lambda v: 7,
        "float_items": lambda v: [float(i) for i in v],
    }
    for kind, (name, value) in kinds.items():
        if kind == "missing_required":
            yield kind, {k: v for k, v in answer.items() if k != name}
        else:
            yield kind, {**answer, name: changed[kind](value)}


def bfcl_verdict(checker: types.ModuleType, expected: Expected, arguments: dict[str, Any]) -> str:
    """``valid``, or the error type of BFCL's checker."""
    result = checker.simple_function_checker(
        expected.function,
        {expected.function["name"]: arguments},
        {expected.function["name"]: expected.answer},
        checker.Language.PYTHON,
        MODEL,
    )
    return "valid" if result["valid"] else str(result["error_type"])


def schema_decides(verdict: str) -> bool:
    """Whether BFCL's verdict is one a schema can give (valid, a type, a name)."""
    return verdict == "valid" or verdict == UNDECLARED or verdict.startswith(SCHEMA_ERRORS)


class Ours:
    """``tool_call_format`` on one call to the one declared tool, ``strict`` or not: whether
    it is well formed, and the schema keyword it fails first ("" when none)."""

    def __init__(self, strict: bool) -> None:
        self.strict = strict
        self._formats: dict[str, ToolCallFormat] = {}

    def __call__(self, tool: dict[str, Any], arguments: dict[str, Any]) -> tuple[bool, str]:
        key = json.dumps(tool, sort_keys=True)
        grader = self._formats.get(key)
        if grader is None:
            grader = ToolCallFormat(ToolFormatSettings(tools=[tool], strict=self.strict))
            self._formats[key] = grader
        call = ToolCall(tool["name"], json.dumps(arguments), "c0", 0, 0)
        sample = Sample(response=Conversation((Message("assistant", "", (call,)),)))
        result = grader(None, sample)
        return bool(result["score"]), _reason(result["failed"], arguments)


def _reason(failed: str, arguments: dict[str, Any]) -> str:
    """The schema keyword ``failed`` names (``"... at $.mod fail the schema's `type`"``), and
    ``type (null)`` where the argument it fails at is null; "" when nothing failed."""
    if not failed:
        return ""
    keyword = failed[failed.rfind("`", 0, -1) + 1 : -1]
    at = failed.partition(" at $.")[2].partition(" fail")[0]
    if keyword == "type" and at in arguments and arguments[at] is None:
        return "type (null)"
    return keyword


@dataclass(frozen=True)
class Difference:
    case: str
    kind: str
    bfcl: str  # BFCL's verdict
    ours: str  # "valid", or the schema keyword the call fails
    arguments: dict[str, Any]


@dataclass
class Comparison:
    """BFCL's verdicts beside ours (``strict``; and the default), by kind of call."""

    expected: int = 0
    calls: Counter[str] = field(default_factory=Counter)  # kind -> calls a schema decides
    agree: Counter[str] = field(default_factory=Counter)  # kind -> ours (strict) as BFCL
    agree_default: Counter[str] = field(default_factory=Counter)  # kind -> ours (default)
    value_questions: Counter[str] = field(default_factory=Counter)  # BFCL's verdict on a value
    not_a_schema: int = 0  # expected calls whose function doc is no valid JSON Schema
    no_variants: int = 0  # answers that BFCL or ours refuses: no variant made of them
    differences: list[Difference] = field(default_factory=list)

    @property
    def decided(self) -> int:
        return sum(self.calls.values())

    @property
    def agreements(self) -> int:
        return sum(self.agree.values())

    @property
    def false_positives(self) -> list[Difference]:
        """Calls ours takes and BFCL refuses."""
        return [d for d in self.differences if d.ours == "valid"]

    def add(self, kind: str, bfcl: str, ours: tuple[bool, str], default: bool) -> bool:
        """Count one call a schema decides; whether ours (strict) agrees with BFCL."""
        self.calls[kind] += 1
        agrees = ours[0] == (bfcl == "valid")
        self.agree[kind] += agrees
        self.agree_default[kind] += default == (bfcl == "valid")
        return agrees


def compare(package: Path | None = None) -> Comparison:
    """Every expected call of BFCL's Python categories, and the variants of each answer that
    BFCL and ours both take, through BFCL's checker and through ``tool_call_format``."""
    package = bfcl_package() if package is None else package
    checker = bfcl_checker()
    to_schema = bfcl_to_json_schema(package)
    strict, default = Ours(strict=True), Ours(strict=False)
    found = Comparison()
    for expected in expected_calls(package):
        found.expected += 1
        parameters = to_schema(expected.function["parameters"])
        tool = {"name": expected.function["name"], "parameters": parameters}
        try:
            strict(tool, {})
        except TrajectoryError:
            found.not_a_schema += 1
            continue
        answer = answer_call(expected)
        for kind, arguments in variants(expected, answer):
            theirs = bfcl_verdict(checker, expected, arguments)
            if not schema_decides(theirs):
                found.value_questions[f"{kind}: {theirs}"] += 1
                continue
            ours = strict(tool, arguments)
            if not found.add(kind, theirs, ours, default(tool, arguments)[0]):
                verdict = "valid" if ours[0] else ours[1]
                found.differences.append(
                    Difference(expected.case, kind, theirs, verdict, arguments)
                )
            if kind == "answer" and not (theirs == "valid" and ours[0]):
                found.no_variants += 1  # each variant changes one thing of a call both take
                break
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", type=int, default=10, help="differences to list per reason")
    args = parser.parse_args(argv)
    found = compare()
    print(f"bfcl-eval {importlib.metadata.version('bfcl-eval')}: {found.expected} expected calls "
          f"of {len(CATEGORIES)} Python categories ({found.not_a_schema} whose function doc is "
          f"no valid JSON Schema); variants made of the {found.expected - found.no_variants} "
          f"answers that both take")  # fmt: skip
    print(f"{'call':<20}{'decided':>9}{'strict agrees':>15}{'default agrees':>16}")
    for kind in found.calls:
        print(f"{kind:<20}{found.calls[kind]:>9}{found.agree[kind]:>15}"
              f"{found.agree_default[kind]:>16}")  # fmt: skip
    print(f"{'all':<20}{found.decided:>9}{found.agreements:>15}"
          f"{sum(found.agree_default.values()):>16}")  # fmt: skip
    print(
        f"\nBFCL's verdict on a value (no schema's question): {sum(found.value_questions.values())}"
    )
    for what, count in found.value_questions.most_common():
        print(f"  {what}: {count}")
    print(f"\nfalse positives (ours takes, BFCL refuses): {len(found.false_positives)}")
    reasons = Counter((d.kind, d.bfcl, d.ours) for d in found.differences)
    print(f"differences ({len(found.differences)}), by BFCL's verdict and the keyword ours fails:")
    for (kind, bfcl, ours), count in reasons.most_common():
        print(f"  {kind}: BFCL {bfcl}, ours fails `{ours}`: {count}")
        shown = [d for d in found.differences if (d.kind, d.bfcl, d.ours) == (kind, bfcl, ours)]
        for difference in shown[: args.show]:
            print(f"    {difference.case}: {json.dumps(difference.arguments)[:110]}")
    return 1 if found.false_positives else 0


if __name__ == "__main__":
    sys.exit(main())
