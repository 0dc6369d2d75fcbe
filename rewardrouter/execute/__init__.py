"""Execute: run each route group, read values, apply ``on_error`` policies."""

from rewardrouter.execute.result import RewardResult, Status

__all__ = ["RewardResult", "Status"]
