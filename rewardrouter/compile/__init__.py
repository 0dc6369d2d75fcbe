"""Compile: resolve built-ins and import paths, check signatures, collect every problem."""

from rewardrouter.compile.compiler import compile_routes
from rewardrouter.compile.resolve import RewardFn
from rewardrouter.compile.routes import BoundTerm, CompiledRoute

__all__ = ["BoundTerm", "CompiledRoute", "RewardFn", "compile_routes"]
