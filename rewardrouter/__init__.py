"""rewardrouter: declarative, compiled reward routing for RL post-training.

A sample's path: ``config`` (load and validate a YAML) → ``compile`` (resolve every function,
report every problem; :func:`compile_router`) → ``route`` (per-sample precedence, route groups)
→ ``execute`` (each group on its executor) → ``route`` again (results under ``on_error``) →
``shape`` (shaping stages) → ``advantage`` (exact group normalization). The README's
"Architecture" section draws the layers.

>>> from rewardrouter import compile_router, load_config
>>> with compile_router(load_config("conf/router/default.yaml")) as router:
...     results = router.score_sync([{"response": "Paris", "label": "paris"}])
>>> results.rewards
[1.0]
"""

from rewardrouter.config import RouterConfig, load_config
from rewardrouter.errors import (
    ConfigError,
    Problem,
    RewardError,
    RewardRouterError,
    RewardRouterWarning,
    RoutingError,
    SampleError,
)
from rewardrouter.results import RewardResult, ScoreBatch, ScoreWarning
from rewardrouter.router import Router, compile_router
from rewardrouter.sample import Sample, SampleLike

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "Problem",
    "RewardError",
    "RewardResult",
    "RewardRouterError",
    "RewardRouterWarning",
    "Router",
    "RouterConfig",
    "RoutingError",
    "Sample",
    "SampleError",
    "SampleLike",
    "ScoreBatch",
    "ScoreWarning",
    "__version__",
    "compile_router",
    "load_config",
]
