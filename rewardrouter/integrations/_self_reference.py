"""Samples that name rewardrouter's own hook as their reward function.

slime and vime copy an eval dataset's ``custom_rm_path`` onto each of its samples, and miles
copies an adapter's into ``reward_spec``; the framework then calls that function directly. When
it names a rewardrouter hook (``rewardrouter.integrations.slime.custom_rm``), the sample has
already arrived where it should: the router must route it by its other fields, not call the hook
again (which would recurse forever). :func:`without_self_reference` hides such names, and
:func:`without_self_references` does so for a batch.

>>> class S:
...     custom_rm_path = "rewardrouter.integrations.slime.custom_rm"
...     metadata = {"dataset": "gsm8k"}
>>> view = without_self_reference(S())
>>> view.custom_rm_path is None, view.metadata
(True, {'dataset': 'gsm8k'})
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rewardrouter.sample import SampleInput, SampleLike, as_sample, metadata_of, spec_field

#: Functions under this prefix are rewardrouter's own hooks, never reward functions.
HOOK_PREFIX = "rewardrouter.integrations."


def _names_hook(path: Any) -> bool:
    return isinstance(path, str) and path.startswith(HOOK_PREFIX)


class _HookHidden:
    """A view of a sample in which the fields naming a rewardrouter hook read as unset.

    Every other attribute is the sample's own, for reading and for writing.
    """

    __slots__ = ("_sample", "custom_rm_path", "metadata", "reward_spec")

    def __init__(self, sample: SampleLike) -> None:
        spec = getattr(sample, "reward_spec", None)
        metadata = metadata_of(sample)
        if _names_hook(spec_field(spec, "custom_rm_path")):
            spec = {"rm_type": spec_field(spec, "rm_type")}
        if _names_hook(metadata.get("custom_rm_path")):
            metadata = {k: v for k, v in metadata.items() if k != "custom_rm_path"}
        path = getattr(sample, "custom_rm_path", None)
        object.__setattr__(self, "_sample", sample)
        object.__setattr__(self, "custom_rm_path", None if _names_hook(path) else path)
        object.__setattr__(self, "metadata", metadata)
        object.__setattr__(self, "reward_spec", spec)

    def __getattr__(self, name: str) -> Any:
        return getattr(object.__getattribute__(self, "_sample"), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(object.__getattribute__(self, "_sample"), name, value)

    def __reduce__(self) -> tuple[Any, tuple[Any]]:
        return _HookHidden, (object.__getattribute__(self, "_sample"),)


def without_self_reference(sample: SampleInput) -> SampleLike:
    """``sample`` (a dict row as a :class:`~rewardrouter.Sample`), or a view of it hiding the
    fields that name a rewardrouter hook."""
    sample = as_sample(sample)
    own = getattr(sample, "metadata", None)
    if (
        type(own) is dict
        and "custom_rm_path" not in own
        and getattr(sample, "custom_rm_path", None) is None
        and getattr(sample, "reward_spec", None) is None
    ):
        return sample  # names no function at all (a trainer's usual sample): one look suffices
    metadata = metadata_of(sample)
    if (
        _names_hook(getattr(sample, "custom_rm_path", None))
        or _names_hook(spec_field(getattr(sample, "reward_spec", None), "custom_rm_path"))
        or _names_hook(metadata.get("custom_rm_path"))
    ):
        return _HookHidden(sample)
    return sample


def without_self_references(samples: Sequence[SampleInput]) -> list[SampleLike]:
    """:func:`without_self_reference` of each sample, in order."""
    return [without_self_reference(sample) for sample in samples]
