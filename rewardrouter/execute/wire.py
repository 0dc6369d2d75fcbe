"""What crosses between the router and a worker process or a Ray actor, both ways: one protocol
for both backends.

To a worker, a *task*: ``(task_id, job_id, job_blob, items_blob, count)``. ``job_blob`` pickles
``(fn, args, kwargs, group, timeout)`` (a worker keeps it while the job id stays the same,
:class:`JobCache`), ``items_blob`` the ``count`` items: sample snapshots, or one list of them
for a group-mode call. Samples travel as plain snapshots, never framework objects: a sample
becomes the tuple of its :class:`~rewardrouter.sample.Sample` fields (a tuple pickles several
times faster than an object), and the worker rebuilds a ``Sample`` from it. A reward function in
a worker therefore sees a ``Sample``: ``prompt``, ``response``, ``label``, ``metadata``,
``status``, ``response_length``, ``group_index``, ``index``, ``reward``, ``custom_rm_path``,
``reward_spec`` (as a dict) and ``extra`` — not attributes that only a trainer's own sample
class has.

Back from a worker, :data:`Message` s ``(task_id, first, outcomes, seconds, done)``: the
outcomes of items ``first, first + 1, ...``, the seconds they took, and whether the task is
complete (:class:`OutcomeBatch`).

>>> restore(snapshot(Sample(response="x = 42", label="42"))).label
'42'
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Callable
from dataclasses import fields
from operator import attrgetter
from types import SimpleNamespace
from typing import Any, TypeVar

from rewardrouter.outcome import Outcome, describe_exception, setup_failed
from rewardrouter.sample import Sample, SampleLike, metadata_of, spec_field, status_of

R = TypeVar("R")

FIELDS = tuple(f.name for f in fields(Sample))
_FIELDS_OF = attrgetter(*FIELDS)


def snapshot(sample: SampleLike) -> tuple[Any, ...]:
    """The fields of ``sample`` as a plain tuple, in :data:`FIELDS` order."""
    if type(sample) is Sample:
        return _FIELDS_OF(sample)
    spec = getattr(sample, "reward_spec", None)
    portable = {
        "response": getattr(sample, "response", "") or "",
        "metadata": dict(metadata_of(sample)),
        "status": status_of(sample),
        "reward_spec": None
        if spec is None
        else {name: spec_field(spec, name) for name in ("rm_type", "custom_rm_path")},
        "extra": {},
    }
    return tuple(
        portable[name] if name in portable else getattr(sample, name, None) for name in FIELDS
    )


def restore(values: tuple[Any, ...]) -> Sample:
    """The :class:`Sample` that :func:`snapshot` took apart."""
    return Sample(*values)


def portable_args(args: Any) -> Any:
    """``args`` if it pickles; else a namespace of those of its attributes that do.

    ``args`` is a trainer's argument namespace, handed to every reward function. A worker process
    needs a copy; an attribute that cannot be copied (a lock, a live connection) is left out.
    """
    try:
        pickle.dumps(args)
    except Exception:
        kept = {}
        for name, value in getattr(args, "__dict__", {}).items():
            try:
                pickle.dumps(value)
            except Exception:
                continue
            kept[name] = value
        return SimpleNamespace(**kept)
    return args


Message = tuple[int, int, list[Outcome], float, bool]


class OutcomeBatch:
    """The outcomes of one task on their way back to the pool, sent in batches.

    A batch is due once ``flush_seconds`` have passed since the last one, and at the end of the
    task. Each message is ``(task_id, first, outcomes, seconds, done)``: the outcomes of calls
    ``first, first + 1, ...``, the seconds they took, and whether the task is complete. Shared
    by the worker processes (sent over a pipe) and the Ray actors (yielded to a stream).
    """

    def __init__(self, task_id: int, flush_seconds: float) -> None:
        self.task_id = task_id
        self.flush_seconds = flush_seconds
        self.buffer: list[Outcome] = []
        self.first = 0
        self.since = time.monotonic()

    def add(self, outcome: Outcome) -> bool:
        """Keep ``outcome``; True when a batch is due."""
        self.buffer.append(outcome)
        return time.monotonic() - self.since >= self.flush_seconds

    def flush(self, send: Callable[[Message], R], done: bool) -> R:
        """``send`` the kept outcomes as one message, and start a new batch.

        A value that cannot be pickled becomes an ``invalid`` outcome that says so.
        """
        now = time.monotonic()
        outcomes = self.buffer
        try:
            sent = send((self.task_id, self.first, outcomes, now - self.since, done))
        except Exception:  # a value that cannot be pickled: found and replaced
            outcomes = [_sendable(o) for o in outcomes]
            sent = send((self.task_id, self.first, outcomes, now - self.since, done))
        self.first += len(outcomes)
        self.buffer = []
        self.since = now
        return sent


def _sendable(outcome: Outcome) -> Outcome:
    try:
        pickle.dumps(outcome)
    except Exception as exc:
        kind = type(outcome.value).__name__
        return Outcome(None, "invalid", f"returned a {kind}, which cannot leave the worker ({exc})")
    return outcome


def load_job(blob: bytes) -> tuple[Callable[[Any], Any], float]:
    """The per-item call of a job, and its timeout."""
    fn, args, kwargs, group, timeout = pickle.loads(blob)
    if group:
        return (lambda items: fn(args, [restore(v) for v in items], **kwargs)), timeout
    return (lambda values: fn(args, restore(values), **kwargs)), timeout


class JobCache:
    """The job a worker ran last: a job's calls arrive in several tasks, loaded once."""

    def __init__(self) -> None:
        self._id: int | None = None
        self._call: Callable[[Any], Any] = restore
        self._timeout = 0.0

    def load(
        self, job_id: int, blob: bytes, items_blob: bytes
    ) -> tuple[Callable[[Any], Any], float, list[Any]]:
        """The per-item call of job ``job_id`` (``blob``, unpickled when the job is new), its
        timeout, and the task's items. Raises whatever unpickling raises."""
        if job_id != self._id:
            self._id = None
            self._call, self._timeout = load_job(blob)
            self._id = job_id
        return self._call, self._timeout, pickle.loads(items_blob)


def unloadable(exc: BaseException, count: int) -> list[Outcome]:
    """The outcomes of a task whose function or samples could not be loaded."""
    cause = describe_exception(exc)
    return [setup_failed(f"the worker could not load the call: {cause}")] * count
