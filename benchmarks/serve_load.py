"""``rewardrouter serve`` beside hostile and heavy clients, before and after its lanes and guard.

Each figure is measured twice in one run, on real servers on 127.0.0.1 started as an operator
starts them: **before** is the package at git revision ``--before`` (by default the last commit
before the small-request lane and the connection guard), extracted with ``git archive`` and put
first on the import path; **after** is this working tree, with default flags.

(a) A light client posts one sample to ``/reward`` every 20 ms while a heavy client's
    ``/batch`` of ``--heavy`` samples is scored: the light client's latency, beside its latency
    on an idle server; and the batch's own time, alone and beside the light client.
(b) ``--idle`` connections opened and left idle (each row a different open-file limit of the
    server: the common default 1024, 4096, and this machine's), then ``GET /health`` on a new
    connection: its latency, or ``timeout`` after 5 s; how many idle connections the client
    could open (a server out of file descriptors stops accepting), and how many descriptors the
    server holds.
(c) A slowloris client (a header line a byte every 0.5 s) and a body trickled at 10 bytes/s:
    how long until the server closes each (``open`` when it still had not after 45 s).

    python benchmarks/serve_load.py [--heavy 200000] [--before REV] [--only fair|idle|slow]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from io import BytesIO
from pathlib import Path
from typing import Any

from execution import table

ROOT = Path(__file__).resolve().parents[1]
#: The last commit before the small-request lane and the connection guard.
BEFORE = "c3614b9"
CONFIG = {
    "default_route": "squad",
    "routes": {"squad": {"match": ["rajpurkar/squad"], "rewards": {"c": {"kind": "exact_match"}}}},
}
GOOD = {"response": "Paris", "label": "Paris", "metadata": {"dataset": "rajpurkar/squad"}}
ENTRY = "import sys; from rewardrouter.cli.main import main; sys.argv[0] = 'rewardrouter'; main()"


# -- servers ---------------------------------------------------------------------------------------


class Server:
    """``rewardrouter serve`` from ``package`` (a folder holding ``rewardrouter/``; None: this
    working tree) on a free port, with at most ``files`` open files."""

    def __init__(self, package: Path | None, folder: Path, files: int | None = None) -> None:
        config = folder / "router.yaml"
        config.write_text(json.dumps(CONFIG))
        env = dict(os.environ)
        if package is not None:
            env["PYTHONPATH"] = os.pathsep.join([str(package), env.get("PYTHONPATH", "")])

        def limit() -> None:
            if files is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))

        self.process = subprocess.Popen(
            [sys.executable, "-c", ENTRY, "serve", "--config", str(config), "--port", "0"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            preexec_fn=limit,
        )
        assert self.process.stdout is not None
        for line in self.process.stdout:
            match = re.search(r"listening on http://([\d.]+):(\d+)", line)
            if match:
                self.host, self.port = match.group(1), int(match.group(2))
                break
        else:
            raise RuntimeError("the server did not start")
        self.base = f"http://{self.host}:{self.port}"

    def fds(self) -> int:
        return len(os.listdir(f"/proc/{self.process.pid}/fd"))

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@contextlib.contextmanager
def packages(before: str) -> Iterator[dict[str, Path | None]]:
    """``{"before": folder holding revision ``before``'s ``rewardrouter/``, "after": None}``."""
    with tempfile.TemporaryDirectory() as folder:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", before, "rewardrouter", "conf"],
            capture_output=True,
            check=True,
        ).stdout
        with tarfile.open(fileobj=BytesIO(archive)) as tar:
            tar.extractall(folder, filter="data")
        (Path(folder) / "rewardrouter" / "conf").symlink_to("../conf")  # as the wheel maps it
        yield {"before": Path(folder), "after": None}


@contextlib.contextmanager
def serving(package: Path | None, files: int | None = None) -> Iterator[Server]:
    with tempfile.TemporaryDirectory() as folder:
        server = Server(package, Path(folder), files)
        try:
            yield server
        finally:
            server.stop()


def post(url: str, body: bytes, timeout: float = 600) -> int:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            reply.read()
            return int(reply.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def timed(call: Callable[[], Any]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


# -- (a) a light client beside a heavy one -----------------------------------------------------


def light_latencies(base: str, until: threading.Event) -> list[float]:
    body = json.dumps(GOOD).encode()
    waits: list[float] = []
    while not until.is_set():
        waits.append(timed(lambda: post(base + "/reward", body)))
        time.sleep(0.02)
    return waits


def fairness(server: Server, heavy: bytes) -> dict[str, Any]:
    heavy_alone = timed(lambda: post(server.base + "/batch", heavy))
    alone = threading.Event()
    threading.Timer(2.0, alone.set).start()
    idle = light_latencies(server.base, alone)
    done = threading.Event()
    outcome: dict[str, Any] = {}

    def heavy_client() -> None:
        start = time.perf_counter()
        outcome["status"] = post(server.base + "/batch", heavy)
        outcome["seconds"] = time.perf_counter() - start
        done.set()

    threading.Thread(target=heavy_client, daemon=True).start()
    beside = light_latencies(server.base, done)
    return {"idle": idle, "beside": beside, "alone": heavy_alone, **outcome}


def ms(values: list[float], q: float) -> str:
    ordered = sorted(values)
    return f"{1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]:.0f}"


def run_fairness(before: str, count: int) -> None:
    heavy = json.dumps([GOOD] * count).encode()
    found = {}
    with packages(before) as package:
        for name, where in package.items():
            with serving(where) as server:
                found[name] = fairness(server, heavy)
    rows = []
    for label, key in (("light client, idle server", "idle"), ("beside the heavy batch", "beside")):
        row = [label]
        for name in ("before", "after"):
            waits = found[name][key]
            row += [str(len(waits)), ms(waits, 0.5), ms(waits, 0.99), ms(waits, 1.0)]
        rows.append(row)
    seconds = [
        f"{found[n]['alone']:.1f} s alone, {found[n]['seconds']:.1f} s beside the light client "
        f"(status {found[n]['status']}) {n}"
        for n in ("before", "after")
    ]
    table(
        f"(a) light client's /reward latency beside a /batch of {count:,} samples "
        f"({len(heavy) / 2**20:.1f} MiB; the batch took {seconds[0]}; {seconds[1]})",
        [
            "requests",
            *[f"{n} {c}" for n in ("before", "after") for c in ("n", "p50 ms", "p99 ms", "max ms")],
        ],
        rows,
    )


# -- (b) an idle flood ---------------------------------------------------------------------------


def flood(server: Server, count: int) -> list[socket.socket]:
    """``count`` idle connections (as many as the server lets open: ten connects in a row that
    time out end the flood)."""
    opened: list[socket.socket] = []
    failed_in_a_row = 0
    for _ in range(count):
        try:
            opened.append(socket.create_connection((server.host, server.port), timeout=0.5))
            failed_in_a_row = 0
        except OSError:
            failed_in_a_row += 1
            if failed_in_a_row >= 10:
                break
    return opened


def health(server: Server) -> str:
    try:
        return f"{1000 * timed(lambda: urllib.request.urlopen(server.base + '/health', timeout=5).read()):.0f} ms"
    except (OSError, urllib.error.URLError):
        return "timeout"


def run_idle(before: str, count: int) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    rows = []
    with packages(before) as package:
        for files, opened in ((1024, 2000), (4096, 8000), (hard, min(count, hard - 200))):
            row = [f"server limit {files:,}, {opened:,} idle"]
            for where in package.values():
                with serving(where, files) as server:
                    idle = flood(server, opened)
                    time.sleep(0.5)
                    answers = [health(server) for _ in range(3)]
                    row += [f"{len(idle):,}", str(server.fds()), " / ".join(answers)]
                    for sock in idle:
                        sock.close()
            rows.append(row)
    table(
        "(b) GET /health on a new connection after an idle flood",
        [
            "flood",
            "before: opened",
            "before: server fds",
            "before: /health",
            "after: opened",
            "after: server fds",
            "after: /health",
        ],
        rows,
    )


# -- (c) slow clients ----------------------------------------------------------------------------


def dropped_after(server: Server, first: bytes, drip: bytes, every: float, limit: float) -> str:
    """Seconds until the server closes a connection that sends ``first``, then ``drip`` every
    ``every`` seconds; ``open`` after ``limit``."""
    with socket.create_connection((server.host, server.port)) as sock:
        start = time.perf_counter()
        sock.sendall(first)
        sock.settimeout(every)
        while time.perf_counter() - start < limit:
            try:
                if sock.recv(65536) == b"":
                    break
                continue  # a reply (408): read on until the close
            except TimeoutError:
                pass
            except OSError:
                break
            try:
                sock.sendall(drip)
            except OSError:
                break
        else:
            return f"open after {limit:.0f} s"
        return f"{time.perf_counter() - start:.1f} s"


def run_slow(before: str) -> None:
    cases = {
        "slowloris: a header byte every 0.5 s": (b"POST /reward HTTP/1.1\r\n", b"X", 0.5),
        "body at 10 bytes/s (Content-Length 100000)": (
            b"POST /reward HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n",
            b"x" * 5,
            0.5,
        ),
    }
    found: dict[tuple[str, str], str] = {}
    with packages(before) as package, serving(package["before"]) as old, serving(None) as new:
        running = {"before": old, "after": new}
        threads = [
            threading.Thread(
                target=lambda c=case, n=name: found.__setitem__(
                    (c, n), dropped_after(running[n], *cases[c], limit=45.0)
                )
            )
            for case in cases
            for name in running
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    table(
        "(c) seconds until the server closes a slow client (after: default --header-timeout 10, "
        "--body-timeout 30, --min-body-rate-kb 16)",
        ["client", "before", "after"],
        [[case, found[(case, "before")], found[(case, "after")]] for case in cases],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heavy", type=int, default=200_000, help="samples of the heavy batch")
    parser.add_argument("--idle", type=int, default=19_500, help="idle connections, last row")
    parser.add_argument("--before", default=BEFORE, help=f"git revision (default {BEFORE})")
    parser.add_argument("--only", choices=["fair", "idle", "slow"])
    opts = parser.parse_args()
    if opts.only in (None, "fair"):
        run_fairness(opts.before, opts.heavy)
    if opts.only in (None, "idle"):
        run_idle(opts.before, opts.idle)
    if opts.only in (None, "slow"):
        run_slow(opts.before)


if __name__ == "__main__":
    main()
