"""Remote reward throughput: the ``remote`` kind against a local server that answers in 20 ms.

The server runs in its own process (so it does not share the client's interpreter lock) and
sleeps ``--latency`` seconds before every reply. Three clients score through a compiled router:

- sequential: ``concurrency: 1``, one request after another (on ``--sequential-samples``);
- concurrent: ``concurrency: C`` for each C of ``--concurrency``, on ``--samples`` samples,
  timed inside one event loop after a warm-up (a trainer's long-lived loop: connections kept);
- batch: ``batch: true, batch_size: 64``, 4 requests in flight (one request per 64 samples).

The ideal for C requests in flight is ``C / latency`` samples per second; target: >= 80 %. The
last column is a bare aiohttp client (a semaphore and one shared session, no router) on the same
server: what the machine allows, so that the router's own cost reads as the ratio of the two.

    python benchmarks/remote.py [--samples 2000] [--latency 0.02] [--concurrency 16 32 64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from typing import Any

import aiohttp
from aiohttp import web

from rewardrouter import Sample, compile_router


def reward_reply(body: Any) -> Any:
    """The reward server's reply: one reward per sample of a batch, else one reward."""
    return [1.0] * len(body) if isinstance(body, list) else 1.0


def serve(latency: float, conn: Connection, path: str, answer: Callable[[Any], Any]) -> None:
    """A stub server: every POST to ``path`` waits ``latency`` s and gets ``answer(body)``."""

    async def handle(request: web.Request) -> web.Response:
        body = await request.json()
        await asyncio.sleep(latency)
        return web.json_response(answer(body))

    async def main() -> None:
        app = web.Application()
        app.router.add_post(path, handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0, backlog=1024).start()
        conn.send(runner.addresses[0][1])
        await asyncio.Event().wait()

    asyncio.run(main())


@contextmanager
def stub_server(
    latency: float, path: str = "/reward", answer: Callable[[Any], Any] = reward_reply
) -> Iterator[str]:
    """``serve`` in its own process (it does not share the client's interpreter lock), until the
    block ends; yields the server's base URL. ``answer`` must be a module-level function."""
    context = multiprocessing.get_context("spawn")
    here, there = context.Pipe()
    server = context.Process(target=serve, args=(latency, there, path, answer), daemon=True)
    server.start()
    try:
        if not here.poll(30):
            raise SystemExit("the benchmark server did not start within 30 s")
        yield f"http://127.0.0.1:{here.recv()}"
    finally:
        server.terminate()
        server.join(5)


def measure(url: str, samples: list[Sample], settings: dict[str, Any]) -> float:
    """Samples per second through a router whose one term is ``remote`` with ``settings``."""
    term = {"kind": "remote", "kwargs": {"url": url, **settings}}
    config = {
        "default_route": "judged",
        "max_concurrency": max(64, settings.get("concurrency", 1)),
        "routes": {"judged": {"rewards": {"judge": term}}},
    }
    with compile_router(config) as router:

        async def timed() -> float:
            await router.score(samples[: 2 * settings.get("concurrency", 1)])  # warm the pool
            start = time.perf_counter()
            results = await router.score(samples)
            elapsed = time.perf_counter() - start
            assert all(r.reward == 1.0 for r in results), "a sample was not scored"
            return len(samples) / elapsed

        return asyncio.run(timed())


def measure_bare(url: str, count: int, cap: int) -> float:
    """Samples per second of a bare aiohttp client: the same requests, no router."""

    async def timed() -> float:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            semaphore = asyncio.Semaphore(cap)
            headers = {"Content-Type": "application/json"}

            async def one(i: int) -> Any:
                body = json.dumps({"prompt": "", "response": f"answer {i}", "label": "x"})
                async with semaphore, session.post(url, data=body, headers=headers) as reply:
                    return json.loads(await reply.read())

            await asyncio.gather(*(one(i) for i in range(2 * cap)))
            start = time.perf_counter()
            await asyncio.gather(*(one(i) for i in range(count)))
            return count / (time.perf_counter() - start)

    return asyncio.run(timed())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--sequential-samples", type=int, default=100)
    parser.add_argument("--latency", type=float, default=0.02, help="seconds per request")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 32, 64])
    opts = parser.parse_args()

    with stub_server(opts.latency) as base:
        url = f"{base}/reward"
        samples = [Sample(response=f"answer {i}", label="x") for i in range(opts.samples)]
        sequential = measure(url, samples[: opts.sequential_samples], {"concurrency": 1})
        rows: list[tuple[str, int, float, float | None]] = [("sequential", 1, sequential, None)]
        for cap in opts.concurrency:
            rate = measure(url, samples, {"concurrency": cap})
            rows.append(("concurrent", cap, rate, measure_bare(url, opts.samples, cap)))
        batched = measure(url, samples, {"concurrency": 4, "batch": True, "batch_size": 64})
        rows.append(("batch of 64", 4, batched, None))

    print(
        f"{opts.samples} samples, {opts.latency * 1000:g} ms per request "
        f"(sequential client on {opts.sequential_samples})"
    )
    head = ("client", "in flight", "samples/s", "ideal/s", "of ideal", "vs sequential", "bare")
    print("{:<12} {:>9} {:>10} {:>8} {:>9} {:>14} {:>14}".format(*head))
    for name, cap, rate, bare in rows:
        ideal = cap * (64 if name.startswith("batch") else 1) / opts.latency
        print(
            f"{name:<12} {cap:>9} {rate:>10.0f} {ideal:>8.0f} {rate / ideal:>9.0%} "
            f"{rate / sequential:>13.1f}x "
            + (f"{bare:>6.0f} ({rate / bare:.0%})" if bare is not None else f"{'':>14}")
        )


if __name__ == "__main__":
    main()
