"""A reward module that knows when it is imported again (marker file ``$RR_MARKER``), as a
scoring process started again imports it: then it fails — as a module changed or removed under a
running server does — or, given a Unix socket ``$RR_SECOND_IMPORT_WAITS``, connects there, sends
its process id and a newline, and waits for one byte before it goes on."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

_MARKER = Path(os.environ["RR_MARKER"])
if _MARKER.exists():
    _WAITS = os.environ.get("RR_SECOND_IMPORT_WAITS")
    if not _WAITS:
        raise RuntimeError(f"{_MARKER} exists: this module was imported before")
    with socket.socket(socket.AF_UNIX) as _conn:
        _conn.connect(_WAITS)
        _conn.sendall(f"{os.getpid()}\n".encode())
        _conn.recv(1)
_MARKER.touch()


def reward(args: Any, sample: Any) -> float:
    return 1.0
