"""rewardrouter: declarative, compiled reward routing for RL post-training.

The pipeline, one module each: ``config`` (load and validate) → ``compile`` (resolve every
function, report every problem) → ``route`` (per-sample precedence, route groups) → ``execute``
(run each group, apply failure policies) → ``shape`` (shaping stages) → ``advantage`` (exact group
normalization).

>>> from rewardrouter import compile_router, load_config
>>> with compile_router(load_config("conf/router/default.yaml")) as router:
...     results = router.score_sync(samples)
"""

from rewardrouter.config import RouterConfig, load_config
from rewardrouter.errors import (
    ConfigError,
    Problem,
    RewardError,
    RewardRouterError,
    RoutingError,
    SampleError,
)
from rewardrouter.results import RewardResult, ScoreBatch
from rewardrouter.router import Router, compile_router
from rewardrouter.sample import Sample

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "Problem",
    "RewardError",
    "RewardResult",
    "RewardRouterError",
    "Router",
    "RouterConfig",
    "RoutingError",
    "Sample",
    "SampleError",
    "ScoreBatch",
    "__version__",
    "compile_router",
    "load_config",
]
