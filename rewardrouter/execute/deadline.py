"""The deadline of the call running now, for a callable that must queue before its work starts.

An ``inline`` call's deadline counts from when the executor starts it. A grader that then waits
for a resource it shares (a sandbox's free worker, a server's free connection) would spend its
own deadline in that queue, and the calls behind a slow one would time out without having run.
Such a grader waits inside :meth:`CallDeadline.paused`: the deadline stops for the wait and
counts from its end, in full, so what the grader does with the resource is bounded as before.
The wait itself is bounded by the work ahead of it, each piece of which is bounded by its own
deadline.

>>> import asyncio
>>> from rewardrouter.execute.inprocess.inline import bounded
>>> async def graded(item):
...     with current_deadline().paused():
...         await asyncio.sleep(0.5)  # a queue, longer than the whole deadline
...     await asyncio.sleep(0.2)  # the work
...     return 1.0
>>> asyncio.run(bounded(graded, None, timeout=0.3)).status
'ok'
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class CallDeadline:
    """The deadline of one call: ``seconds`` in all, enforced by ``scope``."""

    seconds: float
    scope: asyncio.Timeout

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No deadline inside (a wait for the call's turn); from its end, the whole deadline."""
        self.scope.reschedule(None)
        try:
            yield
        finally:
            self.scope.reschedule(asyncio.get_running_loop().time() + self.seconds)

    def remaining(self) -> float:
        """Seconds left before the deadline."""
        when = self.scope.when()
        return self.seconds if when is None else when - asyncio.get_running_loop().time()


_CURRENT: contextvars.ContextVar[CallDeadline | None] = contextvars.ContextVar(
    "rewardrouter_call_deadline", default=None
)


def current_deadline() -> CallDeadline | None:
    """The deadline of the call running in this task, or None outside an executor's call."""
    return _CURRENT.get()


def set_deadline(deadline: CallDeadline) -> contextvars.Token[CallDeadline | None]:
    """Make ``deadline`` this task's current one (for the executor that enforces it)."""
    return _CURRENT.set(deadline)


def reset_deadline(token: contextvars.Token[CallDeadline | None]) -> None:
    """Undo :func:`set_deadline` once its call is over."""
    _CURRENT.reset(token)
