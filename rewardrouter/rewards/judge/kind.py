"""The ``judge`` kind as the compiler sees it: its settings model and ``build``, registered as a
resource kind (the HTTP client is imported only when a judge is built).

Terms with equal settings share one judge, its connection pool and its verdict cache.
"""

from __future__ import annotations

from rewardrouter.remote.settings import display_url
from rewardrouter.rewards.judge.reward import JudgeReward
from rewardrouter.rewards.judge.settings import JudgeSettings
from rewardrouter.rewards.registry import Bound, Resources, resource_kind
from rewardrouter.rewards.remote import read_credential


@resource_kind("judge", JudgeSettings)
def build(settings: JudgeSettings, resources: Resources) -> Bound:
    """An LLM judge on an OpenAI-compatible chat endpoint: rubric template, score parser.

    Raises ``ResolveError`` when its credential is unset.
    """
    from rewardrouter.remote.client import JsonEndpoint
    from rewardrouter.remote.pool import SessionPool

    credential = read_credential(settings)
    pool = resources.get(SessionPool, SessionPool)
    endpoint_settings = settings.model_copy(update={"url": settings.endpoint_url})
    name = f"judge (model {settings.model!r}) at {display_url(settings.endpoint_url)}"

    def make() -> JudgeReward:
        return JudgeReward(settings, JsonEndpoint(endpoint_settings, pool, credential, name))

    judge = resources.get((JudgeReward, settings.model_dump_json()), make)
    return Bound(judge, "single", name)
