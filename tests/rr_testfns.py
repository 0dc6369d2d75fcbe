"""Reward functions that the tests name by import path (``rr_testfns.<name>``).

Group-mode functions record every call in ``CALLS`` so tests can count them.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

CALLS: list[tuple[str, list[Any]]] = []


def row(response: str = "", label: Any = None, **metadata: Any) -> dict[str, Any]:
    """A dict sample with the given metadata."""
    return {"response": response, "label": label, "metadata": metadata}


def length(args: Any, sample: Any) -> float:
    return float(len(sample.response))


async def async_length(args: Any, sample: Any) -> float:
    await asyncio.sleep(0)
    return float(len(sample.response))


def label_match(args: Any, sample: Any, *, bonus: float = 0.0) -> float:
    return float(sample.response == sample.label) + bonus


def group_len(args: Any, samples: list[Any]) -> list[float]:
    CALLS.append(("group_len", [s.response for s in samples]))
    return [float(len(s.response)) for s in samples]


async def async_group_len(args: Any, samples: list[Any], *, scale: float = 1.0) -> list[float]:
    CALLS.append(("async_group_len", [s.response for s in samples]))
    return [scale * len(s.response) for s in samples]


def slow(args: Any, sample: Any) -> float:
    time.sleep(0.2)
    return 1.0


def sleeps(args: Any, sample: Any) -> float:
    """Sleeps ``sample.metadata['seconds']``."""
    time.sleep(float(sample.metadata["seconds"]))
    return 1.0


async def async_slow(args: Any, sample: Any) -> float:
    await asyncio.sleep(0.2)
    return 1.0


def returns(args: Any, sample: Any) -> Any:
    """Returns ``sample.metadata['value']`` as it is: for invalid-return tests."""
    return sample.metadata["value"]


def holds_the_interpreter(args: Any, sample: Any) -> float:
    """Holds its interpreter's lock until told, as a grader's long C call does: connects to the
    Unix socket ``metadata['socket']``, sends its process and thread ids and a newline, then
    waits for one byte in a C call that keeps the lock (``ctypes.PyDLL`` does not release it).
    Between the send and the call the lock can pass to another thread of the process: the
    other side waits until this thread is blocked in ``recv`` (``rr_testfns.wait_in_recv``)."""
    recv, buffer = ctypes.PyDLL(None).recv, ctypes.create_string_buffer(1)  # ready before telling
    with socket.socket(socket.AF_UNIX) as conn:
        conn.connect(sample.metadata["socket"])
        conn.sendall(f"{os.getpid()} {threading.get_native_id()}\n".encode())
        recv(conn.fileno(), buffer, 1, 0)
    return 1.0


@functools.cache
def _recv_syscall() -> str:
    """The number of the system call that libc's ``recv`` blocks in on this machine: read off a
    thread of this process blocked in it (numbers differ between architectures)."""
    left, right = socket.socketpair()
    recv, buffer = ctypes.CDLL(None).recv, ctypes.create_string_buffer(1)
    blocked = threading.Thread(target=recv, args=(left.fileno(), buffer, 1, 0), daemon=True)
    blocked.start()
    try:
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:
            state = _syscall(os.getpid(), blocked.native_id)
            if state is not None and state != "running":
                return state
            time.sleep(0.01)
        raise AssertionError("a thread blocked in recv never showed in /proc")
    finally:
        right.send(b"x")
        blocked.join()
        left.close()
        right.close()


def _syscall(pid: int, tid: int | None) -> str | None:
    """The system call number thread ``tid`` of ``pid`` is blocked in, ``running``, or None."""
    try:
        fields = Path(f"/proc/{pid}/task/{tid}/syscall").read_text().split()
    except OSError:
        return None
    return fields[0] if fields and fields[0].isdigit() else "running"


def wait_in_recv(pid: int, tid: int, seconds: float = 60.0) -> None:
    """Returns once thread ``tid`` of process ``pid`` is blocked in ``recv`` (where
    :func:`holds_the_interpreter` holds the lock), not merely waiting for the lock."""
    wanted, deadline = _recv_syscall(), time.monotonic() + seconds
    while _syscall(pid, tid) != wanted:
        assert time.monotonic() < deadline, f"thread {tid} of {pid} not in recv in {seconds:g} s"
        time.sleep(0.01)


def raises(args: Any, sample: Any) -> float:
    raise ValueError(f"cannot score {sample.response!r}")


def short_group(args: Any, samples: list[Any]) -> list[float]:
    return [1.0] * (len(samples) - 1)


def dict_reward(args: Any, sample: Any) -> dict[str, Any]:
    return {"score": 1.0 if sample.response == sample.label else -1.0, "acc": True}


def no_sample_param(args: Any, item: Any) -> float:
    return 0.0


def needs_kw(args: Any, sample: Any, *, threshold: float) -> float:
    return float(len(sample.response) > threshold)


NOT_CALLABLE = 3


def trl_two_columns(
    completions: list[Any], solution: list[Any], answer: list[Any], **kw: Any
) -> list[float]:
    """A TRL-style function needing two columns besides the completions."""
    return [0.0 for _ in completions]
