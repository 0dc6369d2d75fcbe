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
Every group of one adapter holds the same number of rollouts (the adapter's
``n_samples_per_prompt``), so a run of ``k`` times that many (k ≥ 2) is ``k`` groups that
reused one ``group_index``: it is split, and the ``group_index_reused`` warning counts it. The
adapter's group size is its smallest run in the batch when it has two runs or more, else
``--n-samples-per-prompt`` (what an adapter's size defaults to). So one group of an adapter
registered with an ``n_samples_per_prompt`` of its own, k ≥ 2 times ``--n-samples-per-prompt``,
alone of its adapter in a batch, would be split too (the warning names it); miles' data sources
give every group its own ``group_index``, which this never merges.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from itertools import groupby
from typing import Any

from rewardrouter.integrations._metrics import warn
from rewardrouter.integrations._post_process import rollout_key
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


def _rollouts(rows: list[int], samples: Sequence[Any]) -> list[list[int]]:
    """The rows of each rollout among ``rows``, in order of their first row."""
    order: dict[Hashable, list[int]] = {}
    for row in rows:
        order.setdefault(rollout_key(samples[row], row), []).append(row)
    return list(order.values())


def _split_run(rollouts: list[list[int]], size: int) -> list[int] | None:
    """The group sizes (in rows) of a run of ``k * size`` rollouts cut every ``size``
    rollouts, or None when the run is one group (at most ``size`` rollouts, or not a whole
    multiple) or its rollouts' rows interleave (groups must be consecutive rows)."""
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

    Adapter A reuses group index 0 for two prompts (8 rows, 4 answers each); B has one group of
    two answers:

    >>> from types import SimpleNamespace as S
    >>> a, b = S(name="A"), S(name="B")
    >>> batch = [S(adapter=a, group_index=0, index=i) for i in range(8)]
    >>> batch += [S(adapter=b, group_index=0, index=8 + i) for i in range(2)]
    >>> adapter_prompt_group_sizes(S(n_samples_per_prompt=4), batch)
    [4, 4, 2]
    """
    adapters = [getattr(getattr(s, "adapter", None), "name", None) for s in samples]
    indices = [getattr(s, "group_index", None) for s in samples]
    if not samples or None in adapters or None in indices:
        return None
    runs = [
        (adapter, group, _rollouts(list(rows), samples))
        for (adapter, group), rows in groupby(
            range(len(samples)), lambda i: (adapters[i], indices[i])
        )
    ]
    counts: dict[Any, list[int]] = {}
    for adapter, _, rollouts in runs:
        counts.setdefault(adapter, []).append(len(rollouts))
    default = getattr(args, "n_samples_per_prompt", None)
    sizes: list[int] = []
    for adapter, group, rollouts in runs:
        seen = counts[adapter]
        size = min(seen) if len(seen) > 1 else default
        split = _split_run(rollouts, size) if isinstance(size, int) and size > 0 else None
        if split is None:
            sizes.append(sum(map(len, rollouts)))
            continue
        sizes.extend(split)
        where = "its smallest group here" if len(seen) > 1 else "n_samples_per_prompt"
        first, last = rollouts[0][0], max(r for rollout in rollouts for r in rollout)
        warn(
            "group_index_reused",
            f"samples {first}..{last} of LoRA adapter {adapter!r} all carry group_index "
            f"{group}: {len(split)} x {size} rollouts in a row ({size}: {where}), normalized "
            f"as {len(split)} prompt groups of {size} rollouts (miles hands its own "
            f"normalization the rollout's group sizes, but not this hook); give each prompt "
            f"group its own group_index, as miles' data sources do",
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
