"""Reward-model throughput: ``kind: reward_model`` served (a vLLM ``/classify`` stub that answers
in 20 ms) and local (a tiny random model on the CPU).

Served: the stub runs in its own process (no shared interpreter lock) and sleeps ``--latency``
seconds before every reply, whatever it holds. Each row scores ``--samples`` distinct responses
(so no input is answered from the score cache) through a compiled router, timed inside one event
loop after a warm-up:

- one input per request (``batch_size: 1``) with C requests in flight: the ideal is
  ``C / latency`` requests per second; target >= 80 %;
- ``batch_size: 32``, 4 requests in flight: the ideal is ``4 * 32 / latency`` samples per second.

The last column is ``benchmarks/remote.py``'s bare aiohttp client (a semaphore and one session,
no router) on the same stub with the same requests in flight: what the machine allows, so the
router's own cost reads as the ratio of the two.

Local: the tests' tiny model (one Llama layer, hidden size 16, random weights, built here, nothing
downloaded) in the kind's worker process on the CPU, one route group of ``--local-samples``
samples. It measures the path's own cost (render, hand-off, tokenize, pack, forward), not a
real model's speed: a real reward model is bound by its forward pass.

    python benchmarks/reward_model.py [--samples 2000] [--latency 0.02] [--concurrency 16 32 64]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rewardrouter import Sample, compile_router

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))


from remote import measure_bare, stub_server  # benchmarks/remote.py


def classify_reply(body: Any) -> Any:
    """vLLM's /classify reply shape: one logit per input."""
    data = [
        {"index": i, "label": "LABEL_0", "probs": [0.5], "num_classes": 1}
        for i in range(len(body.get("input", [None])))  # the bare client: one
    ]
    return {"object": "list", "model": "rm", "data": data}


def rows(count: int, tag: str) -> list[Sample]:
    return [Sample(prompt="Rate this.", response=f"answer {tag} {i}") for i in range(count)]


def measure(settings: dict[str, Any], samples: list[Sample], warm: list[Sample]) -> float:
    """Samples per second through a router whose one term is ``reward_model`` with ``settings``."""
    term = {"kind": "reward_model", "key": "score", "kwargs": settings}
    config = {
        "default_route": "rm",
        "max_concurrency": 256,
        "routes": {"rm": {"rewards": {"rm": term}}},
    }
    with compile_router(config) as router:

        async def timed() -> float:
            await router.score(warm)  # connections opened, the local model loaded
            start = time.perf_counter()
            results = await router.score(samples)
            elapsed = time.perf_counter() - start
            assert all(r.status == "ok" for r in results), "a sample was not scored"
            return len(samples) / elapsed

        return asyncio.run(timed())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.02, help="seconds per request")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 32, 64])
    parser.add_argument("--local-samples", type=int, default=512)
    opts = parser.parse_args()

    table: list[tuple[str, int, float, float | None, float | None]] = []
    with stub_server(opts.latency, "/classify", classify_reply) as base:
        served = {"api": "vllm_classify", "url": base, "model": "rm", "template": "plain"}
        for cap in opts.concurrency:
            settings = {**served, "batch_size": 1, "concurrency": cap}
            rate = measure(settings, rows(opts.samples, f"c{cap}"), rows(2 * cap, f"w{cap}"))
            bare = measure_bare(f"{base}/classify", opts.samples, cap)
            table.append((f"served, {cap} in flight", 1, rate, cap / opts.latency, bare))
        settings = {**served, "batch_size": 32, "concurrency": 4}
        rate = measure(settings, rows(opts.samples, "b"), rows(128, "wb"))
        table.append(("served, 4 in flight", 32, rate, 4 * 32 / opts.latency, None))

    from rr_reward_model import tiny_reward_model  # tests/: nothing downloaded

    with tempfile.TemporaryDirectory() as folder:
        model = tiny_reward_model(Path(folder) / "model")
        settings = {"api": "local", "model": str(model), "device": "cpu"}
        rate = measure(settings, rows(opts.local_samples, "l"), rows(8, "wl"))
        table.append(("local tiny model, CPU", 0, rate, None, None))

    print(f"{opts.samples} served samples, {opts.latency * 1000:g} ms per request")
    head = ("path", "per request", "samples/s", "ideal/s", "of ideal", "bare client")
    print("{:<24} {:>11} {:>10} {:>8} {:>9} {:>16}".format(*head))
    for name, size, rate, ideal, bare in table:
        per = f"{size}" if size else "-"
        shown = f"{ideal:>8.0f} {rate / ideal:>9.0%}" if ideal else f"{'-':>8} {'-':>9}"
        versus = f"{bare:>7.0f} ({rate / bare:.0%})" if bare else "-"
        print(f"{name:<24} {per:>11} {rate:>10.0f} {shown} {versus:>16}")


if __name__ == "__main__":
    main()
