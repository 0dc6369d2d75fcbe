"""Execute: run the calls of each route group on its executor, under deadlines.

An executor subclasses :class:`Executor` (a compile-time check, ``run``, ``close``) and is named
in :data:`EXECUTORS` (or by :func:`register_executor`). Backends: ``inprocess`` (inline, thread),
``process`` (worker processes) and ``ray`` (Ray actors); the last two share
:mod:`~rewardrouter.execute.tasks` (jobs, tasks, task sizes) and
:mod:`~rewardrouter.execute.wire` (what crosses to a worker and back).
"""

from rewardrouter.execute.executor import Call, Executor, Setup
from rewardrouter.execute.registry import EXECUTORS, register_executor
from rewardrouter.outcome import Outcome

__all__ = ["EXECUTORS", "Call", "Executor", "Outcome", "Setup", "register_executor"]
