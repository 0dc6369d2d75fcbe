"""The ``nemo_gym`` kind: a NeMo Gym resources server grades each sample through its
``/verify``.

Each sample is posted as the verify request NeMo Gym's agents post after a rollout
(:mod:`~rewardrouter.rewards.nemo_gym.wire`: the dataset row, the label under ``label_field``,
the response as a Responses API object) through the router's HTTP client
(:class:`~rewardrouter.remote.client.JsonEndpoint`: one connection pool, retries with jittered
backoff, the ``deadline``, which must fit in the term's ``timeout``, and the ``concurrency``
cap); the reply's ``reward`` is the term's value. The server is one already running (``url``) or
one the router starts in NeMo Gym's own interpreter and stops with it (``server``:
:mod:`~rewardrouter.rewards.nemo_gym.server`).

A response over ``max_response_chars``, or one that writes a chat template's marker, is
``invalid`` and never sent; a response JSON cannot carry (a lone surrogate) is that sample's
error. A server that cannot be reached, refuses the request or answers no number is the
setup's fault (the term's ``on_error`` decides).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, ClassVar

from rewardrouter.remote.errors import RemoteInvalid
from rewardrouter.remote.settings import display_url
from rewardrouter.rewards.model_input import ResponseGuard
from rewardrouter.rewards.nemo_gym.settings import NemoGymSettings
from rewardrouter.rewards.nemo_gym.wire import verify_request
from rewardrouter.rewards.registry import Bound, Resources, resource_kind
from rewardrouter.rewards.remote import read_credential
from rewardrouter.trajectory import Conversation

if TYPE_CHECKING:  # the client (and aiohttp) loads when the kind is built
    from rewardrouter.remote.client import JsonEndpoint


class NemoGymReward:
    """``await reward(args, sample)``: the resources server's reward for ``sample``."""

    reads_conversation: ClassVar[bool] = True

    def __init__(self, settings: NemoGymSettings, endpoint: JsonEndpoint) -> None:
        self.settings = settings
        self.endpoint = endpoint
        self.name = endpoint.name
        self._guard = ResponseGuard.of(settings.max_response_chars, settings.refuse_special_tokens)

    def __repr__(self) -> str:
        return f"NemoGymReward({self.name!r})"

    def fits(self, seconds: float) -> tuple[str, str] | None:
        """Whether ``deadline`` fits in the term's timeout (checked when the router compiles)."""
        return self.endpoint.fits(seconds)

    async def __call__(self, args: Any, sample: Any) -> float:
        conversation: Conversation = sample.response.trajectory()
        # What the policy wrote: its turns and its calls' arguments (the prompt is the dataset's).
        written = [("response", m.text) for m in conversation.assistant_messages]
        written += [("response's tool call", c.arguments) for c in conversation.tool_calls]
        self._guard.check(written or [("response", "")])
        reply = await self.endpoint.post_json(
            verify_request(sample, conversation, self.settings.label_field)
        )
        reward = reply.get("reward") if isinstance(reply, dict) else None
        if isinstance(reward, bool) or not isinstance(reward, int | float):
            found = json.dumps(reply)[:200] if not isinstance(reply, dict) else repr(reward)
            raise RemoteInvalid(
                f"the verify reply holds no number `reward` (found {found}); a resources "
                "server's /verify answers its request with `reward` added"
            )
        return float(reward)


@resource_kind("nemo_gym", NemoGymSettings)
def build(settings: NemoGymSettings, resources: Resources) -> Bound:
    """A NeMo Gym resources server's /verify (one running, or one the router starts).

    Raises ``ResolveError`` when the credential is unset or the server does not start.
    """
    from rewardrouter.remote.client import JsonEndpoint
    from rewardrouter.remote.pool import SessionPool
    from rewardrouter.rewards.nemo_gym.server import ResourcesServer

    credential = read_credential(settings)
    pool = resources.get(SessionPool, SessionPool)
    base = settings.url
    if settings.server is not None:
        started = resources.get(
            (ResourcesServer, settings.server.model_dump_json()),
            lambda: ResourcesServer(settings.server),  # type: ignore[arg-type]
        )
        base = started.url
    assert base is not None  # the settings hold a url or a server
    verify = base.rstrip("/") + "/verify"
    name = f"nemo_gym {display_url(verify)}"

    def make() -> NemoGymReward:
        endpoint_settings = settings.model_copy(update={"url": verify})
        return NemoGymReward(settings, JsonEndpoint(endpoint_settings, pool, credential, name))

    reward = resources.get((NemoGymReward, settings.model_dump_json()), make)
    return Bound(reward, "single", name)
