"""A trainer-like Ray actor for the ``ray`` executor tests (``rr_ray.Trainer``).

slime and miles call reward functions inside Ray actors; this one compiles a router there and
scores with it. Ray workers import this module by name, so it stays top level and light.
"""

from __future__ import annotations

from typing import Any


class Trainer:
    """Scores ``samples`` with a router compiled inside this actor; says which cluster it used."""

    def score(self, config: dict[str, Any], samples: list[dict[str, Any]]) -> dict[str, Any]:
        import ray

        from rewardrouter import compile_router

        with compile_router(config) as router:
            rewards = [r.reward for r in router.score_sync(samples)]
            lease = router.executors["ray"].pool.lease
            started = lease is not None and lease.started
        return {
            "rewards": rewards,
            "started_ray": started,
            "gcs_address": ray.get_runtime_context().gcs_address,
            "nodes": len(ray.nodes()),
        }


def importable(name: str) -> bool:
    """Whether this process (a Ray worker) can import module ``name``."""
    import importlib.util

    return importlib.util.find_spec(name) is not None
