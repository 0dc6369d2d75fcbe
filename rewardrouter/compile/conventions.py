"""Reward functions written for TRL or verl, used as terms without rewriting them.

A term's ``mode: trl`` / ``mode: verl`` (or ``auto``, recognizing the signature) wraps the
function in an adapter with rewardrouter's own calling convention:

- **TRL** (``fn(completions, solution, **kwargs) -> list[float | None]``, sync or async; a first
  parameter named ``prompts`` or ``completions``): one call per route group, by keyword, as
  ``GRPOTrainer`` calls it: ``prompts``, ``completions`` and one list per column. Columns are the
  samples' ``metadata`` fields, and the label goes to the one parameter the function requires
  besides those (``solution`` for ``trl.rewards.accuracy_reward``), or, when it requires none,
  to the one with a default named like a label (``solution``, ``answer``, ``ground_truth``,
  ``label``, ...: ``def f(completions, solution=None, **kw)`` gets the label). Completions are
  conversational (``[{"role": "assistant", "content": text}]``) when the samples' prompts are
  message lists or the function annotates ``completions`` as messages, else strings.
- **verl** (``compute_score(data_source, solution_str, ground_truth, extra_info=None, **kw)``,
  sync or async; parameters ``solution_str`` and ``ground_truth``): one call per sample, by
  keyword: ``data_source`` from the sample's ``data_source`` (else ``dataset``, else
  ``source_name``) metadata, ``solution_str`` the response, ``ground_truth`` the label,
  ``extra_info`` the metadata. A dict result gives its ``score``, as verl reads it.

The term's ``kwargs`` are passed on every call. Adapters are top-level classes holding the
function, so they pickle for worker processes and Ray actors.

>>> def compute_score(data_source, solution_str, ground_truth, extra_info=None):
...     return {"score": float(solution_str == ground_truth), "acc": True}
>>> from rewardrouter import Sample
>>> VerlStyle(compute_score)(None, Sample(response="4", label="4", metadata={"dataset": "x"}))
1.0
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from rewardrouter.introspect import ResolveError
from rewardrouter.sample import LABEL_COLUMNS

Convention = Literal["trl", "verl"]

#: What TRL passes a reward function besides the dataset columns.
TRL_STANDARD = frozenset({"prompts", "completions", "completion_ids"})
#: verl's reward-function parameters; ``data_source`` comes from these metadata fields.
VERL_PARAMS = ("data_source", "solution_str", "ground_truth", "extra_info")
DATA_SOURCE_FIELDS = ("data_source", "dataset", "source_name")
#: Parameter names that take the label even when they have a default.
LABEL_PARAMETERS = frozenset({"label", "labels", *LABEL_COLUMNS})


def recognize(sig: inspect.Signature) -> Convention | None:
    """The convention a signature follows, from its parameter names, if it is TRL's or verl's."""
    names = list(sig.parameters)
    if {"solution_str", "ground_truth"} <= set(names):
        return "verl"
    if names and names[0] in ("prompts", "completions") and "completions" in names:
        return "trl"
    return None


def _label_parameter(sig: inspect.Signature, kwargs: Mapping[str, Any], name: str) -> str | None:
    """The one required parameter of a TRL function that takes the samples' labels."""
    required = [
        p.name
        for p in sig.parameters.values()
        if p.default is p.empty
        and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        and p.name not in TRL_STANDARD
        and p.name not in kwargs
    ]
    if len(required) > 1:
        raise ResolveError(
            f"{name} requires columns {required}; a TRL-style term hands it the label as one of "
            f"them and the samples' metadata as the others",
            "give all but the label's parameter a default, or set them in `kwargs`",
        )
    if required:
        return required[0]
    # `def f(completions, solution=None, **kw)`: a label parameter with a default still takes
    # the label (else it would always read None and score 0.0); found by its name.
    optional = [
        p.name
        for p in sig.parameters.values()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        and p.name in LABEL_PARAMETERS
        and p.name not in kwargs
    ]
    if len(optional) > 1:
        raise ResolveError(
            f"{name} has several label-like parameters with defaults {optional}; a TRL-style "
            f"term hands the label to one parameter",
            f"make the label's parameter required (no default), e.g. "
            f"`def {name.rpartition('.')[2]}(completions, {optional[0]}, **kwargs)`",
        )
    return optional[0] if optional else None


def _accepts(sig: inspect.Signature) -> Callable[[str], bool]:
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return lambda name: True
    names = set(sig.parameters)
    return names.__contains__


def _conversational(sig: inspect.Signature) -> bool:
    param = sig.parameters.get("completions")
    return param is not None and "dict" in str(param.annotation)


class TRLStyle:
    """A TRL reward function as a group-mode term; see the module docstring."""

    def __init__(self, fn: Callable[..., Any], kwargs: Mapping[str, Any], name: str) -> None:
        sig = inspect.signature(fn)
        self.fn = fn
        self.label = _label_parameter(sig, kwargs, name)
        self.messages = _conversational(sig)
        self._accepts = _accepts(sig)

    def __getstate__(self) -> dict[str, Any]:
        return {"fn": self.fn, "label": self.label, "messages": self.messages}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._accepts = _accepts(inspect.signature(self.fn))

    def arguments(self, samples: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The keyword arguments of one call for ``samples``."""
        prompts = [getattr(s, "prompt", "") for s in samples]
        messages = self.messages or any(isinstance(p, list) for p in prompts)
        completions: list[Any] = [
            [{"role": "assistant", "content": s.response}] if messages else s.response
            for s in samples
        ]
        metadata = [getattr(s, "metadata", None) or {} for s in samples]
        fields = dict.fromkeys(k for m in metadata for k in m)
        out: dict[str, Any] = {
            name: [m.get(name) for m in metadata] for name in fields if self._accepts(name)
        }
        if self.label is not None:
            out[self.label] = [getattr(s, "label", None) for s in samples]
        out.update(prompts=prompts, completions=completions)
        out.update(kwargs)
        return out

    def __call__(self, args: Any, samples: Sequence[Any], **kwargs: Any) -> Any:
        return self.fn(**self.arguments(samples, kwargs))


class AsyncTRLStyle(TRLStyle):
    """:class:`TRLStyle` for an ``async`` TRL reward function."""

    async def __call__(self, args: Any, samples: Sequence[Any], **kwargs: Any) -> Any:
        return await self.fn(**self.arguments(samples, kwargs))


def _score(result: Any) -> Any:
    return result["score"] if isinstance(result, Mapping) and "score" in result else result


class VerlStyle:
    """A verl ``compute_score`` as a single-mode term; see the module docstring."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        accepts = _accepts(inspect.signature(fn))
        self.params = tuple(p for p in VERL_PARAMS if accepts(p))  # older ones lack some

    def arguments(self, sample: Any, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The keyword arguments of the call for ``sample``."""
        metadata = dict(getattr(sample, "metadata", None) or {})
        fields = (metadata.get(f) for f in DATA_SOURCE_FIELDS)
        values = {
            "data_source": next((v for v in fields if v is not None), None),
            "solution_str": sample.response,
            "ground_truth": sample.label,
            "extra_info": metadata,
        }
        return {**{p: values[p] for p in self.params}, **kwargs}

    def __call__(self, args: Any, sample: Any, **kwargs: Any) -> Any:
        return _score(self.fn(**self.arguments(sample, kwargs)))


class AsyncVerlStyle(VerlStyle):
    """:class:`VerlStyle` for an ``async`` ``compute_score``."""

    async def __call__(self, args: Any, sample: Any, **kwargs: Any) -> Any:
        return _score(await self.fn(**self.arguments(sample, kwargs)))


def unknown_kwargs(sig: inspect.Signature, kwargs: Mapping[str, Any]) -> list[str]:
    """The ``kwargs`` keys the function cannot take."""
    accepts = _accepts(sig)
    return [k for k in kwargs if not accepts(k)]
