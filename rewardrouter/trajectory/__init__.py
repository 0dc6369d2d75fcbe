"""Samples whose response is a conversation: OpenAI chat messages with tool calls and tool
results, as TRL, verl's agent loop and slime's multi-turn rollouts produce them.

:func:`parse_conversation` validates one within the router's ``trajectory`` bounds; each term
reads the part its ``reads:`` names (:func:`read_conversation`; the last assistant message's text
by default), so every kind grades trajectories unchanged, and the trajectory kinds
(``tool_call_format``, ``tool_success``, ``turns``) read the :class:`Conversation` itself.
"""

from rewardrouter.trajectory.messages import (
    MALFORMED,
    ROLES,
    Conversation,
    DuplicateKeyError,
    Message,
    ToolCall,
    TrajectoryError,
    is_conversation,
    parse_arguments,
    parse_conversation,
)
from rewardrouter.trajectory.reading import (
    DEFAULT_READS,
    READS,
    ResponseView,
    conversation_source,
    read_conversation,
    read_response,
    reads_conversation,
    run_reading,
    with_response,
)

__all__ = [
    "DEFAULT_READS",
    "MALFORMED",
    "READS",
    "ROLES",
    "Conversation",
    "DuplicateKeyError",
    "Message",
    "ResponseView",
    "ToolCall",
    "TrajectoryError",
    "conversation_source",
    "is_conversation",
    "parse_arguments",
    "parse_conversation",
    "read_conversation",
    "read_response",
    "reads_conversation",
    "run_reading",
    "with_response",
]
