"""``random`` and ``deterministic_random``: rewards without meaning, for testing pipelines."""

from __future__ import annotations

import hashlib
import random as _random
from collections.abc import Mapping
from typing import Any

from rewardrouter.rewards.registry import builtin


@builtin("random", boxable=False)
def random_reward(
    response: str, label: Any, metadata: Mapping[str, Any], *, p: float = 0.5
) -> float:
    """1.0 with probability ``p``, else 0.0, independently on every call.

    Contract: ignores the response, the label and the metadata; draws from the process's global
    random generator, so results differ between runs and processes (use ``deterministic_random``
    for a reproducible pipeline test). Never ``None``.
    """
    return float(_random.random() < p)


@builtin("deterministic_random", boxable=False)
def deterministic_random(
    response: str, label: Any, metadata: Mapping[str, Any], *, p: float = 0.5, salt: str = ""
) -> float:
    """1.0 or 0.0 from a hash of the response: the same response always scores the same.

    Contract: a BLAKE2b hash of ``salt`` and the response text, read as a uniform number in
    [0, 1), gives 1.0 when below ``p``; identical across runs, machines and processes (unlike
    Python's ``hash``). The text is hashed as UTF-8, a lone surrogate (which UTF-8 cannot
    encode, and a Python string can hold) as the three bytes of its code point. Ignores the label
    and the metadata; never ``None``.
    """
    text = f"{salt}\0{response}".encode("utf-8", "surrogatepass")
    digest = hashlib.blake2b(text, digest_size=8).digest()
    return float(int.from_bytes(digest, "big") / 2**64 < p)
