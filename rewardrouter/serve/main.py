"""Serve a compiled router until SIGINT / SIGTERM: the server side of ``rewardrouter serve``.

:func:`add_serve_arguments` declares the server's own flags, :func:`run_server` serves a router
with them; the command (``rewardrouter.cli.serve``) reads the router as every command does::

    rewardrouter serve --config my_router.yaml --port 8000
    rewardrouter serve router=mixed default_route=gsm8k --port 8000
    REWARD_TOKEN=... rewardrouter serve --config my_router.yaml --auth-env REWARD_TOKEN

Prints ``rewardrouter serve: listening on http://HOST:PORT`` once the scoring process has
compiled the router and the socket is bound (``--port 0`` takes any free port, and that line says
which). A port that cannot be bound exits with status 1, and so does a server whose scoring
process died and could not be started again (the cause is printed).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import math
import os
import signal
import sys

from aiohttp import web

from rewardrouter.config.models import RouterConfig
from rewardrouter.errors import ConfigError, Problem
from rewardrouter.serve.app import MAX_REQUEST_MB, SCORING, make_app
from rewardrouter.serve.process import ScoringFailed


def _port(text: str) -> int:
    port = int(text)
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port: expected 0 to 65535")
    return port


def _megabytes(text: str) -> float:
    value = float(text)
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"{text} is not a size: expected a positive number")
    return value


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """The server's own flags: ``--host``, ``--port``, ``--auth-env``, ``--max-request-mb``."""
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=_port, default=8000, help="port (default 8000; 0: any free)")
    parser.add_argument(
        "--auth-env",
        metavar="NAME",
        help="environment variable holding a token that every request but /health must send as "
        "`Authorization: Bearer <token>` (default: no authentication)",
    )
    parser.add_argument(
        "--max-request-mb",
        type=_megabytes,
        default=MAX_REQUEST_MB,
        help=f"largest request body in MiB; larger ones get 413 (default {MAX_REQUEST_MB:g})",
    )


def token_from(name: str | None) -> str | None:
    """The token in environment variable ``name`` (None: no authentication).

    Raises :class:`~rewardrouter.ConfigError` when the variable is unset or blank.
    """
    if name is None:
        return None
    token = os.environ.get(name, "").strip()
    if not token:
        raise ConfigError(
            [
                Problem(
                    "--auth-env",
                    f"environment variable {name!r} is {'blank' if name in os.environ else 'not set'}",
                    f"export {name}=<token> before starting the server, or drop --auth-env to "
                    f"serve without authentication",
                )
            ]
        )
    return token


async def serve(
    config: RouterConfig,
    host: str,
    port: int,
    token: str | None = None,
    max_request_mb: float = MAX_REQUEST_MB,
) -> None:
    """Serve the router of ``config`` on ``host:port`` until SIGINT or SIGTERM.

    Raises :class:`~rewardrouter.ConfigError` when the router does not compile, and
    :class:`~rewardrouter.serve.process.ScoringFailed` (after stopping) when its scoring process
    died and could not be started again.
    """
    app = make_app(config, token=token, max_request_mb=max_request_mb)
    runner = web.AppRunner(app, shutdown_timeout=5.0)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):  # from the start: the scoring process too
        loop.add_signal_handler(signum, stop.set)  # is stopped by the cleanup below
    await runner.setup()
    scoring = app[SCORING]
    try:
        if not stop.is_set():
            await web.TCPSite(runner, host, port).start()
            bound_host, bound_port = runner.addresses[0][:2]
            print(f"rewardrouter serve: listening on http://{bound_host}:{bound_port}", flush=True)
            stopping = asyncio.create_task(stop.wait())
            failing = asyncio.create_task(scoring.failed.wait())
            await asyncio.wait({stopping, failing}, return_when=asyncio.FIRST_COMPLETED)
            stopping.cancel()
            failing.cancel()
    finally:
        await runner.cleanup()
    if scoring.failure is not None:
        raise ScoringFailed(scoring.failure)


def run_server(config: RouterConfig, args: argparse.Namespace) -> int:
    """Serve the router of ``config`` with the flags of :func:`add_serve_arguments`; the exit
    status (1 when the port cannot be bound, or the scoring process could not be started again).
    Raises :class:`~rewardrouter.ConfigError` for an ``--auth-env`` that holds no token, or a
    router that does not compile."""
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s: %(message)s"
    )
    token = token_from(args.auth_env)
    try:
        asyncio.run(serve(config, args.host, args.port, token, args.max_request_mb))
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    except ScoringFailed as exc:
        print(f"error: the server stopped: {exc}", file=sys.stderr)
        return 1
    return 0
