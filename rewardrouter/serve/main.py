"""Serve a compiled router until SIGINT / SIGTERM: the server side of ``rewardrouter serve``.

:func:`add_serve_arguments` declares the server's own flags, :func:`run_server` serves a router
with them; the command (``rewardrouter.cli.serve``) reads the router as every command does::

    rewardrouter serve --config my_router.yaml --port 8000
    rewardrouter serve router=mixed default_route=gsm8k --port 8000

Prints ``rewardrouter serve: listening on http://HOST:PORT`` once the socket is bound
(``--port 0`` takes any free port, and that line says which). A port that cannot be bound exits
with status 1.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from aiohttp import web

from rewardrouter.router import Router
from rewardrouter.serve.app import make_app


def _port(text: str) -> int:
    port = int(text)
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port: expected 0 to 65535")
    return port


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """The server's own flags: ``--host``, ``--port``."""
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=_port, default=8000, help="port (default 8000; 0: any free)")


async def serve(router: Router, host: str, port: int) -> None:
    """Serve ``router`` on ``host:port`` until SIGINT or SIGTERM."""
    runner = web.AppRunner(make_app(router), shutdown_timeout=5.0)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
        bound_host, bound_port = runner.addresses[0][:2]
        print(f"rewardrouter serve: listening on http://{bound_host}:{bound_port}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        await stop.wait()
    finally:
        await runner.cleanup()


def run_server(router: Router, args: argparse.Namespace) -> int:
    """Serve ``router`` with the flags of :func:`add_serve_arguments`; the exit status (1 when
    the port cannot be bound)."""
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s: %(message)s"
    )
    try:
        asyncio.run(serve(router, args.host, args.port))
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    return 0
