"""Turn pydantic and OmegaConf failures into :class:`Problem` lists with YAML paths."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from rewardrouter.config.redact import redacted
from rewardrouter.errors import Problem, did_you_mean


def yaml_path(parts: Iterable[str | int]) -> str:
    """``("routes", "gsm8k", "rewards")`` → ``routes.gsm8k.rewards``; ints become ``[i]``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _walk_input(data: Any, loc: Sequence[str | int]) -> tuple[list[str | int], Any]:
    """Follow ``loc`` through the input, dropping entries that name a union member.

    pydantic puts the tag of a discriminated union (``clip``) or a member's type into the
    location; those are not keys of the YAML. Returns the YAML path and the node found there
    (``None`` for a key the input lacks).
    """
    path: list[str | int] = []
    node = data
    for i, part in enumerate(loc):
        is_last = i == len(loc) - 1
        in_mapping = isinstance(node, Mapping) and part in node
        in_list = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        if in_mapping or in_list:
            node = node[part]
            path.append(part)
        elif is_last and isinstance(node, Mapping) and not _member_tag(part):
            # A key that is not in the input: a missing field, or an unexpected one.
            path.append(part)
            node = None
        # Otherwise a union tag (or a member's type under a scalar): skip it.
    return path, node


def _member_tag(part: str | int) -> bool:
    """A location entry naming a union member (``literal['raise','skip']``, ``FallbackValue``)
    rather than a YAML key: the models' fields are lower-case identifiers."""
    return isinstance(part, str) and ("[" in part or part[:1].isupper())


def _fields_at(model: type[BaseModel], loc: Sequence[str | int]) -> list[str]:
    """Field names of the model that validates the mapping at pydantic location ``loc``."""
    current: Any = model
    for part in loc:
        current = _step(current, part)
        if current is None:
            return []
    return list(current.model_fields) if _is_model(current) else []


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _step(tp: Any, part: str | int) -> Any:
    """The type found one location step below ``tp`` (a field, dict value, item or union tag)."""
    if _is_model(tp):
        field = tp.model_fields.get(part) if isinstance(part, str) else None
        return field.annotation if field is not None else None
    origin, args = get_origin(tp), get_args(tp)
    if origin is Annotated:
        return _step(args[0], part)
    if origin is dict:
        return args[1]
    if origin is list:
        return args[0] if isinstance(part, int) else None
    if origin in (Union, UnionType):
        for member in args:
            if _is_model(member):
                kind = member.model_fields.get("kind")
                if kind is not None and kind.default == part:
                    return member
                if member.__name__ == part:
                    return member
        models = [m for m in args if _is_model(m)]
        return _step(models[0], part) if len(models) == 1 else None
    return None


def problems_from_validation(
    error: ValidationError, data: Any, model: type[BaseModel], prefix: Sequence[str | int] = ()
) -> list[Problem]:
    """One :class:`Problem` per pydantic error, located by YAML path, with "did you mean"."""
    problems: list[Problem] = []
    seen: set[tuple[str, str]] = set()
    for err in error.errors(include_url=False):
        loc = list(err["loc"])
        path, node = _walk_input(data, loc)
        kind = err["type"]
        hint: str | None = None
        if kind == "extra_forbidden":
            key = str(path[-1]) if path else ""
            fields = _fields_at(model, loc[:-1])
            message = f"unknown key {key!r}"
            hint = did_you_mean(key, fields)
            if fields:
                hint = (hint + " " if hint else "") + f"expected one of: {', '.join(fields)}"
        elif kind == "missing":
            message = f"missing required key {str(path[-1])!r}"
        elif kind == "union_tag_invalid":
            ctx = err.get("ctx", {})
            found = ctx.get("tag")
            expected = ctx.get("expected_tags", "")
            message = f"unknown kind {found!r}; expected one of {expected}"
            hint = did_you_mean(str(found), [t.strip(" '") for t in str(expected).split(",")])
            path = [*path, "kind"] if path and path[-1] != "kind" else path
        elif loc and loc[-1] == "[key]":  # a key of a mapping whose keys are fixed names
            key = str(err.get("input"))
            expected = [
                t.strip(" '") for t in re.split(r",| or ", err.get("ctx", {}).get("expected", ""))
            ]
            expected = [t for t in expected if t]
            message = f"unknown key {key!r}"
            hint = did_you_mean(key, expected)
            if expected:
                hint = (hint + " " if hint else "") + f"expected one of: {', '.join(expected)}"
        elif kind == "list_type" and isinstance(node, str | int | float):
            message = f"must be a list, found {node!r}"
            hint = f"write it as a list: [{node}]"
        elif kind == "union_tag_not_found":
            message = "stage has no `kind`"
            hint = f"add `kind:` — one of {err.get('ctx', {}).get('expected_tags', '')}"
        else:
            message = err["msg"]
            if kind not in ("value_error", "assertion_error") and node is not None:
                message += f" (found {redacted(node, str(path[-1]) if path else None)!r})"
            if message.startswith("Value error, "):
                message = message[len("Value error, ") :]
        where = yaml_path([*prefix, *path])
        if (where, message) in seen:
            continue
        seen.add((where, message))
        problems.append(Problem(where, message, hint))
    return _merge_union_members(problems)


def _merge_union_members(problems: list[Problem]) -> list[Problem]:
    """One problem per YAML path: the members of a union (``on_error: raise | skip | {value: x}``)
    each report the same value, and the reader wants one line saying every accepted form. A
    member's complaint about the value's type is dropped when another member looked inside it
    (``{value: x}`` is not ``raise``: the useful problem is ``on_error.value``)."""
    deeper = {p.path for p in problems}
    problems = [
        p
        for p in problems
        if not (
            p.message.startswith("Input should be")
            and any(d.startswith(f"{p.path}.") for d in deeper)
        )
    ]
    merged: dict[str, Problem] = {}
    for problem in problems:
        first = merged.get(problem.path)
        if first is None:
            merged[problem.path] = problem
        else:
            hint = "; ".join(h for h in (first.hint, problem.hint) if h) or None
            merged[problem.path] = Problem(
                problem.path,
                f"{first.message}, or {problem.message[:1].lower()}{problem.message[1:]}",
                hint,
            )
    return list(merged.values())
