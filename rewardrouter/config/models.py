"""The router config: frozen pydantic models with their defaults on the fields.

A YAML file, a Hydra compose and a Python dict all pass through :meth:`RouterConfig.model_validate`
(see :func:`rewardrouter.load_config`); nothing downstream reads raw dicts.

Example::

    RouterConfig.model_validate({
        "routes": {
            "gsm8k": {
                "match": ["openai/gsm8k"],
                "rewards": {"correct": {"kind": "exact_match"}},
            }
        }
    })
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from rewardrouter.config.redact import redacted
from rewardrouter.config.stages import (
    ADVANTAGE_KINDS,
    PostProcessStage,
    ShapingStage,
)

_IMPORT_PATH = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*([.:][A-Za-z_][\w]*)$")
_IDENT = re.compile(r"^[A-Za-z_][\w-]*$")


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class FallbackValue(_Model):
    """``on_error: {value: x}``: score a failed call as ``x`` and record the failure."""

    value: float


OnError = Literal["raise", "skip"] | FallbackValue

#: What a term reads of a sample whose response is a conversation (see TrajectoryConfig).
Reads = Literal["final_answer", "assistant_text", "transcript", "tool_calls", "conversation"]

#: Seconds one reward call may take when neither the term nor the router says otherwise: long
#: enough for any grader and a remote call's retries (a remote term's default `deadline` is
#: 50 s), short enough that a hung call does not idle a trainer's GPUs for minutes.
DEFAULT_TIMEOUT = 60.0


class RewardTerm(_Model):
    """One weighted reward function of a route.

    Exactly one of ``kind`` (a built-in, e.g. ``math``, ``boxed_f1``) or ``path`` (an import
    path ``pkg.module.fn`` or ``pkg.module:fn``) names the function.
    """

    kind: str | None = None
    path: str | None = None
    kwargs: dict[str, Any] = Field(default_factory=dict)
    weight: float = 1.0
    key: str | None = Field(
        default=None, description="For dict-valued rewards: the entry used as the training value."
    )
    eval_key: str | None = Field(
        default=None, description="Entry used when scoring for evaluation; defaults to `key`."
    )
    mode: Literal["auto", "single", "group", "trl", "verl"] = Field(
        default="auto",
        description="single: fn(args, sample); group: fn(args, samples); trl: a TRL reward "
        "function fn(completions, <label column>, **columns), called per route group; verl: a "
        "verl compute_score(data_source, solution_str, ground_truth, extra_info). auto: read the "
        "signature.",
    )
    on_error: OnError = Field(
        default="raise",
        description="What a failed call gives: raise (the batch raises RewardError), skip (reward "
        "None, left out of group statistics) or {value: x}. A built-in kind's failure on the "
        "response (it raised on it, overran its deadline) is never raised: under raise it is "
        "skipped, that sample's status alone.",
    )
    executor: str = Field(
        default="auto",
        description="inline (async, on the event loop), thread (blocking I/O), process (CPU-bound, "
        "killed at its deadline), ray (CPU-bound, on Ray actors across a cluster; see `ray`); "
        "auto: process for CPU-heavy built-ins, inline for async functions and light built-ins, "
        "thread otherwise.",
    )
    timeout: float | None = Field(
        default=None,
        gt=0,
        description="Seconds one call may take (a group-mode call: the whole call); null: the "
        "router's `timeout`. An overrun is status `timeout`, handled by `on_error`.",
    )
    reads: Reads | None = Field(
        default=None,
        description="What the function reads as `response` when a sample's response is a "
        "conversation (chat messages): final_answer (the last assistant message's text), "
        "assistant_text (every assistant message's text), transcript (every message as text), "
        "tool_calls (one JSON object per call, per line) or conversation (the validated "
        "messages). null: final_answer, or conversation for the trajectory kinds "
        "(tool_call_format, tool_success, turns). A plain-text response reads as itself.",
    )

    def __repr_args__(self) -> Any:
        # kwargs may hold a credential (a URL's password or `?key=`, a header): never shown.
        for name, value in super().__repr_args__():
            yield name, redacted(value, name) if name == "kwargs" else value

    @model_validator(mode="after")
    def _one_source(self) -> RewardTerm:
        if (self.kind is None) == (self.path is None):
            found = "both" if self.kind is not None else "neither"
            raise ValueError(
                f"set exactly one of `kind` (a built-in) or `path` (an import path); found {found}"
            )
        if self.path is not None and not _IMPORT_PATH.match(self.path):
            raise ValueError(
                f"path {self.path!r} is not an import path; expected `package.module.function`"
            )
        return self


class RouteExample(_Model):
    """A hand-scored case: ``check`` scores it and compares with ``reward``."""

    prompt: str = ""
    response: str | list[dict[str, Any]] = Field(
        description="The model's answer, or its conversation as chat messages (see trajectory)."
    )
    label: Any = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    reward: float | None
    tolerance: float = Field(default=1e-6, ge=0)


class Route(_Model):
    """A named entry of the reward map: the datasets it takes and how they are scored."""

    match: list[str] = Field(
        default_factory=list,
        description="Dataset strings routed here; the route's own name always matches too.",
    )
    rewards: dict[str, RewardTerm] = Field(min_length=1)
    shaping: list[ShapingStage] = Field(default_factory=list)
    examples: list[RouteExample] = Field(default_factory=list)


#: Older top-level spellings of an executor's settings → the executor they set.
OLDER_EXECUTOR_KEYS: dict[str, str] = {"process_pool": "process", "ray": "ray"}


class MissingReward(_Model):
    """What a trainer hook hands its trainer for a sample that got no reward.

    A sample gets none when no term applied (status ``skipped``) or a failure was skipped
    (``on_error: skip``: ``error``, ``timeout``, ``invalid``). Routers return ``None`` then, but
    slime, vime, miles and OpenRLHF read every reward as a number (slime's rollout logging
    rounds it, OpenRLHF batches it as a tensor), so their hooks hand over ``value`` instead. The
    sample keeps its real status (in its ``metadata`` and the metrics), stays out of its
    group's statistics and gets advantage 0; with ``mask`` it is also left out of the loss
    where the trainer has a per-sample mask (``Sample.remove_sample`` of slime, vime and
    miles). TRL and the command line take ``None`` as it is. Aborted samples are not filled:
    the trainers leave them without a reward and never train on them.

    Example: ``missing_reward: {value: 0.0, mask: true}`` (the defaults).
    """

    value: float = Field(
        default=0.0,
        description="The reward a trainer hook hands over for a sample without one (status "
        "skipped, or a failure skipped by `on_error: skip`).",
    )
    mask: bool = Field(
        default=True,
        description="Also leave such samples out of the loss where the trainer has a "
        "per-sample mask (slime, vime and miles: `Sample.remove_sample`).",
    )


class TrajectoryConfig(_Model):
    """How the router reads samples whose response is a conversation (OpenAI chat messages).

    Each conversation is validated before a term reads it; one that breaks a bound or the message
    format gives its sample an ``error`` status naming the message and the bound, and the rest
    of the batch is scored: under ``on_error: raise`` it is recorded (reward None), not raised,
    since the policy wrote it; ``on_error: {value: x}`` scores it ``x``. Example:
    ``trajectory: {max_messages: 256, messages_field: messages}``.
    """

    max_messages: int = Field(
        default=1024, ge=1, description="Most messages one conversation may have."
    )
    max_parts: int = Field(
        default=4096,
        ge=1,
        description="Most content parts and tool calls one conversation may have, all messages "
        "together.",
    )
    max_chars: int = Field(
        default=1_000_000,
        ge=1,
        description="Most characters of text and tool-call arguments one conversation may "
        "have, all messages together.",
    )
    messages_field: str | None = Field(
        default=None,
        description="A metadata field that holds the conversation of a sample whose response "
        "is text (slime's Sample.metadata, verl's extra_info from an agent loop's "
        "extra_fields): a list of messages, or a string holding one as JSON. A sample that "
        "lacks it is an error for the terms that read the conversation. null: only a response "
        "given as a list of messages is a conversation.",
    )
    format: Literal["auto", "none"] = Field(
        default="auto",
        description="How tool calls written as text in an assistant message without "
        '`tool_calls` are read. auto: each <tool_call>{"name", "arguments"}</tool_call> '
        "block (the Hermes, Qwen2.5 and Qwen3 chat templates' form) is a call, and one that "
        "cannot be read counts as a failed call; none: such a block makes the conversation "
        "unreadable (the sample's error).",
    )


class RouterConfig(_Model):
    """A whole reward router: the reward map, how samples find routes, and post-processing."""

    route_by: list[str] = Field(
        default_factory=lambda: ["dataset", "data_source", "source_name"],
        description="Metadata fields tried in order to find a sample's route.",
    )
    default_route: str | None = Field(
        default=None, description="Route for samples that match none; null makes that an error."
    )
    allowed_modules: list[str] = Field(
        default_factory=lambda: ["rewardrouter"],
        description="Module prefixes whose functions a *sample* may name (custom_rm_path): "
        "only functions defined in them, not names they import; inside rewardrouter, only "
        "its trainer hooks.",
    )
    allowed_functions: list[str] = Field(
        default_factory=list,
        description="Import paths a *sample* may name whatever module defines them (e.g. a "
        "function a package re-exports).",
    )
    reward_key: str | None = Field(
        default=None,
        description="Key of dict rewards from functions that samples name (rm_type, custom_rm_path).",
    )
    eval_reward_key: str | None = None
    max_concurrency: int = Field(
        default=64, ge=1, description="Single-mode calls in flight at once, per route group."
    )
    timeout: float = Field(
        default=DEFAULT_TIMEOUT,
        gt=0,
        description="Seconds one reward call may take unless its term sets `timeout`.",
    )
    executors: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Settings of the executors by name, e.g. `process: {workers: 8}` or "
        "`ray: {address: auto, actors: 32}`; each executor's own settings model checks them "
        "when the router compiles. `process_pool` and `ray` at the top level are older "
        "spellings of `executors.process` and `executors.ray`.",
    )
    rescore: bool = Field(
        default=False, description="Re-score samples that already carry a reward."
    )
    missing_reward: MissingReward = Field(
        default_factory=MissingReward,
        description="What trainer hooks hand their trainer for a sample that got no reward "
        "(slime, vime, miles and OpenRLHF need a number); see MissingReward.",
    )
    trajectory: TrajectoryConfig = Field(
        default_factory=TrajectoryConfig,
        description="How samples whose response is a conversation are validated and read; "
        "see TrajectoryConfig.",
    )
    routes: dict[str, Route] = Field(default_factory=dict)
    post_process: list[PostProcessStage] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _older_executor_keys(cls, data: Any) -> Any:
        """``process_pool:`` and ``ray:`` at the top level still read, as ``executors.process``
        and ``executors.ray``."""
        if not isinstance(data, dict) or not OLDER_EXECUTOR_KEYS.keys() & data.keys():
            return data
        data = dict(data)
        executors = data.get("executors")
        executors = dict(executors) if isinstance(executors, dict) else {}
        for key, name in OLDER_EXECUTOR_KEYS.items():
            if key not in data:
                continue
            if name in executors:
                raise ValueError(
                    f"`{key}` and `executors.{name}` both set the {name} executor; keep "
                    f"`executors.{name}` (`{key}` is its older spelling) and remove `{key}`"
                )
            executors[name] = data.pop(key)
        data["executors"] = executors
        return data

    @field_validator("routes")
    @classmethod
    def _route_names(cls, routes: dict[str, Route]) -> dict[str, Route]:
        for name in routes:
            if not _IDENT.match(name):
                raise ValueError(
                    f"route name {name!r} is not a plain identifier; name the route e.g. "
                    f"{re.sub(r'[^A-Za-z0-9_]+', '_', name).strip('_') or 'route'!r} "
                    f"and put {name!r} under its `match:`"
                )
        return routes

    @field_validator("post_process")
    @classmethod
    def _advantage_last(cls, stages: list[PostProcessStage]) -> list[PostProcessStage]:
        for i, stage in enumerate(stages[:-1]):
            if stage.kind in ADVANTAGE_KINDS:
                raise ValueError(
                    f"advantage stage `{stage.kind}` at position {i} must be the last stage "
                    f"(it turns rewards into advantages); move it to the end"
                )
        return stages
