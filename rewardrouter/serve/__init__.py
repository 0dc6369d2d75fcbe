"""The router as a reward server: ``app`` (endpoints, request checks) and ``main`` (the command)."""

from rewardrouter.serve.app import RewardRequest, make_app
from rewardrouter.serve.main import serve, serve_main

__all__ = ["RewardRequest", "make_app", "serve", "serve_main"]
