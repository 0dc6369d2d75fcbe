"""The ``judge`` reward: render the rubric, ask the judge model, read the score.

Request, OpenAI chat completions::

    {"model": ..., "messages": [{"role": "system", ...}, {"role": "user", "content": rubric}],
     "temperature": 0.0, "max_tokens": 1024, **extra_body}

The rubric may name ``{fence}``, this judge's secret (``response-`` and 16 random hex digits,
drawn once per router): ``<{fence}>`` and ``</{fence}>`` around ``{response}`` mark it as quoted
data, and the parser reads nothing between them in the reply (a judge that quotes the response
hands none of its claims to the parser). A response that holds the fence, writes a chat
template's marker or is longer than ``max_response_chars`` (what the judge would be shown:
after the thinking, with ``strip_thinking``) is ``invalid`` and never sent
(:mod:`rewardrouter.rewards.model_input`).

The reply's ``choices[0].message.content`` is parsed (:mod:`.parse`) when it is at most
``max_reply_chars`` long; a longer reply, a reply without a readable score, with two different
scores, or with one outside ``[min, max]``, fails the call as ``invalid`` (the term's
``on_error`` decides). Quotes of the reply in messages are scrubbed of the credential. Requests go through :class:`~rewardrouter.remote.client.JsonEndpoint`: one
connection pool, retries with jittered backoff, the deadline and the concurrency cap.

Identical requests are judged once per router: a GRPO group often holds the same response
several times, and a retried batch holds the same samples again. Concurrent identical requests
wait for the first one; a failed verdict is not kept.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from rewardrouter.remote.errors import RemoteInvalid
from rewardrouter.rewards.judge.parse import UnreadableScore, read_score, rubric_placeholders
from rewardrouter.rewards.judge.settings import JudgeSettings
from rewardrouter.rewards.model_input import RefusedResponse, ResponseGuard
from rewardrouter.rewards.thinking import after_thinking
from rewardrouter.sample import metadata_of

if TYPE_CHECKING:  # the client (and aiohttp) loads when a judge is built
    from rewardrouter.remote.client import JsonEndpoint


def prompt_text(prompt: Any) -> str:
    """A prompt as text: chat messages become ``role: content`` lines."""
    if isinstance(prompt, list) and all(isinstance(m, Mapping) for m in prompt):
        return "\n".join(f"{m.get('role', 'user')}: {m.get('content', '')}" for m in prompt)
    return "" if prompt is None else str(prompt)


class JudgeReward:
    """``await judge(args, sample)``: the judge's score for ``sample`` (see the module doc)."""

    __slots__ = (
        "_done",
        "_guard",
        "_pending",
        "_placeholders",
        "_render",
        "endpoint",
        "fence",
        "name",
        "settings",
    )
    _render: Callable[[dict[str, Any]], str]

    def __init__(self, settings: JudgeSettings, endpoint: JsonEndpoint) -> None:
        self.settings = settings
        self.endpoint = endpoint
        self.name = endpoint.name
        # Secret, and fixed per judge so that identical samples still make identical requests.
        self.fence = f"response-{secrets.token_hex(8)}"
        self._placeholders = rubric_placeholders(settings.template, settings.parser, settings.tag)
        self._guard = ResponseGuard.of(settings.max_response_chars, settings.refuse_special_tokens)
        self._done: OrderedDict[str, float] = OrderedDict()
        self._pending: dict[tuple[asyncio.AbstractEventLoop, str], asyncio.Future[float]] = {}
        if settings.template_format == "jinja":
            from jinja2 import StrictUndefined
            from jinja2.sandbox import ImmutableSandboxedEnvironment

            template = ImmutableSandboxedEnvironment(undefined=StrictUndefined).from_string(
                settings.template
            )
            self._render = lambda fields: str(template.render(**fields))
        else:
            self._render = lambda fields: settings.template.format(**fields)

    def __repr__(self) -> str:
        return f"JudgeReward({self.name!r})"

    def fits(self, seconds: float) -> tuple[str, str] | None:
        """Whether the judge's ``deadline`` fits in the term's timeout ``seconds`` (checked
        when the router compiles: :class:`~rewardrouter.rewards.registry.Budgeted`)."""
        return self.endpoint.fits(seconds)

    def request(self, sample: Any) -> dict[str, Any]:
        """The chat-completions body for ``sample``.

        Raises :class:`~rewardrouter.rewards.model_input.RefusedResponse` (nothing is sent) for
        a response that holds the fence, writes a template marker or is over
        ``max_response_chars``."""
        settings = self.settings
        response = getattr(sample, "response", "") or ""
        if settings.strip_thinking:
            response = after_thinking(response).strip()
        self._guard.check([("response", response)])
        if self.fence in response:
            raise RefusedResponse(
                "the response holds this judge's secret fence, which only the judge's own "
                "rubric may write; the sample is not sent"
            )
        fields = {
            "prompt": prompt_text(getattr(sample, "prompt", "")),
            "response": response,
            "label": "" if getattr(sample, "label", None) is None else sample.label,
            "metadata": dict(metadata_of(sample)),
            "fence": self.fence,
        }
        messages = [{"role": "user", "content": self._render(fields)}]
        if settings.system is not None:
            messages.insert(0, {"role": "system", "content": settings.system})
        return {
            **settings.extra_body,
            "model": settings.model,
            "messages": messages,
            "temperature": settings.temperature,
            "max_tokens": settings.max_tokens,
        }

    async def __call__(self, args: Any, sample: Any) -> float:
        body = self.request(sample)
        key = hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()
        if key in self._done:
            self._done.move_to_end(key)
            return self._done[key]
        loop = asyncio.get_running_loop()
        pending = self._pending.get((loop, key))
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[float] = loop.create_future()
        self._pending[(loop, key)] = future
        try:
            score = await self._judge(body)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved here: waiters re-raise it, nobody else must
            raise
        else:
            future.set_result(score)
            if self.settings.cache_size:
                self._done[key] = score
                while len(self._done) > self.settings.cache_size:
                    self._done.popitem(last=False)
            return score
        finally:
            del self._pending[(loop, key)]

    async def _judge(self, body: dict[str, Any]) -> float:
        settings = self.settings
        reply = await self.endpoint.post_json(body)
        try:
            content = reply["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise RemoteInvalid(
                "reply is not a chat completion (no choices[0].message.content): "
                f"{self._quote(json.dumps(reply), 200)}"
            ) from None
        if not isinstance(content, str):
            raise RemoteInvalid(
                f"the judge's message content is {self._quote(json.dumps(content), 80)}, not text"
            )
        if len(content) > settings.max_reply_chars:
            raise RemoteInvalid(
                f"the judge's reply is {len(content):,} characters, over `max_reply_chars` "
                f"({settings.max_reply_chars:,}); it is not read. Ask for a shorter reply "
                "(`max_tokens`, the rubric) or raise `max_reply_chars`"
            )
        # Scrubbed before anything reads it: a message may quote any part of it.
        content = self.endpoint.scrub(content)
        try:
            score = read_score(
                content,
                settings.parser,
                tag=settings.tag,
                field=settings.field,
                fence=self.fence,
                top=settings.max,
                bottom=settings.min,
                placeholders=self._placeholders,
            )
        except UnreadableScore as exc:
            raise RemoteInvalid(f"{exc}: {self._tail(content)}") from None
        if not settings.min <= score <= settings.max:
            raise RemoteInvalid(
                f"the judge's score {score:g} is outside [{settings.min:g}, {settings.max:g}]: "
                f"{self._tail(content)}"
            )
        if settings.normalize:
            return (score - settings.min) / (settings.max - settings.min)
        return score

    def _quote(self, text: str, size: int) -> str:
        """The start of ``text``, scrubbed of the credential, for a message."""
        return repr(self.endpoint.scrub(text)[:size])

    @staticmethod
    def _tail(content: str) -> str:
        """The end of the judge's (scrubbed) reply, where its verdict is, for a message."""
        return f"the reply ends {content[-200:]!r}"
