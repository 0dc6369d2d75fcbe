"""The settings of a ``verifiers`` term, read from the term's ``kwargs`` at compile time.

Example (verifiers' ``reverse-text`` environment, its one reward at the environment's weight)::

    reversed:
      kind: verifiers
      key: score                     # the rewards' weighted sum; or one reward by its name
      kwargs:
        taskset: reverse-text        # an installed taskset, or pkg.module:MyTaskset
        config: {}                   # the taskset's config (task: {rewards, judges} included)
        label_field: answer          # the task field the sample's label fills
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rewardrouter.rewards.model_input import max_response_chars_field

#: The key of the rewards' weighted sum in the dict a ``verifiers`` term returns.
TOTAL = "score"


class VerifiersSettings(BaseModel):
    """Which verifiers taskset grades the samples, and how a sample becomes one of its tasks."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    taskset: str = Field(
        description="The taskset: an installed verifiers taskset or environment by its id (as "
        "`--env.taskset.id` names it: `reverse-text`, `owner/name@version`), or the import path "
        "of its Taskset class (`my_env.taskset:MyTaskset`).",
    )
    config: dict[str, Any] = Field(
        default_factory=dict,
        description="The taskset's config (its TasksetConfig fields), validated when the router "
        "compiles; `task:` holds the task's own config: plugged `rewards` (weights), `judges`.",
    )
    label_field: str | None = Field(
        default="answer",
        description="The task data field the sample's label fills (null: the label is not "
        "read). Every other field of the task data is read from the sample's metadata under "
        "its own name; `prompt` is the sample's prompt.",
    )
    skip_runtime_rewards: bool = Field(
        default=False,
        description="Leave out the rewards and judges that need the rollout's runtime (a "
        "sandbox they run commands in), as verifiers' own offline re-scoring does; false: such "
        "a taskset is refused when the router compiles.",
    )
    max_response_chars: int = max_response_chars_field()
    refuse_special_tokens: bool | None = Field(
        default=None,
        description="A response that writes a chat template's marker is `invalid`, never "
        "scored: the taskset's judges show it to a model as part of their own prompt. null: "
        "refused when the task has judges, read as text otherwise.",
    )

    @field_validator("taskset")
    @classmethod
    def _named(cls, taskset: str) -> str:
        if not taskset.strip():
            raise ValueError("names no taskset; give its id (reverse-text) or its import path")
        return taskset.strip()
