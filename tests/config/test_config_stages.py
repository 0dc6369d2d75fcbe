"""Every stage kind a config may name has its function: checked when the modules are imported
(``require_functions``), and here against the tables themselves."""

from __future__ import annotations

import pytest

from rewardrouter.advantage import estimators
from rewardrouter.config.stages import ADVANTAGE_KINDS, SHAPING_KINDS, require_functions
from rewardrouter.shape.builtin import BUILTIN_STAGES


def test_every_shaping_kind_but_custom_has_a_builtin_function() -> None:
    assert SHAPING_KINDS - {"custom"} == set(BUILTIN_STAGES)


def test_every_advantage_kind_but_none_has_a_factor() -> None:
    assert ADVANTAGE_KINDS - {"none"} == set(estimators._FACTORS)


def test_a_kind_without_its_function_fails_loudly() -> None:
    with pytest.raises(RuntimeError, match="rloo have no function in advantage"):
        require_functions({"grpo", "rloo"}, {"grpo": None}, "advantage")
