"""GRPO with TRL on two datasets at once, each row scored by the route of its ``dataset`` column.

    python examples/trl/train_grpo.py --model Qwen/Qwen2.5-0.5B-Instruct --max-steps 50

(run from anywhere: the script puts its own folder on ``sys.path`` for ``trl_rewards``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROUTER = HERE / "router.yaml"

ROWS = [
    {"prompt": "What is 7 * 6? Put the answer in \\boxed{}.", "solution": "42", "dataset": "math"},
    {"prompt": "What is 9 + 16? Put the answer in \\boxed{}.", "solution": "25", "dataset": "math"},
    {"prompt": "Name the capital of France.", "solution": "paris", "dataset": "capitals"},
    {"prompt": "Capital and country of Kenya?", "solution": "nairobi,kenya", "dataset": "capitals"},
]


def build_dataset(repeat: int = 1) -> Any:
    """The example rows as a ``datasets.Dataset`` (columns: prompt, solution, dataset)."""
    from datasets import Dataset

    return Dataset.from_list(ROWS * repeat)


def build_trainer(
    model: Any,
    output_dir: str | Path,
    *,
    processing_class: Any = None,
    dataset: Any = None,
    asynchronous: bool = False,
    **config: Any,
) -> Any:
    """A ``GRPOTrainer`` rewarded by rewardrouter; ``config`` goes to ``GRPOConfig``.

    ``dataset`` defaults to :func:`build_dataset`; ``asynchronous`` picks the ``async`` reward.
    """
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))  # the routes name trl_rewards by import path
    from trl import GRPOConfig, GRPOTrainer

    from rewardrouter.integrations.trl import reward_function

    reward = reward_function(
        ROUTER, route_column="dataset", label_column="solution", asynchronous=asynchronous
    )
    return GRPOTrainer(
        model=model,
        reward_funcs=reward,
        args=GRPOConfig(output_dir=str(output_dir), **config),
        train_dataset=build_dataset(repeat=16) if dataset is None else dataset,
        processing_class=processing_class,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="Qwen/Qwen2.5-0.5B-Instruct")
    parser.add_argument("--output-dir", default="grpo-rewardrouter")
    parser.add_argument("--max-steps", type=int, default=50)
    parser.add_argument("--async-reward", action="store_true", help="use the async reward")
    options = parser.parse_args(argv)
    trainer = build_trainer(
        options.model,
        options.output_dir,
        asynchronous=options.async_reward,
        max_steps=options.max_steps,
        per_device_train_batch_size=8,
        num_generations=8,
        max_completion_length=256,
        logging_steps=1,
        report_to="none",
    )
    trainer.train()


if __name__ == "__main__":
    main()
