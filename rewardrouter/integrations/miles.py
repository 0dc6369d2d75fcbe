"""miles: slime's hooks, with each sample's ``reward_spec`` honoured and miles' grouping rules.

Launch flags::

    --custom-rm-path rewardrouter.integrations.miles.custom_rm
    --custom-reward-post-process-path rewardrouter.integrations.miles.post_process_rewards
    --custom-rollout-log-function-path rewardrouter.integrations.miles.log_rollout   # metrics
    --custom-config-path rewardrouter.yaml    # holds `rewardrouter_config: /abs/path/router.yaml`

Everything in :mod:`rewardrouter.integrations.slime` holds. miles' ``Sample.reward_spec``
(``rm_type``, ``custom_rm_path``; set per LoRA adapter in multi-LoRA runs) takes part in the
router's precedence: ``reward_spec.custom_rm_path`` (under ``allowed_modules``) before
``reward_spec.rm_type`` before ``metadata.rm_type`` before the routes. miles calls a sample's
``reward_spec.custom_rm_path`` itself when it scores single samples (no ``--group-rm``); with
``--group-rm`` the router dispatches it, batched with the other samples of its route group.

The post-process hook normalizes as miles' own normalization does, with the router's chain:
one reward per rollout (samples sharing ``rollout_id``, else ``index``; siblings with different
rewards are refused), prompt groups by ``group_index``, slime's position rule without
``group_index``, and the shaped rewards unrounded (float64) when the chain ends in ``none``.

Multi-LoRA batches (every sample carries an ``adapter``): miles groups them by the prompt groups
its rollout function returned (``prompt_group_sizes``), which it hands to its own normalization
but not to this hook (miles calls it as ``fn(args, samples)``). The hook reads those groups back
from the flat batch, laid out as miles lays it (each group's samples in a row, sorted by adapter
slot): a prompt group is a run of consecutive samples of one adapter and one ``group_index``.
A run holding ``k * n_samples_per_prompt`` rollouts (k ≥ 2) is ``k`` groups that reused one
``group_index``; it is split into groups of ``n_samples_per_prompt`` rollouts, and the
``group_index_reused`` warning counts it. An adapter registered with an ``n_samples_per_prompt``
of its own that is such a multiple of ``--n-samples-per-prompt`` would be split the same way
(the warning names it): give such an adapter's groups distinct ``group_index`` values, as miles'
data sources do, and keep ``--n-samples-per-prompt`` at least as large as any adapter's.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from itertools import groupby
from typing import Any

from rewardrouter.integrations._metrics import warn
from rewardrouter.integrations.slime import (
    batched_custom_rm,
    custom_rm,
    hand_rollout_metrics,
    run_post_process,
)

__all__ = [
    "adapter_prompt_group_sizes",
    "batched_custom_rm",
    "custom_rm",
    "log_rollout",
    "post_process_rewards",
]


def _rollout_key(sample: Any, row: int) -> Hashable:
    """What makes rows one answer in miles: ``rollout_id``, else ``index``, else the row."""
    for name in ("rollout_id", "index"):
        value = getattr(sample, name, None)
        if value is not None:
            return (name, value)
    return ("row", row)


def _split_run(rows: list[int], samples: Sequence[Any], size: int) -> list[int] | None:
    """The group sizes of a run of ``k * size`` rollouts cut every ``size`` rollouts, or None
    when the run is one group (at most ``size`` rollouts, or not a whole multiple) or its
    rollouts' rows interleave (groups must be consecutive rows)."""
    order: dict[Hashable, list[int]] = {}
    for row in rows:
        order.setdefault(_rollout_key(samples[row], row), []).append(row)
    rollouts = list(order.values())
    if len(rollouts) <= size or len(rollouts) % size:
        return None
    sizes = []
    for start in range(0, len(rollouts), size):
        chunk = sorted(r for rollout in rollouts[start : start + size] for r in rollout)
        if chunk[-1] - chunk[0] + 1 != len(chunk):
            return None
        sizes.append(len(chunk))
    return sizes


def adapter_prompt_group_sizes(args: Any, samples: Sequence[Any]) -> list[int] | None:
    """miles' ``prompt_group_sizes`` of a multi-LoRA batch, read back from its flat samples.

    None unless every sample carries an ``adapter`` and a ``group_index`` (the router then
    groups by ``group_index`` per adapter, or by position). See the module docstring for the
    rule; each run split in two or more counts one ``group_index_reused`` warning.

    >>> adapter_prompt_group_sizes(args, batch)  # n_samples_per_prompt 4; A: 8 rows, group 0
    [4, 4, 2]                                   # doctest: +SKIP
    """
    adapters = [getattr(getattr(s, "adapter", None), "name", None) for s in samples]
    indices = [getattr(s, "group_index", None) for s in samples]
    if not samples or None in adapters or None in indices:
        return None
    size = getattr(args, "n_samples_per_prompt", None)
    sizes: list[int] = []
    for (adapter, group), run in groupby(range(len(samples)), lambda i: (adapters[i], indices[i])):
        rows = list(run)
        split = _split_run(rows, samples, size) if isinstance(size, int) and size > 0 else None
        if split is None:
            sizes.append(len(rows))
            continue
        sizes.extend(split)
        warn(
            "group_index_reused",
            f"samples {rows[0]}..{rows[-1]} of LoRA adapter {adapter!r} all carry group_index "
            f"{group}: {len(split)} x n_samples_per_prompt ({size}) rollouts in a row, "
            f"normalized as {len(split)} prompt groups of {size} (miles hands its own "
            f"normalization the rollout's group sizes, but not this hook); give each prompt "
            f"group its own group_index, and keep --n-samples-per-prompt at least as large as "
            f"any adapter's own",
        )
    return sizes


def post_process_rewards(
    args: Any, samples: Sequence[Any], prompt_group_sizes: Sequence[int] | None = None
) -> tuple[list[float], list[float]]:
    """miles' ``--custom-reward-post-process-path`` hook: ``(raw_rewards, advantages)``.

    miles calls it as ``fn(args, samples)``; a multi-LoRA batch's prompt groups are then read
    back from the samples (:func:`adapter_prompt_group_sizes`). ``prompt_group_sizes`` (the
    multi-LoRA batch metadata of that name) wins when a caller of its own passes them.
    """
    if prompt_group_sizes is None:
        prompt_group_sizes = adapter_prompt_group_sizes(args, samples)
    return run_post_process(args, samples, "miles", prompt_group_sizes)


def log_rollout(
    rollout_id: int,
    args: Any,
    samples: Sequence[Any],
    rollout_extra_metrics: dict[str, Any] | None,
    rollout_time: float,
) -> bool:
    """``--custom-rollout-log-function-path``: the router's figures, grouped as miles groups,
    added to the rollout's metrics (returns False: miles' own logging still runs)."""
    return hand_rollout_metrics(rollout_id, args, samples, rollout_extra_metrics, "miles")
