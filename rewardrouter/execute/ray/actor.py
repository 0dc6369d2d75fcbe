"""One actor of the ``ray`` executor: the Ray side of :mod:`~rewardrouter.execute.ray.pool`.

A plain class: the pool turns it into a Ray actor class, so this module imports Ray only in
:meth:`RewardActor.ready` (which runs on an actor), and an actor runs a task exactly as a worker
process does (:mod:`~rewardrouter.execute.process.worker`: the same job loading, call loop and
outcome batches).

Protocol: :meth:`RewardActor.run` ``(task_id, job_id, job_blob, items_blob, count)`` is a Ray
streaming generator. ``job_blob`` pickles ``(fn, args, kwargs, group, timeout)`` and
``items_blob`` the task's ``count`` items, as for a worker process. It yields pickled
:class:`~rewardrouter.execute.process.worker.OutcomeBatch` messages ``(task_id, first, outcomes,
seconds, done)``: an empty one as soon as the function and the items are loaded (the calls start
now), then one at most every ``flush_seconds`` of calls, and a last one with ``done`` true.
Ray Client cannot stream, so there :meth:`RewardActor.run_whole` returns the same messages in
one reply.

>>> import pickle
>>> from rewardrouter.compile.resolve import resolve_builtin
>>> from rewardrouter.execute.executor import Call
>>> from rewardrouter.execute.tasks import open_job
>>> from rewardrouter.sample import Sample
>>> call = Call(resolve_builtin("exact_match", {}), None, timeout=5.0, key="exact_match")
>>> job = open_job(1, call, [Sample(response="Paris", label="paris")])
>>> items, _ = job.payload([0])
>>> actor = RewardActor(modules=[], flush_seconds=0.2)
>>> [pickle.loads(m)[2] for m in actor.run(1, job.id, job.blob, items, 1)]
[[], [Outcome(value=1.0, status='ok', error=None, sample_fault=False, setup_fault=None)]]
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterator, Sequence

from rewardrouter.execute.calls import each_outcome
from rewardrouter.execute.wire import JobCache, Message, OutcomeBatch, unloadable
from rewardrouter.introspect import import_quietly


def _encode(message: Message) -> bytes:
    return pickle.dumps(message, pickle.HIGHEST_PROTOCOL)


class RewardActor:
    """Runs tasks of reward calls; ``modules`` are imported once, when the actor starts."""

    def __init__(self, modules: Sequence[str], flush_seconds: float) -> None:
        import_quietly(modules)
        self._flush_seconds = flush_seconds
        self._jobs = JobCache()

    def ready(self) -> tuple[int, str]:
        """The actor's process id and its node's id, once it is placed and has imported its
        modules."""
        import ray  # only ever called on a Ray actor

        return os.getpid(), ray.get_runtime_context().get_node_id()

    def run(
        self, task_id: int, job_id: int, blob: bytes, items_blob: bytes, count: int
    ) -> Iterator[bytes]:
        """Run one task; yields its outcome messages (see the module docstring)."""
        batch = OutcomeBatch(task_id, self._flush_seconds)
        try:
            call, timeout, items = self._jobs.load(job_id, blob, items_blob)
        except Exception as exc:
            batch.buffer = unloadable(exc, count)
            yield batch.flush(_encode, True)
            return
        yield batch.flush(_encode, False)  # nothing yet: it tells the pool the calls start now
        for outcome in each_outcome(call, items, timeout):
            if batch.add(outcome):
                yield batch.flush(_encode, False)
        yield batch.flush(_encode, True)

    def run_whole(
        self, task_id: int, job_id: int, blob: bytes, items_blob: bytes, count: int
    ) -> list[bytes]:
        """:meth:`run` with every message in one reply (for Ray Client, which cannot stream)."""
        return list(self.run(task_id, job_id, blob, items_blob, count))
