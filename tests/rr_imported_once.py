"""A reward module that remembers which process imported it: for the fork server's tests, no
other test uses it (so no earlier pool of a test process has imported it)."""

from __future__ import annotations

import os
from typing import Any

#: The process that ran this module's import: the fork server, or a worker template.
IMPORTED_IN = os.getpid()


def imported_in(args: Any, sample: Any) -> float:
    """Scores every sample with the id of the process that imported this module."""
    return float(IMPORTED_IN)
