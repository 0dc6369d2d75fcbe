"""The package's public names: sorted, importable, and each documented."""

from __future__ import annotations

import importlib

import pytest

import rewardrouter

PACKAGES = [
    "rewardrouter",
    "rewardrouter.advantage",
    "rewardrouter.config",
    "rewardrouter.compile",
    "rewardrouter.route",
    "rewardrouter.execute",
    "rewardrouter.shape",
    "rewardrouter.rewards",
]


def _isort_key(name: str) -> tuple[int, str]:
    """CONSTANTS, then Classes, then functions (ruff's RUF022 order)."""
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2, name)


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_sorted_and_importable(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == sorted(exported, key=_isort_key), f"{name}.__all__ is not sorted"
    for attr in exported:
        assert hasattr(module, attr), f"{name}.{attr} is exported but missing"


def test_public_classes_and_functions_are_documented() -> None:
    for attr in rewardrouter.__all__:
        obj = getattr(rewardrouter, attr)
        if callable(obj):
            assert (obj.__doc__ or "").strip(), f"rewardrouter.{attr} has no docstring"
