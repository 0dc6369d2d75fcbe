"""Failures of a built-in kind that a sample names itself (``rm_type``), in the slime and miles hooks.

A sample that names a built-in (slime's ``metadata.rm_type``, miles' ``reward_spec.rm_type``)
is scored by a one-term route the config never declares, so nothing can set that term's
``on_error``. When the kind refuses the sample's own data (a
:class:`~rewardrouter.outcome.DataFault`: a label of a shape it cannot read, such as ``f1``
given a dict), raising would stop the whole rollout for one row's data and name a fix no config
can apply. Here it is that sample's counted failure instead: status ``error``, the trainer gets
``missing_reward.value`` and the sample is masked, and ``rm_type_data_fault`` is counted and
warned about once with the fix. Every other failure that ``on_error: raise`` would raise
(an unreachable server, a sandbox that cannot start, a function of the config's routes) is
raised as before, as :class:`~rewardrouter.RewardError`.
"""

from __future__ import annotations

from collections.abc import Sequence

from rewardrouter.errors import RewardError
from rewardrouter.integrations._metrics import warn
from rewardrouter.results import ScoreBatch


def _cause(message: str) -> str:
    """The failure without the router's fix (which names an ``on_error`` no config holds)."""
    return message.split(" (the built-in kind ", 1)[0]


def settle_failures(
    results: ScoreBatch, where: Sequence[str], fix: str, *, count: bool = True
) -> dict[int, RewardError]:
    """Keep each recorded failure of ``results`` (scored with ``failures="record"``) that is a
    data fault of a built-in its sample names, counting it (``count``); each other one is a
    :class:`RewardError` that stops its call, by sample. ``where`` names each sample for a
    message (``sample 3``); ``fix`` says how the trainer's rows get labels the kind reads."""
    kept: list[int] = []
    stops: dict[int, RewardError] = {}
    for i in results.failures:
        result = results[i]
        message = result.error_message or ""
        if result.level == "rm_type" and result.fault == "data":
            kept.append(i)
            continue
        stops[i] = RewardError(
            f"{where[i]}, route {result.route!r}: {result.status}: {message}",
            index=i,
            route=result.route,
            term=message.partition(": ")[0] or None,
        )
    if kept and count:
        _warn_kept(results, kept, where, fix)
    return stops


def _warn_kept(results: ScoreBatch, kept: list[int], where: Sequence[str], fix: str) -> None:
    first = results[kept[0]]
    kind = (first.route or "").partition(":")[2]
    warn(
        "rm_type_data_fault",
        f"{where[kept[0]]} names the built-in {kind!r} (rm_type), which refused its data: "
        f"{_cause(first.error_message or '')}. A built-in that a sample names has no "
        f"`on_error` in the config, so such a sample is its own counted failure: it gets "
        f"missing_reward.value and is left out of the loss (status error, counted in "
        f"rewardrouter/warnings/rm_type_data_fault). {fix}, or drop rm_type from these rows "
        f"and route them by dataset to a route of the config, whose term can set kwargs and "
        f"`on_error`",
        count=len(kept),
        key=f"rm_type_data_fault {first.route}",
    )
