"""Where the advantage computation runs: ``device: auto | cpu | cuda[:N]``.

Example::

    >>> import torch
    >>> from rewardrouter.advantage import resolve_device
    >>> resolve_device("cpu", torch.zeros(3))
    device(type='cpu')
"""

from __future__ import annotations

import sys
from importlib import metadata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch
    from torch import Tensor


def resolve_device(spec: str, tensor: Tensor | None = None) -> torch.device:
    """The device that ``spec`` names for a computation on ``tensor``.

    ``auto`` keeps a tensor that is already on a CUDA device where it is (no copy), else picks
    the current CUDA device when one is available, else the CPU. ``cpu`` and ``cuda[:N]`` are
    taken literally. Raises :class:`ValueError` for a CUDA device this process cannot use (see
    :func:`device_problem` for the same check as a message, at compile time).
    """
    import torch

    if spec == "auto":
        if tensor is not None and tensor.device.type == "cuda":
            return tensor.device
        return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    problem = device_problem(spec)
    if problem is not None:
        raise ValueError(problem)
    return torch.device(spec)


def device_problem(spec: str) -> str | None:
    """Why ``spec`` cannot be used in this process, or ``None`` when it can.

    >>> device_problem("tpu")
    "unknown device 'tpu'; expected auto, cpu, cuda or cuda:N"
    """
    if spec in ("auto", "cpu"):
        return None
    if not spec.startswith("cuda"):
        return f"unknown device {spec!r}; expected auto, cpu, cuda or cuda:N"
    import torch  # only a CUDA device needs torch to be checked

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count == 0:
        return f"device {spec} was asked for, but torch sees no CUDA device; use `auto` or `cpu`"
    _, _, index = spec.partition(":")
    if index and int(index) >= count:
        return (
            f"device {spec} was asked for, but only {count} CUDA device(s) exist (0..{count - 1})"
        )
    return None


def runs_on_cpu(spec: str) -> bool:
    """Whether a computation under ``spec`` on data that lives on no device (Python lists) runs
    on the CPU, asked without importing torch where the answer is known without it: ``cpu``,
    or ``auto`` with a CPU-only build of torch (its version's ``+cpu`` label: such a build has
    no CUDA); when torch is already imported, or is a build that may see CUDA, torch says.

    >>> runs_on_cpu("cpu"), runs_on_cpu("cuda:0")
    (True, False)
    """
    if spec != "auto":
        return spec == "cpu"
    if "torch" not in sys.modules:
        try:
            if metadata.version("torch").endswith("+cpu"):
                return True
        except metadata.PackageNotFoundError:
            pass  # not installed as a distribution: torch itself will say
    return resolve_device(spec).type == "cpu"
