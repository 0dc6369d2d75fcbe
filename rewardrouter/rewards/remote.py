"""The ``remote`` kind: POST each sample (or route group) to a reward server.

A resource kind: a term's ``kwargs`` are :class:`~rewardrouter.remote.settings.RemoteSettings`,
validated when the router compiles. Terms with equal settings share one client (and so one route
group); every client of a router shares the router's one
:class:`~rewardrouter.remote.pool.SessionPool`. The HTTP client (and aiohttp) is imported only
when a config names the kind.
"""

from __future__ import annotations

import os

from pydantic import SecretStr

from rewardrouter.introspect import ResolveError
from rewardrouter.remote.settings import EndpointSettings, RemoteSettings
from rewardrouter.rewards.registry import Bound, Resources, resource_kind


def read_credential(settings: EndpointSettings, field: str = "auth_env") -> SecretStr | None:
    """The credential named by ``settings.auth_env``; :class:`ResolveError` when it is unset.

    ``field`` is the setting's path under ``kwargs`` for the message (``server.auth_env``).
    """
    if settings.auth_env is None:
        return None
    value = os.environ.get(settings.auth_env)
    if not value:
        raise ResolveError(
            f"kwargs.{field}: environment variable {settings.auth_env!r} is not set or empty",
            f"export {settings.auth_env}=<credential> before starting, or remove `auth_env`",
        )
    return SecretStr(value)


@resource_kind("remote", RemoteSettings)
def remote(settings: RemoteSettings, resources: Resources) -> Bound:
    """POST each sample (or route group) to a reward server; settings under kwargs.

    Raises :class:`ResolveError` when the credential that ``auth_env`` names is unset.
    """
    from rewardrouter.remote.client import RemoteReward
    from rewardrouter.remote.pool import SessionPool

    credential = read_credential(settings)
    pool = resources.get(SessionPool, SessionPool)
    client = resources.get(
        (RemoteReward, settings.model_dump_json()),
        lambda: RemoteReward(settings, pool, credential),
    )
    if settings.batch:
        return Bound(client.score_batch, "group", client.name)
    return Bound(client, "single", client.name)
