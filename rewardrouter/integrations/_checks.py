"""The batch checks of :mod:`rewardrouter.checks` as a trainer hook runs them: counted.

A hook inside a trainer holds one batch of a run, so what may be deliberate there is a counted
warning (:func:`rewardrouter.integrations._metrics.warn`), not an error: ``label_missing``,
``mixed_prompt_group``, and slime's position rule for a batch without ``group_index``
(``one_prompt_group``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

from rewardrouter.checks import mixed_prompt_groups, unlabeled
from rewardrouter.integrations._metrics import warn
from rewardrouter.results import RewardResult


def warn_unlabeled(
    samples: Sequence[Any],
    results: Sequence[RewardResult],
    source: str,
    fix: str,
    found: list[int] | None = None,
) -> list[int]:
    """:func:`unlabeled`, counted as ``label_missing`` (one per sample) with a warning that
    names ``source`` (where the labels were read from) and ``fix``; the positions found.
    ``found``: the positions :func:`unlabeled` gave already (a caller that words ``source``
    from them)."""
    if found is None:
        found = unlabeled(samples, results)
    if found:
        routes = sorted({str(results[i].route) for i in found})
        warn(
            "label_missing",
            f"samples of route(s) {', '.join(routes)} have no label, and graders that compare "
            f"with one returned None (not applicable), so their rewards come from the other "
            f"terms alone: the labels were read from {source}; {fix}",
            count=len(found),
            key=f"label_missing {source}",
        )
    return found


def warn_mixed_prompt_groups(
    samples: Sequence[Any],
    groups: Sequence[Hashable | None],
    batch: Hashable | None = None,
    route_by: Sequence[str] = (),
    group_name: Callable[[Hashable], str] = repr,
) -> None:
    """:func:`mixed_prompt_groups`, counted as ``mixed_prompt_group`` (one per problem; once
    per ``batch``, see :func:`~rewardrouter.integrations._metrics.batch_key`)."""
    problems = mixed_prompt_groups(samples, groups, route_by=route_by, group_name=group_name)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        i, why = problems[0]
        warn(
            "mixed_prompt_group",
            f"sample {i}: {why}{more}",
            count=len(problems),
            key="mixed_prompt_group",
            batch=batch,
        )


def batch_positions(args: Any, n: int, batch_of: Hashable | None = None) -> list[int]:
    """slime's prompt groups for ``n`` samples without ``group_index``: consecutive runs of
    ``args.n_samples_per_prompt`` when the batch holds exactly ``n_samples_per_prompt *
    rollout_batch_size`` samples, else one group of all. The one-group case is counted as
    ``one_prompt_group``: its advantages compare answers to different prompts."""
    size = getattr(args, "n_samples_per_prompt", None)
    batch = getattr(args, "rollout_batch_size", None)
    if isinstance(size, int) and isinstance(batch, int) and size > 0 and n == size * batch:
        return [i // size for i in range(n)]
    if not isinstance(size, int):
        reason, why = "size", "args has no n_samples_per_prompt"
    elif not isinstance(batch, int):
        reason, why = "batch", "args has no rollout_batch_size"
    else:
        reason, why = (
            "count",
            (
                f"the batch holds {n} samples, not n_samples_per_prompt * rollout_batch_size = "
                f"{size} * {batch} = {size * batch} (filtered or dropped samples)"
            ),
        )
    if n > 1:
        warn(
            "one_prompt_group",
            f"the samples carry no group_index and {why}: the whole batch is normalized as "
            f"one prompt group, as slime does then. Set group_index on the samples (slime's "
            f"data source does) to normalize each prompt's answers among themselves",
            key=f"one_prompt_group {reason}",
            batch=batch_of,
        )
    return [0] * n
