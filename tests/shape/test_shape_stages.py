"""The built-in shaping stages, one table row per behaviour."""

from __future__ import annotations

import pytest
import torch
from pydantic import TypeAdapter, ValidationError

from rewardrouter.config.stages import (
    ClipStage,
    OverlongPenaltyStage,
    QuantizeStage,
    ScaleStage,
    ShapingStage,
    TruncationPenaltyStage,
)
from rewardrouter.shape import MissingInputError, ShapeBatch, compile_stage

LENGTHS = ShapeBatch(response_length=torch.tensor([100.0, 850.0, 900.0, 950.0, 1000.0, 4000.0]))
TRUNCATED = ShapeBatch(truncated=torch.tensor([False, True, False, True]))


@pytest.mark.parametrize(
    ("stage", "rewards", "batch", "expected"),
    [
        pytest.param(
            ClipStage(min=-1, max=1), [-3, 0.5, 2], ShapeBatch(), [-1, 0.5, 1], id="clip_both"
        ),
        pytest.param(
            ClipStage(max=0.5), [-3, 0.5, 2], ShapeBatch(), [-3, 0.5, 0.5], id="clip_max_only"
        ),
        pytest.param(ClipStage(), [-3, 2], ShapeBatch(), [-3, 2], id="clip_open"),
        pytest.param(
            ScaleStage(mul=2, add=-1), [0, 0.5, 1], ShapeBatch(), [-1, 0, 1], id="scale_affine"
        ),
        # map [0, 1] onto [-1, 1]: the usual 0/1 → ±1 for correctness rewards
        pytest.param(
            ScaleStage(source=(0, 1), target=(-1, 1)),
            [0, 0.25, 1],
            ShapeBatch(),
            [-1, -0.5, 1],
            id="scale_range",
        ),
        pytest.param(
            ScaleStage(source=(0, 10), target=(1, 0)),
            [0, 5, 10],
            ShapeBatch(),
            [1, 0.5, 0],
            id="scale_flipped",
        ),
        # max_len 1000, buffer 200: free up to 800, ramp to -factor at 1000, -factor beyond
        pytest.param(
            OverlongPenaltyStage(max_len=1000, buffer=200, factor=1.0),
            [1, 1, 1, 1, 1, 1],
            LENGTHS,
            [1, 0.75, 0.5, 0.25, 0, 0],
            id="overlong_dapo_ramp",
        ),
        pytest.param(
            OverlongPenaltyStage(max_len=1000, buffer=200, factor=0.5),
            [0] * 6,
            LENGTHS,
            [0, -0.125, -0.25, -0.375, -0.5, -0.5],
            id="overlong_factor",
        ),
        pytest.param(
            OverlongPenaltyStage(max_len=900, buffer=0, factor=1.0),
            [1] * 6,
            LENGTHS,
            [1, 1, 1, 0, 0, 0],
            id="overlong_step_without_buffer",
        ),
        pytest.param(
            TruncationPenaltyStage(factor=0.5),
            [1, 1, -1, -1],
            TRUNCATED,
            [1, 0.5, -1, -0.5],
            id="truncation_factor",
        ),
        pytest.param(
            TruncationPenaltyStage(value=-1),
            [1, 1, 0, 0.5],
            TRUNCATED,
            [1, -1, 0, -1],
            id="truncation_value",
        ),
        pytest.param(
            QuantizeStage(step=0.5),
            [0.74, 0.75, -0.3, 1.2],
            ShapeBatch(),
            [0.5, 1.0, -0.5, 1.0],
            id="quantize_half",
        ),
        pytest.param(
            QuantizeStage(step=1),
            [0.5, 1.5, 2.5],
            ShapeBatch(),
            [0, 2, 2],
            id="quantize_ties_to_even",
        ),
    ],
)
def test_builtin_stage(
    stage: ShapingStage, rewards: list[float], batch: ShapeBatch, expected: list[float]
) -> None:
    compiled, problems = compile_stage(stage, "post_process[0]")
    assert compiled is not None and not problems
    before = torch.tensor(rewards, dtype=torch.float64)
    kept = before.clone()
    out = compiled(before, batch)
    assert out.tolist() == pytest.approx(expected, abs=1e-12)
    assert out.dtype == torch.float64
    assert torch.equal(before, kept)  # stages do not write into their input


@pytest.mark.parametrize(
    ("stage", "field"),
    [
        pytest.param(OverlongPenaltyStage(max_len=10, buffer=2), "response_length", id="overlong"),
        pytest.param(TruncationPenaltyStage(value=0), "truncated", id="truncation"),
    ],
)
def test_stage_without_its_input_names_stage_and_field(stage: ShapingStage, field: str) -> None:
    compiled, _ = compile_stage(stage, "routes.gsm8k.shaping[2]")
    assert compiled is not None
    with pytest.raises(MissingInputError, match=rf"routes\.gsm8k\.shaping\[2\] needs `{field}`"):
        compiled(torch.zeros(3, dtype=torch.float64), ShapeBatch())


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param({"kind": "clip", "min": 1, "max": 0}, "swap them", id="clip_reversed"),
        pytest.param(
            {"kind": "scale", "source": [0, 1]}, "both `source` and `target`", id="scale_half_range"
        ),
        pytest.param(
            {"kind": "scale", "source": [1, 1], "target": [0, 1]},
            "is empty",
            id="scale_empty_range",
        ),
        pytest.param(
            {"kind": "scale", "mul": 2, "source": [0, 1], "target": [0, 1]},
            "not both",
            id="scale_mixed",
        ),
        pytest.param(
            {"kind": "overlong_penalty", "max_len": 10, "buffer": 20},
            "exceeds max_len",
            id="overlong_buffer",
        ),
        pytest.param(
            {"kind": "overlong_penalty", "max_len": 10, "buffer": 2, "factor": -1},
            "greater than or equal",
            id="overlong_negative",
        ),
        pytest.param({"kind": "truncation_penalty"}, "exactly one", id="truncation_neither"),
        pytest.param({"kind": "quantize", "step": 0}, "greater than 0", id="quantize_zero_step"),
        # reward / 1e-320 overflows: every reward above 2e-12 would become inf
        pytest.param(
            {"kind": "quantize", "step": 1e-320}, "finer than 1e-12", id="quantize_subnormal_step"
        ),
        pytest.param({"kind": "clip", "min": float("nan")}, "finite number", id="clip_nan"),
        pytest.param({"kind": "scale", "mul": float("inf")}, "finite number", id="scale_inf"),
        pytest.param({"kind": "clip", "mn": 0}, "Extra inputs", id="typo_key"),
    ],
)
def test_stage_config_is_validated(data: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        TypeAdapter(ShapingStage).validate_python(data)
