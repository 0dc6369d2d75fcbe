"""``summary.json``: what a job of the command line scored, as a model with a JSON Schema.

The job writes one next to its rewards (``rewardrouter ... `` then
``outputs/<date>/<time>/summary.json``); ``schemas/summary.schema.json`` is generated from
:class:`JobSummary`, so a tool that reads the file can check it. Strict JSON: a non-finite number
(a mean over rewards near the float limit) is written as null.

>>> JobSummary(data="rows.jsonl", rows=2, scored=2, complete=True,
...            objective=ObjectiveValue(name="mean_reward", value=0.5)).objective.value
0.5
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="null")


class ObjectiveValue(_Entry):
    """The number the job returns to a sweeper."""

    name: str = Field(description="The objective's name (objective.name).")
    value: float | None = Field(description="Its value; null when no row could count.")


class AdvantageCheck(_Entry):
    """The advantage stage, and its check on constant prompt groups."""

    stage: str | None = Field(default=None, description="The advantage stage's kind; null: none.")
    constant_groups: int | None = Field(
        default=None, description="Prompt groups whose answers all got one (shaped) reward."
    )
    max_abs_advantage_in_constant_groups: float | None = Field(
        default=None, description="The largest |advantage| in them: exactly 0 when right."
    )


class RouteSummary(_Entry):
    """One route's rewards and statuses (the terminal table's row)."""

    route: str
    count: int
    mean: float | None
    std: float | None
    statuses: dict[str, int]
    terms_not_applied: int = Field(description="Rows scored ok with a term that returned None.")
    groups: int = Field(description="Prompt groups (group_index) seen.")
    constant_groups: int = Field(description="Those whose answers all got one (shaped) reward.")


class DatasetMapEntry(_Entry):
    """A dataset map the job merged: its file, and the files of its name it hides."""

    name: str
    path: str
    hidden: list[str] = Field(default_factory=list)


class WarningEntry(_Entry):
    """Samples scored, but not the way their route intends: counted, never raised."""

    code: str = Field(description="not_applicable, skipped, failed, misplaced_route_field, ...")
    where: str = Field(description="The YAML path (or choice) it is about.")
    count: int
    status: str | None = None
    lines: list[int] = Field(default_factory=list, description="The first lines it counts.")
    message: str


class FailureEntry(_Entry):
    """A row whose reward call failed under ``on_error: raise``."""

    line: int
    route: str | None
    status: str
    error: str | None


class JobSummary(_Entry):
    """What one job scored, wrote and counted."""

    data: str = Field(description="The input file.")
    rows: int = Field(description="Rows read.")
    scored: int = Field(description="Rows scored (fewer when the job stopped early).")
    complete: bool = Field(description="Every row scored and post-processed.")
    post_process_error: str | None = None
    objective: ObjectiveValue
    advantage: AdvantageCheck = Field(default_factory=AdvantageCheck)
    routes: list[RouteSummary] = Field(default_factory=list)
    graders: dict[str, str] = Field(
        default_factory=dict, description="Each term's YAML path and what grades it."
    )
    dataset_maps: list[DatasetMapEntry] = Field(default_factory=list)
    warnings: list[WarningEntry] = Field(default_factory=list)
    hints: list[str] = Field(default_factory=list)
    failures: list[FailureEntry] = Field(default_factory=list, description="The first 1,000.")

    def json_text(self) -> str:
        """The file's text: indented, strict JSON."""
        return self.model_dump_json(indent=2) + "\n"
