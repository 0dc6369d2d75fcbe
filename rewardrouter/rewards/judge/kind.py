"""The ``judge`` kind as the compiler sees it: ``Settings`` for its kwargs, and ``build``.

Terms with equal settings share one judge, its connection pool and its verdict cache.
"""

from __future__ import annotations

from rewardrouter.compile.resources import Bound, Resources
from rewardrouter.remote.client import JsonEndpoint
from rewardrouter.remote.kind import read_credential
from rewardrouter.remote.pool import SessionPool
from rewardrouter.remote.settings import display_url
from rewardrouter.rewards.judge.reward import JudgeReward
from rewardrouter.rewards.judge.settings import JudgeSettings

Settings = JudgeSettings


def build(settings: JudgeSettings, resources: Resources) -> Bound:
    """The judge for ``settings``; raises ``ResolveError`` when its credential is unset."""
    credential = read_credential(settings)
    pool = resources.get(SessionPool, SessionPool)
    endpoint_settings = settings.model_copy(update={"url": settings.endpoint_url})
    name = f"judge {settings.model} at {display_url(settings.endpoint_url)}"

    def make() -> JudgeReward:
        return JudgeReward(settings, JsonEndpoint(endpoint_settings, pool, credential, name))

    judge = resources.get((JudgeReward, settings.model_dump_json()), make)
    return Bound(judge, "single", name)
