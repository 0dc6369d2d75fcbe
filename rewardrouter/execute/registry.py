"""Every executor by name, and the executors of one router.

:data:`EXECUTORS` is the one list of executors: a reward term's ``executor:`` names one of them
(or ``auto``), ``executors.<name>`` of a router config holds the settings of those that have a
``settings_model``, the compiler runs the named executor's :meth:`~Executor.check` on the term's
function and checks those settings (:func:`settings_of`), and a router makes each executor it
uses on first use (:class:`Executors`).

>>> sorted(EXECUTORS)
['inline', 'process', 'ray', 'thread']
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from pydantic import BaseModel

from rewardrouter.config.models import RouterConfig
from rewardrouter.execute.executor import Call, Executor, Setup, closed
from rewardrouter.execute.inprocess.inline import InlineExecutor
from rewardrouter.execute.inprocess.threads import ThreadExecutor
from rewardrouter.execute.process.pool import ProcessExecutor
from rewardrouter.execute.ray.pool import RayExecutor
from rewardrouter.outcome import UNDECIDED, Outcome, QuickPath, group_outcomes, returned
from rewardrouter.sample import SampleLike

EXECUTORS: dict[str, type[Executor]] = {
    "inline": InlineExecutor,
    "thread": ThreadExecutor,
    "process": ProcessExecutor,
    "ray": RayExecutor,
}


def register_executor(name: str, executor: type[Executor]) -> None:
    """Make ``executor: name`` run calls on ``executor`` (a subclass of :class:`Executor`)."""
    if not name.isidentifier() or name == "auto":
        raise ValueError(f"executor name {name!r} must be an identifier other than 'auto'")
    if EXECUTORS.get(name, executor) is not executor:
        raise ValueError(f"executor {name!r} is already registered ({EXECUTORS[name].__name__})")
    EXECUTORS[name] = executor


def settings_of(name: str, config: RouterConfig) -> BaseModel | None:
    """Executor ``name``'s settings from ``config.executors``, validated by its
    ``settings_model`` (defaults where the config says nothing; None when it has no model).

    Raises pydantic's ``ValidationError`` for settings the model refuses; the compiler reports
    those with their YAML paths before any executor is made.
    """
    model = EXECUTORS[name].settings_model
    if model is None:
        return None
    return model.model_validate(config.executors.get(name, {}))


def decide_here(call: Call, samples: Sequence[SampleLike]) -> tuple[Sequence[Outcome], list[int]]:
    """Run the callee's bounded quick path on ``samples`` in this process (see
    :class:`~rewardrouter.outcome.QuickPath`; ``math`` has one: its exact checks).

    Returns an outcome per sample (placeholders where undecided) and the indices of the samples
    it left :data:`~rewardrouter.outcome.UNDECIDED`, or that raised (the executor then
    reports those failures as it reports any other). No quick path, or group mode: no outcomes
    and every index. A quick path is bounded by construction, so it runs without a deadline.
    """
    fn = call.callee.fn
    if call.group or not isinstance(fn, QuickPath) or not fn.has_quick:
        return [], list(range(len(samples)))
    quick = fn.quick
    values: list[Any] = []
    rest: list[int] = []
    args, kwargs = call.args, call.kwargs
    for i, sample in enumerate(samples):
        try:
            value = quick(args, sample, **kwargs)
        except Exception:
            value = UNDECIDED
        if value is UNDECIDED:
            rest.append(i)
        values.append(value)
    if not rest:
        return returned(values), rest  # all decided: plain floats stay one list
    return [Outcome(v) for v in values], rest


class Executors:
    """The executors of one router, each made on first use; :meth:`close` closes them all."""

    def __init__(self, setup: Setup) -> None:
        self._setup = setup
        self._made: dict[str, Executor] = {}
        self._lock = threading.Lock()
        self._closed = False

    def __getitem__(self, name: str) -> Executor:
        """Executor ``name``, made now if this router has not used it yet."""
        with self._lock:
            self.check_open()
            made = self._made.get(name)
            if made is None:
                setup = replace(self._setup, settings=settings_of(name, self._setup.config))
                made = self._made[name] = EXECUTORS[name](setup)
            return made

    def started(self, name: str) -> Executor | None:
        """Executor ``name`` if this router has made it, else None (nothing is started)."""
        return self._made.get(name)

    async def run(self, name: str, call: Call, samples: Sequence[SampleLike]) -> Sequence[Outcome]:
        """One :class:`Outcome` per sample, in order: ``call`` on executor ``name``.

        A group-mode call's one outcome is spread over its samples
        (:func:`~rewardrouter.outcome.group_outcomes`). On an executor that ships
        functions to other processes, a built-in's quick path runs here first
        (:func:`decide_here`), and only the samples it leaves undecided are sent: a batch the
        quick path decides costs no hand-off and starts no worker.
        """
        if not samples:
            return []
        if EXECUTORS[name].ships_functions:
            decided, rest = decide_here(call, samples)
            if decided:
                if rest:
                    assert isinstance(decided, list)  # a list whenever samples are left
                    sent = await self[name].run(call, [samples[i] for i in rest])
                    for i, outcome in zip(rest, sent, strict=True):
                        decided[i] = outcome
                return decided
        outcomes = await self[name].run(call, samples)
        return group_outcomes(outcomes[0], len(samples)) if call.group else outcomes

    def close(self) -> None:
        """Close every executor made (worker processes are waited for). Idempotent."""
        with self._lock:
            self._closed = True
            made, self._made = self._made, {}
        for executor in made.values():
            executor.close()

    def check_open(self) -> None:
        """Raise :class:`~rewardrouter.errors.RewardRouterError` once :meth:`close` has run."""
        if self._closed:
            raise closed()
