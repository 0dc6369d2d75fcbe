"""What the router reads from a sample, whatever shape the sample comes in.

:class:`SampleLike` is the contract: slime / miles / vime ``Sample`` objects fulfil it as they
are (attribute access, nothing copied). Plain dicts and the command line's JSONL rows become
:class:`Sample`, which fulfils it too (:func:`as_sample`).

>>> sample = as_sample({"response": "\\boxed{4}", "label": "4", "metadata": {"dataset": "gsm8k"}})
>>> sample.label, metadata_of(sample)["dataset"], status_of(sample)
('4', 'gsm8k', 'completed')
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any, Protocol, cast

from rewardrouter.errors import Problem, RoutingError, did_you_mean, short_repr

#: Sample statuses as slime, miles and vime spell them (``Sample.Status`` values).
SAMPLE_STATUSES = ("pending", "completed", "truncated", "aborted", "failed")

#: Columns that datasets use for what rewardrouter reads as ``label`` and ``response``.
LABEL_COLUMNS = ("solution", "answer", "ground_truth", "reference", "gold", "target", "expected")
RESPONSE_COLUMNS = ("completion", "output", "generation", "generated_text", "prediction", "text")

_INT64 = 2**63
#: The most characters of a field's value that a sample's problem shows.
_SHOWN = 60


class SampleLike(Protocol):
    """What the router reads of a sample, by attribute.

    Always ``response`` (``None``, or a missing one, is refused before scoring: it is never
    read as an empty answer), ``label`` and ``metadata``. When a sample has them, also ``prompt``,
    ``status`` (``completed`` / ``truncated`` / ``aborted`` / ``failed``, enum or string),
    ``response_length``, ``group_index``, ``index``, ``reward`` (already set: kept, not scored
    again), ``custom_rm_path`` (slime, vime) and ``reward_spec`` (miles: ``rm_type``,
    ``custom_rm_path``); a missing one reads as unset.
    """

    @property
    def response(self) -> str | list[Any] | None: ...

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
    response: str | list[Any] | None = ""
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
        values.setdefault("response", None)  # a missing response is reported, never scored as ""
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
    if type(status) is str:
        return status if status.islower() else status.lower()
    if isinstance(status, Enum):  # a trainer's few Status members: each read once
        text = _STATUS_TEXT.get(status)
        if text is None:
            text = _STATUS_TEXT[status] = str(status.value).lower()
        return text
    return str(getattr(status, "value", status)).lower()


#: The text of each ``Status`` enum member met so far.
_STATUS_TEXT: dict[Any, str] = {}


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


def group_index_problem(value: Any) -> str | None:
    """Why ``value`` cannot be a prompt group id (``None`` when it can: an integer in int64).

    An integral float (``3.0``, as some JSON writers spell integers) is accepted; ``0.7`` is not
    silently truncated into group 0.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"must be an integer, found {type(value).__name__} {short_repr(value, _SHOWN)}"
    if isinstance(value, float) and not value.is_integer():
        return f"must be an integer, found {value!r} (it would be truncated into another group)"
    if not -_INT64 <= value < _INT64:
        return f"{short_repr(value, _SHOWN)} is outside the 64-bit integer range"
    return None


def response_problem(row: Mapping[str, Any]) -> Problem | None:
    """A row whose ``response`` is missing, null, or neither a string nor a list of chat message
    objects (rows that are aborted or carry their reward already need none). The messages
    themselves are checked when a term reads them: a malformed conversation is its sample's own
    status."""
    response = row.get("response")
    if isinstance(response, str) or _is_aborted(row.get("status")):
        return None
    if isinstance(response, list) and all(isinstance(m, Mapping) for m in response):
        return None
    if response is None and row.get("reward") is not None:
        return None
    if response is None:
        found = "is null" if "response" in row else "is missing"
        alias = [c for c in RESPONSE_COLUMNS if c in row]
        hint = (
            f"found column {alias[0]!r}: rename it to `response`, or map it with "
            f"data.columns.response={alias[0]}"
            if alias
            else "give every scored row the model's answer as a string"
        )
        return Problem("response", f"{found} (keys: {', '.join(map(str, row)) or 'none'})", hint)
    return Problem(
        "response",
        f"must be a string or a list of chat messages, found {type(response).__name__} "
        f"{short_repr(response, _SHOWN)}",
        "write the model's answer as one JSON string, or its conversation as a list of "
        '{"role", "content"} messages',
    )


def row_problems(row: Mapping[str, Any]) -> list[Problem]:
    """Every field of a data row (a JSONL line, a dict) that would be misread, each a
    :class:`Problem` whose ``path`` is the field; ``[]`` if none.

    Checked before anything is scored: the response (missing, null, not a string), a label
    under another column name, ``metadata`` that is not an object, ``group_index`` that is
    not an integer, ``response_length`` that is not a non-negative number, an unknown
    ``status``, and a ``reward`` that is not a finite number or an object.
    """
    problems: list[Problem] = []
    response = response_problem(row)
    if response is not None:
        problems.append(response)
    if "label" not in row and (alias := [c for c in LABEL_COLUMNS if c in row]):
        problems.append(
            Problem(
                "label",
                f"is missing, but the row has {alias[0]!r}",
                f"rename the column to `label`, or map it with data.columns.label={alias[0]}",
            )
        )
    metadata = row.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        problems.append(
            Problem(
                "metadata",
                f"must be an object, found {type(metadata).__name__} {short_repr(metadata, _SHOWN)}",
                'write it as a JSON object, e.g. {"dataset": "gsm8k"}',
            )
        )
    group = row.get("group_index")
    if group is not None and (why := group_index_problem(group)) is not None:
        problems.append(Problem("group_index", why, "number each prompt group with an integer"))
    length = row.get("response_length")
    if length is not None and not (_is_number(length) and 0 <= length < math.inf):
        problems.append(
            Problem(
                "response_length",
                f"must be a non-negative number of tokens, found {short_repr(length, _SHOWN)}",
            )
        )
    status = row.get("status")
    if status is not None and str(status).lower() not in SAMPLE_STATUSES:
        close = did_you_mean(str(status).lower(), SAMPLE_STATUSES)
        problems.append(
            Problem(
                "status",
                f"{short_repr(status, _SHOWN)} is not a sample status",
                f"{close + ' ' if close else ''}expected one of: {', '.join(SAMPLE_STATUSES)}",
            )
        )
    reward = row.get("reward")
    if reward is not None:
        entries = reward.values() if isinstance(reward, Mapping) else [reward]
        for entry in entries:
            if _is_number(entry) and not _finite(entry):
                problems.append(
                    Problem(
                        "reward",
                        f"holds {short_repr(entry, _SHOWN)}, which is not a finite float",
                        "store rewards as finite numbers",
                    )
                )
                break
        if not (_is_number(reward) or isinstance(reward, Mapping)):
            problems.append(
                Problem(
                    "reward",
                    f"must be a number or an object, found {type(reward).__name__} "
                    f"{short_repr(reward, _SHOWN)}",
                    "drop the column to score the row, or store the reward as a number",
                )
            )
    return problems


def _is_aborted(status: Any) -> bool:
    return str(getattr(status, "value", status)).lower() == "aborted"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _finite(value: int | float) -> bool:
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an integer beyond the float range
        return False
