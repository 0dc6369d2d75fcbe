"""The router as a reward server: ``app`` (endpoints, request checks) and ``main`` (the command)."""

from rewardrouter.serve.app import RewardRequest, make_app
from rewardrouter.serve.main import add_serve_arguments, run_server, serve, token_from

__all__ = [
    "RewardRequest",
    "add_serve_arguments",
    "make_app",
    "run_server",
    "serve",
    "token_from",
]
