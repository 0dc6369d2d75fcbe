"""Execute: run the calls of each route group on its executor, under deadlines.

Backends: ``inprocess`` (inline, thread), ``process`` (worker processes) and ``ray`` (Ray
actors); the last two share :mod:`~rewardrouter.execute.tasks` (jobs, tasks, task sizes) and
:mod:`~rewardrouter.execute.wire` (what crosses to a worker and back).
"""

from rewardrouter.execute.outcome import Outcome

__all__ = ["Outcome"]
