"""GRPO with TRL on two datasets at once, each row scored by the route of its ``dataset`` column.

    python examples/trl/train_grpo.py --model Qwen/Qwen2.5-0.5B-Instruct --max-steps 50

(run from anywhere: the script puts its own folder on ``sys.path`` for ``trl_rewards``). On a
machine without a CUDA GPU it trains in float32 on the CPU (``GRPOConfig`` defaults to bf16,
which a CPU run refuses); ``--model`` may be a local folder saved with ``save_pretrained``.
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


def precision() -> dict[str, bool]:
    """``GRPOConfig`` precision for this machine: bf16 on a CUDA GPU that has it, else float32
    (``bf16=False``; TRL's default ``bf16=True`` makes a CPU run fail before the first step)."""
    import torch

    if torch.cuda.is_available():
        return {"bf16": torch.cuda.is_bf16_supported()}
    return {"bf16": False}


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

    ``dataset`` defaults to :func:`build_dataset`; ``asynchronous`` picks the ``async`` reward;
    the precision is :func:`precision`'s unless ``config`` names it.
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
        args=GRPOConfig(output_dir=str(output_dir), **{**precision(), **config}),
        train_dataset=build_dataset(repeat=16) if dataset is None else dataset,
        processing_class=processing_class,
    )


def main(argv: list[str] | None = None) -> Any:
    """Train; returns the trainer (its ``state.log_history`` holds the logged metrics)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="Qwen/Qwen2.5-0.5B-Instruct", help="name or folder")
    parser.add_argument("--output-dir", default="grpo-rewardrouter")
    parser.add_argument("--max-steps", type=int, default=50)
    parser.add_argument("--num-generations", type=int, default=8, help="completions per prompt")
    parser.add_argument(
        "--batch-size", type=int, default=8, help="completions per step (a multiple of the above)"
    )
    parser.add_argument("--max-completion-length", type=int, default=256)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--async-reward", action="store_true", help="use the async reward")
    options = parser.parse_args(argv)
    if options.batch_size % options.num_generations:
        parser.error(
            f"--batch-size {options.batch_size} is not a multiple of --num-generations "
            f"{options.num_generations}: each step holds whole groups of completions; pass a "
            f"multiple, e.g. --batch-size {options.num_generations}"
        )
    trainer = build_trainer(
        options.model,
        options.output_dir,
        asynchronous=options.async_reward,
        max_steps=options.max_steps,
        per_device_train_batch_size=options.batch_size,
        num_generations=options.num_generations,
        max_completion_length=options.max_completion_length,
        seed=options.seed,
        logging_steps=1,
        report_to="none",
    )
    trainer.train()
    return trainer


if __name__ == "__main__":
    main()
