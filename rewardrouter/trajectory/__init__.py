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
    ConversationMissing,
    DuplicateKeyError,
    Message,
    ToolCall,
    TrajectoryError,
    is_conversation,
    parse_arguments,
    parse_conversation,
    parse_text_response,
)
from rewardrouter.trajectory.reading import (
    CONVERSATION_READS,
    DEFAULT_READS,
    READS,
    Parsed,
    ResponseView,
    conversation_source,
    decoded_messages,
    encoded_conversation,
    missing_conversation,
    read_conversation,
    read_response,
    reads_conversation,
    run_reading,
    with_response,
)

__all__ = [
    "CONVERSATION_READS",
    "DEFAULT_READS",
    "MALFORMED",
    "READS",
    "ROLES",
    "Conversation",
    "ConversationMissing",
    "DuplicateKeyError",
    "Message",
    "Parsed",
    "ResponseView",
    "ToolCall",
    "TrajectoryError",
    "conversation_source",
    "decoded_messages",
    "encoded_conversation",
    "is_conversation",
    "missing_conversation",
    "parse_arguments",
    "parse_conversation",
    "parse_text_response",
    "read_conversation",
    "read_response",
    "reads_conversation",
    "run_reading",
    "with_response",
]
