"""Built-in reward kinds. Each is registered when its module is imported, which happens when
a config names it (:data:`~.registry.KIND_MODULES`): a router pays for the graders it uses.

One module per family, or one folder: ``math`` (math-verify, exact checks first, see
``math/equivalence``), ``dapo``, ``deepscaler``, ``f1`` and ``exact`` (SQuAD), ``choice``
(``gpqa``, ``multiple_choice``), ``formats`` (``think_format``, ``boxed_format``) and ``random``
(``random``, ``deterministic_random``). Each grader states its contract in its docstring.
``remote``, ``code``, ``judge``, ``reward_model`` and ``ifeval`` are resource kinds (see
:mod:`.registry`): their term's kwargs are settings, and what they build is shared per router.
The trajectory kinds ``tool_call_format``, ``tool_success`` (``tools``) and ``turns`` are
resource kinds too; they read a sample's whole conversation (:mod:`rewardrouter.trajectory`).
"""

from rewardrouter.rewards.registry import (
    BUILTINS,
    KIND_MODULES,
    RESOURCE_KINDS,
    Bound,
    BoxedAnswer,
    Builtin,
    BuiltinReward,
    ResourceKind,
    Resources,
    kind_names,
    known_kinds,
    load_all,
    load_kind,
    lookup,
    resource,
    resource_kind,
)

__all__ = [
    "BUILTINS",
    "KIND_MODULES",
    "RESOURCE_KINDS",
    "Bound",
    "BoxedAnswer",
    "Builtin",
    "BuiltinReward",
    "ResourceKind",
    "Resources",
    "kind_names",
    "known_kinds",
    "load_all",
    "load_kind",
    "lookup",
    "resource",
    "resource_kind",
]
