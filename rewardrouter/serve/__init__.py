"""The router as a reward server: ``app`` (HTTP: endpoints, authentication), ``process`` (the
scoring process it owns), ``scoring`` (what that process does with a request) and ``main`` (the
command)."""

from rewardrouter.serve.app import make_app
from rewardrouter.serve.main import add_serve_arguments, run_server, serve, token_from
from rewardrouter.serve.scoring import RewardRequest

__all__ = [
    "RewardRequest",
    "add_serve_arguments",
    "make_app",
    "run_server",
    "serve",
    "token_from",
]
