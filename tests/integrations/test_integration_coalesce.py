"""The dynamic batcher under the slime hook: what each caller gets, and when a batch goes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rewardrouter.integrations._coalesce import Coalescer


def _recording(sizes: list[int]) -> Any:
    async def run(items: list[Any]) -> list[Any]:
        sizes.append(len(items))
        return [item if isinstance(item, int) else ValueError(f"bad {item}") for item in items]

    return run


def test_a_batch_goes_at_its_largest_size() -> None:
    sizes: list[int] = []

    async def main() -> list[Any]:
        calls = Coalescer(_recording(sizes), idle=0.01, longest=10.0, largest=4)
        return await asyncio.gather(*(calls(i) for i in range(10)))

    assert asyncio.run(asyncio.wait_for(main(), 5)) == list(range(10))
    assert sizes == [4, 4, 2]  # two full batches at once, the last two after the idle window


def test_a_steady_trickle_goes_by_the_longest_wait() -> None:
    # a call every 5 ms never leaves the 20 ms idle window, yet no call waits past 60 ms
    sizes: list[int] = []

    async def main() -> list[float]:
        calls = Coalescer(_recording(sizes), idle=0.02, longest=0.06, largest=1000)
        loop = asyncio.get_running_loop()
        waits: list[float] = []

        async def one(i: int) -> None:
            begun = loop.time()
            await calls(i)
            waits.append(loop.time() - begun)

        tasks = []
        for i in range(40):
            tasks.append(asyncio.create_task(one(i)))
            await asyncio.sleep(0.005)
        await asyncio.gather(*tasks)
        return waits

    waits = asyncio.run(main())
    assert len(sizes) >= 3 and sum(sizes) == 40
    assert max(waits) < 0.06 + 0.05, max(waits)  # the bound, and slack for a loaded machine


def test_an_items_exception_is_its_callers_alone() -> None:
    async def main() -> list[Any]:
        calls = Coalescer(_recording([]), idle=0.001, longest=0.01, largest=100)
        return await asyncio.gather(*(calls(x) for x in (1, "x", 3)), return_exceptions=True)

    first, bad, last = asyncio.run(main())
    assert (first, last) == (1, 3) and isinstance(bad, ValueError)


def test_a_batch_that_fails_whole_tells_every_caller() -> None:
    async def broken(items: list[Any]) -> list[Any]:
        raise RuntimeError("the router is closed")

    async def main() -> list[Any]:
        calls = Coalescer(broken, idle=0.001, longest=0.01, largest=100)
        return await asyncio.gather(*(calls(x) for x in range(3)), return_exceptions=True)

    assert [str(e) for e in asyncio.run(main())] == ["the router is closed"] * 3


def test_a_cancelled_caller_leaves_the_others_their_results() -> None:
    async def main() -> tuple[Any, ...]:
        calls = Coalescer(_recording([]), idle=0.01, longest=0.05, largest=100)
        gone = asyncio.create_task(calls(1))
        kept = asyncio.create_task(calls(2))
        await asyncio.sleep(0)
        gone.cancel()
        return await asyncio.gather(gone, kept, return_exceptions=True)

    gone, kept = asyncio.run(main())
    assert isinstance(gone, asyncio.CancelledError) and kept == 2


@pytest.mark.parametrize("count", [0, 1])
def test_aclose_sends_what_is_pending(count: int) -> None:
    sizes: list[int] = []

    async def main() -> None:
        calls = Coalescer(_recording(sizes), idle=10.0, longest=10.0, largest=100)
        waiting = [asyncio.create_task(calls(i)) for i in range(count)]
        await asyncio.sleep(0)
        await calls.aclose()
        assert [t.result() for t in waiting] == list(range(count))

    asyncio.run(asyncio.wait_for(main(), 5))
    assert sizes == ([1] if count else [])
