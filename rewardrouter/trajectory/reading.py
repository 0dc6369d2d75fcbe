"""What a term reads of a sample whose response is a conversation (its ``reads:``), and the
router's step that hands each term that reading.

A sample's conversation is its ``response`` when that is a list of messages, or else, when the
router sets ``trajectory.messages_field``, the list of messages its metadata holds under that
field (slime's ``Sample.metadata``, verl's ``extra_info``, where the response must stay the
trained text). A term reads:

- ``final_answer`` (the default): the text of the last assistant message ("" when it has none);
- ``assistant_text``: every assistant message's text, joined by blank lines;
- ``transcript``: every message as ``role: text``, tool calls as ``assistant -> name(arguments)``;
- ``tool_calls``: one JSON object ``{"name", "arguments"}`` per line, per call, in order;
- ``conversation``: the :class:`~rewardrouter.trajectory.messages.Conversation` itself (what the
  trajectory kinds read).

A plain-text response reads as itself, except under ``tool_calls`` ("", no call was made) and
``conversation`` (one assistant message holding the text). Text-reading terms thus see a string
as they always have, so every kind works on trajectories unchanged.

>>> from rewardrouter.config.models import TrajectoryConfig
>>> reading = read_response(
...     [{"role": "user", "content": "Capital of France?"},
...      {"role": "assistant", "content": "Paris."}], "final_answer", TrajectoryConfig())
>>> reading
'Paris.'
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Awaitable, Callable, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING, Any, get_args

from rewardrouter.config.models import Reads
from rewardrouter.outcome import Outcome
from rewardrouter.sample import Sample, SampleLike, metadata_of
from rewardrouter.trajectory.messages import (
    Conversation,
    Message,
    TrajectoryError,
    is_conversation,
    parse_conversation,
)

if TYPE_CHECKING:
    from rewardrouter.config.models import TrajectoryConfig

READS: tuple[str, ...] = get_args(Reads)
#: What a term reads when its config says nothing and its function does not read conversations.
DEFAULT_READS: Reads = "final_answer"


def reads_conversation(fn: Any) -> bool:
    """Whether a reward callable reads the whole conversation (its class sets
    ``reads_conversation = True``, as the trajectory kinds do)."""
    return getattr(fn, "reads_conversation", False) is True


def conversation_source(sample: SampleLike, limits: TrajectoryConfig) -> Any:
    """The sample's messages (the response, or its metadata's ``messages_field``); ``None``
    when the sample is plain text."""
    response = getattr(sample, "response", None)
    if is_conversation(response):
        return response
    field = limits.messages_field
    if field is not None:
        held = metadata_of(sample).get(field)
        if held is not None:
            return held
    return None


def read_response(response: Any, reads: Reads, limits: TrajectoryConfig) -> Any:
    """What a term reading ``reads`` sees of a response (text or messages); raises
    :class:`TrajectoryError` for messages that :func:`parse_conversation` refuses."""
    if is_conversation(response):
        return read_conversation(parse_conversation(response, limits), reads)
    if reads == "conversation":
        text = response if isinstance(response, str) else ""
        return Conversation((Message("assistant", text),))
    if reads == "tool_calls":
        return ""
    return response


def read_conversation(conversation: Conversation, reads: Reads) -> Any:
    """The reading ``reads`` of a validated conversation."""
    if reads == "conversation":
        return conversation
    messages = conversation.messages
    if reads == "final_answer":
        return next((m.text for m in reversed(messages) if m.role == "assistant"), "")
    if reads == "assistant_text":
        return "\n\n".join(m.text for m in messages if m.role == "assistant")
    if reads == "tool_calls":
        return "\n".join(
            json.dumps({"name": c.name, "arguments": c.arguments}, ensure_ascii=False)
            for c in conversation.tool_calls
        )
    lines: list[str] = []
    for m in messages:
        if m.text or not m.tool_calls:
            lines.append(f"{m.role}: {m.text}")
        lines += [f"{m.role} -> {c.name}({c.arguments})" for c in m.tool_calls]
    return "\n\n".join(lines)


def with_response(sample: SampleLike, response: Any) -> SampleLike:
    """``sample`` as a term sees it: the same sample, its ``response`` replaced. A
    :class:`~rewardrouter.sample.Sample` is copied; a trainer's own sample object is wrapped,
    never changed (slime's loss mask, verl's tensors stay as they are)."""
    if type(sample) is Sample:
        return dataclasses.replace(sample, response=response)
    return ResponseView(sample, response)


class ResponseView:
    """A trainer's sample seen with another ``response``; every other attribute is the
    sample's own (read and written through)."""

    __slots__ = ("_sample", "response")

    def __init__(self, sample: Any, response: Any) -> None:
        object.__setattr__(self, "_sample", sample)
        object.__setattr__(self, "response", response)

    def __getattr__(self, name: str) -> Any:
        return getattr(object.__getattribute__(self, "_sample"), name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "response":
            object.__setattr__(self, name, value)
        else:
            setattr(self._sample, name, value)

    def __getstate__(self) -> tuple[Any, Any]:
        return (self._sample, self.response)

    def __setstate__(self, state: tuple[Any, Any]) -> None:
        object.__setattr__(self, "_sample", state[0])
        object.__setattr__(self, "response", state[1])

    def __repr__(self) -> str:
        return f"ResponseView({self._sample!r})"


Run = Callable[[list[SampleLike]], Awaitable[Sequence[Outcome]]]


async def run_reading(
    members: Sequence[SampleLike], reads: Reads, limits: TrajectoryConfig, run: Run
) -> Sequence[Outcome]:
    """``run`` on ``members`` as a term reading ``reads`` sees them: one outcome per member.

    A batch of plain-text samples read as text goes to ``run`` as it is. Otherwise each
    conversation is validated and read; a member whose conversation is malformed gets its own
    ``error`` outcome (saying what is wrong) and is not handed to ``run``, so a group-mode
    function never sees it and the rest of the group is scored.
    """
    if reads != "conversation" and reads != "tool_calls" and not _any_conversation(members, limits):
        return await run(list(members))
    seen: list[SampleLike] = []
    failed: dict[int, Outcome] = {}
    for position, sample in enumerate(members):
        source = conversation_source(sample, limits)
        response = getattr(sample, "response", None)
        try:
            if source is None:
                reading = read_response(response, reads, limits)
            else:
                reading = read_conversation(parse_conversation(source, limits), reads)
        except TrajectoryError as exc:
            failed[position] = Outcome(None, "error", str(exc), sample_fault=True)
            continue
        seen.append(sample if reading is response else with_response(sample, reading))
    outcomes = await run(seen) if seen else []
    if not failed:
        return outcomes
    merged: list[Outcome] = []
    ran = iter(outcomes)
    for position in range(len(members)):
        merged.append(failed[position] if position in failed else next(ran))
    return merged


def _any_conversation(members: Sequence[SampleLike], limits: TrajectoryConfig) -> bool:
    if limits.messages_field is None:  # routed samples all have a response: one C-level pass
        return set(map(type, map(_RESPONSE, members))) != {str}
    return any(conversation_source(s, limits) is not None for s in members)


_RESPONSE = attrgetter("response")
