"""A reward module that imports once per marker file (``$RR_IMPORTED_ONCE``): a second import —
by a scoring process started again — fails, as a module changed or removed under a running
server does."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

_MARKER = Path(os.environ["RR_IMPORTED_ONCE"])
if _MARKER.exists():
    raise RuntimeError(f"{_MARKER} exists: this module was imported before")
_MARKER.touch()


def reward(args: Any, sample: Any) -> float:
    return 1.0
