"""``turns``: a penalty on the length of a trajectory beyond a budget, in assistant turns or in
tool calls. It reads the whole conversation (a term's ``reads`` defaults to ``conversation``).

The reward is ``-penalty`` per turn (or call) beyond ``budget``, at most ``max_penalty`` in
magnitude, and 0.0 within the budget; a plain-text response is one assistant turn, making the
calls it writes as text. Every call counts, read or not (a call written as text that could not
be read is a call too). Example: ``{kind: turns, kwargs: {count: tool_calls, budget: 4, penalty: 0.05}}``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from rewardrouter.rewards.registry import Bound, Resources, resource_kind
from rewardrouter.trajectory import Conversation


class TurnsSettings(BaseModel):
    """What a ``turns`` term counts and what it costs."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    count: Literal["assistant_turns", "tool_calls"] = Field(
        default="tool_calls",
        description="What is counted: the assistant's messages, or its tool calls.",
    )
    budget: int = Field(default=0, ge=0, description="How many are free of penalty.")
    penalty: float = Field(default=0.1, ge=0, description="The cost of each one beyond the budget.")
    max_penalty: float | None = Field(
        default=None,
        gt=0,
        description="The largest penalty, however long the trajectory; null: none.",
    )


class Turns:
    """A ``turns`` term's callable: ``-penalty * max(0, count - budget)``, capped."""

    reads_conversation: ClassVar[bool] = True
    name = "turns"

    def __init__(self, settings: TurnsSettings) -> None:
        self.settings = settings

    def __call__(self, args: Any, sample: Any) -> float:
        conversation: Conversation = sample.response.trajectory()
        settings = self.settings
        if settings.count == "tool_calls":
            counted = len(conversation.attempted_calls)
        else:
            counted = len(conversation.assistant_messages)
        beyond = counted - settings.budget
        if beyond <= 0:
            return 0.0
        cost = settings.penalty * beyond
        if settings.max_penalty is not None:
            cost = min(cost, settings.max_penalty)
        return -cost


@resource_kind("turns", TurnsSettings)
def build(settings: TurnsSettings, resources: Resources) -> Bound:
    """A penalty per assistant turn or tool call beyond a budget."""
    reward = resources.get((Turns, settings.model_dump_json()), lambda: Turns(settings))
    return Bound(reward, "single", reward.name)
