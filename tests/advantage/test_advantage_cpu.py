"""The CPU passes split over threads give the one-chunk result, and survive a fork."""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Iterator
from fractions import Fraction

import numpy as np
import pytest
import torch

from rewardrouter.advantage import cpu, group_advantages
from rewardrouter.config.stages import GRPOStage, RLOOStage


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Chunks of 64 samples on 3 threads, so that small batches take the threaded path."""
    threads = torch.get_num_threads()
    monkeypatch.setattr(cpu, "_MIN_CHUNK", 64)
    torch.set_num_threads(3)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _batch(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    rewards = torch.rand(n, generator=gen, dtype=torch.float64)
    ids = torch.randint(0, n // 10, (n,), generator=gen)
    constant = ids % 7 == 0  # every 7th group holds one repeated value
    rewards[constant] = 0.3
    return rewards, ids, torch.rand(n, generator=gen) > 0.1


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize(
    "stage",
    [
        pytest.param(GRPOStage(device="cpu", dtype="float64"), id="grpo"),
        pytest.param(GRPOStage(device="cpu", dtype="float32"), id="grpo_f32_out"),
        pytest.param(RLOOStage(device="cpu", dtype="float64"), id="rloo"),
    ],
)
def test_threaded_chunks_match_one_chunk(
    dtype: torch.dtype, stage: GRPOStage | RLOOStage, monkeypatch: pytest.MonkeyPatch
) -> None:
    rewards, ids, valid = _batch(5000, seed=1)
    rewards = rewards.to(dtype)
    whole = group_advantages(rewards, ids, stage, valid=valid)
    threads = torch.get_num_threads()
    monkeypatch.setattr(cpu, "_MIN_CHUNK", 64)
    torch.set_num_threads(3)
    try:
        assert cpu._chunk_count(5000) == 3
        split = group_advantages(rewards, ids, stage, valid=valid)
    finally:
        torch.set_num_threads(threads)
    assert split.dtype == whole.dtype
    assert torch.allclose(split.double(), whole.double(), rtol=1e-12, atol=1e-15)
    constant = (ids % 7 == 0) & valid
    assert bool((split[constant] == 0).all())


@pytest.mark.usefixtures("small_chunks")
def test_segment_sums_are_exact_counts_and_keep_their_memory_bounded() -> None:
    bins = torch.randint(0, 50, (1000,), dtype=torch.int32)
    counts = cpu.segment_sum(bins, None, 50)
    assert torch.equal(counts, torch.bincount(bins, minlength=50))
    assert cpu._chunk_count(1000) == 3
    # 1000 samples in 600 slots: three private tables would outgrow the batch, so one chunk.
    assert cpu._chunk_count(1000, limit=1000 // 600) == 1


def _rounded_once_to_half(x: float) -> float:
    """``x`` rounded to the nearest float16 (ties to even), decided exactly with fractions."""
    h = np.float16(x)
    around = [np.nextafter(h, np.float16(-np.inf)), h, np.nextafter(h, np.float16(np.inf))]
    best = min(
        around, key=lambda c: (abs(Fraction(float(c)) - Fraction(x)), int(c.view(np.uint16)) & 1)
    )
    return float(best)


@pytest.mark.usefixtures("small_chunks")
def test_casts_gathers_and_products_cover_every_chunk() -> None:
    x = torch.arange(1000, dtype=torch.float32)
    assert torch.equal(cpu.cast(x, torch.float64), x.double())
    table = torch.arange(10, dtype=torch.float64) * 2
    ids = torch.arange(1000) % 10
    assert torch.equal(cpu.take(table, ids.numpy()), table[ids])
    a = torch.rand(1000, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    assert torch.equal(cpu.multiply(a.clone(), a, torch.float32), (a * a).float())
    # float16 products are rounded once. torch rounds float64 -> float16 through float32, so
    # about 1 value in 16,000 lands a float16 step away; 0.328... (in the last chunk) is one.
    a[-1] = 2 * 0.16400145841041336
    scale = torch.tensor(0.5, dtype=torch.float64)
    half = cpu.multiply(a.clone(), scale, torch.float16)
    assert half.tolist() == [_rounded_once_to_half(v) for v in (a * 0.5).tolist()]
    assert half[-1] != (a[-1] * 0.5).half()


def test_concurrent_callers_with_different_thread_counts_share_one_pool(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # torch's thread count is per Python thread: callers that see different counts must not
    # replace or shut down the pool another caller is using.
    monkeypatch.setattr(cpu, "_MIN_CHUNK", 64)
    rewards, ids, valid = _batch(5000, seed=3)
    main_threads = torch.get_num_threads()
    expected = {}
    try:
        for count in (1, 2, 3, 4):  # computed alone with each thread count first
            torch.set_num_threads(count)
            expected[count] = group_advantages(rewards, ids, valid=valid)
    finally:
        torch.set_num_threads(main_threads)
    failures: list[BaseException] = []
    mismatches: list[int] = []

    def call(threads: int) -> None:
        torch.set_num_threads(threads)
        try:
            for _ in range(30):
                got = group_advantages(rewards, ids, valid=valid)
                if not torch.allclose(got, expected[1], rtol=1e-12, atol=1e-15):
                    mismatches.append(threads)
        except BaseException as error:  # reported below, with the thread's count
            failures.append(error)

    workers = [threading.Thread(target=call, args=(t,)) for t in (1, 2, 3, 4, 2, 3)]
    try:
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=120)
    finally:
        torch.set_num_threads(main_threads)
    assert not any(worker.is_alive() for worker in workers)
    assert not failures and not mismatches
    assert all(torch.allclose(v, expected[1], rtol=1e-12, atol=1e-15) for v in expected.values())


def test_gathers_from_tables_numpy_lacks_go_through_torch() -> None:
    table = torch.tensor([0.5, 1.5, 2.5], dtype=torch.bfloat16)
    ids = torch.tensor([2, 0, 2, 1])
    assert torch.equal(cpu.take(table, ids.numpy()), table[ids])


def _chunks_in_child(queue: multiprocessing.Queue[list[int]]) -> None:
    # NumPy-only passes: torch's own OpenMP threads do not survive a fork either (torch's
    # documented limitation), which is the caller's business, not this pool's.
    cpu._MIN_CHUNK = 64
    x = cpu.cast(torch.arange(1000, dtype=torch.int64), torch.float64)
    queue.put([*cpu._over_chunks(lambda lo, hi: hi - lo, 1000, chunks=3), int(x.sum())])


@pytest.mark.usefixtures("small_chunks")
def test_a_forked_child_starts_its_own_threads() -> None:
    for _ in range(5):  # the parent's pool runs and its threads go idle, ready for more work
        cpu._over_chunks(lambda lo, hi: hi - lo, 1000, chunks=3)
    time.sleep(0.2)
    ctx = multiprocessing.get_context("fork")
    queue: multiprocessing.Queue[list[int]] = ctx.Queue()
    child = ctx.Process(target=_chunks_in_child, args=(queue,), daemon=True)
    child.start()
    child.join(timeout=30)
    assert child.exitcode == 0
    assert queue.get(timeout=5) == [333, 333, 334, 499500]
