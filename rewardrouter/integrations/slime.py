"""slime and vime: the reward hook and the reward post-process hook, driven by one router YAML.

Launch flags (vime takes the same)::

    --custom-rm-path rewardrouter.integrations.slime.custom_rm
    --custom-reward-post-process-path rewardrouter.integrations.slime.post_process_rewards
    --custom-config-path rewardrouter.yaml    # holds `rewardrouter_config: /abs/path/router.yaml`

``--group-rm`` needs no other function: slime then passes each prompt group as a list, and
:func:`custom_rm` takes lists as well (so do fan-out generate functions without ``--group-rm``);
:func:`batched_custom_rm` is the same entry point under the name a group hook usually has.

The config comes from ``args.rewardrouter_config`` (slime's ``--custom-config-path`` sets every
key of its YAML on ``args``) or the ``REWARDROUTER_CONFIG`` environment variable; overrides from
``args.rewardrouter_overrides`` or ``REWARDROUTER_OVERRIDES``. It is compiled once per process.

What the hooks return, so that slime reads the right value:

- without ``--reward-key``: the training reward as a number (``None`` when no term applied);
- with ``--reward-key k``: a dict whose ``k`` is the training reward (and whose
  ``--eval-reward-key`` entry is the evaluation reward), next to the entries of a single
  dict-valued term; ``--reward-key`` also becomes the router's ``reward_key`` when the config
  sets none, for the dict rewards of ``rm_type`` / ``custom_rm_path`` functions;
- aborted samples get ``None`` and are never scored; samples that carry a reward keep it.

Per-sample ``custom_rm_path`` and ``metadata.rm_type`` win over routes, as the router's precedence
says. (Without ``--group-rm`` slime calls a sample's own ``custom_rm_path`` itself.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rewardrouter.errors import ConfigError, Problem, RoutingError, SampleError
from rewardrouter.execute.values import InvalidReturn, to_value
from rewardrouter.integrations._router_cache import shared_router
from rewardrouter.integrations._self_reference import without_self_reference
from rewardrouter.integrations._source import config_source
from rewardrouter.results import RewardResult
from rewardrouter.router import Router
from rewardrouter.sample import SampleLike, status_of

__all__ = ["batched_custom_rm", "custom_rm", "post_process_rewards"]


@dataclass(frozen=True)
class _Keys:
    """slime's ``--reward-key`` / ``--eval-reward-key``: where slime reads a dict reward."""

    train: str | None
    eval: str | None

    @classmethod
    def of(cls, args: Any) -> _Keys:
        train = getattr(args, "reward_key", None) or None
        evaluation = getattr(args, "eval_reward_key", None) or train
        if evaluation and not train:
            raise ConfigError(
                [
                    Problem(
                        "args.eval_reward_key",
                        f"--eval-reward-key {evaluation!r} is set but --reward-key is not: slime "
                        f"would read training rewards as numbers and evaluation rewards as dicts",
                        "set --reward-key as well (rewards are then dicts holding both keys)",
                    )
                ]
            )
        return cls(train, evaluation)


def _router(args: Any, keys: _Keys) -> Router:
    return shared_router(
        config_source(args, "args"), reward_key=keys.train, eval_reward_key=keys.eval
    )


def _eval_differs(router: Router) -> bool:
    """Whether some route reads its evaluation value from another dict entry than training."""
    config = router.config
    if config.eval_reward_key not in (None, config.reward_key):
        return True
    return any(
        term.key_for(True) != term.key_for(False)
        for route in router.routes.values()
        for term in route.terms
    )


def _slime_value(
    result: RewardResult, preset: Any, keys: _Keys, evaluated: RewardResult | None
) -> Any:
    """What slime stores in ``sample.reward`` for one result."""
    if result.status == "kept":
        return preset
    if keys.train is None or result.reward is None:
        return result.reward
    value: dict[str, Any] = {}
    if isinstance(result.raw, Mapping) and len(result.terms) == 1:
        value.update(result.raw)  # e.g. dapo's `acc` and `pred`, for slime's logs
    value[keys.train] = result.reward
    if keys.eval is not None and keys.eval != keys.train:
        value[keys.eval] = (evaluated or result).reward
    return value


async def _score_flat(args: Any, samples: Sequence[SampleLike]) -> list[Any]:
    keys = _Keys.of(args)
    router = _router(args, keys)
    views = [without_self_reference(s) for s in samples]
    results = await router.score(views, args=args)
    evaluated: Sequence[RewardResult | None] = [None] * len(views)
    if keys.eval != keys.train and _eval_differs(router):
        evaluated = await router.score(views, args=args, evaluation=True)
    return [
        _slime_value(result, getattr(sample, "reward", None), keys, other)
        for sample, result, other in zip(samples, results, evaluated, strict=True)
    ]


async def _score(args: Any, samples: Sequence[Any]) -> list[Any]:
    """One reward per entry; an entry that is itself a list (a fan-out) gets a list back."""
    flat: list[Any] = []
    sizes: list[int | None] = []
    for entry in samples:
        if isinstance(entry, list | tuple):
            flat.extend(entry)
            sizes.append(len(entry))
        else:
            flat.append(entry)
            sizes.append(None)
    values = await _score_flat(args, flat)
    out: list[Any] = []
    at = 0
    for size in sizes:
        if size is None:
            out.append(values[at])
            at += 1
        else:
            out.append(values[at : at + size])
            at += size
    return out


async def custom_rm(args: Any, sample: Any) -> Any:
    """slime's ``--custom-rm-path`` hook: the reward of one sample, or a list for a list.

    >>> await custom_rm(args, sample)  # doctest: +SKIP
    1.0
    >>> await custom_rm(args, [sample_a, sample_b])  # --group-rm, or a fan-out  # doctest: +SKIP
    [1.0, 0.0]
    """
    if isinstance(sample, list | tuple):
        return await _score(args, sample)
    return (await _score_flat(args, [sample]))[0]


async def batched_custom_rm(args: Any, samples: Sequence[Any]) -> list[Any]:
    """``--group-rm`` hook: one reward per sample, in order (route groups batched inside)."""
    return await _score(args, samples)


def _training_rewards(samples: Sequence[SampleLike], key: str | None) -> list[float | None]:
    """Each sample's training reward as slime reads it (``reward[key]`` for dict rewards)."""
    rewards: list[float | None] = []
    for i, sample in enumerate(samples):
        reward = getattr(sample, "reward", None)
        if status_of(sample) == "aborted":
            reward = None
        try:
            rewards.append(to_value(reward, key))
        except InvalidReturn as exc:
            raise SampleError(
                f"sample {i}: its reward cannot be post-processed: it {exc}; check "
                f"--reward-key (or the router config's reward_key) against what the reward "
                f"function returns"
            ) from None
    return rewards


def _route(router: Router, sample: SampleLike) -> str | None:
    try:
        return router.decide(without_self_reference(sample)).route.name
    except RoutingError:
        return None  # no route, no route shaping: the global stages still apply


def post_process_rewards(
    args: Any, samples: Sequence[SampleLike]
) -> tuple[list[float], list[float]]:
    """slime's ``--custom-reward-post-process-path`` hook: ``(raw_rewards, advantages)``.

    Runs the config's shaping stages and its advantage stage (groups from ``group_index``, any
    order, any sizes; constant groups get exactly 0) in place of slime's normalization. Both
    lists hold plain floats, one per sample; a sample without a reward (aborted, not applicable,
    skipped after a failure) has raw reward 0.0 and advantage 0.0 and stays out of its group's
    statistics.

    >>> raw, advantages = post_process_rewards(args, samples)  # doctest: +SKIP
    """
    keys = _Keys.of(args)
    router = _router(args, keys)
    rewards = _training_rewards(samples, keys.train or router.config.reward_key)
    results = [
        RewardResult(r, "skipped" if r is None else "ok", route=_route(router, s))
        for r, s in zip(rewards, samples, strict=True)
    ]
    processed = router.post_process(samples, results)
    raw = [0.0 if r is None else float(r) for r in rewards]
    return raw, [float(a) for a in processed.advantages]
