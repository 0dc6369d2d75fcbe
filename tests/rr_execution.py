"""Reward functions that misbehave on purpose, for the execution tests (``rr_execution.<name>``).

Worker processes import this module by name, so everything here is top level. A sample's
``metadata["bad"]`` picks the misbehaviour; other samples score ``len(response)``.
"""

from __future__ import annotations

import asyncio
import ctypes
import math
import os
import threading
import time
from typing import Any

#: Set by the tests' teardown: frees every thread that :func:`hang` holds.
RELEASE = threading.Event()


def _spin_in_c() -> Any:
    """Python's big-integer power runs inside C: no signal handler, no exception stops it."""
    import sympy

    return sympy.Integer(9) ** (9**9)


def _power_tower() -> Any:
    """What a math grader does with ``\\boxed{9^{9^{9^{9}}}}`` when nothing bounds it."""
    from math_verify import parse, verify

    answer = parse(r"\boxed{9^{9^{9^{9}}}}", parsing_timeout=None)
    return verify(parse("$1$", parsing_timeout=None), answer, timeout_seconds=None)


BEHAVIOURS: dict[str, Any] = {
    "sleep": lambda: time.sleep(3600),
    "bigint": _spin_in_c,
    "tower": _power_tower,
    "exit": lambda: os._exit(1),
    "segfault": lambda: ctypes.string_at(0),
    "raise": lambda: (_ for _ in ()).throw(ValueError("this response breaks the grader")),
    "nan": lambda: math.nan,
    "inf": lambda: -math.inf,
    "string": lambda: "1.0",
    "dict_without_key": lambda: {"acc": 1.0},
    "none": lambda: None,
    "exit_call": lambda: exit(3),
}


def misbehave(args: Any, sample: Any) -> Any:
    """``len(response)``, or the misbehaviour named by ``metadata["bad"]``."""
    bad = sample.metadata.get("bad")
    if bad is None:
        return float(len(sample.response))
    return BEHAVIOURS[bad]()


def misbehave_group(args: Any, samples: list[Any]) -> Any:
    """Group mode: misbehaves if any sample asks to; ``short`` returns one reward too few."""
    bads = [s.metadata.get("bad") for s in samples if s.metadata.get("bad")]
    if "short" in bads:
        return [1.0] * (len(samples) - 1)
    if "not_a_list" in bads:
        return {"rewards": [1.0] * len(samples)}
    if bads:
        return BEHAVIOURS[bads[0]]()
    return [float(len(s.response)) for s in samples]


def hang(args: Any, sample: Any) -> float:
    """Blocks until the test releases it (a thread cannot be killed): for the thread executor."""
    if sample.metadata.get("bad") == "hang":
        RELEASE.wait()
        return -1.0
    return float(len(sample.response))


async def async_misbehave(args: Any, sample: Any) -> Any:
    """Async: ``sleep`` awaits forever (cancellable); others as :func:`misbehave`."""
    if sample.metadata.get("bad") == "sleep":
        await asyncio.sleep(3600)
    return misbehave(args, sample)


def slow_then_fine(args: Any, sample: Any) -> float:
    """Sleeps ``metadata["seconds"]`` and then returns 1.0: late, not hung."""
    time.sleep(sample.metadata.get("seconds", 0.0))
    return 1.0


_RAN_BEFORE = False


def warmth(args: Any, sample: Any) -> Any:
    """1.0 when this process ran it before (or was forked from one that had), else 0.0.

    ``metadata["thread"]``: the call also starts a thread. ``bad`` samples misbehave.
    """
    global _RAN_BEFORE
    if sample.metadata.get("bad"):
        return misbehave(args, sample)
    if sample.metadata.get("thread"):
        threading.Thread(target=RELEASE.wait, daemon=True).start()
    ran_before, _RAN_BEFORE = _RAN_BEFORE, True
    return float(ran_before)


def log_call(args: Any, sample: Any) -> Any:
    """Append the response, one line, to the file ``metadata["log"]`` (a side effect: the file
    shows every call, a template's replays included); then 1.0, or misbehave if ``bad``."""
    with open(sample.metadata["log"], "a") as out:
        out.write(sample.response + "\n")
    if sample.metadata.get("bad"):
        return misbehave(args, sample)
    return 1.0


def pid(args: Any, sample: Any) -> float:
    """The id of the process that scored the sample."""
    return float(os.getpid())


def fields_seen(args: Any, sample: Any) -> dict[str, Any]:
    """What a worker sees of a sample: its type and fields, and ``args``."""
    return {
        "type": type(sample).__name__,
        "response": sample.response,
        "label": sample.label,
        "metadata": sample.metadata,
        "status": sample.status,
        "group_index": sample.group_index,
        "args": getattr(args, "seed", None),
        "score": 1.0,
    }


async def async_grade(args: Any, sample: Any) -> float:
    return float(len(sample.response))


LAMBDA = lambda args, sample: 1.0  # noqa: E731  (a lambda on purpose: not picklable by name)


def _make_closure() -> Any:
    def inner(args: Any, sample: Any) -> float:
        return 1.0

    return inner


CLOSURE = _make_closure()


def hang_group(args: Any, samples: list[Any]) -> list[float]:
    """Group mode: blocks until released if any sample says ``hang``."""
    return [hang(args, s) for s in samples]


def row(response: str = "", bad: str | None = None, **metadata: Any) -> dict[str, Any]:
    """A dict sample; ``bad`` names a misbehaviour of :func:`misbehave`."""
    if bad is not None:
        metadata["bad"] = bad
    return {"response": response, "label": None, "metadata": metadata}


def router_config(
    path: str,
    *,
    executor: str = "process",
    on_error: Any = "raise",
    timeout: float = 1.0,
    workers: int = 2,
    warm_calls: int | None = None,
    **term: Any,
) -> dict[str, Any]:
    """A one-route, one-term router config scoring every sample with ``path``; ``warm_calls``
    sets ``executors.process.warm_calls`` (None: its default)."""
    process: dict[str, Any] = {"workers": workers}
    if warm_calls is not None:
        process["warm_calls"] = warm_calls
    return {
        "default_route": "r",
        "timeout": timeout,
        "executors": {"process": process},
        "routes": {
            "r": {
                "rewards": {"t": {"path": path, "executor": executor, "on_error": on_error, **term}}
            }
        },
    }


def leave_child(args: Any, sample: Any) -> float:
    """Start ``sleep 600`` (in a session of its own if ``metadata["session"]``), write its pid to
    ``metadata["pid_file"]``, then hang if the sample is ``bad`` (else return 1.0)."""
    import subprocess

    child = subprocess.Popen(
        ["sleep", "600"], start_new_session=bool(sample.metadata.get("session"))
    )
    with open(sample.metadata["pid_file"], "w") as out:
        out.write(str(child.pid))
    if sample.metadata.get("bad"):
        time.sleep(3600)
    return 1.0
