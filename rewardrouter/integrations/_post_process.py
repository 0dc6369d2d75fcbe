"""The post-process hook of slime and miles: the router's chain, grouped as each trainer groups.

Both trainers hand the hook the flat sample list of a rollout batch and take back
``(raw_rewards, advantages)``. They differ in which samples form a prompt group and in what
counts as one answer:

- **slime**: prompt groups from ``group_index``; without it, consecutive runs of
  ``n_samples_per_prompt`` when the batch holds ``n_samples_per_prompt * rollout_batch_size``
  samples, else the whole batch as one group (slime's own rule). One answer is one sample.
- **miles**: prompt groups from ``prompt_group_sizes`` when the caller has them (multi-LoRA),
  else from ``group_index`` per LoRA adapter (each adapter numbers its groups from 0), else
  slime's position rule. One answer is one *rollout*: samples sharing a ``rollout_id`` (else an
  ``index``) must carry one reward, which is normalized once and copied to each of them.

A sample without a reward (aborted, not applicable, skipped after a failure) gets the config's
``missing_reward.value`` as raw reward and advantage 0.0, and stays out of its group's
statistics; so does a sample whose reward is that value handed over by the reward hook in its
place (its ``metadata["rewardrouter"]`` record says ``filled``). With the ``none`` advantage
stage the advantages are the shaped rewards in float64, unrounded; the hooks refuse a chain
that ends in no advantage stage (:func:`rewardrouter.checks.no_advantage_stage`), so that training on raw
rewards is said, never implied.

Before the chain runs, the batch goes through the checks of :mod:`._checks` that the command
line runs too: ``group_by: position`` over a batch that is not whole groups is refused
(:class:`~rewardrouter.SampleError`); a given prompt group (``group_index`` or
``prompt_group_sizes``) holding answers to different prompts, labels or datasets and slime's
one-group fallback are counted warnings.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from rewardrouter.checks import position_problem
from rewardrouter.errors import RoutingError, SampleError
from rewardrouter.integrations._checks import batch_positions, warn_mixed_prompt_groups
from rewardrouter.integrations._metrics import batch_key
from rewardrouter.integrations._self_reference import without_self_references
from rewardrouter.integrations._slime_agent import warn_preset_agent_rewards
from rewardrouter.outcome import InvalidReturn, to_value
from rewardrouter.router import Router
from rewardrouter.sample import status_of

Framework = Literal["slime", "miles"]

#: The ``metadata`` entry in which the reward hook leaves a scored sample's route, status, term
#: values, and whether its reward is ``missing_reward.value`` handed over in place of none.
RECORD = "rewardrouter"


def record_of(sample: Any) -> dict[str, Any] | None:
    """What the reward hook left in the sample's metadata (:data:`RECORD`); None when nothing."""
    metadata = getattr(sample, "metadata", None)
    record = metadata.get(RECORD) if isinstance(metadata, dict) else None
    return record if isinstance(record, dict) else None


class RolloutRewardsDiffer(SampleError, ValueError):
    """Samples of one rollout carry different rewards (miles trains one reward per rollout)."""


@dataclass(frozen=True)
class Processed:
    """What the hook returns, and what the log hook reports from."""

    raw: list[float]
    advantages: list[float]
    shaped: list[float | None]
    groups: list[Hashable]


def training_rewards(samples: Sequence[Any], key: str | None) -> list[float | None]:
    """Each sample's training reward as the trainer reads it (``reward[key]`` for dict rewards);
    None for an aborted sample and for one whose reward the hook filled in (:func:`record_of`)."""
    return _rewards_and_truncation(samples, key)[0]


def _rewards_and_truncation(
    samples: Sequence[Any], key: str | None
) -> tuple[list[float | None], list[bool]]:
    """:func:`training_rewards`, and whether each sample was truncated, in one pass."""
    rewards: list[float | None] = []
    truncated: list[bool] = []
    for i, sample in enumerate(samples):
        status = status_of(sample)
        reward = None if status == "aborted" else getattr(sample, "reward", None)
        if reward is not None:
            record = record_of(sample)
            if record is not None and record.get("filled"):
                reward = None  # missing_reward.value, handed over in place of none
        truncated.append(status == "truncated")
        try:
            rewards.append(to_value(reward, key))
        except InvalidReturn as exc:
            raise SampleError(
                f"sample {i}: its reward cannot be post-processed: it {exc}; check "
                f"--reward-key (or the router config's reward_key) against what the reward "
                f"function returns"
            ) from None
    return rewards, truncated


def sample_routes(router: Router, samples: Sequence[Any]) -> list[str | None]:
    """Each sample's route by the router's precedence; None for a sample no route accepts (no
    route shaping for it: the global stages still apply)."""
    routes: list[str | None] = []
    for view in without_self_references(samples):
        try:
            routes.append(router.decide(view).route.name)
        except RoutingError:
            routes.append(None)
    return routes


def prompt_groups(
    args: Any,
    samples: Sequence[Any],
    framework: Framework,
    prompt_group_sizes: Sequence[int] | None = None,
    batch: Hashable | None = None,
) -> tuple[list[Hashable], Callable[[Hashable], str] | None]:
    """One prompt-group key per sample (``batch``: see :func:`._metrics.batch_key`), and how a
    message names a key where the groups were given (``prompt_group_sizes``, or the samples'
    ``group_index``); None for slime's position rule (:func:`._checks.batch_positions`)."""
    n = len(samples)
    if prompt_group_sizes is not None:
        if sum(prompt_group_sizes) != n:
            raise SampleError(
                f"prompt_group_sizes {list(prompt_group_sizes)} add up to "
                f"{sum(prompt_group_sizes)}, but the batch holds {n} samples"
            )
        return [g for g, size in enumerate(prompt_group_sizes) for _ in range(size)], repr
    indices = [getattr(s, "group_index", None) for s in samples]
    if None not in indices:
        if framework == "slime":
            return cast("list[Hashable]", indices), repr
        adapters = [getattr(getattr(s, "adapter", None), "name", None) for s in samples]
        return list(zip(adapters, indices, strict=True)), _adapter_group
    return cast("list[Hashable]", batch_positions(args, n, batch)), None


def _adapter_group(group: Hashable) -> str:
    """A miles prompt group ``(adapter, group_index)`` as a message names it."""
    adapter, index = cast("tuple[str | None, Hashable]", group)
    return repr(index) if adapter is None else f"{index!r} of LoRA adapter {adapter!r}"


def rollout_key(sample: Any, row: int) -> tuple[str, Hashable]:
    """What makes rows one answer in miles: ``rollout_id``, else ``index``, else the row; the
    field's name with its value."""
    for name in ("rollout_id", "index"):
        value = getattr(sample, name, None)
        if value is not None:
            return (name, value)
    return ("row", row)


def _rollouts(
    samples: Sequence[Any], groups: Sequence[Hashable], rewards: Sequence[float | None]
) -> list[int]:
    """For each sample, the row that stands for its rollout (its first sibling in its group).

    Raises :class:`RolloutRewardsDiffer` when siblings carry different rewards.
    """
    first: dict[tuple[Hashable, tuple[str, Hashable]], list[int]] = {}
    for i, sample in enumerate(samples):
        first.setdefault((groups[i], rollout_key(sample, i)), []).append(i)
    stand_in = list(range(len(samples)))
    for (_, (_, key)), rows in first.items():
        values = [rewards[r] for r in rows]
        if any(v != values[0] for v in values[1:]):
            raise RolloutRewardsDiffer(
                f"samples {rows} of rollout {key!r} carry different rewards {values}; miles "
                f"trains one reward per rollout: give every sample of a rollout the same "
                f"reward, or each answer its own rollout_id"
            )
        for r in rows:
            stand_in[r] = rows[0]
    return stand_in


def post_process(
    router: Router,
    args: Any,
    samples: Sequence[Any],
    key: str | None,
    framework: Framework,
    prompt_group_sizes: Sequence[int] | None = None,
) -> Processed:
    """Run ``router``'s shaping and advantage chain over one batch, as ``framework`` groups it.

    Raises :class:`~rewardrouter.SampleError` before the chain runs when the batch cannot be
    grouped as the config says (:func:`rewardrouter.checks.position_problem`)."""
    uneven = position_problem(router.config, len(samples))
    if uneven is not None:
        raise SampleError(f"sample {uneven[0]}: {uneven[1]}")
    rewards, truncated = _rewards_and_truncation(samples, key)
    batch = batch_key(samples)
    groups, named = prompt_groups(args, samples, framework, prompt_group_sizes, batch)
    all_groups = groups
    if named is not None:  # position groups hold answers to different prompts by design
        warn_mixed_prompt_groups(samples, groups, batch, router.config.route_by, named)
    # samples the reward hook never saw: an agent session's, rewarded 0.0 before it could be
    warn_preset_agent_rewards(samples, [record_of(s) is None for s in samples], batch)
    spread: list[int] | None = None
    processor = router.post_processor
    # routes matter to route shaping alone
    routes = sample_routes(router, samples) if processor.route_names else None
    estimator = processor.estimator
    normalizes = estimator is not None and estimator.kind != "none"
    fill = router.config.missing_reward.value
    raw = [fill if r is None else float(r) for r in rewards]
    if (
        framework == "miles"
        and estimator is not None
        and normalizes
        and estimator.group_by == "index"
    ):
        rows = _rollouts(samples, groups, rewards)
        kept = sorted(set(rows))
        if len(kept) < len(rows):  # one row per rollout goes in; each sample reads its row's
            samples = [samples[i] for i in kept]
            rewards = [rewards[i] for i in kept]
            groups = [groups[i] for i in kept]
            truncated = [truncated[i] for i in kept]
            routes = None if routes is None else [routes[i] for i in kept]
            at = {row: k for k, row in enumerate(kept)}
            spread = [at[r] for r in rows]
    codes: dict[Hashable, int] = {}
    for g in groups:
        if g not in codes:
            codes[g] = len(codes)
    lengths = [getattr(sample, "response_length", None) for sample in samples]
    out = processor(
        rewards,
        routes=routes,
        group_index=[codes[g] for g in groups],
        response_length=None if None in lengths else cast("list[float]", lengths),
        truncated=truncated,
    )
    shaped, advantages = out.shaped, out.advantages
    if spread is not None:
        shaped = [shaped[k] for k in spread]
        advantages = [advantages[k] for k in spread]
    if normalizes:
        advantages = [float(a) for a in advantages]
    else:
        advantages = [0.0 if s is None else float(s) for s in shaped]
    return Processed(raw, advantages, shaped, all_groups)
