"""Reward functions that misbehave on purpose, for ``benchmarks/faults.py``.

A module of its own: worker processes import reward functions by module, never the running
script. ``metadata["bad"]`` picks the misbehaviour; a good sample scores ``len(response)``.
"""

from __future__ import annotations

import ctypes
import math
import os
import subprocess
import sys
import threading
import time
from typing import Any

#: Set when the benchmark is done: frees every thread that ``blocking`` holds.
RELEASE = threading.Event()


def _spin_in_c() -> Any:
    return 9 ** (9**9)  # a big-integer power: C code that no signal interrupts


def _leave_child_and_hang(sample: Any) -> Any:
    """Start a process (in a session of its own for ``session``), note its pid, then hang."""
    child = subprocess.Popen(["sleep", "600"], start_new_session=sample.metadata.get("session"))
    with open(os.path.join(sample.metadata["pids"], str(child.pid)), "w"):
        pass
    time.sleep(3600)


BEHAVIOURS: dict[str, Any] = {
    "sleep": lambda s: time.sleep(3600),
    "bigint": lambda s: _spin_in_c(),
    "exit": lambda s: os._exit(1),
    "segfault": lambda s: ctypes.string_at(0),
    "raise": lambda s: (_ for _ in ()).throw(ValueError("this response breaks the grader")),
    "nan": lambda s: math.nan,
    "huge_int": lambda s: 10**400,
    "string": lambda s: "1.0",
    "sys_exit": lambda s: sys.exit(3),
    "child": _leave_child_and_hang,
}


def misbehave(args: Any, sample: Any) -> Any:
    """``len(response)``, or the misbehaviour that ``metadata["bad"]`` names."""
    bad = sample.metadata.get("bad")
    if bad is None:
        return float(len(sample.response))
    return BEHAVIOURS[bad](sample)


def blocking(args: Any, sample: Any) -> Any:
    """For threads: ``hang`` blocks until the benchmark ends; ``raise`` raises; else
    ``len(response)``."""
    bad = sample.metadata.get("bad")
    if bad == "hang":
        RELEASE.wait()
    elif bad is not None:
        return misbehave(args, sample)
    return float(len(sample.response))
