"""Built-in reward kinds. Importing this package registers every grader.

One module per family: ``math`` (math-verify, cheap checks first, see ``equivalence``),
``dapo``, ``deepscaler``, ``f1`` and ``exact`` (SQuAD), ``choice`` (``gpqa``,
``multiple_choice``), ``formats`` (``think_format``, ``boxed_format``) and ``random``
(``random``, ``deterministic_random``). Each grader states its contract in its docstring.
"""

from rewardrouter.rewards import choice as _choice  # noqa: F401  (each import registers kinds)
from rewardrouter.rewards import dapo as _dapo  # noqa: F401
from rewardrouter.rewards import deepscaler as _deepscaler  # noqa: F401
from rewardrouter.rewards import exact as _exact  # noqa: F401
from rewardrouter.rewards import f1 as _f1  # noqa: F401
from rewardrouter.rewards import formats as _formats  # noqa: F401
from rewardrouter.rewards import math as _math  # noqa: F401
from rewardrouter.rewards import random as _random  # noqa: F401
from rewardrouter.rewards.registry import (
    BUILTINS,
    BoxedAnswer,
    Builtin,
    BuiltinReward,
    known_kinds,
    lookup,
)

__all__ = ["BUILTINS", "BoxedAnswer", "Builtin", "BuiltinReward", "known_kinds", "lookup"]
