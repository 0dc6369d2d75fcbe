"""The settings of the ``ray`` executor: ``executors.ray`` in a router config."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator


class RaySettings(BaseModel):
    """``executors.ray``: the router's Ray actors, used by terms with ``executor: ray``.

    Started on first use (Ray is imported only then), reused for every batch, killed by
    ``Router.close()``. Deadlines, statuses and ``on_error`` work as with ``executor: process``:
    an actor that overruns a deadline is killed and replaced, one that dies is replaced. Actors
    that the cluster cannot place yet (no free CPUs, a lost node) wait for CPUs while the
    others serve; the pool logs how many wait and why. Example: ``executors: {ray: {address:
    auto, actors: 32}}``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    address: str | None = Field(
        default="auto",
        description="Where the Ray cluster is: `auto` (the cluster this process runs in, e.g. "
        "under a trainer on Ray, or the one `ray start` runs here), `host:port` of its head, or "
        "`ray://host:10001` (Ray Client); null: start a local Ray instance. A process already "
        "connected to Ray (a trainer's driver, any Ray actor) always uses its own cluster.",
    )
    actors: int | None = Field(
        default=None,
        ge=1,
        description="Actors in the pool; those the cluster cannot place yet wait for CPUs while "
        "the others serve. null: as many as the cluster's free CPUs allow, growing as CPUs free "
        "up while the router has work (set it on a cluster that other work shares).",
    )
    cpus_per_actor: float = Field(
        default=1.0, gt=0, description="CPUs Ray reserves for each actor (`num_cpus`)."
    )
    num_cpus: int | None = Field(
        default=None,
        ge=1,
        description="CPUs of the local Ray instance started when `address` is null; null: all "
        "of this machine's.",
    )
    chunk_seconds: float = Field(
        default=0.2,
        gt=0,
        description="Work sent to an actor at once, as for `executors.process.chunk_seconds`; larger "
        "than there, since a Ray round trip costs more than a pipe's.",
    )
    runtime_env: dict[str, Any] | None = Field(
        default=None,
        description="Ray runtime environment of the actors, e.g. `{py_modules: [./my_rewards]}` "
        "or `{env_vars: {...}}`, to ship reward modules the cluster's nodes cannot import; local "
        "`py_modules` and `working_dir` paths are uploaded to the cluster when the pool starts.",
    )
    placement_timeout: float = Field(
        default=300.0,
        gt=0,
        description="Seconds calls wait when no actor of the pool is placed at all (a cluster "
        "without free CPUs, every node lost) before they end as `error` saying why; the pool "
        "goes on, and later calls run once an actor is placed.",
    )

    @field_validator("address")
    @classmethod
    def _address(cls, address: str | None) -> str | None:
        if address is None or address == "auto" or re.match(r"^(ray://)?[^\s:/]+:\d+$", address):
            return address
        raise ValueError(
            f"address {address!r} is not a Ray address; expected `auto`, `host:port` of the head "
            f"node, `ray://host:port` (Ray Client), or null to start a local Ray instance"
        )
