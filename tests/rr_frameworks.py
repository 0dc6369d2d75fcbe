"""The sample types of the trainers, as far as reward hooks read them, and configs they share.

slime's (and vime's) ``slime.utils.types.Sample`` carries ``custom_rm_path``; miles' carries a
frozen ``reward_spec`` instead. Contract tests build these instead of importing the trainers.
"""

from __future__ import annotations

from argparse import Namespace
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, ClassVar

#: The shipped router that the trainer tests launch with.
MIXED = Path(__file__).resolve().parents[1] / "conf" / "router" / "mixed.yaml"


class SampleStatus(Enum):
    """``Sample.Status`` of slime and miles."""

    PENDING = "pending"
    COMPLETED = "completed"
    TRUNCATED = "truncated"
    ABORTED = "aborted"
    FAILED = "failed"


@dataclass
class _TrainerSample:
    Status: ClassVar[type[SampleStatus]] = SampleStatus

    group_index: int | None = None
    index: int | None = None
    prompt: str | list[dict[str, str]] = ""
    response: str = ""
    response_length: int = 0
    label: str | None = None
    reward: float | dict[str, Any] | None = None
    status: SampleStatus = SampleStatus.COMPLETED
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class SlimeSample(_TrainerSample):
    """slime's ``Sample``: a per-sample ``custom_rm_path`` may name the reward function."""

    custom_rm_path: str | None = None


@dataclass(frozen=True)
class AdapterRef:
    """miles' ``miles.utils.types.AdapterRef``: the LoRA adapter a sample trains with."""

    name: str
    slot: int = 0


@dataclass(frozen=True)
class RewardSpec:
    """miles' ``miles.utils.types.RewardSpec``."""

    rm_type: str | None = None
    custom_rm_path: str | None = None


@dataclass
class MilesSample(_TrainerSample):
    """miles' ``Sample``: per-sample dispatch lives in ``reward_spec``."""

    reward_spec: RewardSpec | dict[str, Any] | None = None  # a plain dict works too
    rollout_id: int | None = None  # samples of one rollout (a compact fan-out) share it
    adapter: AdapterRef | None = None  # multi-LoRA: each adapter numbers its groups from 0


def shaped_route_config(folder: Path, stage: str, route_by: str = "dataset") -> Path:
    """A router YAML in ``folder`` whose route ``qa`` scores an exact match worth 1.3333 (two
    terms) and shapes it with ``stage``: what trainers that normalize on their own must apply."""
    path = folder / "router.yaml"
    path.write_text(
        f"route_by: [{route_by}]\n"
        "routes:\n"
        "  qa:\n"
        "    rewards:\n"
        "      correct: {kind: exact_match}\n"
        "      bonus: {kind: exact_match, weight: 0.3333}\n"
        f"    shaping: [{stage}]\n"
    )
    return path


def trainer_args(hooks: str, group_rm: bool, **extra: Any) -> Namespace:
    """slime's or miles' ``args`` for the launch lines of the README, with ``hooks`` the module
    of rewardrouter's hooks (``--custom-config-path`` has put ``rewardrouter_config`` on it) and
    what the trainer's logging reads; ``extra``: the trainer's own fields, and overrides."""
    values: dict[str, Any] = {
        "rewardrouter_config": str(MIXED),
        "custom_rm_path": f"{hooks}.batched_custom_rm" if group_rm else f"{hooks}.custom_rm",
        "group_rm": group_rm,
        "rm_type": None,
        "reward_key": None,
        "eval_reward_key": None,
        "n_samples_per_prompt": 2,
        "rollout_batch_size": 2,
        "advantage_estimator": "grpo",
        "custom_rollout_log_function_path": f"{hooks}.log_rollout",
        "custom_reward_post_process_path": f"{hooks}.post_process_rewards",
        "load_debug_rollout_data": None,
        "log_reward_category": None,
        "rollout_num_gpus": 1,
        "wandb_always_use_train_step": False,
    }
    values.update(extra)
    return Namespace(**values)
