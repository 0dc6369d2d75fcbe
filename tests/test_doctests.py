"""The examples in docstrings run: every module of rewardrouter that has a ``>>>`` line."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import rewardrouter

ROOT = Path(__file__).resolve().parents[1]

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(rewardrouter.__path__, "rewardrouter.")
    if ">>>" in Path(importlib.util.find_spec(info.name).origin or "").read_text()  # type: ignore[union-attr]
)


def test_modules_with_examples_are_found() -> None:
    assert "rewardrouter.router" in MODULES and len(MODULES) > 30


@pytest.mark.parametrize("name", ["rewardrouter", *MODULES])
def test_docstring_examples(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # examples name files as a user at the repository's root would
    result = doctest.testmod(
        importlib.import_module(name), optionflags=doctest.NORMALIZE_WHITESPACE
    )
    assert result.failed == 0
