"""The ``remote`` reward: POST a sample (or a batch) to a reward server, with bounded retries.

Request body, as slime's ``remote_rm`` sends it (``metadata`` only with ``send_metadata``)::

    {"prompt": ..., "response": "...", "label": ..., "metadata": {...}}

The JSON reply is the reward: a number, a dict (the term's ``key`` names the training value) or
``null`` ("not applicable"); the router reads it like any reward function's return value. In
batch mode the body is a JSON list of such objects and the reply must be a list of the same
length, in order; an entry ``{"error": message}`` fails that sample alone. A batch refused as too
large (HTTP 413), or holding a sample that JSON cannot write, is split in halves down to the
sample that spoiled it.

Every request: at most ``concurrency`` in flight per term (the others wait their turn,
requesters in turn: :class:`~rewardrouter.remote.pool.Slots`), ``timeout`` seconds per attempt,
retried with jittered exponential backoff after connection errors, timeouts, 5xx and 429
(waiting what ``Retry-After`` asks), never after another 4xx, and never past the ``deadline``,
which counts from when the request has its slot, not while it waited for one. The budgets
compose: a request waits for a slot only as long as the reward call that makes it (the term's
``timeout``) can still give it its whole ``deadline``; then it goes on beyond the cap. So a
request behind slow ones loses none of its time to them, and every request ends before its
reward call's deadline. Redirects are
not followed (a POST redirected with 301-303 would come back as a body-less GET, whose reply
would be read as the reward): a 3xx is an error naming where it points. A reply is read up to
``max_reply_mb`` and no further. Failures raise the exceptions of
:mod:`rewardrouter.remote.errors`: the server's and the way's (a :class:`RemoteError`) go by
the term's ``on_error``; the sample's own (it cannot be written as JSON, or a request of it alone
is too large: a ``SampleFault``) are its status whatever ``on_error`` says.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re
from collections.abc import Sequence
from typing import Any, NamedTuple, NoReturn
from urllib.parse import quote, quote_plus

import aiohttp
from pydantic import SecretStr
from yarl import URL

from rewardrouter.execute.deadline import current_deadline
from rewardrouter.remote.errors import (
    NotJson,
    RemoteInvalid,
    RemoteRejected,
    RemoteTimeout,
    RemoteUnavailable,
    TooLarge,
    Unsendable,
)
from rewardrouter.remote.pool import SessionPool
from rewardrouter.remote.retry import backoff_delay, retry_after, retryable
from rewardrouter.remote.settings import (
    AFTER_REQUEST,
    EndpointSettings,
    RemoteSettings,
    deadline_fits,
    display_url,
)
from rewardrouter.sample import SampleLike, metadata_of

log = logging.getLogger("rewardrouter.remote")

_EXCERPT = 200


class _Failure(NamedTuple):
    """One failed attempt: what happened, and whether another attempt may help."""

    message: str
    retry: bool
    timed_out: bool = False
    wait: float | None = None  # what Retry-After asked for
    status: int | None = None  # the HTTP status of a reply


class JsonEndpoint:
    """One HTTP endpoint that takes a JSON body and answers JSON, reached through the router's
    :class:`SessionPool` with the retries, deadline and concurrency cap of its settings.

    ``await endpoint.post_json(body)`` returns the decoded reply or raises one of the
    :mod:`rewardrouter.remote.errors`. The ``remote``, ``judge`` and ``code`` (SandboxFusion)
    kinds all send their requests through this one class.

    The credential is held privately: it is sent in its header and appears in no message, log
    record or repr (server replies quoted in messages are scrubbed of it). Not picklable: it
    runs on the router's event loop, never in a worker process.
    """

    __slots__ = ("_headers", "_rng", "_secrets", "_url", "name", "pool", "settings")

    def __init__(
        self,
        settings: EndpointSettings,
        pool: SessionPool,
        credential: SecretStr | None = None,
        name: str | None = None,
    ) -> None:
        self.settings = settings
        self.pool = pool
        self.name = name or f"endpoint {display_url(settings.url)}"
        self._url = URL(settings.url)  # parsed once, not per request
        secret = credential.get_secret_value() if credential is not None else ""
        headers = {"Content-Type": "application/json", **settings.headers}
        if credential is not None:
            headers[settings.auth_header] = f"{settings.auth_scheme} {secret}".strip()
        self._headers = headers
        # The URL's user, password and query values are credentials too (`?api_key=...`).
        self._secrets = secret_pattern(
            [secret, self._url.user or "", self._url.password or "", *self._url.query.values()]
        )
        self._rng = random.Random()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def __reduce__(self) -> NoReturn:
        raise TypeError(
            f"{self!r} holds a connection pool and runs on the router's event loop; "
            "it cannot be sent to another process"
        )

    def fits(self, seconds: float) -> tuple[str, str] | None:
        """Whether ``deadline`` fits in the term's timeout ``seconds`` (checked when the router
        compiles: :class:`~rewardrouter.rewards.registry.Budgeted`)."""
        return deadline_fits(self.settings.deadline, seconds)

    async def post_json(
        self, body: Any, *, retry_timeouts: bool = True, one_sample: bool = True
    ) -> Any:
        """POST ``body`` as JSON; the decoded JSON reply.

        ``retry_timeouts=False``: an attempt that gets no reply within ``timeout`` ends the
        call (:class:`~rewardrouter.remote.errors.RemoteTimeout`) instead of being sent again,
        for a caller that splits such a request (a batch whose one input the server hangs on).
        ``one_sample``: the body carries one sample, so a 413 (too large) is that sample's
        (:class:`~rewardrouter.remote.errors.TooLarge`); for a batch it is a
        :class:`~rewardrouter.remote.errors.RemoteRejected` of ``status`` 413, to be split.
        """
        return await self._post(self._encode(body), retry_timeouts, one_sample)

    # -- one request, with retries ---------------------------------------------------------

    def _encode(self, body: Any) -> bytes:
        try:
            return json.dumps(body, ensure_ascii=False, allow_nan=False).encode()
        except UnicodeEncodeError as exc:  # a str that is not Unicode text: the sample's own
            char = ord(exc.object[exc.start]) if isinstance(exc.object, str) else 0
            raise Unsendable(
                f"cannot send the sample as JSON: it holds a lone UTF-16 surrogate "
                f"(U+{char:04X}), which is not Unicode text"
            ) from None
        except (TypeError, ValueError) as exc:
            raise NotJson(
                f"cannot send the sample as JSON: {exc}; a label or metadata value must be "
                "JSON (not a set, bytes or NaN): convert it in the dataset"
            ) from None

    async def _post(
        self, payload: bytes, retry_timeouts: bool = True, one_sample: bool = True
    ) -> Any:
        """The decoded reply to ``payload``, after at most ``retries + 1`` attempts and their
        backoff, all within ``deadline`` seconds of the request having a slot (and before the
        deadline of the reward call it runs in, :func:`~rewardrouter.execute.deadline.current_deadline`).

        The request waits for one of the endpoint's ``concurrency`` slots while that call can
        still give it its whole ``deadline`` (outside a call with a deadline: as long as it
        takes); then it goes on beyond the cap.
        """
        settings = self.settings
        here = self.pool.here()
        loop = asyncio.get_running_loop()
        call = current_deadline()
        # The call's end, less what it needs after its request (to read the reply).
        ends = None if call is None else loop.time() + call.remaining() - AFTER_REQUEST
        until = None if ends is None else ends - settings.deadline
        async with here.slots(self, settings.concurrency).slot(until) as held:
            if not held:
                log.info(
                    "%s: no free slot among `concurrency` %d while its call can still give it "
                    "its %g s deadline; sent beyond the cap",
                    self.name,
                    settings.concurrency,
                    settings.deadline,
                )
            deadline = loop.time() + settings.deadline
            what = f"the {settings.deadline:g} s deadline"
            if ends is not None and ends < deadline:
                deadline, what = ends, "its reward call's deadline"
            try:
                return await self._attempts(here.session, payload, deadline, what, retry_timeouts)
            except RemoteRejected as exc:
                if exc.status == 413 and one_sample:
                    raise TooLarge(self._refused_size(exc, len(payload))) from None
                raise

    async def _attempts(
        self,
        session: aiohttp.ClientSession,
        payload: bytes,
        deadline: float,
        what: str,
        retry_timeouts: bool,
    ) -> Any:
        """The decoded reply to ``payload`` after at most ``retries + 1`` attempts, the last
        ending by loop time ``deadline`` (``what`` names it in messages)."""
        settings = self.settings
        loop = asyncio.get_running_loop()
        attempts = settings.retries + 1
        last = _Failure("no attempt made", False)
        for attempt in range(attempts):
            budget = deadline - loop.time()
            if budget <= 0:
                tried = f"{last.message}; " if attempt else ""
                raise RemoteTimeout(f"{tried}{what} has passed")
            value, failure = await self._attempt(session, payload, min(settings.timeout, budget))
            if failure is None:
                return value
            last = failure
            if not failure.retry:
                raise RemoteRejected(
                    f"{failure.message} (a 4xx reply: not retried)", failure.status
                )
            if failure.timed_out and not retry_timeouts:
                raise RemoteTimeout(f"{failure.message} (not sent again whole: it is split)")
            if attempt + 1 == attempts:
                break
            delay = failure.wait
            if delay is None:
                delay = backoff_delay(attempt, settings.backoff, settings.max_backoff, self._rng)
            left = deadline - loop.time()
            if delay >= left:
                raise RemoteTimeout(
                    f"{failure.message}; gave up after {attempt + 1} attempt(s): {what} leaves "
                    f"{max(left, 0):.3g} s, the next attempt was due in {delay:.3g} s"
                )
            log.info(
                "%s: attempt %d/%d failed (%s); retrying in %.3g s",
                self.name,
                attempt + 1,
                attempts,
                failure.message,
                delay,
            )
            await asyncio.sleep(delay)
        message = f"all {attempts} attempt(s) failed; last: {last.message}"
        raise RemoteTimeout(message) if last.timed_out else RemoteUnavailable(message)

    async def _attempt(
        self, session: aiohttp.ClientSession, payload: bytes, budget: float
    ) -> tuple[Any, _Failure | None]:
        try:
            async with session.post(
                self._url,
                data=payload,
                headers=self._headers,
                timeout=aiohttp.ClientTimeout(total=budget),
                allow_redirects=False,
            ) as response:
                status = response.status
                if 300 <= status < 400:
                    return None, _Failure(self._redirected(response), False)
                body = await self._read(response, whole=200 <= status < 300)
                if 200 <= status < 300:
                    return self._decode(body), None
                wait = retry_after(response.headers.get("Retry-After"))
                message = f"HTTP {status} {response.reason or ''}".rstrip()
                if body:
                    message += f": {self._excerpt(body.decode(errors='replace'))}"
                return None, _Failure(message, retryable(status), wait=wait, status=status)
        except asyncio.TimeoutError:
            return None, _Failure(f"no reply within {budget:.3g} s", True, timed_out=True)
        except aiohttp.ClientError as exc:
            return None, _Failure(self.scrub(f"{type(exc).__name__}: {exc}"), True)

    async def _read(self, response: aiohttp.ClientResponse, whole: bool) -> bytes:
        """The reply's body: all of it up to ``max_reply_mb`` (beyond: :class:`RemoteInvalid`,
        read no further), or for an error reply, only what a message quotes."""
        limit = int(self.settings.max_reply_mb * 2**20) if whole else 4 * _EXCERPT
        declared = response.content_length
        if whole and declared is not None and declared > limit:
            raise RemoteInvalid(self._too_large(f"{declared:,} bytes"))
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.content.iter_chunked(2**16):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                if whole:
                    raise RemoteInvalid(self._too_large(f"more than {limit:,} bytes"))
                break
        return b"".join(chunks)

    @staticmethod
    def _refused_size(exc: RemoteRejected, size: int) -> str:
        return (
            f"the server refused this sample's request of {size:,} bytes as too large ({exc}); "
            "if it refuses every sample, raise its request body limit"
        )

    def _too_large(self, found: str) -> str:
        return (
            f"reply of {found} is over the {self.settings.max_reply_mb:g} MiB limit; raise "
            f"`max_reply_mb` if the server's replies are meant to be that large"
        )

    def _redirected(self, response: aiohttp.ClientResponse) -> str:
        target = response.headers.get("Location")
        where = display_url(str(response.url.join(URL(target)))) if target else "nowhere"
        return (
            f"HTTP {response.status} {response.reason or ''}".rstrip()
            + f": the server redirects to {where}; redirects are not followed (a POST would "
            f"be re-sent as a GET without its body): set `url` to the address that scores"
        )

    def _decode(self, body: bytes) -> Any:
        try:
            return json.loads(body)
        except ValueError:
            found = self._excerpt(body.decode(errors="replace")) if body else "an empty body"
            raise RemoteInvalid(f"reply is not JSON: {found}") from None

    def _excerpt(self, text: str) -> str:
        text = self.scrub(" ".join(text.split()))
        if len(text) > _EXCERPT:
            text = text[: _EXCERPT - 3] + "..."
        return repr(text)

    def scrub(self, text: str) -> str:
        """``text`` with the credential and the URL's secrets masked: safe to quote."""
        return self._secrets.sub("***", text) if self._secrets is not None else text


def secret_pattern(secrets: Sequence[str]) -> re.Pattern[str] | None:
    r"""A pattern that finds each of ``secrets`` as a server may echo it: as sent, JSON-escaped
    (``\/`` for ``/``, ``\u00e9`` for ``é``), URL-encoded, in any letter case. None if there
    are none.

    >>> secret_pattern(["Ab/c+d"]).sub("***", 'got "ab\\/c+d" and Ab%2Fc%2Bd, Ab%2fc%2bd')
    'got "***" and ***, ***'
    """
    forms: set[str] = set()
    for secret in secrets:
        if len(secret) < 4:  # a short query value ("1", "en") is no secret, and is everywhere
            continue
        escaped = json.dumps(secret)[1:-1]
        for form in (secret, escaped, json.dumps(secret, ensure_ascii=False)[1:-1]):
            forms |= {form, form.replace("/", "\\/"), quote(form, safe=""), quote_plus(form)}
    if not forms:
        return None
    alternatives = sorted(forms, key=len, reverse=True)  # the longest form wins
    return re.compile("|".join(map(re.escape, alternatives)), re.IGNORECASE)


class RemoteReward(JsonEndpoint):
    """A reward server behind ``settings.url``: slime's ``remote_rm`` protocol.

    ``await reward(args, sample)`` scores one sample; ``await reward.score_batch(args, samples)``
    posts batches and returns one entry per sample: the reply's value, or the exception that
    failed its batch (the router records it as that sample's failure).
    """

    __slots__ = ()
    settings: RemoteSettings

    def __init__(
        self, settings: RemoteSettings, pool: SessionPool, credential: SecretStr | None = None
    ) -> None:
        super().__init__(settings, pool, credential, f"remote {display_url(settings.url)}")

    # -- the two call shapes ----------------------------------------------------------------

    async def __call__(self, args: Any, sample: SampleLike) -> Any:
        return await self.post_json(self._body(sample))

    async def score_batch(self, args: Any, samples: Sequence[SampleLike]) -> list[Any]:
        size = self.settings.batch_size or max(1, len(samples))
        chunks = [samples[i : i + size] for i in range(0, len(samples), size)]
        replies = await asyncio.gather(
            *(self._post_batch(chunk) for chunk in chunks), return_exceptions=True
        )
        out: list[Any] = []
        for chunk, reply in zip(chunks, replies, strict=True):
            if isinstance(reply, BaseException):
                if not isinstance(reply, Exception):
                    raise reply  # cancellation and exits are not reward failures
                out += [reply] * len(chunk)
            else:
                out += reply
        return out

    async def _post_batch(self, chunk: Sequence[Any]) -> list[Any]:
        try:
            reply = await self._post(
                self._encode([self._body(s) for s in chunk]), one_sample=len(chunk) == 1
            )
        except (Unsendable, NotJson):
            if len(chunk) == 1:
                raise
            return await self._halves(chunk)  # which sample cannot be sent? halves find it
        except RemoteRejected as exc:
            if exc.status != 413 or len(chunk) == 1:
                raise
            return await self._halves(chunk)  # which sample made it too large?
        if not isinstance(reply, list):
            raise RemoteInvalid(
                f"batch reply is {type(reply).__name__} {self._excerpt(json.dumps(reply))}; "
                f"expected a JSON list of {len(chunk)} rewards"
            )
        if len(reply) != len(chunk):
            raise RemoteInvalid(f"batch reply has {len(reply)} rewards for {len(chunk)} samples")
        # An entry {"error": ..., "status": ...} (as `rewardrouter serve` answers for a sample it
        # could not score) fails that sample alone.
        return [
            RemoteRejected(f"the server could not score this sample: {item['error']}")
            if isinstance(item, dict) and "error" in item and set(item) <= {"error", "status"}
            else item
            for item in reply
        ]

    async def _halves(self, chunk: Sequence[Any]) -> list[Any]:
        """A batch's entries, sent as two halves: a batch that one sample spoiled (too large,
        or not sendable) is split down to that sample, whose failure is its own."""
        half = len(chunk) // 2
        parts = await asyncio.gather(
            self._post_batch(chunk[:half]), self._post_batch(chunk[half:]), return_exceptions=True
        )
        out: list[Any] = []
        for part, size in zip(parts, (half, len(chunk) - half), strict=True):
            if isinstance(part, BaseException) and not isinstance(part, Exception):
                raise part
            out += [part] * size if isinstance(part, Exception) else part
        return out

    def _body(self, sample: SampleLike) -> dict[str, Any]:
        body = {
            "prompt": getattr(sample, "prompt", ""),
            "response": getattr(sample, "response", ""),
            "label": getattr(sample, "label", None),
        }
        if self.settings.send_metadata:
            body["metadata"] = dict(metadata_of(sample))
        return body
