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
- 404 / 405: no such endpoint, or the wrong method;
- 500: anything unexpected. No request ever stops the server.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rewardrouter.config.problems import problems_from_validation
from rewardrouter.errors import ConfigError, RewardError, RoutingError
from rewardrouter.results import RewardResult
from rewardrouter.router import Router
from rewardrouter.sample import Sample

log = logging.getLogger("rewardrouter.serve")

ROUTER = web.AppKey("router", Router)

#: Batches of judge prompts can be large; aiohttp's default body limit is 1 MiB.
MAX_BODY = 64 * 1024 * 1024


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


async def _json(request: web.Request) -> Any:
    body = await request.read()
    try:
        return json.loads(body)
    except ValueError as exc:
        raise BadRequest(400, f"the body is not JSON ({exc})") from None


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
    data = await _json(request)
    if isinstance(data, dict) and "query" in data:
        return await _openrlhf(request.app[ROUTER], data)
    [result] = await _score_each(request.app[ROUTER], _samples([data], batched=False))
    if isinstance(result, dict):
        status = 400 if result["status"] == "unroutable" else 422
        return web.json_response(result, status=status)
    if result.reward is None:
        why = result.error_message or "no term applied"
        return web.json_response(
            {
                "error": f"no reward for this sample (route {result.route!r}, status "
                f"{result.status}: {why}); slime's remote_rm needs a number: give the term "
                f"`on_error: {{value: x}}`, or a term that applies to such samples",
                "status": result.status,
            },
            status=422,
        )
    return web.json_response(result.reward)


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
    return web.json_response(openrlhf_reply(router, results))


async def batch(request: web.Request) -> web.Response:
    """A JSON list of samples in, one entry per sample out (same length and order): the reward,
    ``null`` when no term applied, or ``{"error", "status"}`` for a sample that could not be
    scored."""
    data = await _json(request)
    if not isinstance(data, list):
        raise BadRequest(400, f"expected a JSON list of samples, found {type(data).__name__}")
    results = await _score_each(request.app[ROUTER], _samples(data, batched=True))
    return web.json_response([r if isinstance(r, dict) else r.reward for r in results])


async def health(request: web.Request) -> web.Response:
    router = request.app[ROUTER]
    return web.json_response(
        {
            "status": "ok",
            "routes": sorted(router.routes),
            "default_route": router.config.default_route,
        }
    )


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every failure becomes a JSON error reply; none escapes to stop the server."""
    try:
        return await handler(request)
    except BadRequest as exc:
        return error_reply(exc.status, str(exc))
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return error_reply(exc.status, exc.reason)
    except Exception as exc:
        log.exception("unexpected failure serving %s %s", request.method, request.path)
        return error_reply(500, f"internal error: {type(exc).__name__}: {exc}")


def make_app(router: Router) -> web.Application:
    """The aiohttp application serving ``router``; the caller owns (and closes) the router."""
    app = web.Application(middlewares=[json_errors], client_max_size=MAX_BODY)
    app[ROUTER] = router
    app.router.add_post("/reward", reward)
    app.router.add_post("/batch", batch)
    app.router.add_get("/health", health)
    return app
