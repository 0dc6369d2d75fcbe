"""A sample as a verifiers rollout: the task its row describes and the trace its response is.

verifiers scores a finished rollout with ``await task.score(trace)``: each ``@vf.reward``
method and plugged judge reads the task's data (``self.data``: the prompt, the reference
answer, whatever fields the task declares) and the trace (the rollout's message graph:
``trace.last_reply``, ``trace.assistant_messages``, ``trace.transcript``). A sample carries the
same things under other names, so it is turned into them here:

- the task data: the sample's ``prompt`` as ``prompt``, its ``label`` as ``label_field``, and
  every other field the data declares from the sample's metadata under its own name; a sample
  whose row does not fit the data (a required field missing) is the dataset's fault
  (:class:`TaskDataError`);
- the trace: the prompt's messages as verifiers' own rollout writes them (the task's
  ``system_prompt``, then its prompt as a user message, or its messages), then the response:
  one assistant turn for a text, the messages of a conversation (which already holds the
  prompt when it starts with a system or user message). Each assistant message is committed to
  the message graph as verifiers' interception commits a model's reply
  (``graph.prepare_turn(...).commit(response)``), so ``sampled`` turns, branches and the
  transcript are what a rollout of verifiers' own would record.

verifiers is imported by the functions here only; this module's import does not load it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from rewardrouter.outcome import DataFault
from rewardrouter.sample import metadata_of

if TYPE_CHECKING:
    from rewardrouter.trajectory import Conversation


class TaskDataError(DataFault):
    """A sample whose prompt, label or metadata do not make the task's data: the dataset's
    fault (the message names the fields), so the term's ``on_error`` decides."""


def task_data(data_type: type[Any], sample: Any, label_field: str | None) -> Any:
    """The task data of ``sample``: its prompt, its label as ``label_field``, and each other
    field ``data_type`` declares, read from its metadata. Raises :class:`TaskDataError`."""
    metadata = metadata_of(sample)
    fields: dict[str, Any] = {
        name: metadata[name]
        for name in data_type.model_fields
        if name in metadata and name not in ("idx", "prompt")
    }
    prompt = getattr(sample, "prompt", None)
    if prompt not in (None, ""):
        fields["prompt"] = prompt
    if label_field is not None:
        fields[label_field] = getattr(sample, "label", None)
    try:
        return data_type.model_validate(fields)
    except ValidationError as exc:
        shown = "; ".join(
            f"{'.'.join(map(str, error['loc'])) or '<data>'}: {error['msg']}"
            for error in exc.errors(include_url=False, include_input=False)[:5]
        )
        where = f"the label fills {label_field!r}; " if label_field else ""
        raise TaskDataError(
            f"the sample does not make a {data_type.__name__}: {shown} ({where}every other "
            f"field comes from the sample's metadata under its own name, the prompt from its "
            f"prompt); add the fields to the dataset's metadata, or set `label_field`"
        ) from None


def _prompt_messages(data: Any) -> list[Any]:
    """The messages a verifiers rollout opens with: the system prompt, then the prompt."""
    from verifiers.v1.types import SystemMessage, UserMessage

    messages: list[Any] = []
    if data.system_prompt is not None:
        messages.append(SystemMessage(content=data.system_prompt))
    if isinstance(data.prompt, str):
        messages.append(UserMessage(content=data.prompt))
    elif data.prompt:
        messages.extend(data.prompt)
    return messages


def _messages(conversation: Conversation) -> list[Any]:
    """The conversation's messages as verifiers' message types (text only: other content
    parts carry no text a reward reads). A tool result names the call the router's own
    validation paired it with (its ``tool_call_id``, else the oldest unanswered call)."""
    from verifiers.v1.types import (
        AssistantMessage,
        SystemMessage,
        ToolCall,
        ToolMessage,
        UserMessage,
    )

    out: list[Any] = []
    for message in conversation.messages:
        if message.role in ("system", "developer"):
            out.append(SystemMessage(content=message.text))
        elif message.role == "user":
            out.append(UserMessage(content=message.text))
        elif message.role == "assistant":
            calls = [
                ToolCall(id=call.ref, name=call.name, arguments=call.arguments)
                for call in message.tool_calls
            ]
            out.append(AssistantMessage(content=message.text or None, tool_calls=calls or None))
        else:
            answered = conversation.answered(message)
            call_id = answered.ref if answered is not None else message.tool_call_id or ""
            out.append(ToolMessage(tool_call_id=call_id, content=message.text, name=message.name))
    return out


def rollout_trace(task: Any, conversation: Conversation) -> Any:
    """The trace of ``task`` whose rollout is ``conversation`` (see the module's description)."""
    from verifiers.v1 import graph
    from verifiers.v1.configs.agent import AgentConfig
    from verifiers.v1.state import state_cls
    from verifiers.v1.trace import AgentInfo, Trace, TraceTask
    from verifiers.v1.types import AssistantMessage, Response

    trace = Trace(
        task=TraceTask(type=type(task).__name__, data=task.data, key=task.key, hash=task.hash),
        state=state_cls(type(task))(),
        agent=AgentInfo(config=AgentConfig(), name="policy"),
    )
    response = _messages(conversation)
    opens = bool(response) and response[0].role in ("system", "user")
    messages = response if opens else [*_prompt_messages(task.data), *response]
    # The policy's turns: every assistant message of the response (not the prompt's few-shots).
    start = 0 if opens else len(messages) - len(response)
    committed = 0
    for i in range(start, len(messages)):
        message = messages[i]
        if isinstance(message, AssistantMessage):
            reason = "tool_calls" if message.tool_calls else "stop"
            reply = Response(
                id=f"rewardrouter-{i}", created=0, model="policy", message=message,
                finish_reason=reason,
            )  # fmt: skip
            graph.prepare_turn(trace, messages[:i]).commit(reply)
            committed = i + 1
    if committed < len(messages):  # a prompt with no reply, or tool results after the last turn
        graph.prepare_turn(trace, messages).commit_prompt()
    trace.is_completed = trace.ok = True
    return trace


def rewards_of(trace: Any) -> dict[str, float]:
    """The trace's named rewards (each one's score, before its weight)."""
    return {name: reward.score for name, reward in trace.rewards.items() if reward is not None}
