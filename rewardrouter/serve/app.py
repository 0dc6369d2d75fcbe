"""The router behind HTTP: slime's ``remote_rm`` endpoint, a batch endpoint, a health check.

::

    POST /reward   {"prompt": ..., "response": "...", "label": ..., "metadata": {...}}  →  1.0
    POST /reward   {"query": [...], "prompts": [...], "labels": [...]}  →  {"rewards": [...], ...}
    POST /batch    [{"response": ...}, {"response": ...}]                              →  [1.0, 0.0]
    GET  /health                                                         →  {"status": "ok", ...}

``/reward`` takes exactly what slime's ``remote_rm`` posts (``prompt``, ``response``, ``label``;
``metadata`` is optional), so ``--rm-type remote_rm --rm-url http://HOST:PORT/reward`` scores with
the router and no code. slime sends no metadata: such samples go to the config's
``default_route``. ``/reward`` also answers OpenRLHF's ``--reward.remote_url`` body (lists
``query``, ``prompts``, ``labels``) with ``{"rewards": [...], "scores": [...], "extra_logs":
{...}}``, reading each label as :mod:`rewardrouter.integrations.openrlhf` does (a JSON-object
label carries the route). A ``remote`` term with ``batch: true`` posting to ``/batch`` gets one reward
per sample, in order.

``/reward`` replies with the reward, a number (what slime's ``remote_rm`` reads), or with a
JSON object ``{"error": message, "status": ...}`` and a 4xx status; ``/batch`` replies 200 with
one entry per sample: the reward, ``null`` when no term applied (or ``on_error: skip`` skipped a
failure), or ``{"error": message, "status": ...}`` for that sample alone. The statuses:

- 400: the body is not JSON or not the shape above, or the sample cannot be routed (in a batch:
  that sample's entry, status ``unroutable``);
- 422: a reward call failed under ``on_error: raise`` (the message names the sample, route and
  term), or ``/reward`` got no reward for the sample (no term applied, or ``on_error: skip``):
  slime's client needs a number, so the fix is an ``on_error: {value: x}`` fallback;
- 401: the server was started with a token (``--auth-env``) and the request does not carry it
  as ``Authorization: Bearer <token>``;
- 404 / 405: no such endpoint, or the wrong method;
- 408: the body arrived slower than the server's floor (``--body-timeout``,
  ``--min-body-rate-kb``), or the request head took longer than ``--header-timeout``; the
  connection is closed after the reply;
- 413: the body is larger than ``max_request_mb``;
- 500: anything unexpected;
- 503: the scoring process died while scoring the request (the message says how; the server
  starts a new one), or no scoring process could be started again; or (before any request is
  read, then closed) the server is at its ``--max-connections`` cap with a request in progress
  on every connection.

No request stops the server.

This process only reads bodies as bytes, hands them to a scoring process
(:mod:`rewardrouter.serve.process`) and writes the replies it gets back: decoding, routing,
scoring and encoding happen there (:mod:`rewardrouter.serve.scoring`), so a grader that holds
the interpreter, or the garbage collector of a large batch, never delays ``/health``, which this
process answers by itself (503 while a new scoring process starts, or when none could). Small
bodies go to a scoring process of their own, so that a large batch never delays them
(:mod:`rewardrouter.serve.lanes`); idle, slow and surplus connections are closed by the
connection guard (:mod:`rewardrouter.serve.guard`).
"""

from __future__ import annotations

import hmac
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal

from aiohttp import web

from rewardrouter.config.load import validate
from rewardrouter.config.models import RouterConfig
from rewardrouter.errors import ConfigError, Problem
from rewardrouter.serve.guard import (
    GUARD,
    BodyTooSlow,
    ConnectionGuard,
    connection_cap,
    read_body,
    track_requests,
)
from rewardrouter.serve.lanes import ScoringLanes
from rewardrouter.serve.options import ServeOptions
from rewardrouter.serve.process import ScoringFailed
from rewardrouter.serve.scoring import BATCH, REWARD, VERIFY, Served

log = logging.getLogger("rewardrouter.serve")

#: Requests larger than this many MiB get 413 (batches of judge prompts can be large; aiohttp's
#: own default is 1 MiB).
MAX_REQUEST_MB = 64.0

CONFIG = web.AppKey("config", RouterConfig)
SCORING = web.AppKey("scoring", ScoringLanes)
TOKEN = web.AppKey("token", str)
LIMIT_MB = web.AppKey("limit_mb", float)
#: ``LIMIT_MB`` in bytes, the limit :func:`~rewardrouter.serve.guard.read_body` reads under.
LIMIT_BYTES = web.AppKey("limit_bytes", int)
OPTIONS = web.AppKey("options", ServeOptions)


def error_reply(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


async def _scored(request: web.Request, endpoint: int) -> web.Response:
    """The scoring process's reply to the request's body (read within the body deadline)."""
    body = await read_body(request, request.app[OPTIONS], request.app[LIMIT_BYTES])
    status, reply = await request.app[SCORING].score(endpoint, body)
    return web.Response(body=reply, status=status, content_type="application/json")


async def reward(request: web.Request) -> web.Response:
    """slime's ``remote_rm``: one sample in, its reward (a number) out, anything else a 4xx; or
    OpenRLHF's batch body."""
    return await _scored(request, REWARD)


async def batch(request: web.Request) -> web.Response:
    """A JSON list of samples in, one entry per sample out (same length and order)."""
    return await _scored(request, BATCH)


async def verify(request: web.Request) -> web.Response:
    """A NeMo Gym resources server's ``/verify`` (``--protocol nemo-gym``)."""
    return await _scored(request, VERIFY)


async def seed_session(request: web.Request) -> web.Response:
    """A NeMo Gym resources server's ``/seed_session``, which NeMo Gym's agents call before a
    rollout: the router keeps no session, so the body is not read (its size still bounded) and
    the reply is empty, as NeMo Gym's own servers answer without state."""
    await read_body(request, request.app[OPTIONS], request.app[LIMIT_BYTES])
    return web.json_response({})


async def health(request: web.Request) -> web.Response:
    """Liveness, answered by this process alone; the routes only for an authorized caller."""
    scoring = request.app[SCORING]
    problem = scoring.failure or scoring.restarting
    status = "failed" if scoring.failure else "restarting" if problem else "ok"
    body: dict[str, Any] = {"status": status}
    if _authorized(request):
        config = request.app[CONFIG]
        body.update(routes=sorted(config.routes), default_route=config.default_route)
        if problem:
            body["error"] = problem
    return web.json_response(body, status=503 if problem else 200)


def _authorized(request: web.Request) -> bool:
    token = request.app.get(TOKEN)
    if token is None:
        return True
    given = request.headers.get("Authorization", "")
    scheme, _, value = given.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(value.strip(), token)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every failure becomes a JSON error reply; none escapes to stop the server."""
    try:
        if request.path != "/health" and not _authorized(request):
            return web.json_response(
                {"error": "this server needs `Authorization: Bearer <token>`"},
                status=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        return await handler(request)
    except ScoringFailed as exc:
        return error_reply(503, str(exc))
    except BodyTooSlow as exc:
        # Answered, then closed at once: aiohttp would otherwise go on reading the trickle.
        reply = error_reply(408, str(exc))
        reply.force_close()
        await reply.prepare(request)
        await reply.write_eof()
        if request.transport is not None:
            request.transport.close()
        return reply
    except ConnectionError:
        # The client left while its body was read: nobody reads this reply (aiohttp drops it
        # quietly), and a client's departure is not the server's error to log.
        return error_reply(400, "the connection was lost before the request was read")
    except web.HTTPRequestEntityTooLarge:
        limit = request.app[LIMIT_MB]
        return error_reply(
            413, f"the body is over the server's {limit:g} MiB limit (`--max-request-mb`)"
        )
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return error_reply(exc.status, exc.reason)
    except Exception as exc:
        log.exception("unexpected failure serving %s %s", request.method, request.path)
        return error_reply(500, f"internal error: {type(exc).__name__}: {exc}")


def size_problem(megabytes: object, given: str | None = None) -> str | None:
    """Why ``megabytes`` (written ``given`` on the command line) cannot be the largest request
    body (None: it can)."""
    if (
        isinstance(megabytes, bool)
        or not isinstance(megabytes, int | float)
        or not (megabytes > 0 and math.isfinite(megabytes))
    ):
        return (
            f"{given or repr(megabytes)} is not a size: expected a positive number of MiB; give one, or "
            f"leave it out for the default {MAX_REQUEST_MB:g}"
        )
    return None


def make_app(
    config: RouterConfig | Mapping[str, Any],
    *,
    token: str | None = None,
    max_request_mb: float = MAX_REQUEST_MB,
    options: ServeOptions | None = None,
    cap: int | None = None,
    protocol: Literal["reward", "nemo-gym"] = "reward",
    served: Served | None = None,
) -> web.Application:
    """The aiohttp application serving the router of ``config`` (validated here; compiled in
    the scoring processes the application starts with it and stops at its cleanup).

    ``token``: every request but ``/health`` must carry ``Authorization: Bearer <token>``.
    ``max_request_mb``: larger bodies get 413. ``options``: the body deadline, the small-request
    lane (:mod:`rewardrouter.serve.lanes`) and the connection guard that
    :class:`~rewardrouter.serve.guard.GuardedSite` serves the application through (``app[GUARD]``;
    a plain aiohttp site leaves connections unguarded). ``cap``: that guard's connection cap
    (None: :func:`~rewardrouter.serve.guard.connection_cap` of ``options.max_connections``,
    computed here). ``protocol``: ``nemo-gym`` serves NeMo Gym's resources server endpoints too
    (``POST /verify``, ``POST /seed_session``), its requests read as ``served`` says (the label's
    field). Starting the application raises :class:`~rewardrouter.ConfigError` when the
    router does not compile.
    """
    problem = size_problem(max_request_mb)
    if problem is not None:
        raise ConfigError([Problem("max_request_mb", problem)])
    if not isinstance(config, RouterConfig):
        config = validate(config, RouterConfig)
    options = options or ServeOptions()
    # No client_max_size: no handler calls request.read(); bodies are read by read_body, under
    # app[LIMIT_BYTES].
    app = web.Application(middlewares=[track_requests, json_errors])
    app[CONFIG] = config
    # Refuses a config it cannot send to a scoring process.
    app[SCORING] = ScoringLanes(config, options.small_request_bytes, served)
    app[LIMIT_MB] = max_request_mb
    app[LIMIT_BYTES] = int(max_request_mb * 2**20)
    app[OPTIONS] = options
    if cap is None:
        cap, _ = connection_cap(options.max_connections)
    app[GUARD] = ConnectionGuard(options, cap)
    if token is not None:
        app[TOKEN] = token
    app.router.add_post("/reward", reward)
    app.router.add_post("/batch", batch)
    app.router.add_get("/health", health)
    if protocol == "nemo-gym":
        app.router.add_post("/verify", verify)
        app.router.add_post("/seed_session", seed_session)

    async def start_scoring(app: web.Application) -> None:
        await app[SCORING].start()

    async def stop_scoring(app: web.Application) -> None:
        await app[SCORING].close()

    app.on_startup.append(start_scoring)
    app.on_cleanup.append(stop_scoring)
    return app
