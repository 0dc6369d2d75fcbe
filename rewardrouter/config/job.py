"""The command line's job config: a router config plus where data comes from and goes to."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rewardrouter.config.models import RouterConfig


class DataConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    path: str | None = Field(
        default=None, description="JSONL input; null: the example data shipped with rewardrouter."
    )
    limit: int | None = Field(default=None, ge=1, description="Score only the first N rows.")
    batch_size: int = Field(default=4096, ge=1, description="Rows per router call.")
    columns: dict[Literal["response", "label", "prompt", "metadata", "group_index"], str] = Field(
        default_factory=dict,
        description="The file's column for a field the router reads, e.g. `{label: solution}`: "
        "its value is copied under the field's name.",
    )


class OutputConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    path: str | None = Field(
        default=None, description="JSONL output; null: rewards.jsonl in the job's output folder."
    )
    progress: bool | None = Field(
        default=None, description="Progress bar; null: on for inputs of 1,000 rows or more."
    )
    evaluation: bool = Field(default=False, description="Score with each term's eval_key.")
    heartbeat: float | None = Field(
        default=30.0,
        gt=0,
        description="Seconds between 'still scoring' lines while a batch runs; null: none.",
    )


class ObjectiveConfig(BaseModel):
    """The number a job returns to a Hydra sweeper (and writes to ``summary.json``).

    ``mean_reward``: mean of the rewards that were set; ``agreement``: fraction of rows carrying
    ``column`` whose reward is within ``tolerance`` of it (a step function of any weight: for grid
    sweeps); ``abs_error``: mean absolute difference between the reward and ``column`` (a row
    without a reward counts as 0), continuous in the weights, so an optimizing sweeper can find
    its minimum; ``informative_groups``: fraction of prompt groups (``group_index``) whose shaped
    rewards are not all equal — the groups that give GRPO a signal. ``abs_error`` is better
    lower, the others higher (:attr:`maximize`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    name: Literal["mean_reward", "agreement", "abs_error", "informative_groups"] = "mean_reward"
    column: str = "expected_reward"
    tolerance: float = Field(default=1e-6, ge=0)

    @property
    def needs_column(self) -> bool:
        """Whether the objective reads the hand-scored ``column``."""
        return self.name in ("agreement", "abs_error")

    @property
    def maximize(self) -> bool:
        """Whether a higher value is better."""
        return self.name != "abs_error"


class JobConfig(RouterConfig):
    """What ``rewardrouter`` (the Hydra app) composes: router fields at the top level."""

    data: DataConfig = Field(default_factory=DataConfig)
    output: OutputConfig = Field(default_factory=OutputConfig)
    objective: ObjectiveConfig = Field(default_factory=ObjectiveConfig)

    def router(self) -> RouterConfig:
        """The router part of the job, validated as a :class:`RouterConfig`."""
        fields = {name: getattr(self, name) for name in RouterConfig.model_fields}
        return RouterConfig.model_validate(fields)
