"""A conversation read from OpenAI chat messages, validated within bounds.

:func:`parse_conversation` turns what a trainer hands over as a sample's response (a list of
message dicts: ``role``, ``content`` as a string or a list of content parts, an assistant's
``tool_calls``, a ``tool`` message's ``tool_call_id``) into a frozen :class:`Conversation`, or
raises :class:`TrajectoryError` saying which message is wrong and why. Every pass is linear in the
input and stops at the configured bounds (:class:`~rewardrouter.config.models.TrajectoryConfig`):
a policy's trajectory is hostile input, and one sample's malformed conversation must cost that
sample its status, never the batch its time.

A conversation is well formed or malformed as a whole, never half trusted: each ``tool`` message
answers one call an earlier assistant message made and no tool message answered yet (the call its
``tool_call_id`` names, or, where the message carries none, as TRL and Hermes-style loops write
them, the oldest unanswered call), and no call's arguments repeat a key within one JSON object
(:func:`parse_arguments`, the one parser of arguments).

An assistant message without ``tool_calls`` may write its calls as text, as the Hermes, Qwen2.5
and Qwen3 chat templates teach a model to (``<tool_call>{"name": ..., "arguments": {...}}
</tool_call>``, the form verl's and vLLM's ``hermes`` parsers read): under ``trajectory.format:
auto`` each such block is one of its calls, and a block no parser could read is kept as an
*unreadable* call, which no tool message answers (a loop never runs it) and the trajectory kinds
count as a failed one, never as no call.

>>> from rewardrouter.config.models import TrajectoryConfig
>>> convo = parse_conversation(
...     [{"role": "user", "content": "2+2?"},
...      {"role": "assistant", "content": None,
...       "tool_calls": [{"id": "c1", "type": "function",
...                       "function": {"name": "add", "arguments": '{"a": 2, "b": 2}'}}]},
...      {"role": "tool", "tool_call_id": "c1", "content": "4"},
...      {"role": "assistant", "content": [{"type": "text", "text": "The answer is 4."}]}],
...     TrajectoryConfig())
>>> [m.role for m in convo.messages], convo.tool_calls[0].name, convo.messages[-1].text
(['user', 'assistant', 'tool', 'assistant'], 'add', 'The answer is 4.')
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from operator import attrgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from rewardrouter.errors import RewardRouterError, short_repr
from rewardrouter.outcome import DataFault

if TYPE_CHECKING:
    from rewardrouter.config.models import TrajectoryConfig

#: The roles of OpenAI chat messages (``developer`` is the newer name of ``system``).
ROLES = ("system", "developer", "user", "assistant", "tool")
_ROLES = frozenset(ROLES)

#: Content part types whose ``text`` is read as text (chat completions write ``text``; the
#: Responses API ``input_text`` / ``output_text``). Other parts (``image_url``, ``image``,
#: ``input_audio``, ``video``, ``file``) carry no text and are skipped.
TEXT_PARTS = ("text", "input_text", "output_text")

#: The tags around a tool call written as text in the Hermes form (Hermes, Qwen2.5, Qwen3 chat
#: templates; verl's and vLLM's ``hermes`` tool parsers): a JSON object with ``name`` and
#: ``arguments`` between them.
CALL_OPEN, CALL_CLOSE = "<tool_call>", "</tool_call>"

#: How the start of the message of every conversation error reads; the router's failure hints
#: know it (the fix is in the sample's data, not in the reward function).
MALFORMED = "the sample's conversation is malformed"

_SHOWN = 24
_POSITION = attrgetter("position")


class TrajectoryError(RewardRouterError):
    """A sample's conversation that cannot be read: the message says which message or bound,
    what was found and what was expected; it never quotes the conversation's text."""


class ConversationMissing(TrajectoryError, DataFault):
    """A sample that does not carry the conversation its term grades (``messages_field`` names a
    field its metadata lacks), or whose ``messages_field`` holds no conversation: the trainer's
    or the dataset's fault, not the response's, so the term's ``on_error`` decides, ``raise``
    included. The message says where each trainer puts the messages."""


class DuplicateKeyError(ValueError):
    """JSON text whose object repeats a key (:func:`parse_arguments`)."""


def parse_arguments(text: str) -> Any:
    """The JSON value of a tool call's arguments, read strictly: the one parser of arguments.

    Raises :class:`DuplicateKeyError` when an object, at any depth, repeats a key (after its
    escapes are read: ``"\\u0061"`` is ``"a"``), since parsers disagree on which value counts
    (Python's keeps the last, others the first or refuse); :class:`json.JSONDecodeError` when
    the text is not JSON; :class:`ValueError` for ``NaN`` and ``Infinity``, which Python's parser
    accepts and JSON does not; :class:`RecursionError` when it nests deeper than the parser can
    follow. Linear in the text.

    >>> parse_arguments('{"city": "Paris", "days": [1, 2]}')
    {'city': 'Paris', 'days': [1, 2]}
    >>> parse_arguments('{"at": {"day": 1, "day": 2}}')
    Traceback (most recent call last):
    ...
    rewardrouter.trajectory.messages.DuplicateKeyError: an object repeats a key
    """
    return _STRICT.decode(text)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        raise DuplicateKeyError("an object repeats a key")
    return value


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


#: The one strict decoder of arguments (made once: ``json.loads`` with hooks makes one a call).
_STRICT = json.JSONDecoder(parse_constant=_not_json, object_pairs_hook=_unique_keys)


class ToolCall(NamedTuple):
    """One function call of an assistant message.

    ``arguments`` is the JSON text of the arguments as the message carried them (a dict of
    already-parsed arguments, as TRL writes them, is serialized once here); ``message`` is the
    position of the assistant message in the conversation, ``position`` the call's place in it.
    ``problem`` is set on a call written as text that could not be read (then ``name`` is ""
    and ``arguments`` the text between its tags): why, as ``a `<tool_call>` block that is not
    JSON``. ``parsed`` holds the arguments' JSON value, read once when the conversation was
    validated (``(value,)``), or None when they are not JSON (or were not read).
    """

    name: str
    arguments: str
    id: str | None
    message: int
    position: int
    problem: str | None = None
    parsed: tuple[Any] | None = None

    def describe(self) -> str:
        """How errors name the call: ``call 0 'search' (message 1)``; ``call 0 (message 1)``
        for an unreadable one."""
        named = f" {short_repr(self.name, _SHOWN)}" if self.name else ""
        return f"call {self.position}{named} (message {self.message})"

    @property
    def ref(self) -> str:
        """The call's id, or, for a call that carries none, one made from where it stands
        (``call-<message>-<position>``): how a protocol that needs an id on every call and its
        result (the Responses API, verifiers' messages) names it."""
        return self.id or f"call-{self.message}-{self.position}"


class Message(NamedTuple):
    """One chat message: its role, its text (text parts joined; other parts skipped), its tool
    calls (assistant messages) and the call it answers (``tool`` messages).

    Calls written as text and read (``trajectory.format: auto``) are among ``tool_calls``, their
    blocks gone from ``text``; those that could not be read are ``unreadable_calls``, their
    blocks left in ``text``.
    """

    role: str
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    unreadable_calls: tuple[ToolCall, ...] = ()
    #: A tool message's answered call, ``(message, position)``, as the conversation's
    #: validation paired them (its ``tool_call_id``, else the oldest unanswered call).
    answers: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class Conversation:
    """A validated conversation: what a term reading ``conversation`` receives as ``response``.

    ``from_text``: read from a response given as text, one assistant turn (see
    :func:`parse_text_response`), which carries no tool results. ``missing``: set on such a
    conversation when the sample should have carried its own (``messages_field`` names a field
    its metadata lacks): why, and where each trainer puts the messages. A term that grades the
    trajectory itself reads :meth:`trajectory`, which raises it; one that only needs the text
    (a reward model) reads the text as one assistant turn.
    """

    messages: tuple[Message, ...]
    from_text: bool = False
    missing: str | None = None

    def trajectory(self) -> Conversation:
        """This conversation, for a term that grades the trajectory itself (its calls, their
        results, its turns); raises :class:`ConversationMissing` when the sample did not carry
        the conversation its ``messages_field`` promised."""
        if self.missing is not None:
            raise ConversationMissing(self.missing)
        return self

    @property
    def assistant_messages(self) -> tuple[Message, ...]:
        return tuple(m for m in self.messages if m.role == "assistant")

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """Every tool call, in order."""
        return tuple(call for m in self.messages for call in m.tool_calls)

    @property
    def unreadable_calls(self) -> tuple[ToolCall, ...]:
        """Every call written as text that could not be read, in order."""
        return tuple(call for m in self.messages for call in m.unreadable_calls)

    @property
    def attempted_calls(self) -> tuple[ToolCall, ...]:
        """Every call the assistant made, read or not, in the order written."""
        return tuple(
            call
            for m in self.messages
            for call in (
                sorted((*m.tool_calls, *m.unreadable_calls), key=_POSITION)
                if m.unreadable_calls
                else m.tool_calls
            )
        )

    @property
    def tool_results(self) -> tuple[Message, ...]:
        """Every ``tool`` message, in order."""
        return tuple(m for m in self.messages if m.role == "tool")

    def answered(self, result: Message) -> ToolCall | None:
        """The call the ``tool`` message ``result`` answers (None where validation paired it
        with none: a conversation built by hand)."""
        if result.answers is None:
            return None
        at, position = result.answers
        return self.messages[at].tool_calls[position]

    def __len__(self) -> int:
        return len(self.messages)


def is_conversation(value: Any) -> bool:
    """Whether a response is given as messages (a list or tuple), not as text."""
    return isinstance(value, list | tuple)


def parse_conversation(value: Any, limits: TrajectoryConfig) -> Conversation:
    """``value`` (a list of OpenAI chat messages) as a :class:`Conversation`.

    Raises :class:`TrajectoryError` for: not a list, no message, more than ``max_messages``
    messages or ``max_parts`` content parts and tool calls together, more than ``max_chars``
    characters of text and arguments together, a message that is not an object, a role outside
    :data:`ROLES`, content that is neither a string, null nor a list of part objects with a
    string ``type``, ``tool_calls`` on a message that is not the assistant's, a call without a
    function name, arguments that are neither a string nor an object, an object that cannot
    be written as JSON within the nesting JSON allows, arguments whose JSON repeats a key in one
    object, or a ``tool`` message that answers no call: its ``tool_call_id`` names no call made
    before it and not answered yet, or, without an id, no call before it is unanswered.
    Arguments that are not JSON at all are kept: that is a malformed call in a well-formed
    conversation, which ``tool_call_format`` grades.

    An assistant message without ``tool_calls`` whose text writes calls in the Hermes form
    (:data:`CALL_OPEN` ... :data:`CALL_CLOSE`) has them read as its calls under
    ``trajectory.format: auto`` (see :class:`Message`); under ``none`` such a message raises, and
    so does a block in Qwen3-Coder's XML form (``<function=...>``), which is not read.
    """
    if not is_conversation(value):
        raise _error(f"expected a list of chat messages, found {type(value).__name__}")
    if not value:
        raise _error("it has no message", "a trajectory needs at least the assistant's message")
    if len(value) > limits.max_messages:
        raise _error(
            f"it has {len(value)} messages, more than trajectory.max_messages="
            f"{limits.max_messages}",
            "raise trajectory.max_messages if such trajectories are expected",
        )
    budget = _Budget(limits)
    unanswered = _Unanswered()
    messages: list[Message] = []
    for index, raw in enumerate(value):
        message = _message(index, raw, budget)
        if message.role == "tool":
            call = unanswered.answer(index, message.tool_call_id)
            message = message._replace(answers=(call.message, call.position))
        unanswered.made(message.tool_calls)
        messages.append(message)
    return Conversation(tuple(messages))


class _Unanswered:
    """The calls made so far that no ``tool`` message has answered yet.

    A tool message with a ``tool_call_id`` answers the oldest unanswered call with that id (an
    id may be made again once answered, as loops that number calls per turn do); one without an
    id answers the oldest unanswered call. A tool message that finds none is an orphan: the
    conversation is malformed. Every call enters each queue once and leaves it once, so the
    pass is linear however the ids repeat.
    """

    __slots__ = ("answered", "by_id", "in_order", "last_with_id")

    def __init__(self) -> None:
        self.in_order: deque[ToolCall] = deque()
        self.by_id: dict[str, deque[ToolCall]] = {}
        self.last_with_id: dict[str, ToolCall] = {}
        self.answered: set[tuple[int, int]] = set()

    def made(self, calls: Iterable[ToolCall]) -> None:
        for call in calls:
            self.in_order.append(call)
            if call.id is not None:
                self.by_id.setdefault(call.id, deque()).append(call)
                self.last_with_id[call.id] = call

    def answer(self, index: int, call_id: str | None) -> ToolCall:
        """Mark the call that message ``index`` (a tool result) answers, and return it; raise
        when none."""
        queue = self.in_order if call_id is None else self.by_id.get(call_id, deque())
        while queue and (queue[0].message, queue[0].position) in self.answered:
            queue.popleft()  # answered through the other queue
        if queue:
            call = queue.popleft()
            self.answered.add((call.message, call.position))
            return call
        what = f"message {index} is a tool result"
        if call_id is not None:
            made = self.last_with_id.get(call_id)
            if made is None:
                found = f"{what} whose `tool_call_id` names no tool call before it"
            else:
                found = (
                    f"{what} whose `tool_call_id` names call {made.position} of message "
                    f"{made.message}, answered already"
                )
        elif self.answered:
            found = f"{what}, but every tool call before it is answered already"
        else:
            found = f"{what}, but no message before it made a tool call"
        raise _error(
            found,
            "each `tool` message answers one unanswered call of an earlier assistant message "
            "(the call its `tool_call_id` names, else the oldest): drop the result or keep its "
            "call",
        )


class _Budget:
    """What the conversation has used of its bounds so far."""

    __slots__ = ("chars", "limits", "parts")

    def __init__(self, limits: TrajectoryConfig) -> None:
        self.limits = limits
        self.chars = 0
        self.parts = 0

    def text(self, text: str) -> str:
        self.chars += len(text)
        if self.chars > self.limits.max_chars:
            raise _error(
                f"its text and arguments exceed trajectory.max_chars={self.limits.max_chars} "
                f"characters",
                "raise trajectory.max_chars if such trajectories are expected",
            )
        return text

    def part(self, where: str) -> None:
        self.parts += 1
        if self.parts > self.limits.max_parts:
            raise _error(
                f"{where}: more than trajectory.max_parts={self.limits.max_parts} content parts "
                f"and tool calls in all",
                "raise trajectory.max_parts if such trajectories are expected",
            )


def _message(index: int, message: Any, budget: _Budget) -> Message:
    if type(message) is not dict and not isinstance(message, Mapping):
        raise _error(
            f"message {index} is a {type(message).__name__}, expected an object with a `role`"
        )
    role = message.get("role")
    if not isinstance(role, str) or role not in _ROLES:
        found = "has no `role`" if role is None else f"has role {short_repr(role, _SHOWN)}"
        raise _error(f"message {index} {found}", f"expected one of: {', '.join(ROLES)}")
    content = message.get("content")
    if type(content) is str:
        text = budget.text(content)
    else:
        text = _content(f"message {index}", content, budget)
    calls: tuple[ToolCall, ...] = ()
    raw_calls = message.get("tool_calls")
    if raw_calls:
        where = f"message {index}"
        if role != "assistant":
            raise _error(f"{where} ({role}) has `tool_calls`; only assistant messages call tools")
        if not isinstance(raw_calls, list | tuple):
            raise _error(f"{where}: `tool_calls` is a {type(raw_calls).__name__}, expected a list")
        calls = tuple(_tool_call(index, k, call, budget) for k, call in enumerate(raw_calls))
    unreadable: tuple[ToolCall, ...] = ()
    if role == "assistant" and not calls:
        text, calls, unreadable = _written_calls(index, text, budget)
    call_id = message.get("tool_call_id")
    name = message.get("name")
    return Message(
        role,
        text,
        calls,
        call_id if isinstance(call_id, str) else None,
        name if isinstance(name, str) else None,
        unreadable,
    )


def parse_text_response(text: str, limits: TrajectoryConfig) -> Conversation:
    """A response given as text as a conversation: one assistant message holding it, its calls
    written as text read as :func:`parse_conversation` reads them (``from_text`` set: it
    carries no tool results). Raises :class:`TrajectoryError` as that function does.

    >>> from rewardrouter.config.models import TrajectoryConfig
    >>> convo = parse_text_response(
    ...     'On it.<tool_call>{"name": "add", "arguments": {"a": 2}}</tool_call>',
    ...     TrajectoryConfig())
    >>> convo.messages[0].text, convo.tool_calls[0].arguments, convo.from_text
    ('On it.', '{"a": 2}', True)
    """
    budget = _Budget(limits)
    written, calls, unreadable = _written_calls(0, budget.text(text), budget)
    message = Message("assistant", written, calls, unreadable_calls=unreadable)
    return Conversation((message,), from_text=True)


def _written_calls(
    index: int, text: str, budget: _Budget
) -> tuple[str, tuple[ToolCall, ...], tuple[ToolCall, ...]]:
    """The calls that message ``index`` writes as text: its text without the blocks read, the
    calls read, the calls that could not be read (their blocks left in the text). One pass."""
    start = text.find(CALL_OPEN)
    if start == -1:
        return text, (), ()
    if budget.limits.format == "none":
        raise _error(
            f"message {index} writes a tool call as text (`{CALL_OPEN}` at character {start}), "
            f"which trajectory.format: none does not read",
            "set trajectory.format: auto to read it as a call, or hand the call over in the "
            "message's `tool_calls`",
        )
    kept: list[str] = []
    calls: list[ToolCall] = []
    unreadable: list[ToolCall] = []
    done = 0  # the text before this is kept or read
    while start != -1:
        budget.part(f"message {index}")
        body = start + len(CALL_OPEN)
        end = text.find(CALL_CLOSE, body)
        closed = end != -1
        stop = end + len(CALL_CLOSE) if closed else len(text)
        call = _written_call(
            index,
            len(calls) + len(unreadable),
            text[body : end if closed else stop],
            closed,
            budget,
        )
        if call.problem is None:
            kept.append(text[done:start])
            done = stop
            calls.append(call)
        else:
            unreadable.append(call)
        start = text.find(CALL_OPEN, stop) if closed else -1
    kept.append(text[done:])
    return "".join(kept), tuple(calls), tuple(unreadable)


def _written_call(index: int, position: int, body: str, closed: bool, budget: _Budget) -> ToolCall:
    """The call one ``<tool_call>`` block writes: read as the ``hermes`` parsers read it (a JSON
    object with a string ``name`` and any JSON ``arguments``, passed on as their JSON text), or
    unreadable, saying why."""

    def unreadable(why: str) -> ToolCall:
        return ToolCall("", body, None, index, position, f"a `{CALL_OPEN}` block {why}")

    if not closed:
        return unreadable(f"not closed by `{CALL_CLOSE}`")
    where = f"message {index}, tool call {position}"
    written = body.strip()
    if written.startswith("<function="):
        raise _error(
            f"{where} is written in Qwen3-Coder's XML form (<function=...>), which is not read",
            "hand the calls over in the messages' `tool_calls`, as the trainer's tool parser "
            "reads them (verl: the `qwen3_coder` format)",
        )
    try:
        envelope = parse_arguments(written)
    except DuplicateKeyError:
        raise _error(
            f"{where}: its JSON repeats a key within one object",
            "JSON parsers disagree on which value counts, so the call has no single meaning; "
            "write each key once",
        ) from None
    except (ValueError, RecursionError):
        return unreadable("that is not JSON")
    if not isinstance(envelope, dict) or "arguments" not in envelope:
        return unreadable("whose JSON is not an object with `name` and `arguments`")
    name = envelope.get("name")
    if not isinstance(name, str) or not name:
        return unreadable("whose `name` is not a non-empty string")
    budget.text(name)
    try:
        arguments = json.dumps(envelope["arguments"], ensure_ascii=False)
    except RecursionError:
        raise _error(f"{where}: its arguments are nested too deeply to write as JSON") from None
    budget.text(arguments)
    return ToolCall(name, arguments, None, index, position, parsed=(envelope["arguments"],))


def _content(where: str, content: Any, budget: _Budget) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return budget.text(content)
    if not isinstance(content, list | tuple):
        raise _error(
            f"{where}: `content` is a {type(content).__name__}",
            "expected a string, null or a list of content parts",
        )
    texts: list[str] = []
    for k, part in enumerate(content):
        budget.part(where)
        if not isinstance(part, Mapping) or not isinstance(part.get("type"), str):
            raise _error(
                f"{where}: content part {k} is not an object with a string `type`",
                'write parts as {"type": "text", "text": "..."} (or image_url, ...)',
            )
        if part["type"] in TEXT_PARTS:
            text = part.get("text")
            if not isinstance(text, str):
                raise _error(f"{where}: content part {k} ({part['type']}) has no string `text`")
            texts.append(budget.text(text))
    return "".join(texts)


def _tool_call(message: int, position: int, call: Any, budget: _Budget) -> ToolCall:
    where = f"message {message}, tool call {position}"
    budget.part(f"message {message}")
    function = call.get("function") if isinstance(call, Mapping) else None
    if type(function) is not dict and not isinstance(function, Mapping):
        raise _error(f"{where} has no `function` object", 'expected {"function": {"name", ...}}')
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise _error(f"{where} has no function `name`")
    budget.text(name)
    arguments = function.get("arguments")
    if arguments is None:
        text = ""
    elif isinstance(arguments, str):
        text = arguments
    elif isinstance(arguments, Mapping):
        try:
            text = json.dumps(arguments, ensure_ascii=False)
        except RecursionError:
            raise _error(f"{where}: its arguments are nested too deeply to write as JSON") from None
        except (TypeError, ValueError) as exc:
            kind = type(exc).__name__
            raise _error(f"{where}: its arguments cannot be written as JSON ({kind})") from None
    else:
        raise _error(
            f"{where}: `arguments` is a {type(arguments).__name__}",
            "expected a JSON string or an object",
        )
    budget.text(text)
    parsed: tuple[Any] | None = None
    try:
        parsed = (parse_arguments(text),)
    except DuplicateKeyError:
        raise _error(
            f"{where}: its arguments repeat a key within one object",
            "JSON parsers disagree on which value counts (the last, the first, or none), so "
            "the call has no single meaning; write each key once",
        ) from None
    except (ValueError, RecursionError):
        pass  # not JSON: a malformed call in a well-formed conversation, graded by its term
    call_id = call.get("id")
    call_id = call_id if isinstance(call_id, str) else None
    return ToolCall(name, text, call_id, message, position, parsed=parsed)


def _error(what: str, hint: str | None = None) -> TrajectoryError:
    return TrajectoryError(f"{MALFORMED}: {what}" + (f"; {hint}" if hint else ""))
