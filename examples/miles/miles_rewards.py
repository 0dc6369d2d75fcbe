"""A custom reward for the miles example, named per adapter by ``reward_spec.custom_rm_path``."""

from __future__ import annotations

from typing import Any


async def concise_answer(args: Any, sample: Any, *, max_words: int = 64) -> float:
    """1.0 for a right ``\\boxed{}`` answer in at most ``max_words`` words, 0.5 if longer.

    0.0 when the last box is missing or wrong (flat boxes only: no braces inside).
    """
    _, box, tail = sample.response.rpartition("\\boxed{")
    answer, closed, _rest = tail.partition("}")
    if not box or not closed or answer.strip() != str(sample.label).strip():
        return 0.0
    return 1.0 if len(sample.response.split()) <= max_words else 0.5
