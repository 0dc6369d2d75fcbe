"""The examples in the docstrings of ``rewardrouter.shape`` and ``rewardrouter.advantage`` run."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import rewardrouter.advantage
import rewardrouter.shape

PACKAGES = (rewardrouter.advantage, rewardrouter.shape)
MODULES = [
    "rewardrouter.config.stages",
    *(package.__name__ for package in PACKAGES),
    *sorted(
        info.name
        for package in PACKAGES
        for info in pkgutil.iter_modules(package.__path__, f"{package.__name__}.")
    ),
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(
        importlib.import_module(name), optionflags=doctest.NORMALIZE_WHITESPACE
    )
    assert result.failed == 0
