"""Built-in reward kinds. Importing this package registers every grader."""

from rewardrouter.rewards import exact as _exact  # noqa: F401  (registers exact_match)
from rewardrouter.rewards.registry import BUILTINS, Builtin, BuiltinReward, known_kinds, lookup

__all__ = ["BUILTINS", "Builtin", "BuiltinReward", "known_kinds", "lookup"]
