"""Remote rewards: the HTTP client behind the ``remote`` kind (:mod:`rewardrouter.rewards.remote`)
and every other kind that posts JSON (``code`` on SandboxFusion).

``settings`` (what a term's kwargs may say) → ``client`` (:class:`~.client.JsonEndpoint`:
requests, retries as ``retry`` decides, reply checks; :class:`~.client.RemoteReward` on top) on a
``pool`` (one connection pool per router) → ``errors`` (why a call failed; each maps to an
outcome status). Nothing here is imported until a config names such a kind, except the settings
models, so that ``import rewardrouter`` does not load aiohttp.
"""
