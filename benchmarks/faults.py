"""Faults: a large batch with pathological samples of every kind, and a server under load.

(a) 10,000 samples over three routes — worker processes (``process``), threads (``thread``) and
    a reward server on 127.0.0.1 (``remote``) — of which 1% are pathological, of every kind the
    router must survive: calls that sleep, spin in C, exit, segfault, raise, call
    ``sys.exit()``, return NaN, ``10**400`` or a string, start a process and hang; samples of
    20 MB; server replies that hang, fail, redirect, stream more than the size limit, echo the
    token, or hold ``10**400``. Checked: every good sample scored with its reward, every bad
    one reported with its status, the wall time within
    ``clean + process timeouts x timeout / workers + timeout + 10% of clean + 0.25 s per killed
    worker`` (``clean``: the same batch without the bad samples, measured in the same run),
    the token in no message, and — after ``close()`` — the process's threads and child
    processes back to what they were before the router started (the fork server, started once
    per process, is counted in the baseline), every process a bad call started gone.
(b) ``rewardrouter serve`` (a separate process) answering ``/health`` while it scores a batch of
    20,000 samples that no route accepts, a batch of ``--serve-batch`` samples, and one request
    of 60 MB graded on a thread of the server's scoring process (``exact_match``'s normalization
    of 60 MB is one C call of over a second, which holds that interpreter) and in a worker
    process; target: every ``/health`` within 0.5 s. The idle server is the baseline.

    python benchmarks/faults.py [--samples 10000] [--timeout 2] [--workers N]
                                [--serve-batch 600000] [--only batch|serve]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import fault_rewards
from aiohttp import web
from execution import table

from rewardrouter import RewardResult, Sample, compile_router
from rewardrouter.execute.process.pool import available_cpus

TOKEN = "Bench/T0ken-s3cr3t"

#: Bad kinds per route: (metadata["bad"] or response marker, the status it must end with).
PROCESS_BAD = {
    "sleep": "timeout",
    "bigint": "timeout",
    "child": "timeout",
    "exit": "error",
    "segfault": "error",
    "raise": "error",
    "sys_exit": "error",
    "nan": "invalid",
    "huge_int": "invalid",
    "string": "invalid",
}
THREAD_BAD = {"hang": "timeout", "raise": "error"}
REMOTE_BAD = {
    "hang": "timeout",
    "fail500": "error",
    "redirect": "error",
    "echo": "error",
    "huge": "invalid",
    "bigreply": "invalid",
    "nan": "invalid",
}
#: Good samples of 20 MB each (a runaway generation), scored like any other.
LARGE = 2
LARGE_SIZE = 20_000_000


# -- the reward server ---------------------------------------------------------------------------


class FaultServer:
    """A reward server on 127.0.0.1 that misbehaves as the response asks; good ones get
    ``len(response)``."""

    def __init__(self) -> None:
        self.port = 0
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        threading.Thread(target=self._run, args=(ready,), daemon=True).start()
        ready.wait(10)

    def url(self, path: str = "/reward") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        runner = web.AppRunner(app)
        self._loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = runner.addresses[0][1]
        ready.set()
        self._loop.run_forever()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if request.method != "POST":
            return web.json_response(1.0)  # a redirected GET would read this as the reward
        body = await request.json()
        response = body["response"]
        if response == "hang":
            await asyncio.sleep(30)
        if response == "fail500":
            return web.json_response({"error": "overloaded"}, status=500)
        if response == "redirect":
            return web.Response(status=302, headers={"Location": "/elsewhere"})
        if response == "echo":
            echoed = request.headers["Authorization"].lower().replace("/", "\\/")
            return web.Response(text=f'{{"detail": "bad {echoed}"}}', status=401)
        if response == "bigreply":
            return web.Response(text="1" + "0" * 400, content_type="application/json")
        if response == "nan":
            return web.Response(text="NaN", content_type="application/json")
        if response == "huge":
            reply = web.StreamResponse(headers={"Content-Type": "application/json"})
            await reply.prepare(request)
            try:
                for _ in range(64):
                    await reply.write(b" " * 2**20)
                await reply.write(b"1")
            except (ConnectionError, RuntimeError):
                pass
            return reply
        return web.json_response(float(len(response)))


# -- the batch -----------------------------------------------------------------------------------


def router_config(url: str, timeout: float, workers: int) -> dict[str, Any]:
    def term(**settings: Any) -> dict[str, Any]:
        return {"on_error": "skip", **settings}

    return {
        "default_route": None,
        "timeout": timeout,
        "max_concurrency": 32,
        "executors": {"process": {"workers": workers}},
        "routes": {
            "cpu": {
                "rewards": {
                    "t": term(path="fault_rewards.misbehave", executor="process"),
                }
            },
            "io": {"rewards": {"t": term(path="fault_rewards.blocking", executor="thread")}},
            "remote": {
                "rewards": {
                    "t": term(
                        kind="remote",
                        timeout=timeout + 1,
                        kwargs={
                            "url": url,
                            "timeout": timeout,
                            "deadline": timeout,
                            "retries": 1,
                            "backoff": 0.05,
                            "max_reply_mb": 1,
                            "auth_env": "RR_BENCH_TOKEN",
                        },
                    )
                }
            },
        },
    }


Expected = tuple[str, float | None]  # status, reward


def batch(count: int, with_bad: bool, pids: str) -> tuple[list[Sample], list[Expected]]:
    """``count`` samples (a third per route), 1% of them bad when ``with_bad``, shuffled."""
    rows: list[tuple[Sample, Expected]] = []
    bad: list[tuple[Sample, Expected]] = []
    if with_bad:
        kinds = [("cpu", k, s) for k, s in PROCESS_BAD.items()]
        kinds += [("io", k, s) for k, s in THREAD_BAD.items()]
        kinds += [("remote", k, s) for k, s in REMOTE_BAD.items()]
        for i in range(count // 100):
            route, kind, status = kinds[i % len(kinds)]
            if route == "remote":
                sample = Sample(response=kind, metadata={"dataset": route})
            else:
                metadata = {"dataset": route, "bad": kind, "pids": pids, "session": i % 2 == 0}
                sample = Sample(response="bad", metadata=metadata)
            bad.append((sample, (status, None)))
    for i in range(count - len(bad)):
        route = ("cpu", "io", "remote")[i % 3]
        text = "x" * (LARGE_SIZE if route == "cpu" and i < 3 * LARGE else 1 + i % 50)
        rows.append((Sample(response=text, metadata={"dataset": route}), ("ok", len(text))))
    rows += bad
    random.Random(0).shuffle(rows)
    return [s for s, _ in rows], [e for _, e in rows]


def check(results: Sequence[RewardResult], expected: Sequence[Expected]) -> Counter[str]:
    """Every result as expected (else AssertionError); the statuses counted."""
    wrong = [
        (i, want, (r.status, r.reward, r.error_message))
        for i, (r, want) in enumerate(zip(results, expected, strict=True))
        if (r.status, r.reward) != (want[0], None if want[0] != "ok" else float(want[1] or 0))
    ]
    assert not wrong, f"{len(wrong)} unexpected results, first: {wrong[:3]}"
    leaked = [r.error_message for r in results if "s3cr3t" in (r.error_message or "").lower()]
    assert not leaked, f"the token reached {len(leaked)} messages: {leaked[:1]}"
    return Counter(r.status for r in results)


def descendants() -> set[int]:
    """Every process below this one (Linux: /proc)."""
    found: set[int] = set()
    todo = [os.getpid()]
    while todo:
        pid = todo.pop()
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                children = {int(c) for c in (task / "children").read_text().split()}
            except OSError:
                continue
            todo += children - found
            found |= children
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def settle(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def run_batch(count: int, timeout: float, workers: int) -> None:
    os.environ["RR_BENCH_TOKEN"] = TOKEN
    server = FaultServer()
    config = router_config(server.url(), timeout, workers)
    with compile_router(config) as warm:  # starts this process's fork server: the baseline
        warm.score_sync([Sample(response="w", metadata={"dataset": "cpu"})])
    settle(lambda: threading.active_count() <= 2)  # this script and the server's thread
    threads_before, processes_before = threading.active_count(), descendants()
    pids = tempfile.mkdtemp(prefix="rewardrouter-faults-")
    router = compile_router(config)
    router.score_sync(batch(300, False, pids)[0])  # workers started, graders warm
    clean_samples, clean_expected = batch(count - count // 100, False, pids)
    start = time.perf_counter()
    check(router.score_sync(clean_samples), clean_expected)
    clean = time.perf_counter() - start
    samples, expected = batch(count, True, pids)
    start = time.perf_counter()
    statuses = check(router.score_sync(samples), expected)
    faulty = time.perf_counter() - start
    bad = Counter(
        s.metadata.get("bad", s.response)
        for s, (status, _) in zip(samples, expected, strict=True)
        if status != "ok"
    )
    cpu_timeouts = sum(
        1
        for s, e in zip(samples, expected, strict=True)
        if e[0] == "timeout" and s.metadata["dataset"] == "cpu"
    )
    killed = cpu_timeouts + sum(1 for s in samples if s.metadata.get("bad") in ("exit", "segfault"))
    bound = clean + cpu_timeouts * timeout / workers + timeout + 0.1 * clean + 0.25 * killed
    fault_rewards.RELEASE.set()  # the hung thread calls return; their threads leave
    router.close()
    threads_back = settle(lambda: threading.active_count() <= threads_before)
    processes_back = settle(lambda: descendants() <= processes_before)
    children = [int(p) for p in os.listdir(pids)]
    children_gone = settle(lambda: not any(alive(p) for p in children))
    shutil.rmtree(pids)

    print(
        f"\n{count:,} samples, {sum(bad.values())} bad ({len(bad)} kinds, "
        f"{dict(sorted(bad.items()))}), {LARGE} good ones of {LARGE_SIZE / 1e6:g} MB; "
        f"{workers} workers, timeout {timeout:g} s"
    )
    table(
        "(a) every good sample scored, every bad one with its status",
        ["run", "wall s", "bound s", "within", "statuses"],
        [
            ["clean (99%)", f"{clean:.2f}", "-", "-", f"ok {len(clean_samples):,}"],
            [
                "with 1% bad",
                f"{faulty:.2f}",
                f"{bound:.2f}",
                "yes" if faulty <= bound else "NO",
                ", ".join(f"{k} {v:,}" for k, v in sorted(statuses.items())),
            ],
        ],
    )
    table(
        "after close()",
        ["what", "before", "after", "back"],
        [
            ["threads", str(threads_before), str(threading.active_count()), _yes(threads_back)],
            [
                "child processes",
                str(len(processes_before)),
                str(len(descendants())),
                _yes(processes_back),
            ],
            [
                "processes started by bad calls",
                "-",
                f"{len(children)} started",
                _yes(children_gone),
            ],
        ],
    )


def _yes(flag: bool) -> str:
    return "yes" if flag else "NO"


# -- the server ----------------------------------------------------------------------------------


def serve_process(config: dict[str, Any], folder: Path) -> tuple[subprocess.Popen[str], str]:
    path = folder / "router.yaml"
    path.write_text(json.dumps(config))
    exe = shutil.which("rewardrouter", path=str(Path(sys.executable).parent)) or "rewardrouter"
    process = subprocess.Popen(
        [exe, "serve", "--config", str(path), "--port", "0", "--max-request-mb", "128"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    match = re.search(r"listening on (http://\S+)", line)
    assert match, f"the server did not start: {line!r}"
    return process, match.group(1)


def health_during(base: str, path: str | None, body: bytes) -> tuple[list[float], float, int]:
    """/health latencies while ``body`` is posted to ``path`` (None: an idle server, 3 s), the
    request's wall time and status."""
    done = threading.Event()
    outcome: dict[str, Any] = {}

    def post() -> None:
        start = time.monotonic()
        request = urllib.request.Request(
            base + str(path), data=body, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=600) as reply:
                reply.read()
                outcome["status"] = reply.status
        except urllib.error.HTTPError as error:
            outcome["status"] = error.code
        outcome["seconds"] = time.monotonic() - start
        done.set()

    if path is None:
        threading.Timer(3.0, done.set).start()
        outcome.update(status=0, seconds=3.0)
    else:
        threading.Thread(target=post, daemon=True).start()
    waits: list[float] = []
    while not done.wait(0.02):
        start = time.monotonic()
        with urllib.request.urlopen(base + "/health", timeout=60) as reply:
            reply.read()
        waits.append(time.monotonic() - start)
    return waits, outcome["seconds"], outcome["status"]


def run_server(big: int) -> None:
    config = {
        "default_route": None,
        "routes": {
            "squad": {"match": ["rajpurkar/squad"], "rewards": {"c": {"kind": "exact_match"}}},
            # The same grader in a worker process: its C calls leave the server's interpreter.
            "squad_in_worker": {
                "match": ["squad/in-worker"],
                "rewards": {"c": {"kind": "exact_match", "executor": "process"}},
            },
        },
    }
    good = {"response": "Paris", "label": "Paris", "metadata": {"dataset": "rajpurkar/squad"}}
    loads = [
        ("idle server", None, b""),
        (
            "20,000 samples no route accepts",
            "/batch",
            json.dumps(
                [{"response": "x", "metadata": {"dataset": f"unknown/{i}"}} for i in range(20_000)]
            ).encode(),
        ),
        (f"{big:,} samples", "/batch", json.dumps([good] * big).encode()),
        (
            "one request of 60 MB, grader on a thread",
            "/reward",
            json.dumps({**good, "response": "x" * 60_000_000}).encode(),
        ),
        (
            "one request of 60 MB, grader in a worker",
            "/reward",
            json.dumps(
                {**good, "response": "x" * 60_000_000, "metadata": {"dataset": "squad/in-worker"}}
            ).encode(),
        ),
    ]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        process, base = serve_process(config, Path(folder))
        try:
            for name, path, body in loads:
                waits, seconds, status = health_during(base, path, body)
                waits.sort()
                p99 = waits[min(len(waits) - 1, int(0.99 * len(waits)))]
                rows.append(
                    [
                        name,
                        f"{len(body) / 1e6:.1f}",
                        f"{seconds:.1f}" if path else "-",
                        str(status) if path else "-",
                        str(len(waits)),
                        f"{1000 * p99:.0f}",
                        f"{1000 * waits[-1]:.0f}",
                        _yes(waits[-1] <= 0.5),
                    ]
                )
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(30)
    table(
        "(b) /health while `rewardrouter serve` scores (target: every answer within 0.5 s)",
        ["request", "MB", "request s", "status", "/health asked", "p99 ms", "worst ms", "<= 0.5 s"],
        rows,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--timeout", type=float, default=2.0, help="seconds per call")
    parser.add_argument("--workers", type=int, default=available_cpus())
    parser.add_argument("--serve-batch", type=int, default=600_000)
    parser.add_argument("--only", choices=["batch", "serve"], help="run (a) or (b) alone")
    opts = parser.parse_args()
    print(f"{available_cpus()} CPUs")
    if opts.only != "serve":
        run_batch(opts.samples, opts.timeout, opts.workers)
    if opts.only != "batch":
        run_server(opts.serve_batch)


if __name__ == "__main__":
    main()
