"""Typed shaping and advantage stages, discriminated by ``kind``.

Shaping stages map the rewards of the samples that carry one to new rewards, in declared order:
per route (``routes.<name>.shaping``, only that route's samples) and then globally
(``post_process``). Advantage stages turn the rewards of a whole batch into advantages using the
prompt groups, and may only stand last in ``post_process``. The implementations live in
:mod:`rewardrouter.shape` and :mod:`rewardrouter.advantage`; these models are what a YAML file
may say.

Example::

    post_process:
      - {kind: overlong_penalty, max_len: 8192, buffer: 1024, factor: 1.0}
      - {kind: clip, min: -1.0, max: 1.0}
      - {kind: grpo, std: group, eps: 1.0e-6, device: auto}
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

#: The finest quantize grid: below it ``reward / step`` overflows for ordinary rewards
#: (1e-320 turns every reward above 2e-12 into inf).
MIN_QUANTIZE_STEP = 1e-12


class _Stage(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class ClipStage(_Stage):
    """Clamp rewards into ``[min, max]``; either bound may be left open."""

    kind: Literal["clip"] = "clip"
    min: float | None = Field(default=None, description="Lower bound; null leaves it open.")
    max: float | None = Field(default=None, description="Upper bound; null leaves it open.")

    @model_validator(mode="after")
    def _ordered(self) -> ClipStage:
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min}) is greater than max ({self.max}); swap them")
        return self


class ScaleStage(_Stage):
    """Affine map ``reward * mul + add``, or map ``source`` range linearly onto ``target``."""

    kind: Literal["scale"] = "scale"
    mul: float = Field(default=1.0, description="Factor of the affine map.")
    add: float = Field(default=0.0, description="Offset of the affine map, added after `mul`.")
    source: tuple[float, float] | None = Field(
        default=None, description="[lo, hi]: the range mapped onto `target` (set both or neither)."
    )
    target: tuple[float, float] | None = Field(
        default=None, description="[lo, hi]: where `source` lands; lo may exceed hi (flips)."
    )

    @model_validator(mode="after")
    def _ranges(self) -> ScaleStage:
        if (self.source is None) != (self.target is None):
            raise ValueError("set both `source` and `target` ranges, or neither")
        if self.source is not None:
            if self.source[0] == self.source[1]:
                raise ValueError(f"source range {list(self.source)} is empty")
            if self.mul != 1.0 or self.add != 0.0:
                raise ValueError("use either `mul`/`add` or `source`/`target`, not both")
        return self


class OverlongPenaltyStage(_Stage):
    """DAPO's soft overlong penalty from ``response_length``.

    Lengths up to ``max_len - buffer`` are not penalised; from there to ``max_len`` the penalty
    grows linearly to ``-factor``; beyond ``max_len`` it is ``-factor``. The penalty is added.
    With ``buffer: 0`` the penalty is a step: ``-factor`` for lengths above ``max_len``.
    """

    kind: Literal["overlong_penalty"] = "overlong_penalty"
    max_len: int = Field(gt=0, description="Length (tokens) at which the full penalty applies.")
    buffer: int = Field(ge=0, description="Width of the linear ramp that ends at `max_len`.")
    factor: float = Field(default=1.0, ge=0, description="Size of the full penalty.")

    @model_validator(mode="after")
    def _buffer_fits(self) -> OverlongPenaltyStage:
        if self.buffer > self.max_len:
            raise ValueError(f"buffer ({self.buffer}) exceeds max_len ({self.max_len})")
        return self


class TruncationPenaltyStage(_Stage):
    """For samples whose status is ``truncated``: multiply by ``factor`` or set ``value``."""

    kind: Literal["truncation_penalty"] = "truncation_penalty"
    factor: float | None = Field(default=None, description="Multiply a truncated reward by this.")
    value: float | None = Field(default=None, description="Replace a truncated reward by this.")

    @model_validator(mode="after")
    def _one_of(self) -> TruncationPenaltyStage:
        if (self.factor is None) == (self.value is None):
            raise ValueError("set exactly one of `factor` (multiply) or `value` (replace)")
        return self


class QuantizeStage(_Stage):
    """Round rewards to the nearest multiple of ``step`` (halves round to even multiples)."""

    kind: Literal["quantize"] = "quantize"
    step: float = Field(
        gt=0,
        description="Grid spacing, e.g. 0.1 or 1; at least 1e-12 (a finer grid changes no "
        "reward a trainer sees, and reward / step would overflow).",
    )

    @field_validator("step")
    @classmethod
    def _not_too_fine(cls, step: float) -> float:
        if step < MIN_QUANTIZE_STEP:
            raise ValueError(
                f"step {step!r} is finer than 1e-12: reward / step overflows (1e-320 turns every "
                f"reward above 2e-12 into inf); use a step of 1e-12 or more"
            )
        return step


class CustomStage(_Stage):
    """A stage of your own, resolved and signature-checked when the router compiles.

    ``path`` names ``fn(rewards: Tensor, batch: ShapeBatch, **kwargs) -> Tensor``: ``rewards`` is
    a float64 tensor of the samples that carry a reward (of one route, for route shaping),
    ``batch`` their ``response_length``, ``truncated`` and ``group_index``; it returns a tensor
    of the same shape and must not modify ``rewards`` in place.
    """

    kind: Literal["custom"] = "custom"
    path: str = Field(description="Import path `package.module.function` (or `module:function`).")
    kwargs: dict[str, Any] = Field(
        default_factory=dict, description="Keyword arguments passed on every call."
    )


Device = Annotated[str, Field(pattern=r"^(auto|cpu|cuda(:\d+)?)$")]


class _AdvantageStage(_Stage):
    device: Device = Field(
        default="auto",
        description="auto: where the rewards are if on a GPU, else CUDA when present, else CPU.",
    )
    dtype: Literal["float32", "float64", "bfloat16"] = Field(
        default="float32",
        description="Dtype of the advantages; the computation itself always runs in float64.",
    )
    group_by: Literal["index", "position"] = Field(
        default="index",
        description="index: groups from each sample's group_index (any order, any sizes); "
        "position: consecutive runs of `n_samples_per_prompt`.",
    )
    n_samples_per_prompt: int | None = Field(
        default=None, gt=0, description="Group size for `group_by: position`."
    )

    @model_validator(mode="after")
    def _position_needs_n(self) -> _AdvantageStage:
        if self.group_by == "position" and self.n_samples_per_prompt is None:
            raise ValueError("group_by: position needs `n_samples_per_prompt`")
        return self


class GRPOStage(_AdvantageStage):
    """GRPO: reward minus group mean, divided by the std of ``std`` scope (``none``: Dr.GRPO)."""

    kind: Literal["grpo"] = "grpo"
    std: Literal["group", "batch", "none"] = Field(
        default="group",
        description="Unbiased std of the group, of the whole batch, or none (Dr.GRPO).",
    )
    eps: float = Field(default=1e-6, ge=0, description="Added to the std before dividing.")


class RLOOStage(_AdvantageStage):
    """RLOO: reward minus the mean of the other members of its group."""

    kind: Literal["rloo"] = "rloo"


class ReinforcePPBaselineStage(_AdvantageStage):
    """REINFORCE++ with baseline: subtract the group mean, then whiten over the batch."""

    kind: Literal["reinforce_pp_baseline"] = "reinforce_pp_baseline"
    eps: float = Field(default=1e-6, ge=0, description="Added to the batch std before dividing.")


class NoAdvantageStage(_AdvantageStage):
    """The shaped rewards pass through as advantages, unnormalized: the way to say that a
    trainer trains on raw rewards. Hooks that hand a trainer advantages refuse a post_process
    that ends in no advantage stage."""

    kind: Literal["none"] = "none"


#: The stage models, each listed once: a shaping stage may stand in a route's ``shaping`` and in
#: ``post_process``; an advantage stage only last in ``post_process``, whose union is these two.
ShapingStageModel = (
    ClipStage
    | ScaleStage
    | OverlongPenaltyStage
    | TruncationPenaltyStage
    | QuantizeStage
    | CustomStage
)
AdvantageStage = GRPOStage | RLOOStage | ReinforcePPBaselineStage | NoAdvantageStage

ShapingStage = Annotated[ShapingStageModel, Field(discriminator="kind")]
PostProcessStage = Annotated[ShapingStageModel | AdvantageStage, Field(discriminator="kind")]


def _kinds(union: Any) -> frozenset[str]:
    """The ``kind`` tags of the stage models in ``union``."""
    if get_origin(union) is Annotated:
        union = get_args(union)[0]
    return frozenset(member.model_fields["kind"].default for member in get_args(union))


#: Every advantage estimator a config may name, and every shaping stage kind.
ADVANTAGE_KINDS = _kinds(AdvantageStage)
SHAPING_KINDS = _kinds(ShapingStage)


def require_functions(kinds: Collection[str], table: Collection[str], what: str) -> None:
    """Raise :class:`RuntimeError` (at import) unless every kind of ``kinds`` is in ``table``.

    A stage model added here without its function must fail when rewardrouter is imported, not
    at the first batch that uses it.

    >>> require_functions({"clip", "scale"}, {"clip"}, "rewardrouter.shape.builtin")
    Traceback (most recent call last):
    RuntimeError: stage kind(s) scale have no function in rewardrouter.shape.builtin
    """
    missing = sorted(set(kinds) - set(table))
    if missing:
        raise RuntimeError(f"stage kind(s) {', '.join(missing)} have no function in {what}")
