"""Remote rewards: the ``remote`` kind, an HTTP client for reward servers and judges.

``settings`` (what a term's kwargs may say) → ``client`` (one request, retries, validation) on a
``pool`` (one connection pool per router) → ``errors`` (why a call failed, mapped to statuses).
"""

from rewardrouter.remote.client import RemoteReward
from rewardrouter.remote.errors import (
    RemoteError,
    RemoteInvalid,
    RemoteRejected,
    RemoteTimeout,
    RemoteUnavailable,
)
from rewardrouter.remote.pool import SessionPool
from rewardrouter.remote.settings import RemoteSettings

__all__ = [
    "RemoteError",
    "RemoteInvalid",
    "RemoteRejected",
    "RemoteReward",
    "RemoteSettings",
    "RemoteTimeout",
    "RemoteUnavailable",
    "SessionPool",
]
