"""CPU kernels for the per-sample passes of a large batch: NumPy where it beats torch, and every
pass split over torch's CPU threads.

Two things make the CPU path fast on millions of rewards (measured by
``benchmarks/advantages.py`` on 10M rewards in 625,000 groups):

* torch's own segment sum (``bincount``) and gathers run on one thread whatever
  ``torch.get_num_threads()`` says, and the random accesses into per-group tables that outgrow
  the L2 cache are latency-bound, so they scale with threads: each pass here runs on
  contiguous chunks of the batch, one per thread (2 threads: 49 → 23 ms per sum, 44 → 21 ms
  per gather). Per-chunk sums go into private tables that are added at the end, so a constant
  group's sum stays exact (each partial sum is an exact multiple of its value). Results are
  bitwise reproducible for a given thread count; across thread counts the advantages of
  non-constant groups may differ in the last bit (about 1e-16 relative in float64), as
  torch's own parallel reductions do.
* on one thread, NumPy's casts and gathers take about half of torch's time (float32 → float64
  15 ms vs 29, int64 → int32 11 vs 19, a float64 product rounded to float32 19 vs 58, a gather
  from a table of 625,000 floats 41 vs 92).

Tensors elsewhere (a GPU), bfloat16 (which NumPy lacks) and tensors that track gradients go
through torch (see :func:`on_host`).

Example::

    >>> import torch
    >>> from rewardrouter.advantage.cpu import cast
    >>> cast(torch.tensor([0.5, 0.25]), torch.float64)
    tensor([0.5000, 0.2500], dtype=torch.float64)
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import numpy as np
import numpy.typing as npt
import torch
from torch import Tensor

from rewardrouter.advantage.kernels import MIN_CHUNK, rounded_product

T = TypeVar("T")

_MIN_CHUNK = MIN_CHUNK  # a module global: tests shrink it to split small batches

_NUMPY_DTYPES: dict[torch.dtype, type[np.generic]] = {
    torch.float64: np.float64,
    torch.float32: np.float32,
    torch.float16: np.float16,
    torch.int64: np.int64,
    torch.int32: np.int32,
    torch.int16: np.int16,
    torch.int8: np.int8,
    torch.uint8: np.uint8,
    torch.bool: np.bool_,
}

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def on_host(*tensors: Tensor) -> bool:
    """Whether NumPy can run a pass over ``tensors`` in place of torch."""
    return all(
        t.device.type == "cpu" and t.dtype in _NUMPY_DTYPES and not t.requires_grad for t in tensors
    )


def cast(tensor: Tensor, dtype: torch.dtype) -> Tensor:
    """A fresh, contiguous copy of the 1-D ``tensor`` in ``dtype`` (on ``tensor``'s device)."""
    if not (on_host(tensor) and dtype in _NUMPY_DTYPES):
        return tensor.to(dtype, copy=True)
    src = tensor.numpy(force=True)
    out = np.empty(src.shape, dtype=_NUMPY_DTYPES[dtype])

    def run(lo: int, hi: int) -> None:
        out[lo:hi] = src[lo:hi]

    _over_chunks(run, src.shape[0])
    return torch.from_numpy(out)


def segment_sum(bins: Tensor, values: Tensor | None, slots: int) -> Tensor:
    """``bincount(bins, values, slots)`` (int64 counts when ``values`` is ``None``), split over
    threads into private per-chunk tables that are added in chunk order.

    The partial tables together hold at most one entry per sample, so the extra memory never
    exceeds the batch's own.
    """
    n = bins.shape[0]
    chunks = _chunk_count(n, limit=max(1, n // max(slots, 1)))

    def run(lo: int, hi: int) -> Tensor:
        weights = None if values is None else values[lo:hi]
        return torch.bincount(bins[lo:hi], weights=weights, minlength=slots)

    tables = _over_chunks(run, n, chunks)
    total = tables[0]
    for table in tables[1:]:
        total.add_(table)
    # bincount of no samples answers int64 zeros even when given float weights.
    return total if values is None else total.to(values.dtype)


def take(table: Tensor, ids: npt.NDArray[np.int64], out: Tensor | None = None) -> Tensor:
    """``table[ids]`` for a CPU ``table`` and slot numbers ``ids`` that are all in range (as
    :mod:`~rewardrouter.advantage.segments` builds them: NumPy does not check them here).

    ``out``, when given, is a contiguous CPU tensor of ``table``'s dtype with one entry per id.
    """
    if not on_host(table):
        index = torch.from_numpy(ids)
        return table.take(index) if out is None else torch.take(table, index, out=out)
    src = table.contiguous().numpy(force=True)
    dst = np.empty(ids.shape, dtype=src.dtype) if out is None else out.numpy()

    def run(lo: int, hi: int) -> None:
        # The ids are in range, so "wrap" never wraps: it skips the bounds check and, with
        # `out`, the copy NumPy would otherwise write first so that it can raise midway.
        np.take(src, ids[lo:hi], out=dst[lo:hi], mode="wrap")

    _over_chunks(run, ids.shape[0])
    return torch.from_numpy(dst) if out is None else out


def multiply(a: Tensor, b: Tensor, dtype: torch.dtype) -> Tensor:
    """``a * b`` (1-D float64 ``a``; ``b`` alike or 0-dim) computed in float64, then rounded to
    ``dtype`` once: exactly what ``(a * b).to(dtype)`` gives for float32 and bfloat16 (which goes
    through torch). For float16, which no stage outputs, NumPy's single rounding can differ from
    torch's by one step (torch rounds through float32 first; about 1 value in 16,000).

    The result is new unless ``dtype`` is float64, in which case it is written into ``a``.
    """
    if dtype == torch.float64:
        return a.mul_(b)
    if not (on_host(a, b) and dtype in _NUMPY_DTYPES):
        return torch.mul(a, b, out=torch.empty_like(a, dtype=dtype))
    x, y = a.numpy(force=True), b.numpy(force=True)
    out = np.empty(x.shape, dtype=_NUMPY_DTYPES[dtype])

    def run(lo: int, hi: int) -> None:
        rounded_product(x[lo:hi], y if y.ndim == 0 else y[lo:hi], out[lo:hi])

    _over_chunks(run, x.shape[0])
    return torch.from_numpy(out)


def sqrt_(tensor: Tensor) -> Tensor:
    """``tensor.sqrt_()``, correctly rounded wherever it runs.

    torch's CPU square root is not (built with MKL, its float64 ``sqrt(0.5)`` is
    ``0.7071067811865475``, one unit in the last place below the true ``0.70710678118654752...``;
    hundreds of 100,000 random doubles are off by one unit), so on the CPU NumPy computes it, in
    place through a shared view. CUDA's square root of a double is correctly rounded, and runs as
    it is. Every std of the advantage stage goes through here, so its bits do not depend on the
    math library torch was built with, and the NumPy path (:mod:`.host`) can give them.
    """
    if on_host(tensor) and tensor.is_floating_point():
        values = tensor.numpy()
        np.sqrt(values, out=values)
        return tensor
    return tensor.sqrt_()


def _chunk_count(n: int, limit: int | None = None) -> int:
    chunks = min(torch.get_num_threads(), n // _MIN_CHUNK)
    return max(1, chunks if limit is None else min(chunks, limit))


def _over_chunks(run: Callable[[int, int], T], n: int, chunks: int | None = None) -> list[T]:
    """``run(lo, hi)`` over ``chunks`` contiguous ranges covering ``[0, n)``: the first in the
    calling thread, the others on the pool; the results in range order."""
    chunks = _chunk_count(n) if chunks is None else chunks
    if chunks == 1:
        return [run(0, n)]
    bounds = [n * i // chunks for i in range(chunks + 1)]
    pool = _executor()
    futures = [pool.submit(run, lo, hi) for lo, hi in itertools.pairwise(bounds[1:])]
    first = run(bounds[0], bounds[1])
    return [first, *(f.result() for f in futures)]


def _executor() -> ThreadPoolExecutor:
    """The process's one pool, shared by every calling thread (whatever thread count each of
    them gave torch) and never shut down while the process runs; its threads start on demand."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(os.cpu_count() or 1, thread_name_prefix="rewardrouter-host")
        return _pool


def _forget_pool() -> None:
    """In a forked child the pool's threads do not exist, and the lock may have been held by
    one of them: start afresh."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_forget_pool)
