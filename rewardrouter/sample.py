"""What the router reads from a sample, whatever shape the sample comes in.

:class:`SampleLike` is the contract: slime / miles / vime ``Sample`` objects fulfil it as they
are (attribute access, nothing copied). Plain dicts and the command line's JSONL rows become
:class:`Sample`, which fulfils it too (:func:`as_sample`).

>>> sample = as_sample({"response": "\\boxed{4}", "label": "4", "metadata": {"dataset": "gsm8k"}})
>>> sample.label, metadata_of(sample)["dataset"], status_of(sample)
('4', 'gsm8k', 'completed')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Protocol, cast

from rewardrouter.errors import RoutingError


class SampleLike(Protocol):
    """What the router reads of a sample, by attribute.

    Always ``response``, ``label`` and ``metadata``. When a sample has them, also ``prompt``,
    ``status`` (``completed`` / ``truncated`` / ``aborted`` / ``failed``, enum or string),
    ``response_length``, ``group_index``, ``index``, ``reward`` (already set: kept, not scored
    again), ``custom_rm_path`` (slime, vime) and ``reward_spec`` (miles: ``rm_type``,
    ``custom_rm_path``); a missing one reads as unset.
    """

    @property
    def response(self) -> str: ...

    @property
    def label(self) -> Any: ...

    @property
    def metadata(self) -> Mapping[str, Any]: ...


#: What the router's entry points accept: a sample object, or a mapping with the same keys.
SampleInput = SampleLike | Mapping[str, Any]


@dataclass(slots=True)
class Sample:
    """A sample from a dict or a JSONL row; attribute names follow slime's ``Sample``.

    Keys that are not fields are kept in ``extra`` (e.g. an ``expected_reward`` column).
    """

    prompt: Any = ""
    response: str = ""
    label: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)
    status: str = "completed"
    response_length: int | None = None
    group_index: int | None = None
    index: int | None = None
    reward: Any = None
    custom_rm_path: str | None = None
    reward_spec: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_mapping(cls, row: Mapping[str, Any], where: str = "sample") -> Sample:
        known = {f.name for f in fields(cls)} - {"extra"}
        values = {k: v for k, v in row.items() if k in known}
        extra = {k: v for k, v in row.items() if k not in known}
        metadata = values.get("metadata")
        if metadata is None:
            values["metadata"] = {}
        elif not isinstance(metadata, Mapping):
            raise RoutingError(
                f"{where}: `metadata` must be a mapping, found {type(metadata).__name__} "
                f"{metadata!r}; write it as a JSON object"
            )
        if values.get("response") is None:
            values["response"] = ""
        return cls(**values, extra=extra)


def as_sample(obj: SampleInput, index: int | None = None) -> SampleLike:
    """``obj`` itself when it has attributes, else a :class:`Sample` built from the mapping.

    ``index`` (the sample's position in its batch) names it in errors.
    """
    if type(obj) is dict or (not hasattr(obj, "response") and isinstance(obj, Mapping)):
        return Sample.from_mapping(obj, "sample" if index is None else f"sample {index}")
    return cast("SampleLike", obj)  # an object with attributes: read as it is


def status_of(sample: SampleLike) -> str:
    """The sample's status as a lowercase string (enum members give their value)."""
    status = getattr(sample, "status", None)
    if status is None:
        return "completed"
    if status == "completed":
        return status  # type: ignore[no-any-return]
    value = getattr(status, "value", status)
    return str(value).lower()


def metadata_of(sample: SampleLike) -> Mapping[str, Any]:
    """The sample's metadata; an empty mapping when it has none (or not a mapping)."""
    meta = getattr(sample, "metadata", None)
    return meta if isinstance(meta, Mapping) else {}


def spec_field(spec: Any, name: str) -> Any:
    """A field of miles' ``reward_spec`` (an object or a dict)."""
    if spec is None:
        return None
    if isinstance(spec, Mapping):
        return spec.get(name)
    return getattr(spec, name, None)
