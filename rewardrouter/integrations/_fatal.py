"""The error that stops a trainer which turns every ``Exception`` of a reward call into no reward.

OpenRLHF's agent executor catches any ``Exception`` that its reward function raises, logs it at
INFO and goes on with ``reward=None``, which its experience maker cannot batch
(``Experience.concat_experiences`` then fails on the ``None``, far from the cause). A fault
that must stop the run is therefore raised as :class:`FatalRewardError`, a ``BaseException``
as ``KeyboardInterrupt`` is: it passes that handler, ``asyncio.to_thread`` and
``asyncio.gather``, and Ray hands it to the trainer as ``RayTaskError(FatalRewardError)``.

It lives in a module of its own so that the class is one object however the integration's file
is loaded (OpenRLHF executes a reward file as a fresh module of its own).
"""

from __future__ import annotations


class FatalRewardError(BaseException):
    """A fault that stops the run: its message is rewardrouter's error with the fix, and that
    error is its ``__cause__``."""
