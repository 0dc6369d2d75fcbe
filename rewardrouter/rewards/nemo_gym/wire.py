"""NeMo Gym's verify request, both ways: a sample as the body a resources server's ``/verify``
reads, and such a body as a sample (``rewardrouter serve --protocol nemo-gym``).

The body is the dataset row with the rollout's ``response`` beside it, as NeMo Gym's agents post
it (``body.model_dump() | {"response": ...}``)::

    {"responses_create_params": {"input": [{"role": "user", "content": "..."}], ...},
     "response": {"id": ..., "object": "response", "output": [...items], ...},
     "expected_answer": "...",            # the row's other fields (the label among them)
     ...}

``responses_create_params`` is the prompt in OpenAI's Responses API form: a sample's metadata may
carry the row's own (then it is sent as it is), else it is written from the sample's prompt.
``response`` is a Responses API object whose ``output`` holds the response: an assistant
``message`` item (its text as ``output_text``) per assistant turn, a ``function_call`` item per
tool call, a ``function_call_output`` item per tool result. The server replies with the body and
its ``reward`` (and whatever else it measured).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rewardrouter.sample import Sample, metadata_of
from rewardrouter.trajectory import Conversation

#: The field of a verify request that holds the prompt, and the one that holds the response.
PARAMS, RESPONSE = "responses_create_params", "response"


def _input_messages(prompt: Any) -> list[dict[str, Any]]:
    """A sample's prompt as Responses API input messages."""
    if isinstance(prompt, list):
        return [
            {"role": m.get("role", "user"), "content": _text(m.get("content"))}
            for m in prompt
            if isinstance(m, Mapping)
        ]
    return [] if prompt in (None, "") else [{"role": "user", "content": str(prompt)}]


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return "" if content is None else str(content)


def response_object(conversation: Conversation, start: int = 0) -> dict[str, Any]:
    """The Responses API object of the conversation's messages from ``start`` on."""
    output: list[dict[str, Any]] = []
    for index, message in enumerate(conversation.messages[start:], start):
        if message.role == "assistant":
            if message.text or not message.tool_calls:
                output.append(
                    {
                        "type": "message",
                        "id": f"msg-{index}",
                        "role": "assistant",
                        "status": "completed",
                        "content": [
                            {"type": "output_text", "text": message.text, "annotations": []}
                        ],
                    }
                )
            for call in message.tool_calls:
                output.append(
                    {
                        "type": "function_call",
                        "id": f"fc-{index}-{call.position}",
                        "call_id": call.ref,
                        "name": call.name,
                        "arguments": call.arguments,
                        "status": "completed",
                    }
                )
        elif message.role == "tool":
            paired = conversation.answered(message)
            answered = paired.ref if paired is not None else message.tool_call_id or ""
            output.append(
                {"type": "function_call_output", "call_id": answered, "output": message.text}
            )
        else:  # a user turn inside the rollout (a multi-turn environment's): an input message
            output.append({"type": "message", "role": message.role, "content": message.text})
    return {
        "id": "rewardrouter",
        "object": "response",
        "created_at": 0,
        "model": "policy",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }


def verify_request(
    sample: Any, conversation: Conversation, label_field: str | None
) -> dict[str, Any]:
    """The verify request of ``sample`` whose response reads as ``conversation``."""
    body = {key: value for key, value in metadata_of(sample).items() if isinstance(key, str)}
    start = 0
    if PARAMS not in body:
        messages = conversation.messages
        opens = bool(messages) and messages[0].role in ("system", "developer", "user")
        if opens:  # the conversation holds its prompt: up to its first assistant turn
            start = next(
                (i for i, m in enumerate(messages) if m.role == "assistant"), len(messages)
            )
            prompt: Any = [{"role": m.role, "content": m.text} for m in messages[:start]]
        else:
            prompt = _input_messages(getattr(sample, "prompt", None))
        body[PARAMS] = {"input": prompt}
    if label_field is not None:
        body[label_field] = getattr(sample, "label", None)
    body[RESPONSE] = response_object(conversation, start)
    return body


def sample_of(body: Mapping[str, Any], label_field: str | None) -> Sample:
    """The sample a verify request describes: its prompt, its response as chat messages (or the
    text of its one assistant message), its ``label_field`` as the label, every other field of
    the row as metadata. Raises :class:`ValueError` naming what the body lacks."""
    params = body.get(PARAMS)
    response = body.get(RESPONSE)
    if not isinstance(params, Mapping) or not isinstance(response, Mapping):
        raise ValueError(
            f"a verify request holds `{PARAMS}` (the prompt) and `{RESPONSE}` (the rollout's "
            "Responses API object), both JSON objects"
        )
    output = response.get("output")
    if not isinstance(output, list):
        raise ValueError(f"`{RESPONSE}.output` is {type(output).__name__}, not a list of items")
    prompt = params.get("input")
    messages = _output_messages(output)
    metadata = {k: v for k, v in body.items() if k not in (PARAMS, RESPONSE, label_field)}
    graded: Any = messages
    if not messages:  # only reasoning (a reply cut off while thinking): no text to grade
        graded = ""
    elif (
        len(messages) == 1
        and messages[0]["role"] == "assistant"
        and "tool_calls" not in messages[0]
    ):
        graded = messages[0]["content"]
    return Sample(
        prompt=prompt if isinstance(prompt, str) else _input_messages(prompt or []),
        response=graded,
        label=body.get(label_field) if label_field is not None else None,
        metadata=metadata,
    )


def _output_messages(output: list[Any]) -> list[dict[str, Any]]:
    """The Responses API output items as chat messages."""
    messages: list[dict[str, Any]] = []
    for item in output:
        if not isinstance(item, Mapping):
            raise ValueError(f"an output item is {type(item).__name__}, not a JSON object")
        kind = item.get("type", "message")
        if kind == "message":
            messages.append(
                {"role": item.get("role", "assistant"), "content": _text(item.get("content"))}
            )
        elif kind == "function_call":
            call = {
                "id": str(item.get("call_id", "")),
                "type": "function",
                "function": {"name": str(item.get("name", "")), "arguments": _arguments(item)},
            }
            if messages and messages[-1]["role"] == "assistant":  # the same turn's calls
                messages[-1].setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif kind == "function_call_output":
            output_text = item.get("output")
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": str(item.get("call_id", "")),
                    "content": output_text
                    if isinstance(output_text, str)
                    else json.dumps(output_text),
                }
            )
        # reasoning items and others carry no text a reward grades
    return messages


def _arguments(item: Mapping[str, Any]) -> str:
    arguments = item.get("arguments", "")
    return arguments if isinstance(arguments, str) else json.dumps(arguments)
