"""What the router reads from a sample, whatever shape the sample comes in.

slime / miles / vime ``Sample`` objects are read as they are (attribute access). Plain dicts and
the command line's JSONL rows become :class:`Sample`. Nothing here copies a framework object.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from rewardrouter.errors import RoutingError


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


def as_sample(obj: Any, index: int | None = None) -> Any:
    """``obj`` itself when it has attributes, else a :class:`Sample` built from the mapping.

    ``index`` (the sample's position in its batch) names it in errors.
    """
    if type(obj) is dict or (not hasattr(obj, "response") and isinstance(obj, Mapping)):
        return Sample.from_mapping(obj, "sample" if index is None else f"sample {index}")
    return obj


def status_of(sample: Any) -> str:
    """The sample's status as a lowercase string (enum members give their value)."""
    status = getattr(sample, "status", None)
    if status is None:
        return "completed"
    if status == "completed":
        return status  # type: ignore[no-any-return]
    value = getattr(status, "value", status)
    return str(value).lower()


def metadata_of(sample: Any) -> Mapping[str, Any]:
    meta = getattr(sample, "metadata", None)
    return meta if isinstance(meta, Mapping) else {}


def spec_field(spec: Any, name: str) -> Any:
    """A field of miles' ``reward_spec`` (an object or a dict)."""
    if spec is None:
        return None
    if isinstance(spec, Mapping):
        return spec.get(name)
    return getattr(spec, name, None)
