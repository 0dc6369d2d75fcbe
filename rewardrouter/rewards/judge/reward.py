"""The ``judge`` reward: render the rubric, ask the judge model, read the score.

Request, OpenAI chat completions::

    {"model": ..., "messages": [{"role": "system", ...}, {"role": "user", "content": rubric}],
     "temperature": 0.0, "max_tokens": 1024, **extra_body}

The reply's ``choices[0].message.content`` is parsed (:mod:`.parse`); a reply without a
readable score, or with one outside ``[min, max]``, fails the call as ``invalid`` (the term's
``on_error`` decides). Requests go through :class:`~rewardrouter.remote.client.JsonEndpoint`: one
connection pool, retries with jittered backoff, the deadline and the concurrency cap.

Identical requests are judged once per router: a GRPO group often holds the same response
several times, and a retried batch holds the same samples again. Concurrent identical requests
wait for the first one; a failed verdict is not kept.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from rewardrouter.remote.errors import RemoteInvalid
from rewardrouter.rewards.judge.parse import UnreadableScore, read_score
from rewardrouter.rewards.judge.settings import JudgeSettings
from rewardrouter.rewards.labels import after_thinking
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

    __slots__ = ("_done", "_pending", "_render", "endpoint", "name", "settings")
    _render: Callable[[dict[str, Any]], str]

    def __init__(self, settings: JudgeSettings, endpoint: JsonEndpoint) -> None:
        self.settings = settings
        self.endpoint = endpoint
        self.name = endpoint.name
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

    def request(self, sample: Any) -> dict[str, Any]:
        """The chat-completions body for ``sample``."""
        settings = self.settings
        response = getattr(sample, "response", "") or ""
        if settings.strip_thinking:
            response = after_thinking(response).strip()
        fields = {
            "prompt": prompt_text(getattr(sample, "prompt", "")),
            "response": response,
            "label": "" if getattr(sample, "label", None) is None else sample.label,
            "metadata": dict(metadata_of(sample)),
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
                f"reply is not a chat completion (no choices[0].message.content): "
                f"{json.dumps(reply)[:200]}"
            ) from None
        if not isinstance(content, str):
            raise RemoteInvalid(f"the judge's message content is {content!r}, not text")
        try:
            score = read_score(content, settings.parser, tag=settings.tag, field=settings.field)
        except UnreadableScore as exc:
            raise RemoteInvalid(f"{exc}: {content[-200:]!r}") from None
        if not settings.min <= score <= settings.max:
            raise RemoteInvalid(
                f"the judge's score {score:g} is outside [{settings.min:g}, {settings.max:g}]: "
                f"{content[-200:]!r}"
            )
        if settings.normalize:
            return (score - settings.min) / (settings.max - settings.min)
        return score
