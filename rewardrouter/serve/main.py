"""``rewardrouter serve``: load a router YAML, compile it, and serve it until SIGINT / SIGTERM.

    rewardrouter serve --config my_router.yaml --port 8000
    rewardrouter serve router=mixed default_route=gsm8k --port 8000

The router is read as by every other command: ``--config FILE`` or ``router=NAME``, then
``key=value`` overrides.

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

from rewardrouter.cli.compose import add_config_arguments, router_config
from rewardrouter.router import Router, compile_router
from rewardrouter.serve.app import make_app


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rewardrouter serve",
        description="Serve a reward router over HTTP: POST /reward (slime's remote_rm body), "
        "POST /batch (a list of samples), GET /health.",
    )
    add_config_arguments(parser)
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000; 0: any free)")
    return parser


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


def serve_main(argv: list[str]) -> int:
    """The ``serve`` subcommand; returns the exit status.

    Raises :class:`~rewardrouter.ConfigError` for a config that does not load or compile (the
    command line prints it without a traceback).
    """
    args = _parser().parse_intermixed_args(argv)
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s: %(message)s"
    )
    with compile_router(router_config(args.config, args.overrides)) as router:
        try:
            asyncio.run(serve(router, args.host, args.port))
        except OSError as exc:
            print(f"error: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
            return 1
    return 0
