"""Built-in reward kinds. Importing this package registers every grader.

One module per family, or one folder: ``math`` (math-verify, exact checks first, see
``math/equivalence``), ``dapo``, ``deepscaler``, ``f1`` and ``exact`` (SQuAD), ``choice``
(``gpqa``, ``multiple_choice``), ``formats`` (``think_format``, ``boxed_format``) and ``random``
(``random``, ``deterministic_random``). Each grader states its contract in its docstring.
``remote``, ``code``, ``judge``, ``reward_model`` and ``ifeval`` are resource kinds (see
:mod:`.registry`): their term's kwargs are settings, and what they build is shared per router.
The trajectory kinds ``tool_call_format``, ``tool_success`` (``tools``) and ``turns`` are
resource kinds too; they read a sample's whole conversation (:mod:`rewardrouter.trajectory`).
"""

from rewardrouter.rewards import choice as _choice  # noqa: F401  (each import registers kinds)
from rewardrouter.rewards import dapo as _dapo  # noqa: F401
from rewardrouter.rewards import deepscaler as _deepscaler  # noqa: F401
from rewardrouter.rewards import exact as _exact  # noqa: F401
from rewardrouter.rewards import f1 as _f1  # noqa: F401
from rewardrouter.rewards import formats as _formats  # noqa: F401
from rewardrouter.rewards import ifeval as _ifeval  # noqa: F401
from rewardrouter.rewards import math as _math  # noqa: F401
from rewardrouter.rewards import random as _random  # noqa: F401
from rewardrouter.rewards import remote as _remote  # noqa: F401
from rewardrouter.rewards import tools as _tools  # noqa: F401
from rewardrouter.rewards import turns as _turns  # noqa: F401
from rewardrouter.rewards.code import kind as _code  # noqa: F401
from rewardrouter.rewards.judge import kind as _judge  # noqa: F401
from rewardrouter.rewards.nemo_gym import kind as _nemo_gym  # noqa: F401
from rewardrouter.rewards.registry import (
    BUILTINS,
    RESOURCE_KINDS,
    Bound,
    BoxedAnswer,
    Builtin,
    BuiltinReward,
    ResourceKind,
    Resources,
    kind_names,
    known_kinds,
    lookup,
    resource_kind,
)
from rewardrouter.rewards.reward_model import kind as _reward_model  # noqa: F401
from rewardrouter.rewards.verifiers import kind as _verifiers  # noqa: F401

__all__ = [
    "BUILTINS",
    "RESOURCE_KINDS",
    "Bound",
    "BoxedAnswer",
    "Builtin",
    "BuiltinReward",
    "ResourceKind",
    "Resources",
    "kind_names",
    "known_kinds",
    "lookup",
    "resource_kind",
]
