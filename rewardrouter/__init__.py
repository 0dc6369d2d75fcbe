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

``import rewardrouter`` itself is light: each name below is imported on first use, and torch
only by the advantage stage that needs it.
"""

from typing import TYPE_CHECKING

from rewardrouter.introspect import lazy_exports

if TYPE_CHECKING:
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

__getattr__ = lazy_exports(
    globals(),
    {
        "ConfigError": "rewardrouter.errors",
        "Problem": "rewardrouter.errors",
        "RewardError": "rewardrouter.errors",
        "RewardRouterError": "rewardrouter.errors",
        "RewardRouterWarning": "rewardrouter.errors",
        "RoutingError": "rewardrouter.errors",
        "SampleError": "rewardrouter.errors",
        "RewardResult": "rewardrouter.results",
        "ScoreBatch": "rewardrouter.results",
        "ScoreWarning": "rewardrouter.results",
        "Router": "rewardrouter.router",
        "compile_router": "rewardrouter.router",
        "RouterConfig": "rewardrouter.config",
        "load_config": "rewardrouter.config",
        "Sample": "rewardrouter.sample",
        "SampleLike": "rewardrouter.sample",
    },
)
