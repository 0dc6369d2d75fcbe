"""Config: pydantic models, YAML loading and JSON Schema generation.

Each name is imported from its module on first use: a trainer's hook that needs the router's
models (:mod:`.models`) does not pay for the command line's job models or the YAML loader.
"""

from typing import TYPE_CHECKING

from rewardrouter.introspect import lazy_exports

if TYPE_CHECKING:
    from rewardrouter.config.job import DataConfig, JobConfig, OutputConfig
    from rewardrouter.config.load import load_config, to_container, validate
    from rewardrouter.config.models import (
        FallbackValue,
        RewardTerm,
        Route,
        RouteExample,
        RouterConfig,
    )

__all__ = [
    "DataConfig",
    "FallbackValue",
    "JobConfig",
    "OutputConfig",
    "RewardTerm",
    "Route",
    "RouteExample",
    "RouterConfig",
    "load_config",
    "to_container",
    "validate",
]

__getattr__ = lazy_exports(
    globals(),
    {
        **dict.fromkeys(["DataConfig", "JobConfig", "OutputConfig"], "rewardrouter.config.job"),
        **dict.fromkeys(["load_config", "to_container", "validate"], "rewardrouter.config.load"),
        **dict.fromkeys(
            ["FallbackValue", "RewardTerm", "Route", "RouteExample", "RouterConfig"],
            "rewardrouter.config.models",
        ),
    },
)
