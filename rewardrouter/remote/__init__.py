"""Remote rewards: the ``remote`` kind, an HTTP client for reward servers and judge models.

``settings`` (what a term's kwargs may say) → ``kind`` (how the compiler builds a client) →
``client`` (requests, retries as ``retry`` decides, reply checks) on a ``pool`` (one connection
pool per router) → ``errors`` (why a call failed; each maps to an outcome status).
"""

from rewardrouter.remote.client import JsonEndpoint, RemoteReward
from rewardrouter.remote.errors import (
    RemoteError,
    RemoteInvalid,
    RemoteRejected,
    RemoteTimeout,
    RemoteUnavailable,
)
from rewardrouter.remote.pool import SessionPool
from rewardrouter.remote.settings import EndpointSettings, RemoteSettings

__all__ = [
    "EndpointSettings",
    "JsonEndpoint",
    "RemoteError",
    "RemoteInvalid",
    "RemoteRejected",
    "RemoteReward",
    "RemoteSettings",
    "RemoteTimeout",
    "RemoteUnavailable",
    "SessionPool",
]
