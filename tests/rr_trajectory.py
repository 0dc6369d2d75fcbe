"""The tool the trajectory tests declare: ``get_weather``, in the function format TRL, verl and
OpenAI's chat API share."""

from __future__ import annotations

from typing import Any


def weather_tool(properties: dict[str, Any] | None = None, **schema: Any) -> dict[str, Any]:
    """``get_weather`` with ``city`` required; ``properties`` replaces its one ``city`` string
    property, ``schema`` adds keywords to its parameters' JSON Schema."""
    return {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": properties or {"city": {"type": "string"}},
                "required": ["city"],
                **schema,
            },
        },
    }
