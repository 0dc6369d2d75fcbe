"""What crosses into a worker process: plain snapshots of samples, never framework objects.

A sample becomes the tuple of its :class:`~rewardrouter.route.sample.Sample` fields (a tuple
pickles several times faster than an object), and the worker rebuilds a ``Sample`` from it. A
reward function in a worker process therefore sees a ``Sample``: ``prompt``, ``response``,
``label``, ``metadata``, ``status``, ``response_length``, ``group_index``, ``index``, ``reward``,
``custom_rm_path``, ``reward_spec`` (as a dict) and ``extra`` — not attributes that only a
trainer's own sample class has.

>>> restore(snapshot(Sample(response="x = 42", label="42"))).label
'42'
"""

from __future__ import annotations

import pickle
from dataclasses import fields
from operator import attrgetter
from types import SimpleNamespace
from typing import Any

from rewardrouter.route.sample import Sample, metadata_of, spec_field, status_of

FIELDS = tuple(f.name for f in fields(Sample))
_FIELDS_OF = attrgetter(*FIELDS)


def snapshot(sample: Any) -> tuple[Any, ...]:
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
