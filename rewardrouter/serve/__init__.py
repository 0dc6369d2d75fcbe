"""The router as a reward server: ``app`` (HTTP: endpoints, authentication), ``process`` (a
scoring process it owns), ``lanes`` (which scoring process takes a request), ``scoring`` (what
that process does with a request), ``guard`` (the bounds on connections), ``options`` (those
bounds and the lanes' split, as flags) and ``main`` (the command)."""

from rewardrouter.serve.app import make_app
from rewardrouter.serve.main import add_serve_arguments, run_server, serve, token_from
from rewardrouter.serve.options import ServeOptions
from rewardrouter.serve.scoring import RewardRequest

__all__ = [
    "RewardRequest",
    "ServeOptions",
    "add_serve_arguments",
    "make_app",
    "run_server",
    "serve",
    "token_from",
]
