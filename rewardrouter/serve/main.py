"""Serve a compiled router until SIGINT / SIGTERM: the server side of ``rewardrouter serve``.

:func:`add_serve_arguments` declares the server's own flags, :func:`run_server` serves a router
with them; the command (``rewardrouter.cli.serve``) reads the router as every command does::

    rewardrouter serve --config my_router.yaml --port 8000
    rewardrouter serve router=mixed default_route=gsm8k --port 8000
    REWARD_TOKEN=... rewardrouter serve --config my_router.yaml --auth-env REWARD_TOKEN
    rewardrouter serve --config my_router.yaml --max-connections 1024 --header-timeout 5

Prints ``rewardrouter serve: listening on http://HOST:PORT`` once the scoring processes have
compiled the router and the socket is bound (``--port 0`` takes any free port, and that line says
which). A port that cannot be bound (in use, privileged, a host not of this machine) exits with status 1
with an error naming the option, its value and what to do, and so does a server whose scoring
process died and could not be started again (the cause is printed). The connection bounds and
the small-request lane are :class:`~rewardrouter.serve.options.ServeOptions`, one flag each; a
default ``--max-connections`` that the open-file limit cannot hold is lowered (a line on stderr
says so), a given one is an error.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable
from dataclasses import fields
from typing import Literal, TypeVar

from aiohttp import web

from rewardrouter.config.models import RouterConfig
from rewardrouter.errors import ConfigError, Problem
from rewardrouter.serve.app import MAX_REQUEST_MB, SCORING, make_app, size_problem
from rewardrouter.serve.guard import (
    GUARD,
    GuardedSite,
    MalformedRequests,
    connection_cap,
    hard_cap_problem,
)
from rewardrouter.serve.options import (
    FLAGS,
    KIND_TEXT,
    ServeOptions,
    default_of,
    flag_of,
    option_problem,
)
from rewardrouter.serve.process import ScoringFailed
from rewardrouter.serve.scoring import Served

T = TypeVar("T")

#: What to do about a port that cannot be used.
_PORT_HINT = "pass another --port, e.g. --port 8000, or --port 0 for any free port"
_HOST_HINT = "pass --host 127.0.0.1 (this machine only) or --host 0.0.0.0 (every interface)"


def port_problem(port: object, given: str | None = None) -> str | None:
    """Why ``port`` (written ``given`` on the command line) cannot be a TCP port (None: it
    can)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        return (
            f"{given or repr(port)} is not a port: expected a whole number from 0 to 65535; "
            f"{_PORT_HINT}"
        )
    return None


def _option(
    convert: Callable[[str], T], problem_of: Callable[[object, str], str | None]
) -> Callable[[str], T]:
    """An argparse ``type``: ``text`` converted, or the option's own message of what is wrong
    (argparse would say only "invalid value")."""

    def parse(text: str) -> T:
        try:
            value: object = convert(text)
        except ValueError:
            value = text
        problem = problem_of(value, text)
        if problem is not None:
            raise argparse.ArgumentTypeError(problem)
        return convert(text)

    return parse


_port = _option(int, port_problem)
_megabytes = _option(float, size_problem)


def _bound(name: str) -> Callable[[str], float]:
    """The argparse ``type`` of :class:`ServeOptions` field ``name``."""

    def problem(value: object, given: str) -> str | None:
        found = option_problem(value, name, given)
        if found is None and name == "max_connections":
            assert isinstance(value, int)
            found = hard_cap_problem(value)  # before the router compiles
        return None if found is None else f"{found.message}; {found.hint}"

    return _option(int if FLAGS[name].kind == "count" else float, problem)


def _option_help(name: str) -> str:
    """The ``--help`` of :class:`ServeOptions` field ``name``, its default included."""
    flag = FLAGS[name]
    default = f"{default_of(name):g}"
    if flag.lowered_from is not None:
        default += ", lowered to what `ulimit -n` allows"
    return f"{flag.help} (default {default})"


def listen_error(host: str, port: int, exc: OSError) -> str:
    """The error of a socket that cannot listen on ``host:port``: which option, its value and
    what to do."""
    if isinstance(exc, socket.gaierror):
        return f"--host {host}: no such host or address ({exc.strerror}); {_HOST_HINT}"
    if exc.errno == errno.EADDRINUSE:
        return f"--port {port}: {host}:{port} is in use by another program; {_PORT_HINT}"
    if exc.errno == errno.EACCES:
        return (
            f"--port {port}: permission denied: ports below 1024 need administrator rights; "
            f"{_PORT_HINT}"
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"--host {host}: not an address of this machine; {_HOST_HINT}"
    return (
        f"--host {host} --port {port}: cannot listen there: {exc.strerror or exc}; check both, "
        f"or {_PORT_HINT}"
    )


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """The server's own flags: ``--host``, ``--port``, ``--auth-env``, ``--max-request-mb``,
    and one per :class:`~rewardrouter.serve.options.ServeOptions` field (its connection bounds
    and the small-request lane)."""
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=_port, default=8000, help="port (default 8000; 0: any free)")
    parser.add_argument(
        "--auth-env",
        metavar="NAME",
        help="environment variable holding a token that every request but /health must send as "
        "`Authorization: Bearer <token>` (default: no authentication)",
    )
    parser.add_argument(
        "--protocol",
        choices=("reward", "nemo-gym"),
        default="reward",
        help="reward: /reward and /batch (slime, OpenRLHF, a remote term); nemo-gym: also a NeMo "
        "Gym resources server's POST /verify and /seed_session, each request routed by its "
        "row's fields as metadata (default reward)",
    )
    parser.add_argument(
        "--label-field",
        default="expected_answer",
        metavar="NAME",
        help="--protocol nemo-gym: the verify request field that holds the label ('' for none; "
        "default expected_answer, as NeMo Gym's resources servers name it)",
    )
    parser.add_argument(
        "--max-request-mb",
        type=_megabytes,
        default=MAX_REQUEST_MB,
        help=f"largest request body in MiB; larger ones get 413 (default {MAX_REQUEST_MB:g})",
    )
    for field in fields(ServeOptions):
        parser.add_argument(
            flag_of(field.name),
            type=_bound(field.name),
            default=field.default,
            metavar=KIND_TEXT[FLAGS[field.name].kind].metavar,
            help=_option_help(field.name),
        )


def options_from(args: argparse.Namespace) -> ServeOptions:
    """The :class:`ServeOptions` of parsed :func:`add_serve_arguments` flags."""
    return ServeOptions(**{f.name: getattr(args, f.name) for f in fields(ServeOptions)})


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
    options: ServeOptions | None = None,
    *,
    stop: asyncio.Event | None = None,
    listening: Callable[[str], None] | None = None,
    protocol: Literal["reward", "nemo-gym"] = "reward",
    served: Served | None = None,
) -> None:
    """Serve the router of ``config`` on ``host:port`` until SIGINT or SIGTERM (or, given
    ``stop``, until it is set: then no signal handler is installed, and the server may run on
    any thread). ``listening`` is called with the base URL once the socket is bound.
    ``protocol`` and ``served``: see :func:`~rewardrouter.serve.app.make_app`.

    Raises :class:`~rewardrouter.ConfigError` when the router does not compile, ``port`` is
    not a port or ``options.max_connections`` does not fit the open-file limit,
    :class:`OSError` when the socket cannot listen (:func:`listen_error` words it), and
    :class:`~rewardrouter.serve.process.ScoringFailed` (after stopping) when a scoring
    process died and could not be started again.
    """
    problem = port_problem(port)
    if problem is not None:
        raise ConfigError([Problem("port", problem)])
    options = options or ServeOptions()
    cap, note = connection_cap(options.max_connections)
    app = make_app(
        config,
        token=token,
        max_request_mb=max_request_mb,
        options=options,
        cap=cap,
        protocol=protocol,
        served=served,
    )
    runner = web.AppRunner(app, shutdown_timeout=5.0, keepalive_timeout=options.keep_alive_timeout)
    if stop is None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):  # from the start: the scoring process
            loop.add_signal_handler(signum, stop.set)  # too is stopped by the cleanup below
    await runner.setup()
    scoring = app[SCORING]
    malformed = MalformedRequests(app[GUARD])
    logging.getLogger("aiohttp.server").addFilter(malformed)
    try:
        if not stop.is_set():
            await GuardedSite(runner, host, port, app[GUARD]).start()
            bound_host, bound_port = runner.addresses[0][:2]
            url = f"http://{bound_host}:{bound_port}"
            if note is not None:  # on stderr: the first line of stdout stays `listening on`
                print(f"rewardrouter serve: {note}", file=sys.stderr, flush=True)
            print(f"rewardrouter serve: listening on {url}", flush=True)
            if listening is not None:
                listening(url)
            stopping = asyncio.create_task(stop.wait())
            failing = asyncio.create_task(scoring.failed.wait())
            await asyncio.wait({stopping, failing}, return_when=asyncio.FIRST_COMPLETED)
            stopping.cancel()
            failing.cancel()
    finally:
        await runner.cleanup()
        logging.getLogger("aiohttp.server").removeFilter(malformed)
    if scoring.failure is not None:
        raise ScoringFailed(scoring.failure)


def run_server(config: RouterConfig, args: argparse.Namespace) -> int:
    """Serve the router of ``config`` with the flags of :func:`add_serve_arguments`; the exit
    status (1 when the port cannot be bound, or a scoring process could not be started again).
    Raises :class:`~rewardrouter.ConfigError` for an ``--auth-env`` that holds no token, a
    ``--max-connections`` over the open-file limit, or a router that does not compile."""
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s: %(message)s"
    )
    token = token_from(args.auth_env)
    options = options_from(args)
    try:
        served = Served(label_field=args.label_field or None)
        asyncio.run(
            serve(
                config,
                args.host,
                args.port,
                token,
                args.max_request_mb,
                options,
                protocol=args.protocol,
                served=served,
            )
        )
    except OSError as exc:
        print(f"error: {listen_error(args.host, args.port, exc)}", file=sys.stderr)
        return 1
    except ScoringFailed as exc:
        print(f"error: the server stopped: {exc}", file=sys.stderr)
        return 1
    return 0
