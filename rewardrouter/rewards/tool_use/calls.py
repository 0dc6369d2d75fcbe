"""``tool_call_format`` and ``tool_success``: trajectory kinds that grade a conversation's tool
use. Both read the whole conversation (a term's ``reads`` defaults to ``conversation``).

``tool_call_format`` checks each call the assistant made: its arguments must parse as JSON, be
an object nested at most ``max_depth`` deep, and validate against the JSON Schema (``parameters``)
of the tool it names, declared in the term's ``tools`` or in the sample's metadata
(``tools_field``, e.g. the ``tools`` column a TRL or verl dataset carries). With ``strict``, it
grades as BFCL's checker does where JSON Schema is more lenient: an argument the tool does not
declare is refused, and so is ``5.0`` for an ``integer``. Example::

    format:
      kind: tool_call_format
      key: score
      kwargs:
        tools:
          - type: function
            function:
              name: get_weather
              parameters:
                type: object
                properties: {city: {type: string}}
                required: [city]

``tool_success`` is the fraction of the assistant's calls that a tool answered without failing:
a result fails when its text starts with an error marker (``error_prefixes``; by default what
tools write on failure: ``Error:``, ``Traceback (most recent call last)``, TRL's
``{'error': ...}`` and BFCL's ``Error during execution:``) or, being one JSON object, says so (``json_errors``: ``error`` set, ``status``
``error``, ``success: false``, MCP's ``isError: true``); a call no tool answered failed too
(``unanswered``), and so did a call written as text that could not be read.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

from jsonschema import SchemaError
from jsonschema.protocols import Validator
from jsonschema.validators import extend, validator_for
from pydantic import BaseModel, ConfigDict, Field, field_validator

from rewardrouter.errors import short_repr
from rewardrouter.outcome import DataFault
from rewardrouter.rewards.registry import Bound, Resources, resource_kind
from rewardrouter.sample import metadata_of
from rewardrouter.trajectory import (
    Conversation,
    DuplicateKeyError,
    Message,
    ToolCall,
    TrajectoryError,
    parse_arguments,
)

#: What ``tool_success`` counts as a failed tool result by default: a result whose text starts
#: with one of these (after leading whitespace). TRL writes a tool's exception as
#: ``str({"error": message})``, a Python dict (a JSON object is read whole: ``json_errors``);
#: verl's ToolAgentLoop answers a call to no declared tool, arguments that are not JSON and a
#: tool that raised with the next three; BFCL's multi-turn executor, a call that raised, with
#: the last.
ERROR_PREFIXES = (
    "Error:",
    "ERROR:",
    "Traceback (most recent call last)",
    "{'error':",
    "Unknown function '",
    "Invalid JSON in arguments for '",
    "Error executing tool '",
    "Error during execution:",
)

#: Keys of a JSON object result that say it failed when set (not null, false, 0, "", [] or {}).
_ERROR_KEYS = frozenset({"error", "errors"})
#: ``status`` values of a failed JSON object result (compared ignoring case and whitespace).
_FAILED_STATUSES = frozenset({"error", "failed", "failure", "fail"})
#: Keys whose value ``false`` says the call failed, and whose ``true`` does (MCP's tool result).
_FALSE_FAILS = frozenset({"success", "ok"})
_TRUE_FAILS = frozenset({"isError", "is_error"})

#: How many sample-declared schemas one ``tool_call_format`` term keeps compiled.
_CACHED_SCHEMAS = 256
#: Keywords of an arguments schema that say which other arguments it takes (or that compose it
#: of others): ``strict`` leaves such a schema as it is.
_OPEN_KEYWORDS = frozenset(
    {
        "additionalProperties",
        "patternProperties",
        "unevaluatedProperties",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "$ref",
        "$dynamicRef",
        "dependentSchemas",
    }
)


class ToolFormatSettings(BaseModel):
    """How a ``tool_call_format`` term checks tool calls."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    tools: list[dict[str, Any]] = Field(
        default_factory=list,
        description="The tools the policy may call, as OpenAI tool objects ({type: function, "
        "function: {name, parameters}}) or {name, parameters}; `parameters` is the JSON Schema "
        "of the arguments.",
    )
    tools_field: str | None = Field(
        default="tools",
        description="A metadata field holding the tools declared for each sample (same form); "
        "they are added to `tools`, a sample's declaration winning for a name both declare. "
        "null: only `tools`.",
    )
    score: Literal["all", "fraction"] = Field(
        default="all",
        description="all: 1.0 when every call is well formed, else 0.0; fraction: the share "
        "of well-formed calls.",
    )
    max_depth: int = Field(
        default=32, ge=1, description="Deepest nesting of arrays and objects in the arguments."
    )
    strict: bool = Field(
        default=False,
        description="Grade as BFCL's checker does where JSON Schema is more lenient: an "
        "argument the tool's `parameters` do not list in `properties` is refused (unless "
        "`parameters` says which others it takes: additionalProperties, patternProperties, "
        "unevaluatedProperties, or a combining keyword such as allOf), and an `integer` "
        "written as a float (`5.0`, which JSON Schema counts an integer) is refused, at any "
        "depth. A `number` takes `5` still, as BFCL's float does.",
    )

    @field_validator("tools")
    @classmethod
    def _schemas(cls, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for i, tool in enumerate(tools):
            try:
                tool_schema(tool)  # strict or not, the same schema is valid or not
            except TrajectoryError as exc:
                raise ValueError(f"tools[{i}]: {exc}") from None
        return tools


def tool_schema(tool: Any, strict: bool = False) -> tuple[str, Validator]:
    """The name of a declared tool and a validator of its arguments; :class:`TrajectoryError`
    when the declaration has no name or its ``parameters`` is not a JSON Schema.

    ``strict``: the arguments' names closed to those ``parameters`` lists in ``properties``
    (when it says nothing of others), and an ``integer`` written as one (``5``, not ``5.0``).

    >>> tool = {"name": "f", "parameters": {"properties": {"n": {"type": "integer"}}}}
    >>> _, lenient = tool_schema(tool)
    >>> lenient.is_valid({"n": 5.0}), lenient.is_valid({"n": 5, "x": 1})
    (True, True)
    >>> _, strict = tool_schema(tool, strict=True)
    >>> strict.is_valid({"n": 5.0}), strict.is_valid({"n": 5, "x": 1}), strict.is_valid({"n": 5})
    (False, False, True)
    """
    spec = tool.get("function", tool) if isinstance(tool, Mapping) else None
    name = spec.get("name") if isinstance(spec, Mapping) else None
    if not isinstance(spec, Mapping) or not isinstance(name, str) or not name:
        raise TrajectoryError(
            "a tool declaration needs a `name` (as {type: function, function: {name, "
            "parameters}} or {name, parameters})"
        )
    schema = spec.get("parameters", {})
    if not isinstance(schema, dict | bool):
        raise TrajectoryError(f"tool {name!r}: `parameters` must be a JSON Schema object")
    kind = validator_for(schema)
    try:
        kind.check_schema(schema)  # type: ignore[arg-type]  # a boolean is a JSON Schema too
    except SchemaError as exc:
        where = "/".join(map(str, exc.path)) or "the root"
        raise TrajectoryError(
            f"tool {name!r}: `parameters` is not a valid JSON Schema at {where} "
            f"({short_repr(exc.message, 120)})"
        ) from None
    if strict:
        kind = _written_integers(kind)
        if (
            isinstance(schema, dict)
            and "properties" in schema
            and not schema.keys() & _OPEN_KEYWORDS
        ):
            schema = {**schema, "additionalProperties": False}
    # `format` is an assertion: a parameter declared `format: date` asks for a date
    return name, kind(schema, format_checker=kind.FORMAT_CHECKER)


def _is_written_integer(checker: Any, instance: Any) -> bool:
    return isinstance(instance, int) and not isinstance(instance, bool)


@functools.cache
def _written_integers(kind: type[Validator]) -> type[Validator]:
    """``kind`` whose ``integer`` is an integer as JSON writes it (``5``; not ``5.0``)."""
    checker = kind.TYPE_CHECKER.redefine("integer", _is_written_integer)
    extended: type[Validator] = extend(kind, type_checker=checker)  # type: ignore[no-untyped-call]
    return extended


class ToolCallFormat:
    """A ``tool_call_format`` term's callable: ``{score, calls, valid, failed}`` per sample.

    ``score`` is None (not applicable) when the assistant made no call; ``failed`` names the
    first malformed call and why ("" when none). A call written as text that could not be read
    is a malformed call. Picklable: it holds its settings only.
    """

    reads_conversation: ClassVar[bool] = True
    name = "tool_call_format"

    def __init__(self, settings: ToolFormatSettings) -> None:
        self.settings = settings
        self._declared = dict(tool_schema(tool, settings.strict) for tool in settings.tools)
        self._cache: dict[str, tuple[str, Validator]] = {}

    def __getstate__(self) -> ToolFormatSettings:
        return self.settings

    def __setstate__(self, settings: ToolFormatSettings) -> None:
        self.__init__(settings)  # type: ignore[misc]

    def __call__(self, args: Any, sample: Any) -> dict[str, Any]:
        conversation: Conversation = sample.response.trajectory()
        calls = conversation.attempted_calls
        if not calls:
            return {"score": None, "calls": 0, "valid": 0, "failed": ""}
        tools = self._tools(metadata_of(sample))
        failures = [why for call in calls if (why := self._problem(call, tools)) is not None]
        valid = len(calls) - len(failures)
        score = float(not failures) if self.settings.score == "all" else valid / len(calls)
        return {
            "score": score,
            "calls": len(calls),
            "valid": valid,
            "failed": failures[0] if failures else "",
        }

    def _tools(self, metadata: Mapping[str, Any]) -> Mapping[str, Validator]:
        field = self.settings.tools_field
        given = metadata.get(field) if field is not None else None
        if given is None:
            tools = self._declared
        else:
            if not isinstance(given, Sequence) or isinstance(given, str | bytes):
                raise TrajectoryError(
                    f"metadata field {field!r} must be a list of tool declarations, found "
                    f"{type(given).__name__}"
                )
            tools = dict(self._declared)
            for i, tool in enumerate(given):
                try:
                    name, validator = self._compiled(tool)
                except TrajectoryError as exc:
                    raise TrajectoryError(f"metadata field {field!r}[{i}]: {exc}") from None
                tools[name] = validator
        if not tools:
            raise TrajectoryError(
                "no tool is declared for this sample: list the tools under the term's "
                f"kwargs.tools, or in each sample's metadata field {field!r}"
            )
        return tools

    def _compiled(self, tool: Any) -> tuple[str, Validator]:
        try:
            key = json.dumps(tool, sort_keys=True)
        except (TypeError, ValueError, RecursionError):
            raise TrajectoryError("a tool declaration that is not JSON") from None
        found = self._cache.get(key)
        if found is None:
            if len(self._cache) >= _CACHED_SCHEMAS:
                self._cache.clear()
            found = self._cache[key] = tool_schema(tool, self.settings.strict)
        return found

    def _problem(self, call: ToolCall, tools: Mapping[str, Validator]) -> str | None:
        """Why ``call`` is malformed, naming it; None when it is well formed."""
        if call.problem is not None:
            return f"{call.describe()}: {call.problem}"
        validator = tools.get(call.name)
        if validator is None:
            return f"{call.describe()}: not a declared tool (declared: {', '.join(sorted(tools))})"
        try:
            arguments = call.parsed[0] if call.parsed else parse_arguments(call.arguments)
        except RecursionError:
            return f"{call.describe()}: arguments nested deeper than JSON parsing allows"
        except DuplicateKeyError:  # a routed conversation is refused before; a built one is not
            return f"{call.describe()}: arguments repeat a key within one object"
        except ValueError as exc:
            where = f" at character {exc.pos}" if isinstance(exc, json.JSONDecodeError) else ""
            return f"{call.describe()}: arguments are not JSON{where}"
        if not isinstance(arguments, dict):
            return (
                f"{call.describe()}: arguments are a JSON {type(arguments).__name__}, not an object"
            )
        if _depth_beyond(arguments, self.settings.max_depth):
            return f"{call.describe()}: arguments nested deeper than max_depth={self.settings.max_depth}"
        if validator.is_valid(arguments):  # (the error, only for a call that fails)
            return None
        error = next(iter(validator.iter_errors(arguments)), None)
        if error is not None:
            return (
                f"{call.describe()}: arguments at {error.json_path} fail the schema's "
                f"`{error.validator}`"
            )
        return None


def _depth_beyond(value: Any, limit: int) -> bool:
    """Whether ``value`` nests arrays and objects more than ``limit`` deep (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


@resource_kind("tool_call_format", ToolFormatSettings)
def build_format(settings: ToolFormatSettings, resources: Resources) -> Bound:
    """Each tool call's arguments parse as JSON and fit its declared tool's JSON Schema."""
    reward = resources.get(
        (ToolCallFormat, settings.model_dump_json()), lambda: ToolCallFormat(settings)
    )
    # JSON Schema checks run where a deadline can stop them: a schema's `pattern` or
    # `uniqueItems` can take long on arguments a policy writes to stall them.
    return Bound(reward, "single", reward.name, cpu_heavy=True, keys=("score", "calls", "valid"))


class ToolSuccessSettings(BaseModel):
    """What a ``tool_success`` term counts as a failed call."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    error_prefixes: list[str] = Field(
        default_factory=lambda: list(ERROR_PREFIXES),
        min_length=1,
        description="A tool result whose text starts with one of these (after leading "
        "whitespace) is a failure.",
    )
    ignore_case: bool = Field(default=False, description="Compare the prefixes ignoring case.")
    json_errors: bool = Field(
        default=True,
        description="A tool result whose text is one JSON object is a failure when it says so: "
        '`error` or `errors` set (not null, false, 0, "", [] or {}), `status` error, failed, '
        "failure or fail (any case), `success` or `ok` false, `isError` or `is_error` true "
        "(MCP's tool results).",
    )
    unanswered: Literal["failed", "ignored"] = Field(
        default="failed",
        description="A call that no tool message answers: failed (its tool never worked for "
        "the policy), or ignored (left out of the count: rollouts cut at a turn limit after a "
        "call). A call written as text that could not be read is failed either way.",
    )


class NoToolResults(DataFault):
    """``tool_success`` asked of a conversation read from a text response that makes calls: the
    text is one assistant turn, so it carries no tool results to grade (a trainer that flattened
    its tool loop into the response, or a route meant for another kind of sample)."""


class ToolSuccess:
    """A ``tool_success`` term's callable: the fraction of the assistant's calls that a tool
    answered without failing (see :class:`ToolSuccessSettings`); None (not applicable) when
    nothing is counted (no call; with ``unanswered: ignored``, no result and no unreadable call).

    Every tool result answers one call (a conversation in which one does not is malformed
    before any term reads it), so the calls no result answers are the calls made less the
    results. Raises :class:`NoToolResults` for a conversation read from text that makes calls.
    """

    reads_conversation: ClassVar[bool] = True
    name = "tool_success"

    def __init__(self, settings: ToolSuccessSettings) -> None:
        self.settings = settings
        fold = settings.ignore_case
        self._prefixes = tuple(p.casefold() if fold else p for p in settings.error_prefixes)
        self._longest = max(map(len, self._prefixes))

    def __getstate__(self) -> ToolSuccessSettings:
        return self.settings

    def __setstate__(self, settings: ToolSuccessSettings) -> None:
        self.__init__(settings)  # type: ignore[misc]

    def __call__(self, args: Any, sample: Any) -> float | None:
        conversation: Conversation = sample.response.trajectory()
        results = conversation.tool_results
        unreadable = len(conversation.unreadable_calls)
        made = len(conversation.tool_calls)
        if conversation.from_text and made + unreadable:
            raise NoToolResults(
                f"the conversation was read from a text response, one assistant turn that "
                f"carries no tool results, yet it makes {made + unreadable} call(s); hand the "
                f"conversation over as messages (the response as a list of messages, or under "
                f"trajectory.messages_field: verl's ToolAgentLoop decodes its whole rollout, "
                f"tool results included, into one text), or drop tool_success from this route "
                f"if its samples are single turns"
            )
        failed = sum(map(self._failed, results)) + unreadable
        counted = len(results) + unreadable
        if self.settings.unanswered == "failed":
            failed += made - len(results)
            counted += made - len(results)
        if not counted:
            return None
        return (counted - failed) / counted

    def _failed(self, result: Message) -> bool:
        """Whether a tool result says its call failed."""
        head = result.text.lstrip()[: self._longest]
        if self.settings.ignore_case:
            head = head.casefold()
        if head.startswith(self._prefixes):
            return True
        return self.settings.json_errors and _json_failure(result.text)


def _json_failure(text: str) -> bool:
    """Whether ``text`` is one JSON object that says its call failed (top-level keys only;
    every occurrence of a repeated key counts). Linear in the text."""
    written = text.strip()
    if not (written.startswith("{") and written.endswith("}")):
        return False
    try:  # each object as its list of pairs: a repeated key is read every time it occurs
        pairs = json.loads(written, object_pairs_hook=list)
    except (ValueError, RecursionError):
        return False
    for key, value in pairs:
        if key in _ERROR_KEYS and value:  # objects are lists of pairs here: {} is []
            return True
        if key == "status" and isinstance(value, str):
            if value.strip().casefold() in _FAILED_STATUSES:
                return True
        elif (key in _FALSE_FAILS and value is False) or (key in _TRUE_FAILS and value is True):
            return True
    return False


@resource_kind("tool_success", ToolSuccessSettings)
def build_success(settings: ToolSuccessSettings, resources: Resources) -> Bound:
    """The fraction of the assistant's calls that a tool answered without failing."""
    reward = resources.get((ToolSuccess, settings.model_dump_json()), lambda: ToolSuccess(settings))
    return Bound(reward, "single", reward.name)
