"""The compiled router behind HTTP: slime's ``remote_rm`` endpoint, a batch endpoint, a health check.

::

    POST /reward   {"prompt": ..., "response": "...", "label": ..., "metadata": {...}}  →  1.0
    POST /reward   {"query": [...], "prompts": [...], "labels": [...]}  →  {"rewards": [...], ...}
    POST /batch    [{"response": ...}, {"response": ...}]                              →  [1.0, 0.0]
    GET  /health                                                         →  {"status": "ok", ...}

``/reward`` takes exactly what slime's ``remote_rm`` posts (``prompt``, ``response``, ``label``;
``metadata`` is optional), so ``--rm-type remote_rm --rm-url http://HOST:PORT/reward`` scores with
the router and no code. slime sends no metadata: such samples go to the config's
``default_route``. ``/reward`` also answers OpenRLHF's ``--remote_rm_url`` body (lists
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
- 413: the body is larger than ``max_request_mb``;
- 500: anything unexpected. No request ever stops the server.

Requests are scored off the server's event loop, on a scoring thread with a loop of its own:
decoding a large body, routing and scoring it, encoding the reply. A JSON list is decoded
element by element and a long reply encoded in slices, so no single call holds the interpreter
for long, and ``/health`` answers during any request.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import re
import threading
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rewardrouter.config.problems import problems_from_validation
from rewardrouter.errors import ConfigError, RewardError, RoutingError
from rewardrouter.results import RewardResult
from rewardrouter.router import Router
from rewardrouter.sample import Sample

log = logging.getLogger("rewardrouter.serve")

T = TypeVar("T")

#: Requests larger than this many MiB get 413 (batches of judge prompts can be large; aiohttp's
#: own default is 1 MiB).
MAX_REQUEST_MB = 64.0
#: Elements of a JSON list decoded, or encoded, per call.
SLICE = 10_000


class Scoring:
    """A thread with an event loop of its own, where requests are decoded, scored and encoded:
    the server's loop only reads bodies and writes replies, so it always answers."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="rewardrouter-serve-scoring", daemon=True
        )
        self._thread.start()

    async def run(self, work: Coroutine[Any, Any, T]) -> T:
        """Await ``work`` run on the scoring loop."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, self._loop))

    def close(self) -> None:
        """Stop the loop once the work on it is done (the server has stopped taking requests)."""

        async def finish() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            await asyncio.gather(*tasks, return_exceptions=True)
            await self._loop.shutdown_asyncgens()
            self._loop.stop()

        asyncio.run_coroutine_threadsafe(finish(), self._loop)
        self._thread.join()
        self._loop.close()


ROUTER = web.AppKey("router", Router)
SCORING = web.AppKey("scoring", Scoring)
TOKEN = web.AppKey("token", str)
LIMIT_MB = web.AppKey("limit_mb", float)


class RewardRequest(BaseModel):
    """One sample as a client posts it; the fields of slime's ``remote_rm`` body."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt: Any = ""
    response: str
    label: Any = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class BadRequest(Exception):
    """A request the server cannot score: replied to with ``status`` and a JSON error."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def error_reply(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


_SPACE = re.compile(r"[ \t\n\r]*")


def _skip(text: str, at: int) -> int:
    """The first position at or after ``at`` that is not JSON whitespace."""
    return _SPACE.match(text, at).end()  # type: ignore[union-attr]  # `*` always matches


def decode(body: bytes) -> Any:
    """The JSON value of a request body; a list is decoded element by element.

    Raises :class:`BadRequest` (400) for a body that is not UTF-8 JSON or nests deeper than the
    decoder can follow.

    >>> decode(b' [1, {"a": [2]} ,3] ')
    [1, {'a': [2]}, 3]
    """
    try:
        text = body.decode()
        start = _skip(text, 0)
        return _list(text, start) if text.startswith("[", start) else json.loads(text)
    except UnicodeDecodeError as exc:
        raise BadRequest(400, f"the body is not UTF-8 ({exc})") from None
    except ValueError as exc:
        raise BadRequest(400, f"the body is not JSON ({exc})") from None
    except RecursionError:
        raise BadRequest(400, "the body nests JSON too deeply to be read") from None


def _list(text: str, start: int) -> list[Any]:
    """The JSON list at ``text[start]`` (``[``), read one element per decoder call."""
    decoder = json.JSONDecoder()
    items: list[Any] = []
    at = _skip(text, start + 1)
    if text.startswith("]", at):
        at += 1
    else:
        while True:
            item, at = decoder.raw_decode(text, at)
            items.append(item)
            at = _skip(text, at)
            if text.startswith(",", at):
                at = _skip(text, at + 1)
            elif text.startswith("]", at):
                at += 1
                break
            else:
                raise json.JSONDecodeError("Expecting ',' delimiter", text, at)
    if _skip(text, at) != len(text):
        raise json.JSONDecodeError("Extra data", text, at)
    return items


def encode(value: Any) -> bytes:
    """``value`` as JSON; a long list in slices (see :func:`decode`)."""
    if not isinstance(value, list) or len(value) <= SLICE:
        return json.dumps(value).encode()
    parts = (json.dumps(value[i : i + SLICE])[1:-1] for i in range(0, len(value), SLICE))
    return ("[" + ",".join(parts) + "]").encode()


def reply(value: Any, status: int = 200) -> web.Response:
    return web.Response(body=encode(value), status=status, content_type="application/json")


def _samples(items: list[Any], batched: bool) -> list[Sample]:
    """The samples of a request's objects; every problem of every object is reported."""
    samples: list[Sample] = []
    problems: list[str] = []
    for i, item in enumerate(items):
        prefix: list[str | int] = [i] if batched else []
        if not isinstance(item, dict):
            at = f"[{i}]: " if batched else ""
            found = type(item).__name__
            problems.append(f"{at}expected a JSON object with `response`, found {found}")
            continue
        try:
            request = RewardRequest.model_validate(item)
        except ValidationError as exc:
            problems += map(str, problems_from_validation(exc, item, RewardRequest, prefix))
            continue
        samples.append(Sample(**request.model_dump()))
    if problems:
        raise BadRequest(400, "; ".join(problems))
    return samples


async def _score(router: Router, samples: list[Sample]) -> Sequence[RewardResult]:
    try:
        results = await router.score(samples)
    except RoutingError as exc:
        raise BadRequest(400, str(exc)) from None
    except RewardError as exc:
        raise BadRequest(422, str(exc)) from None
    for i, result in enumerate(results):
        if result.failed:
            log.warning(
                "sample %d, route %r: %s (%s); replied %s under on_error",
                i,
                result.route,
                result.status,
                result.error_message,
                result.reward,
            )
    return results


async def _score_each(router: Router, samples: list[Sample]) -> list[RewardResult | dict[str, str]]:
    """Each sample's result, or ``{"error", "status"}`` for one that could not be scored (no
    route, no response, or a failed call of an ``on_error: raise`` term): one sample's problem
    never fails the others."""
    problems = dict(router.check(samples, post_process=False))
    scorable = [s for i, s in enumerate(samples) if i not in problems]
    scored = await router.score(scorable, failures="record")
    raised = set(scored.failures)
    results = iter(enumerate(scored))
    out: list[RewardResult | dict[str, str]] = []
    for i in range(len(samples)):
        if i in problems:
            out.append({"error": f"sample {i}: {problems[i]}", "status": "unroutable"})
            continue
        j, result = next(results)
        if result.failed:
            log.warning(
                "sample %d, route %r: %s (%s); replied %s",
                i,
                result.route,
                result.status,
                result.error_message,
                result.reward,
            )
        if j in raised:
            message = f"sample {i}, route {result.route!r}: {result.error_message}"
            out.append({"error": message, "status": result.status})
        else:
            out.append(result)
    return out


async def reward(request: web.Request) -> web.Response:
    """slime's ``remote_rm``: one sample in, its reward (a number) out, anything else a 4xx; or
    OpenRLHF's batch body."""
    body = await request.read()
    return await request.app[SCORING].run(_reward(request.app[ROUTER], body))


async def _reward(router: Router, body: bytes) -> web.Response:
    data = decode(body)
    if isinstance(data, dict) and "query" in data:
        return await _openrlhf(router, data)
    [result] = await _score_each(router, _samples([data], batched=False))
    if isinstance(result, dict):
        status = 400 if result["status"] == "unroutable" else 422
        return reply(result, status)
    if result.reward is None:
        why = result.error_message or "no term applied"
        return reply(
            {
                "error": f"no reward for this sample (route {result.route!r}, status "
                f"{result.status}: {why}); slime's remote_rm needs a number: give the term "
                f"`on_error: {{value: x}}`, or a term that applies to such samples",
                "status": result.status,
            },
            422,
        )
    return reply(result.reward)


async def _openrlhf(router: Router, data: dict[str, Any]) -> web.Response:
    """OpenRLHF's ``{"query", "prompts", "labels"}`` body (see the openrlhf integration)."""
    from rewardrouter.integrations._route_shaping import OPENRLHF, check_route_shaping
    from rewardrouter.integrations.openrlhf import openrlhf_reply, openrlhf_samples

    queries, prompts, labels = data.get("query"), data.get("prompts"), data.get("labels")
    if not isinstance(queries, list) or not isinstance(prompts, list):
        raise BadRequest(400, "OpenRLHF's body needs lists `query` and `prompts` (and `labels`)")
    if labels is not None and not isinstance(labels, list):
        raise BadRequest(400, f"`labels` must be a list, found {type(labels).__name__}")
    if len(prompts) != len(queries) or (labels is not None and len(labels) != len(queries)):
        raise BadRequest(400, "`query`, `prompts` and `labels` must have one entry per sample")
    try:
        check_route_shaping(router, OPENRLHF)
    except ConfigError as exc:
        raise BadRequest(400, str(exc)) from None
    results = await _score(router, openrlhf_samples(queries, prompts, labels))
    return reply(openrlhf_reply(router, results))


async def batch(request: web.Request) -> web.Response:
    """A JSON list of samples in, one entry per sample out (same length and order): the reward,
    ``null`` when no term applied, or ``{"error", "status"}`` for a sample that could not be
    scored."""
    body = await request.read()
    return await request.app[SCORING].run(_batch(request.app[ROUTER], body))


async def _batch(router: Router, body: bytes) -> web.Response:
    data = decode(body)
    if not isinstance(data, list):
        raise BadRequest(400, f"expected a JSON list of samples, found {type(data).__name__}")
    results = await _score_each(router, _samples(data, batched=True))
    return reply([r if isinstance(r, dict) else r.reward for r in results])


async def health(request: web.Request) -> web.Response:
    """Liveness, answered on the server's own loop; the routes only for an authorized caller."""
    if not _authorized(request):
        return web.json_response({"status": "ok"})
    router = request.app[ROUTER]
    return web.json_response(
        {
            "status": "ok",
            "routes": sorted(router.routes),
            "default_route": router.config.default_route,
        }
    )


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
    except BadRequest as exc:
        return error_reply(exc.status, str(exc))
    except web.HTTPRequestEntityTooLarge:
        limit = request.app[LIMIT_MB]
        return error_reply(
            413, f"the body is over the server's {limit:g} MiB limit (`--max-request-mb`)"
        )
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return error_reply(exc.status, exc.reason)
    except RecursionError:  # a sample nested deeper than some step can follow
        return error_reply(400, "the request nests data too deeply to be scored")
    except Exception as exc:
        log.exception("unexpected failure serving %s %s", request.method, request.path)
        return error_reply(500, f"internal error: {type(exc).__name__}: {exc}")


def make_app(
    router: Router, *, token: str | None = None, max_request_mb: float = MAX_REQUEST_MB
) -> web.Application:
    """The aiohttp application serving ``router``; the caller owns (and closes) the router.

    ``token``: every request but ``/health`` must carry ``Authorization: Bearer <token>``.
    ``max_request_mb``: larger bodies get 413.
    """
    app = web.Application(middlewares=[json_errors], client_max_size=int(max_request_mb * 2**20))
    app[ROUTER] = router
    app[LIMIT_MB] = max_request_mb
    if token is not None:
        app[TOKEN] = token
    app.router.add_post("/reward", reward)
    app.router.add_post("/batch", batch)
    app.router.add_get("/health", health)

    async def start_scoring(app: web.Application) -> None:
        app[SCORING] = Scoring()

    async def stop_scoring(app: web.Application) -> None:
        await asyncio.get_running_loop().run_in_executor(None, app[SCORING].close)

    app.on_startup.append(start_scoring)
    app.on_cleanup.append(stop_scoring)
    return app
