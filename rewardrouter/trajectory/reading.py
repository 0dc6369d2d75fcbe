"""What a term reads of a sample whose response is a conversation (its ``reads:``), and the
router's step that hands each term that reading.

A sample's conversation is its ``response`` when that is a list of messages, or else, when the
router sets ``trajectory.messages_field``, the list of messages its metadata holds under that
field (slime's ``Sample.metadata``, verl's ``extra_info``, where the response must stay the
trained text; a string there holding the list as JSON is decoded). A sample that lacks that
field, whose response is text, carries no conversation: a term that reads ``tool_calls``, or
that grades the trajectory itself (the trajectory kinds, through
:meth:`Conversation.trajectory`), then fails with the setup's error, naming the fix, since
grading the text as if it were the conversation gives plausible, wrong rewards. A response that is a string holding a
JSON list of messages (a conversation encoded twice) is that sample's error for every term. A
term reads:

- ``final_answer`` (the default): the text of the last assistant message ("" when it has none);
- ``assistant_text``: every assistant message's text, joined by blank lines;
- ``transcript``: every message as ``role: text``, tool calls as ``assistant -> name(arguments)``;
- ``tool_calls``: one JSON object ``{"name", "arguments"}`` per line, per call, in order;
- ``conversation``: the :class:`~rewardrouter.trajectory.messages.Conversation` itself (what the
  trajectory kinds read).

A plain-text response reads as itself, except under ``tool_calls`` and ``conversation``: there it
is one assistant message holding the text, whose calls written as text are read
(:func:`~rewardrouter.trajectory.messages.parse_text_response`). Text-reading terms thus see a string
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
import re
from collections.abc import Awaitable, Callable, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING, Any, get_args

from rewardrouter.config.models import Reads
from rewardrouter.errors import short_repr
from rewardrouter.outcome import Outcome, setup_failed
from rewardrouter.sample import Sample, SampleLike, metadata_of
from rewardrouter.trajectory.messages import (
    ROLES,
    Conversation,
    ConversationMissing,
    TrajectoryError,
    is_conversation,
    parse_conversation,
    parse_text_response,
)

if TYPE_CHECKING:
    from rewardrouter.config.models import TrajectoryConfig

READS: tuple[str, ...] = get_args(Reads)
#: What a term reads when its config says nothing and its function does not read conversations.
DEFAULT_READS: Reads = "final_answer"
#: Readings that need the conversation itself, not text: a sample without one cannot give them.
CONVERSATION_READS: frozenset[str] = frozenset({"conversation", "tool_calls"})

#: Where the start of a string may open a JSON list of objects (a conversation encoded as JSON);
#: a C-level match per response, so a batch of plain text costs no Python per sample.
_MAY_BE_ENCODED = re.compile(r"\s*\[\s*\{").match
#: Metadata fields named in the error for a sample without its conversation.
_FIELDS_SHOWN = 12


def reads_conversation(fn: Any) -> bool:
    """Whether a reward callable reads the whole conversation (its class sets
    ``reads_conversation = True``, as the trajectory kinds do)."""
    return getattr(fn, "reads_conversation", False) is True


def conversation_source(sample: SampleLike, limits: TrajectoryConfig) -> Any:
    """The sample's messages (the response, or its metadata's ``messages_field``, as found: a
    string is decoded by :func:`decoded_messages`); ``None`` when it carries none."""
    response = getattr(sample, "response", None)
    if is_conversation(response):
        return response
    field = limits.messages_field
    if field is not None:
        held = metadata_of(sample).get(field)
        if held is not None:
            return held
    return None


def decoded_messages(held: Any, field: str) -> Any:
    """What metadata field ``field`` holds, a string decoded as JSON (datasets and generate
    functions that store a conversation as JSON text); raises :class:`ConversationMissing` for
    a string that holds no JSON list. The list is then validated as any conversation is."""
    if not isinstance(held, str):
        return held
    try:
        value = json.loads(held)
    except (ValueError, RecursionError):
        value = None
    if not isinstance(value, list):
        raise ConversationMissing(
            f"metadata field {field!r} holds a string that is not a JSON list of chat messages "
            f"({len(held)} characters); store the list itself, or its JSON text "
            f"(json.dumps(messages))"
        )
    return value


def encoded_conversation(text: str) -> list[Any] | None:
    """The messages ``text`` encodes when it is a JSON list of objects each with a ``role`` of
    :data:`~rewardrouter.trajectory.messages.ROLES` (a conversation written as JSON text); else
    None. Linear in the text."""
    if not _MAY_BE_ENCODED(text):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if isinstance(value, list) and all(map(_is_message, value)):
        return value
    return None


def _is_message(value: Any) -> bool:
    return isinstance(value, dict) and value.get("role") in ROLES


def missing_conversation(sample: SampleLike, field: str) -> str:
    """Why a term that reads the conversation cannot run on ``sample``: ``messages_field`` names
    a field its metadata lacks, and its response is text; what the trainers need to change."""
    names = sorted(map(str, metadata_of(sample)))
    shown = ", ".join(short_repr(n, 40) for n in names[:_FIELDS_SHOWN])
    if len(names) > _FIELDS_SHOWN:
        shown += f", ... ({len(names)} in all)"
    return (
        f"trajectory.messages_field is {field!r}, but the sample's metadata has no {field!r} "
        f"(its fields: {shown or 'none'}) and its response is text, while this term grades the "
        f"conversation; grading the text as the conversation would give wrong rewards. Put the "
        f"conversation's messages under {field!r}: verl: an agent loop that sets "
        f"extra_fields[{field!r}] (verl's ToolAgentLoop does not; docs/kinds/trajectories.md "
        f"shows one that does); slime, miles: the generate or agent function sets "
        f"metadata[{field!r}] (slime's TrajectoryManager: get_trajectory(extra_metadata="
        f"{{{field!r}: messages}})). Or grade these samples with text terms only"
    )


class Parsed:
    """The conversations of one ``score`` call, each validated once however many terms read it
    (keyed by the object they come from, which the cache holds, so no other object takes its
    id meanwhile): a refusal is kept and raised again for each term."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: dict[int, tuple[Any, Conversation | TrajectoryError]] = {}

    def get(
        self, source: Any, parse: Callable[[Any, TrajectoryConfig], Conversation], limits: Any
    ) -> Conversation:
        """``parse(source, limits)``, or what it gave ``source`` before."""
        entry = self._seen.get(id(source))
        if entry is None or entry[0] is not source:
            try:
                found: Conversation | TrajectoryError = parse(source, limits)
            except TrajectoryError as exc:
                found = exc
            entry = self._seen[id(source)] = (source, found)
        if isinstance(entry[1], TrajectoryError):
            raise entry[1]
        return entry[1]


def read_response(
    response: Any, reads: Reads, limits: TrajectoryConfig, parsed: Parsed | None = None
) -> Any:
    """What a term reading ``reads`` sees of a response (text or messages); raises
    :class:`TrajectoryError` for messages that :func:`parse_conversation` refuses, or a text
    :func:`parse_text_response` refuses. ``parsed``: the call's conversations validated so far."""
    parsed = parsed or Parsed()
    if is_conversation(response):
        return read_conversation(parsed.get(response, parse_conversation, limits), reads)
    if reads in CONVERSATION_READS:
        text = response if isinstance(response, str) else ""
        return read_conversation(parsed.get(text, parse_text_response, limits), reads)
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
    members: Sequence[SampleLike],
    reads: Reads,
    limits: TrajectoryConfig,
    run: Run,
    parsed: Parsed | None = None,
) -> Sequence[Outcome]:
    """``run`` on ``members`` as a term reading ``reads`` sees them: one outcome per member.

    A batch of plain-text samples read as text goes to ``run`` as it is. Otherwise each
    conversation is validated and read; a member whose conversation is malformed, or whose
    response is a conversation encoded as JSON text, gets its own ``error`` outcome (the
    sample's fault: saying what is wrong) and is not handed to ``run``, so a group-mode function
    never sees it and the rest of the group is scored. A member that carries no conversation
    where ``messages_field`` says one travels gets the setup's ``error`` under ``tool_calls``
    (the term's ``on_error`` decides, ``raise`` included), and under ``conversation`` its text as
    one assistant turn, marked ``missing`` (a trajectory kind raises it); so does one whose
    ``messages_field`` holds text that is no conversation. ``parsed``: the conversations the
    call validated for other terms, reused (each is validated once per call).
    """
    if reads not in CONVERSATION_READS and _all_plain_text(members, limits):
        return await run(list(members))
    parsed = parsed or Parsed()
    seen: list[SampleLike] = []
    failed: dict[int, Outcome] = {}
    for position, sample in enumerate(members):
        try:
            reading = _reading(sample, reads, limits, parsed)
        except ConversationMissing as exc:
            failed[position] = setup_failed(str(exc))
            continue
        except TrajectoryError as exc:
            failed[position] = Outcome(None, "error", str(exc), sample_fault=True)
            continue
        response = getattr(sample, "response", None)
        seen.append(sample if reading is response else with_response(sample, reading))
    outcomes = await run(seen) if seen else []
    if not failed:
        return outcomes
    merged: list[Outcome] = []
    ran = iter(outcomes)
    for position in range(len(members)):
        merged.append(failed[position] if position in failed else next(ran))
    return merged


def _decoded_and_parsed(source: Any, limits: TrajectoryConfig) -> Conversation:
    """A ``messages_field`` value (a list, or the JSON text of one) as a conversation."""
    assert limits.messages_field is not None  # the source came from the metadata
    return parse_conversation(decoded_messages(source, limits.messages_field), limits)


def _reading(sample: SampleLike, reads: Reads, limits: TrajectoryConfig, parsed: Parsed) -> Any:
    """What a term reading ``reads`` sees of ``sample``."""
    source = conversation_source(sample, limits)
    if source is not None:
        parse: Callable[[Any, TrajectoryConfig], Conversation] = parse_conversation
        if source is not getattr(sample, "response", None):
            parse = _decoded_and_parsed
        return read_conversation(parsed.get(source, parse, limits), reads)
    response = getattr(sample, "response", None)
    if isinstance(response, str):
        encoded = encoded_conversation(response)
        if encoded is not None:
            raise TrajectoryError(
                f"the sample's response is a string holding a JSON list of {len(encoded)} chat "
                f"messages: a conversation encoded as JSON text, which would be graded as text; "
                f"give `response` as the list itself (json.loads it once), or put the list under "
                f"the metadata field that trajectory.messages_field names"
            )
    field = limits.messages_field
    if field is not None and reads in CONVERSATION_READS:
        why = missing_conversation(sample, field)
        if reads == "tool_calls":
            raise ConversationMissing(why)
        text = response if isinstance(response, str) else ""
        text_turn = parsed.get(text, parse_text_response, limits)
        return dataclasses.replace(text_turn, missing=why)
    return read_response(response, reads, limits, parsed)


def _all_plain_text(members: Sequence[SampleLike], limits: TrajectoryConfig) -> bool:
    """Whether every member's response is text that opens no JSON list of objects, and none
    carries messages under ``messages_field``: C-level passes over the batch, no Python per
    sample, when ``messages_field`` is unset."""
    responses = list(map(_RESPONSE, members))
    if set(map(type, responses)) != {str} or any(map(_MAY_BE_ENCODED, responses)):
        return False
    field = limits.messages_field
    return field is None or all(metadata_of(s).get(field) is None for s in members)


_RESPONSE = attrgetter("response")
