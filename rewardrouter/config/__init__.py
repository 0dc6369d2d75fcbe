"""Config: pydantic models, YAML loading and JSON Schema generation."""

from rewardrouter.config.job import DataConfig, JobConfig, OutputConfig
from rewardrouter.config.load import load_config, to_container, validate
from rewardrouter.config.models import FallbackValue, RewardTerm, Route, RouteExample, RouterConfig

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
