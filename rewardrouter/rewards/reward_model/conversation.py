"""What a reward model reads: a sample as a conversation, or as one text, and the checks that
keep the policy's text inside its own turn.

A chat reward model scores the rendered conversation ``[user: prompt, assistant: response]``
(a prompt given as chat messages keeps its messages; a response given as messages, a
trajectory, adds its messages). The policy writes the response, so the response may hold the
template's own markers: ``<|im_end|>`` closes the assistant's turn early and what follows reads
as a new turn the policy wrote for the user or the system. A text that holds such a marker is
refused (the sample is ``invalid``), never rendered: the markers are the tokenizer's special
tokens when a tokenizer renders here, and the common marker shapes (``<|...|>``, ``[INST]``,
``<start_of_turn>``) when the server renders. Only what the policy wrote is checked (the
response, its messages); the prompt is the dataset's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rewardrouter.remote.errors import RemoteInvalid
from rewardrouter.rewards.judge.reward import prompt_text
from rewardrouter.trajectory import Conversation, read_conversation

Message = dict[str, Any]

#: Roles a rendered conversation may hold.
ROLES = frozenset({"system", "user", "assistant", "tool"})

#: Chat-template markers of the common model families, for a server-side template whose
#: tokenizer is not here: ``<|im_end|>`` (ChatML), ``<|eot_id|>`` (Llama 3), ``[INST]`` (Mistral),
#: ``<start_of_turn>`` (Gemma). Not ``<s>``: HTML writes it, and Llama 2's servers read it as text.
GENERIC_MARKERS = re.compile(r"<\|[^|<>\s]{1,64}\|>|\[/?INST\]|<(?:start|end)_of_turn>")


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


def refuse_markers(texts: Iterable[tuple[str, str]], markers: Sequence[str] | None) -> None:
    """Raise :class:`Unusable` when one of ``texts`` (``(where, text)`` pairs) writes a marker:
    one of ``markers`` (a tokenizer's special tokens), or with ``None`` a
    :data:`GENERIC_MARKERS` shape. The message names the marker, not the text around it."""
    for where, text in texts:
        found: str | None = None
        if markers is None:
            match = GENERIC_MARKERS.search(text)
            found = match.group() if match is not None else None
        else:
            places = [(text.find(m), m) for m in markers]  # the first one written is named
            found = min(((at, m) for at, m in places if at != -1), default=(0, None))[1]
        if found is not None:
            raise Unusable(
                f"the {where} writes the chat template's marker {found[:40]!r}, which would end "
                "its turn and let it write the next one; it is not scored (set "
                "`refuse_special_tokens: false` only for a model without a chat template)"
            )


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
