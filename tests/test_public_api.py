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


def test_importing_and_scoring_without_post_processing_leaves_torch_alone() -> None:
    """Trainer hooks and worker processes import rewardrouter; torch (and the HTTP client of the
    kinds that post JSON) wait until they are needed."""
    import subprocess
    import sys

    code = (
        "import sys, rewardrouter\n"
        "r = rewardrouter.compile_router({'default_route': 'q', 'routes': {'q': {'rewards': "
        "{'em': {'kind': 'exact_match'}}}}})\n"
        "assert r.score_sync([{'response': 'Paris', 'label': 'paris'}]).rewards == [1.0]\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "assert 'aiohttp' not in sys.modules, 'aiohttp was imported'\n"
        "r.post_process([{'response': 'x', 'reward': 1.0}])\n"
        "assert 'torch' not in sys.modules, 'no advantage stage: no torch'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
