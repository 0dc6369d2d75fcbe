"""JSON Schema for router and job YAML files, generated from the pydantic models.

``python -m rewardrouter.schema --write`` regenerates ``schemas/``; ``--check`` exits 1 when
the committed files are stale. Discriminated unions become ``if kind == X then <X's schema>``
branches instead of pydantic's ``oneOf``, so a validator or an editor reports a typo'd key as
that key ("'mn' was unexpected") rather than "matches none of the stage kinds". A reward term of
a resource kind (``kind: remote``) gets its ``kwargs`` described by that kind's settings model
the same way, a term's ``executor`` lists the registered executors, and ``executors`` describes
each registered executor's settings by its settings model.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from rewardrouter.config.job import JobConfig
from rewardrouter.config.models import OLDER_EXECUTOR_KEYS, RouterConfig
from rewardrouter.config.summary import JobSummary
from rewardrouter.execute.registry import EXECUTORS
from rewardrouter.rewards import RESOURCE_KINDS, load_all

SCHEMAS: dict[str, type[BaseModel]] = {
    "router.schema.json": RouterConfig,
    "job.schema.json": JobConfig,
    "summary.schema.json": JobSummary,
}


def _tagged_to_conditionals(node: Any) -> Any:
    if isinstance(node, list):
        return [_tagged_to_conditionals(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _tagged_to_conditionals(value) for key, value in node.items()}
    discriminator = node.get("discriminator")
    if isinstance(discriminator, dict) and "oneOf" in node:
        tag = discriminator["propertyName"]
        mapping: dict[str, str] = discriminator["mapping"]
        return {
            "type": "object",
            "required": [tag],
            "properties": {tag: {"enum": sorted(mapping)}},
            "allOf": [
                {
                    "if": {"properties": {tag: {"const": value}}, "required": [tag]},
                    "then": {"$ref": ref},
                }
                for value, ref in sorted(mapping.items())
            ],
        }
    return node


def _add_model(defs: dict[str, Any], model: type[BaseModel]) -> str:
    """Put ``model``'s schema (and the models it uses) into ``defs``; its ``$ref``."""
    model_schema = model.model_json_schema(mode="validation")
    added = {**model_schema.pop("$defs", {}), model.__name__: model_schema}
    for key, definition in added.items():
        if defs.get(key, definition) != definition:
            raise ValueError(f"two different models are both named {key!r} in the schema")
        defs[key] = definition
    return f"#/$defs/{model.__name__}"


def _describe_executor_settings(schema: dict[str, Any]) -> None:
    """``executors.<name>``: the settings model of each registered executor that has one; the
    older top-level spellings (``process_pool``, ``ray``) point at the same models."""
    properties = schema.get("properties", {})
    if "executors" not in properties:
        return
    defs = schema.setdefault("$defs", {})
    refs = {
        name: _add_model(defs, executor.settings_model)
        for name, executor in sorted(EXECUTORS.items())
        if executor.settings_model is not None
    }
    executors = properties["executors"]
    executors["properties"] = {name: {"$ref": ref} for name, ref in refs.items()}
    executors["additionalProperties"] = False
    properties["executors"] = dict(sorted(executors.items()))
    for key, name in OLDER_EXECUTOR_KEYS.items():
        properties[key] = {
            "$ref": refs[name],
            "deprecated": True,
            "description": f"Older spelling of `executors.{name}`.",
        }


def _describe_resource_kwargs(schema: dict[str, Any]) -> None:
    """``if kind == <resource kind> then kwargs: <its Settings>`` on the reward term."""
    defs: dict[str, Any] = schema.get("$defs", {})
    term = defs.get("RewardTerm")
    if term is None:
        return
    load_all()  # every kind's settings, whichever a config names
    for name, kind in sorted(RESOURCE_KINDS.items()):
        ref = _add_model(defs, kind.settings)
        term.setdefault("allOf", []).append(
            {
                "if": {"properties": {"kind": {"const": name}}, "required": ["kind"]},
                "then": {"properties": {"kwargs": {"$ref": ref}}},
            }
        )


def _name_executors(schema: dict[str, Any]) -> None:
    """A reward term's ``executor`` is ``auto`` or a registered executor's name."""
    term = schema.get("$defs", {}).get("RewardTerm")
    if term is not None:
        executor = term["properties"]["executor"]
        executor["enum"] = ["auto", *EXECUTORS]
        term["properties"]["executor"] = dict(sorted(executor.items()))


def schema_for(model: type[BaseModel], hydra_keys: bool = False) -> dict[str, Any]:
    """The JSON Schema of ``model``; ``hydra_keys`` also admits a ``defaults`` list and ``hydra``."""
    schema = _tagged_to_conditionals(model.model_json_schema(mode="validation"))
    _describe_resource_kwargs(schema)
    _describe_executor_settings(schema)
    _name_executors(schema)
    if hydra_keys:
        schema["properties"]["defaults"] = {
            "type": "array",
            "description": "Hydra defaults list (composition only).",
        }
        schema["properties"]["hydra"] = {"type": "object", "description": "Hydra's own settings."}
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema  # type: ignore[no-any-return]


def render_all() -> dict[str, str]:
    """File name → schema text, exactly as committed."""
    return {
        name: json.dumps(schema_for(model, hydra_keys=model is JobConfig), indent=2) + "\n"
        for name, model in SCHEMAS.items()
    }


def schemas_dir() -> Path:
    return Path(__file__).resolve().parents[1] / "schemas"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--write", action="store_true", help="regenerate the schema files")
    parser.add_argument("--check", action="store_true", help="exit 1 if any file is stale")
    parser.add_argument("--dir", type=Path, default=schemas_dir())
    opts = parser.parse_args(argv)
    stale = []
    for name, text in render_all().items():
        path = opts.dir / name
        if not path.is_file() or path.read_text() != text:
            stale.append(name)
            if opts.write:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
    if opts.check and stale:
        print(f"stale: {', '.join(stale)}; run `make schema`", file=sys.stderr)
        return 1
    if opts.write:
        print(f"wrote {len(stale)} file(s) to {opts.dir}" if stale else "schemas are up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
