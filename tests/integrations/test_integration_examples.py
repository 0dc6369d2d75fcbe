"""The framework examples stay true: their routers compile, and every hook they name exists."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import rewardrouter.integrations
from rewardrouter import compile_router, load_config

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FRAMEWORKS = ["slime", "miles", "vime", "verl", "trl", "openrlhf"]
#: How the READMEs name a hook: a dotted path (slime/miles flags), an import (TRL), or verl's
#: ``custom_reward_function.path=pkg://<module>`` with ``custom_reward_function.name=<name>``.
HOOKS = [
    re.compile(r"(rewardrouter\.integrations\.\w+)\.(\w+)"),
    re.compile(r"from (rewardrouter\.integrations\.\w+) import (\w+)"),
    re.compile(r"path=pkg://(rewardrouter\.integrations\.\w+)\s.*?\.name=(\w+)", re.S),
]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_framework_has_an_example_readme(framework: str) -> None:
    assert (EXAMPLES / framework / "README.md").is_file()


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_framework_readme_states_the_versions_verified(framework: str) -> None:
    text = (EXAMPLES / framework / "README.md").read_text()
    assert re.search(r"Verified (with|against) .*(\d+\.\d+|commit `[0-9a-f]{7}`)", text)


@pytest.mark.parametrize(
    "folder", [f for f in FRAMEWORKS if (EXAMPLES / f / "router.yaml").is_file()]
)
def test_example_router_compiles_with_its_reward_module(
    folder: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES / folder))  # as the README's PYTHONPATH line does
    with compile_router(load_config(EXAMPLES / folder / "router.yaml")) as router:
        assert router.routes


def _named_hooks() -> list[tuple[str, str, str]]:
    found = set()
    for readme in EXAMPLES.glob("*/README.md"):
        text = readme.read_text()
        for pattern in HOOKS:
            found.update((readme.parent.name, m, n) for m, n in pattern.findall(text))
    return sorted(found)


@pytest.mark.parametrize(("folder", "module", "name"), _named_hooks())
def test_every_hook_a_readme_names_exists(folder: str, module: str, name: str) -> None:
    loaded = importlib.import_module(module)
    assert callable(getattr(loaded, name, None)), f"{folder}/README.md names {module}.{name}"


@pytest.mark.parametrize(
    "name",
    [
        info.name
        for info in pkgutil.iter_modules(
            rewardrouter.integrations.__path__, "rewardrouter.integrations."
        )
    ],
)
def test_integration_docstring_examples_run(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
