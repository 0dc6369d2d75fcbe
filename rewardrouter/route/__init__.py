"""Route: which route scores each sample (precedence), how calls are grouped, and how each
sample's term outcomes become its result."""

from rewardrouter.route.assemble import Triage, assemble, combine
from rewardrouter.route.groups import RouteGroup, plan_groups
from rewardrouter.route.precedence import Decision, Resolver

__all__ = ["Decision", "Resolver", "RouteGroup", "Triage", "assemble", "combine", "plan_groups"]
