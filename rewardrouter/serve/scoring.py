"""What the scoring process does with a request body: decode it, check it, score it, encode the
reply. :func:`answer` takes the body as bytes and gives the HTTP status and the JSON reply as
bytes; nothing here touches HTTP (the server's own process does that, see
:mod:`rewardrouter.serve.process`).

Every error a reply carries is bounded, whatever the body holds: a request refused whole names
its first :data:`LISTED` problems and counts the rest, each problem cut to :data:`PROBLEM_CHARS`
characters, the whole message to :data:`ERROR_CHARS`; in a ``/batch`` reply each sample's
error is cut to :data:`PROBLEM_CHARS`, and once :data:`ERRORS_IN_FULL` characters of them are
written, the rest name their sample and status only. So the errors of a reply cost at most
about a hundred bytes per sample beyond a fixed allowance (a body of bare numbers once drew an
error 30 times its size, listing every one).

>>> import asyncio
>>> from rewardrouter import compile_router
>>> with compile_router({"default_route": "qa",
...                      "routes": {"qa": {"rewards": {"c": {"kind": "exact_match"}}}}}) as router:
...     asyncio.run(answer(router, BATCH, b'[{"response": "Paris", "label": "Paris"}, 7]'))
(400, b'{"error": "[1]: expected a JSON object with `response`, found int"}')
>>> with compile_router({"default_route": "qa",
...                      "routes": {"qa": {"rewards": {"c": {"kind": "exact_match"}}}}}) as router:
...     status, reply = asyncio.run(answer(router, BATCH, b"[" + b"7," * 10**5 + b"7]"))
>>> status, len(reply) < 1000, json.loads(reply)["error"][-47:]
(400, True, 'found int; and 99,996 more problems in the body')
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rewardrouter.config.problems import problems_from_validation
from rewardrouter.errors import ConfigError, RewardError, RoutingError
from rewardrouter.results import RewardResult
from rewardrouter.router import Router
from rewardrouter.sample import Sample

log = logging.getLogger("rewardrouter.serve")

#: A request refused whole names this many of its problems (and counts the rest).
LISTED = 5
#: Characters of one problem in an error, or of one sample's error in a ``/batch`` reply.
PROBLEM_CHARS = 300
#: Characters of an error message that refuses a whole request.
ERROR_CHARS = 4_000
#: Characters of sample errors a ``/batch`` reply writes in full; past them each names its
#: sample and status only.
ERRORS_IN_FULL = 64 * 1024

#: The endpoints, as the server names them to the scoring process.
REWARD = 1  # POST /reward: one sample (slime), or OpenRLHF's body
BATCH = 2  # POST /batch: a list of samples
VERIFY = 3  # POST /verify: a NeMo Gym verify request (``--protocol nemo-gym``)


@dataclass(frozen=True)
class Served:
    """What the protocols served need beyond the router: the verify request field that holds a
    sample's label (``--label-field``; NeMo Gym's rows name it ``expected_answer``)."""

    label_field: str | None = "expected_answer"


class RewardRequest(BaseModel):
    """One sample as a client posts it; the fields of slime's ``remote_rm`` body."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt: Any = ""
    response: str | list[dict[str, Any]]  # the answer, or the conversation as chat messages
    label: Any = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class BadRequest(Exception):
    """A request the server cannot score: replied to with ``status`` and a JSON error."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def answer(
    router: Router, endpoint: int, body: bytes, served: Served | None = None
) -> tuple[int, bytes]:
    """The status and JSON reply for ``body`` posted to ``endpoint`` (:data:`REWARD` or
    :data:`BATCH` or :data:`VERIFY`, read as ``served`` says). Never raises: an unexpected
    failure is a 500 (and logged)."""
    try:
        if endpoint == VERIFY:
            status, value = await _verify(router, body, (served or Served()).label_field)
        else:
            status, value = await (_reward if endpoint == REWARD else _batch)(router, body)
    except BadRequest as exc:
        status, value = exc.status, {"error": str(exc)}
    except RecursionError:  # a sample nested deeper than some step can follow
        status, value = 400, {"error": "the request nests data too deeply to be scored"}
    except Exception as exc:
        log.exception("unexpected failure scoring a request")
        status, value = 500, {"error": f"internal error: {type(exc).__name__}: {exc}"}
    if isinstance(value, dict) and isinstance(value.get("error"), str):
        value["error"] = short(value["error"], ERROR_CHARS)
    return status, json.dumps(value).encode()


def short(text: str, size: int = PROBLEM_CHARS) -> str:
    """``text``, cut to ``size`` characters when longer (saying so).

    >>> short("x" * 500, 10)
    'xxxxxxxxxx... (cut from 500 characters)'
    """
    if len(text) <= size:
        return text
    return f"{text[:size]}... (cut from {len(text):,} characters)"


class Problems:
    """The problems of a request, as an error names them: the first :data:`LISTED` kept (each
    :func:`short`), the rest only counted, so that neither the message nor the memory it takes
    grows with the body.

    >>> found = Problems()
    >>> for i in range(8):
    ...     found.add(f"[{i}]: bad")
    >>> str(found)
    '[0]: bad; [1]: bad; [2]: bad; [3]: bad; [4]: bad; and 3 more problems in the body'
    """

    def __init__(self) -> None:
        self.first: list[str] = []
        self.count = 0

    def add(self, problem: str) -> None:
        if self.count < LISTED:
            self.first.append(short(problem))
        self.count += 1

    def __bool__(self) -> bool:
        return self.count > 0

    def __str__(self) -> str:
        shown = "; ".join(self.first)
        more = self.count - len(self.first)
        return shown if more <= 0 else f"{shown}; and {more:,} more problems in the body"


def decode(body: bytes) -> Any:
    """The JSON value of a request body.

    Raises :class:`BadRequest` (400) for a body that is not UTF-8 JSON or nests deeper than the
    decoder can follow.

    >>> decode(b' [1, {"a": [2]} ,3] ')
    [1, {'a': [2]}, 3]
    """
    try:
        return json.loads(body.decode())
    except UnicodeDecodeError as exc:
        raise BadRequest(400, f"the body is not UTF-8 ({exc})") from None
    except ValueError as exc:
        raise BadRequest(400, f"the body is not JSON ({exc})") from None
    except RecursionError:
        raise BadRequest(400, "the body nests JSON too deeply to be read") from None


def _samples(items: list[Any], batched: bool) -> list[Sample]:
    """The samples of a request's objects; every problem of every object is counted, the
    first ones named (:class:`Problems`)."""
    samples: list[Sample] = []
    problems = Problems()
    for i, item in enumerate(items):
        prefix: list[str | int] = [i] if batched else []
        if not isinstance(item, dict):
            at = f"[{i}]: " if batched else ""
            found = type(item).__name__
            problems.add(f"{at}expected a JSON object with `response`, found {found}")
            continue
        try:
            request = RewardRequest.model_validate(item)
        except ValidationError as exc:
            for problem in problems_from_validation(exc, item, RewardRequest, prefix):
                problems.add(str(problem))
            continue
        samples.append(Sample(**request.model_dump()))
    if problems:
        raise BadRequest(400, str(problems))
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


async def _one_number(router: Router, samples: list[Sample], reader: str) -> tuple[int, Any]:
    """One sample scored for a protocol whose ``reader`` needs a number: ``(200, reward)``,
    or the status and JSON of why there is none."""
    [result] = await _score_each(router, samples)
    if isinstance(result, dict):
        return (400 if result["status"] == "unroutable" else 422), result
    if result.reward is None:
        why = result.error_message or "no term applied"
        return 422, {
            "error": f"no reward for this sample (route {result.route!r}, status "
            f"{result.status}: {why}); {reader} needs a number: give the term "
            f"`on_error: {{value: x}}`, or a term that applies to such samples",
            "status": result.status,
        }
    return 200, result.reward


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
    errors = _SampleErrors()
    for i in range(len(samples)):
        if i in problems:
            out.append(errors.entry(f"sample {i}", "unroutable", problems[i]))
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
            where = f"sample {i}, route {result.route!r}"
            out.append(errors.entry(where, result.status, result.error_message or ""))
        else:
            out.append(result)
    return out


class _SampleErrors:
    """The error entries of one reply: each :func:`short`, in full until :data:`ERRORS_IN_FULL`
    characters of them are written, then naming the sample and its status only."""

    def __init__(self) -> None:
        self.written = 0

    def entry(self, where: str, status: str, message: str) -> dict[str, str]:
        """The entry of the sample ``where`` names (``sample 3``, ``sample 3, route 'qa'``)."""
        if self.written < ERRORS_IN_FULL:
            text = short(f"{where}: {message}")
            self.written += len(text)
        else:
            text = f"{where}: {status} (see the first errors)"
        return {"error": text, "status": status}


async def _reward(router: Router, body: bytes) -> tuple[int, Any]:
    """slime's ``remote_rm``: one sample in, its reward (a number) out, anything else a 4xx; or
    OpenRLHF's batch body."""
    data = decode(body)
    if isinstance(data, dict) and "query" in data:
        return await _openrlhf(router, data)
    return await _one_number(router, _samples([data], batched=False), "slime's remote_rm")


async def _openrlhf(router: Router, data: dict[str, Any]) -> tuple[int, Any]:
    """OpenRLHF's ``{"query", "prompts", "labels"}`` body (see the openrlhf integration)."""
    from rewardrouter.integrations.openrlhf import (
        openrlhf_reply,
        openrlhf_samples,
        with_unreadable,
    )
    from rewardrouter.integrations.route_shaping import OPENRLHF, check_route_shaping

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
    samples, unreadable = openrlhf_samples(queries, prompts, labels)
    readable = [s for i, s in enumerate(samples) if i not in unreadable]
    scored = await _score(router, readable) if readable else []
    results = with_unreadable(router, list(scored), unreadable)
    return 200, openrlhf_reply(router, results, samples, unreadable=unreadable)


async def _batch(router: Router, body: bytes) -> tuple[int, Any]:
    """A JSON list of samples in, one entry per sample out (same length and order): the reward,
    ``null`` when no term applied, or ``{"error", "status"}`` for a sample that could not be
    scored."""
    data = decode(body)
    if not isinstance(data, list):
        raise BadRequest(400, f"expected a JSON list of samples, found {type(data).__name__}")
    results = await _score_each(router, _samples(data, batched=True))
    return 200, [r if isinstance(r, dict) else r.reward for r in results]


async def _verify(router: Router, body: bytes, label_field: str | None) -> tuple[int, Any]:
    """A NeMo Gym resources server's ``/verify``: the request (a dataset row and the rollout's
    response) in, the request with its ``reward`` out, as NeMo Gym's client validates it; a
    sample without a reward gets a 4xx, never a made-up number."""
    from rewardrouter.rewards.nemo_gym.wire import sample_of

    data = decode(body)
    if not isinstance(data, dict):
        raise BadRequest(400, f"a verify request is a JSON object, found {type(data).__name__}")
    try:
        sample = sample_of(data, label_field)
    except ValueError as exc:
        raise BadRequest(400, str(exc)) from None
    status, reply = await _one_number(router, [sample], "NeMo Gym")
    return (status, {**data, "reward": reply}) if status == 200 else (status, reply)
