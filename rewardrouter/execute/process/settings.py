"""The settings of the ``process`` executor: ``executors.process`` in a router config."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class ProcessSettings(BaseModel):
    """``executors.process``: the router's worker processes, used by terms with
    ``executor: process``.

    Started on first use, reused for every batch, stopped by ``Router.close()``. A worker that
    overruns a deadline is killed and replaced by a fork of a warm template process. Example:
    ``executors: {process: {workers: 8}}``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    workers: int | None = Field(
        default=None, ge=1, description="Worker processes; null: one per CPU this process may use."
    )
    chunk_seconds: float = Field(
        default=0.05,
        gt=0,
        description="Work sent to a worker at once: cheap calls travel in chunks of about this "
        "many seconds, so the hand-off does not cost more than the calls.",
    )
    start_method: Literal["auto", "forkserver", "spawn"] = Field(
        default="auto",
        description="How the template that workers are forked from starts (on Linux; "
        "elsewhere each worker is a fresh interpreter): forked by a fork server started once "
        "per process (forkserver; auto), or as a fresh interpreter (spawn). Neither runs the "
        "caller's script again, so scripts need no `if __name__ == '__main__':` guard.",
    )
    warm_calls: int = Field(
        default=8,
        ge=0,
        description="Calls per reward function that succeeded and are replayed in the template "
        "so new workers start warm; each is a second call of the function on an input it "
        "already scored, side effects included. 0: never, for functions with side effects "
        "(files written, processes started, paid APIs called).",
    )
