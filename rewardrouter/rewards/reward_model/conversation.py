"""What a reward model reads: a sample as a conversation, or as one text.

A chat reward model scores the rendered conversation ``[user: prompt, assistant: response]``
(a prompt given as chat messages keeps its messages; a response given as messages, a
trajectory, adds its messages). :func:`written` lists what the policy wrote (the response, its
messages and tool calls; the prompt is the dataset's): the texts that
:class:`~rewardrouter.rewards.model_input.ResponseGuard` checks for the template's markers and
the length cap before anything is rendered or sent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rewardrouter.remote.errors import RemoteInvalid
from rewardrouter.rewards.judge.reward import prompt_text
from rewardrouter.trajectory import Conversation, read_conversation

Message = dict[str, Any]

#: Roles a rendered conversation may hold.
ROLES = frozenset({"system", "user", "assistant", "tool"})


class Unusable(RemoteInvalid):
    """One sample that cannot be scored, or whose score cannot be used (status ``invalid``)."""


def conversation(sample: Any) -> list[Message]:
    """The chat messages of ``sample``: its prompt as the user's turn (or its prompt messages),
    then its response as the assistant's turn, or its trajectory's messages. A trajectory that
    opens with a system or user message is the whole conversation (the prompt is not added)."""
    response = getattr(sample, "response", "")
    if isinstance(response, Conversation):
        turns = [_turn(m) for m in response.messages]
        if turns and turns[0]["role"] in ("system", "user"):
            return turns
        return _messages(getattr(sample, "prompt", ""), "prompt", "user") + turns
    messages = _messages(getattr(sample, "prompt", ""), "prompt", "user")
    messages += _messages(response, "response", "assistant")
    return messages


def _turn(message: Any) -> Message:
    """A validated trajectory message as a chat template reads it (tool calls as OpenAI's)."""
    turn: dict[str, Any] = {"role": message.role, "content": message.text}
    if message.tool_calls:
        turn["tool_calls"] = [
            {"type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in message.tool_calls
        ]
    if message.tool_call_id is not None:
        turn["tool_call_id"] = message.tool_call_id
    return turn


def _messages(value: Any, field: str, role: str) -> list[Message]:
    """``value`` (text, or chat messages with text content) as messages; text is ``role``'s."""
    if value is None:
        return [{"role": role, "content": ""}]
    if isinstance(value, str):
        return [{"role": role, "content": value}]
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        out: list[Message] = []
        for i, message in enumerate(value):
            if not isinstance(message, Mapping):
                raise Unusable(
                    f"{field}[{i}] is {type(message).__name__}; expected a chat message "
                    "{role, content}"
                )
            found_role, content = message.get("role"), message.get("content")
            if found_role not in ROLES:
                raise Unusable(
                    f"{field}[{i}] has role {str(found_role)[:20]!r}; expected one of "
                    f"{', '.join(sorted(ROLES))}"
                )
            if not isinstance(content, str | None):
                raise Unusable(
                    f"{field}[{i}]'s content is {type(content).__name__}; a reward model reads "
                    "text content only"
                )
            out.append({"role": str(found_role), "content": content or ""})
        return out
    raise Unusable(f"{field} is {type(value).__name__}; expected text or chat messages")


def plain_text(sample: Any, separator: str) -> str:
    """``prompt + separator + response`` as text (chat messages as ``role: content`` lines; a
    trajectory of one assistant message as its text, a longer one as its transcript)."""
    prompt, response = pair(sample)
    return prompt + separator + response


def pair(sample: Any) -> list[str]:
    """``[prompt, response]`` as texts, for a cross-encoder's pair."""
    response = getattr(sample, "response", "")
    if isinstance(response, Conversation):
        only = response.messages[0] if len(response.messages) == 1 else None
        if only is not None and only.role == "assistant" and not only.tool_calls:
            response = only.text
        else:
            response = read_conversation(response, "transcript")
    elif not isinstance(response, str):
        response = prompt_text(_messages(response, "response", "assistant"))
    return [prompt_text(getattr(sample, "prompt", "")), response]


def written(sample: Any) -> list[tuple[str, str]]:
    """``(where, text)`` of what the policy wrote: the response, or each of its messages (and
    each tool call's name and arguments)."""
    response = getattr(sample, "response", "")
    if isinstance(response, str):
        return [("response", response)]
    if isinstance(response, Conversation):
        found = [(f"response message {i}", m.text) for i, m in enumerate(response.messages)]
        found += [(f"tool {c.describe()}", f"{c.name} {c.arguments}") for c in response.tool_calls]
        return found
    return [
        (f"response message {i}", m["content"])
        for i, m in enumerate(_messages(response, "response", "assistant"))
    ]
