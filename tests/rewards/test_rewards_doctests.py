"""The examples in the docstrings of ``rewardrouter.rewards`` and its subpackages run."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import rewardrouter.rewards

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(rewardrouter.rewards.__path__, "rewardrouter.rewards.")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
