"""The figures of one batch that a trainer's experiment tracker shows, under one naming scheme.

=====================================  ===========================================================
key                                    value
=====================================  ===========================================================
``rewardrouter/<route>/reward``        mean reward of the route's samples that got one
``rewardrouter/<route>/count``         samples the route scored
``rewardrouter/<route>/<term>``        mean value of the term where it returned one
``rewardrouter/status/<status>``       fraction of the batch with that status (``ok``,
                                       ``skipped``, ``error``, ``timeout``, ``invalid``,
                                       ``aborted``, ``kept``; only those that occur)
``rewardrouter/filled``                fraction of the batch handed ``missing_reward.value``
                                       in place of no reward (slime, vime, miles)
``rewardrouter/groups``                prompt groups with two or more rewarded samples
``rewardrouter/constant_groups``       fraction of those whose shaped rewards are all equal
                                       (no learning signal: exactly zero advantage)
``rewardrouter/warnings/<kind>``       warnings of that kind in this process so far (see
                                       :func:`warn`; the checks' kinds: ``label_missing``,
                                       ``mixed_prompt_group``, ``one_prompt_group``;
                                       ``misplaced_route_field``: samples ``default_route``
                                       took with a route_by field out of place, see
                                       :func:`warn_misrouted`; ``rm_type_data_fault``:
                                       samples whose named built-in refused their data;
                                       ``agent_reward_preset``: slime agent samples that
                                       came rewarded 0.0, never scored)
=====================================  ===========================================================

>>> from rewardrouter import RewardResult
>>> score_metrics([RewardResult(1.0, "ok", "gsm8k", terms={"correct": 1.0}),
...                RewardResult(None, "timeout", "gsm8k", terms={"correct": None})])
... # doctest: +NORMALIZE_WHITESPACE
{'rewardrouter/gsm8k/count': 2.0, 'rewardrouter/gsm8k/reward': 1.0,
 'rewardrouter/gsm8k/correct': 1.0, 'rewardrouter/status/ok': 0.5,
 'rewardrouter/status/timeout': 0.5}
>>> group_metrics([1.0, 0.0, 0.3, 0.3, None], [0, 0, 1, 1, 2])
{'rewardrouter/groups': 2.0, 'rewardrouter/constant_groups': 0.5}
"""

from __future__ import annotations

import itertools
import warnings
import weakref
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Sequence

from rewardrouter.errors import RewardRouterWarning
from rewardrouter.results import RewardResult, ScoreBatch, count_warnings

PREFIX = "rewardrouter"

#: Warnings counted in this process, by kind.
WARNINGS: Counter[str] = Counter()
_emitted: set[str] = set()
#: (kind, batch) checks already counted; cleared when it reaches ``_COUNTED_KEPT`` entries.
_counted: set[tuple[str, Hashable]] = set()
_COUNTED_KEPT = 256
#: The serial number of each live sample that :func:`batch_key` numbered, by ``id``: a weak
#: reference tells whether the object at that id is still the one numbered, and forgets it when
#: it is freed.
_numbered: dict[int, tuple[weakref.ref[object], int]] = {}
#: Samples that take no weak reference (a slotted dataclass such as :class:`rewardrouter.Sample`),
#: with their serial numbers, held until ``_counted`` is cleared so that no other object takes
#: their id meanwhile.
_held: dict[int, tuple[object, int]] = {}
_serials = itertools.count()


def warn(
    kind: str,
    message: str,
    *,
    count: int = 1,
    key: str | None = None,
    batch: Hashable | None = None,
) -> None:
    """Count ``count`` warnings of ``kind``; the first time ``key`` (default: ``message``)
    occurs, emit ``message`` as a :class:`RewardRouterWarning` (a trainer calls hooks
    thousands of times: once is enough). ``batch`` (see :func:`batch_key`) counts a check of
    one batch once, though two hooks (slime's log and post-process hooks) run it."""
    if batch is not None:
        if (kind, batch) in _counted:
            return
        if len(_counted) >= _COUNTED_KEPT:
            _counted.clear()
            _held.clear()
        _counted.add((kind, batch))
    WARNINGS[kind] += count
    once = message if key is None else key
    if once not in _emitted:
        _emitted.add(once)
        warnings.warn(message, RewardRouterWarning, stacklevel=3)


def warn_misrouted(results: Sequence[RewardResult]) -> None:
    """Count the samples of a scored batch that ``default_route`` took while they carry a
    route_by field where routing does not read it (``Dataset`` in metadata, a top-level
    ``data_source``): ``misplaced_route_field``, one per sample, with a warning per route and
    field that says the fix. Their rewards are plausible and likely from the wrong graders."""
    found = (
        results.warnings if isinstance(results, ScoreBatch) else count_warnings(enumerate(results))
    )
    for warning in found:
        if warning.code == "misplaced_route_field":
            warn(
                warning.code,
                f"{warning}; counted in {PREFIX}/warnings/{warning.code}",
                count=warning.count,
                key=f"{warning.code} {warning.route} {warning.misplaced}",
            )


def _serial(sample: object) -> int:
    """The sample object's serial number: one per object, never reused (an ``id`` is, once the
    object is freed: a new batch would then pass for a counted one)."""
    at = id(sample)
    numbered = _numbered.get(at)
    if numbered is not None and numbered[0]() is sample:
        return numbered[1]
    held = _held.get(at)
    if held is not None and held[0] is sample:
        return held[1]
    serial = next(_serials)

    def forget(ref: weakref.ref[object]) -> None:
        if _numbered.get(at, (None, 0))[0] is ref:
            _numbered.pop(at, None)

    try:
        _numbered[at] = (weakref.ref(sample, forget), serial)
    except TypeError:  # no weak reference to it: held while the counted checks are kept
        _held[at] = (sample, serial)
    return serial


def batch_key(samples: Sequence[object]) -> Hashable:
    """What tells one batch from another while both hooks of a trainer hold it: its size and
    the serial numbers of its first and last sample (the hooks see the same sample objects,
    though not always the same list). Unlike ids, serial numbers are never reused."""
    if not samples:
        return (0,)
    return (len(samples), _serial(samples[0]), _serial(samples[-1]))


def warning_metrics() -> dict[str, float]:
    """``rewardrouter/warnings/<kind>``: each kind's count so far."""
    return {f"{PREFIX}/warnings/{kind}": float(count) for kind, count in WARNINGS.items()}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def score_metrics(results: Iterable[RewardResult]) -> dict[str, float]:
    """Per-route, per-term and per-status figures of one batch of results."""
    counts: Counter[str] = Counter()
    statuses: Counter[str] = Counter()
    rewards: dict[str, list[float]] = defaultdict(list)
    terms: dict[tuple[str, str], list[float]] = defaultdict(list)
    total = 0
    for result in results:
        total += 1
        statuses[result.status] += 1
        route = result.route
        if route is None:
            continue
        counts[route] += 1
        if result.reward is not None:
            rewards[route].append(result.reward)
        for term, value in result.terms.items():
            if value is not None:
                terms[route, term].append(value)
    out: dict[str, float] = {}
    for route, count in counts.items():
        out[f"{PREFIX}/{route}/count"] = float(count)
        if rewards[route]:
            out[f"{PREFIX}/{route}/reward"] = _mean(rewards[route])
        for (of, term), values in terms.items():
            if of == route:
                out[f"{PREFIX}/{route}/{term}"] = _mean(values)
    for status, count in statuses.items():
        out[f"{PREFIX}/status/{status}"] = count / total
    return out


def group_metrics(shaped: Sequence[float | None], groups: Sequence[Hashable]) -> dict[str, float]:
    """How many prompt groups carry two or more rewards, and the fraction that are constant.

    ``shaped`` are the rewards the advantage stage sees (``None``: left out), ``groups`` each
    sample's prompt group.
    """
    members: dict[Hashable, list[float]] = defaultdict(list)
    for value, group in zip(shaped, groups, strict=True):
        if value is not None:
            members[group].append(value)
    sized = [values for values in members.values() if len(values) > 1]
    constant = sum(1 for values in sized if min(values) == max(values))
    return {
        f"{PREFIX}/groups": float(len(sized)),
        f"{PREFIX}/constant_groups": constant / len(sized) if sized else 0.0,
    }
