"""Where the shipped Hydra config tree and example data live (source tree or installed wheel)."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent


def _first_existing(*candidates: Path) -> Path:
    for candidate in candidates:
        if candidate.exists():
            return candidate
    return candidates[0]


def conf_dir() -> Path:
    """The Hydra config tree: ``rewardrouter/conf`` in a wheel, top-level ``conf/`` in a checkout."""
    return _first_existing(_PACKAGE / "conf", _PACKAGE.parent / "conf")


def example_data() -> Path:
    """The example JSONL that the job scores when ``data.path`` is null."""
    return _first_existing(
        _PACKAGE / "example_data" / "mixed.jsonl",
        _PACKAGE.parent / "examples" / "data" / "mixed.jsonl",
    )
