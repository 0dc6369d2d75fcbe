"""Route: which route scores each sample (precedence) and how calls are grouped."""

from rewardrouter.route.groups import RouteGroup, plan_groups
from rewardrouter.route.precedence import Decision, Resolver
from rewardrouter.route.sample import Sample, as_sample

__all__ = ["Decision", "Resolver", "RouteGroup", "Sample", "as_sample", "plan_groups"]
