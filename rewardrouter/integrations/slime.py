"""slime and vime: the reward hook and the reward post-process hook, driven by one router YAML.

Launch flags (vime takes the same)::

    --custom-rm-path rewardrouter.integrations.slime.custom_rm
    --custom-reward-post-process-path rewardrouter.integrations.slime.post_process_rewards
    --custom-rollout-log-function-path rewardrouter.integrations.slime.log_rollout
    --custom-config-path rewardrouter.yaml    # holds `rewardrouter_config: /abs/path/router.yaml`

With ``--group-rm``, name :func:`batched_custom_rm` instead: slime then awaits
``fn(args, samples)`` with each prompt group as a list, and its plugin contract checks that the
function's parameters are ``(args, samples)``. :func:`custom_rm` (parameters ``(args, sample)``)
takes lists as well, for fan-out generate functions that pass one without ``--group-rm``.

The config comes from ``args.rewardrouter_config`` (slime's ``--custom-config-path`` sets every
key of its YAML on ``args``) or the ``REWARDROUTER_CONFIG`` environment variable; overrides from
``args.rewardrouter_overrides`` or ``REWARDROUTER_OVERRIDES``. It is compiled once per process.

What the hooks return, so that slime reads the right value:

- without ``--reward-key``: the training reward as a number;
- with ``--reward-key k``: a dict whose ``k`` is the training reward (and whose
  ``--eval-reward-key`` entry is the evaluation reward), next to the entries of a single
  dict-valued term; ``--reward-key`` also becomes the router's ``reward_key`` when the config
  sets none, for the dict rewards of ``rm_type`` / ``custom_rm_path`` functions;
- a sample that got no reward (no term applied, or a failure that ``on_error: skip`` skipped)
  gets the config's ``missing_reward.value`` (default 0.0), never ``None``: slime's own
  rollout logging rounds every reward. Its record says ``filled``, the post-process hook
  leaves it out of its group's statistics (advantage 0), and with ``missing_reward.mask``
  (the default) ``sample.remove_sample`` is set, so that slime leaves it out of the loss;
- aborted samples get ``None`` and are never scored (slime puts them back in its buffer and
  scores them when they are finished); samples that carry a reward keep it.

Multi-turn rollouts keep the trained text in ``Sample.response`` and mark tool tokens 0 in
``loss_mask``; put the conversation (OpenAI chat messages) in ``sample.metadata["messages"]`` and
set ``trajectory: {messages_field: messages}`` in the router config: each term then reads its
part of the conversation (``reads:``), and the sample, loss mask included, is left as it is.

Each call runs the checks of :mod:`._checks` on what it scored: samples without a label whose
graders did not apply are counted (``rewardrouter/warnings/label_missing``) and warned about
once, with the fix (``--label-key``). Samples that slime's agent ``TrajectoryManager`` built
arrive with reward 0.0 already set (its default), which nothing re-scores: when every such
sample of a call or batch carries 0.0, the reward, post-process and log hooks count
``rewardrouter/warnings/agent_reward_preset`` and say what to pass (:mod:`._slime_agent`).

Per-sample ``custom_rm_path`` and ``metadata.rm_type`` win over routes, as the router's precedence
says. A built-in that a sample names (``rm_type``) has no ``on_error`` in the config: when it
refuses the sample's own data (a label it cannot read), that sample is its counted failure
(``missing_reward.value``, masked, ``rewardrouter/warnings/rm_type_data_fault``), not an
error that stops the rollout (:mod:`._data_named`). (Without ``--group-rm`` slime calls a sample's own ``custom_rm_path``
itself.) Without ``--group-rm`` slime calls the hook once per sample, many calls in flight at
once: the calls that arrive together are scored as one batch (:mod:`._coalesce`), each failure
that stops a call raised to that sample's call alone. A config with a group-mode term
(``fn(args, samples)``) is not gathered, since its function would see other prompts' answers:
each call scores its one sample, and the first such call warns
(:class:`~rewardrouter.RewardRouterWarning`, counted in
``rewardrouter/warnings/group_term_per_sample``) with the fix.

Each scored sample's ``metadata`` gains a ``rewardrouter`` entry (``route``, ``status``,
``terms``, ``filled``); the log hook :func:`log_rollout`
(``--custom-rollout-log-function-path rewardrouter.integrations.slime.log_rollout``) reads it and
adds the figures of :mod:`._metrics` to the metrics slime logs for the rollout.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rewardrouter.checks import no_advantage_stage
from rewardrouter.config.models import MissingReward
from rewardrouter.errors import ConfigError, Problem, RewardError
from rewardrouter.integrations import _metrics
from rewardrouter.integrations._checks import warn_unlabeled
from rewardrouter.integrations._coalesce import Coalescer
from rewardrouter.integrations._data_named import settle_failures
from rewardrouter.integrations._post_process import (
    RECORD,
    Framework,
    post_process,
    record_of,
    sample_routes,
    training_rewards,
)
from rewardrouter.integrations._router_cache import shared_router
from rewardrouter.integrations._self_reference import without_self_references
from rewardrouter.integrations._slime_agent import warn_preset_agent_rewards
from rewardrouter.integrations._source import config_source
from rewardrouter.results import RewardResult
from rewardrouter.router import Router
from rewardrouter.sample import SampleLike

__all__ = [
    "batched_custom_rm",
    "custom_rm",
    "log_rollout",
    "post_process_rewards",
    "rollout_metrics",
]

log = logging.getLogger("rewardrouter.slime")

#: Where slime's samples get their labels, and how to read them from another column.
LABELS_FROM = "the samples' `label` (slime's --label-key column of the data, default `label`)"
LABELS_FIX = "launch with --label-key <the column that holds the reference answers>"

#: How rows that name a built-in (rm_type) get labels it reads.
DATA_NAMED_FIX = (
    "Give these rows labels that kind reads (launch with --label-key <the column that holds "
    "the reference answers>, or convert the labels)"
)

#: Each trainer's name as an owner ("slime's own normalization").
POSSESSIVE = {"slime": "slime's", "miles": "miles'"}

#: Statuses of samples that are handed ``missing_reward.value`` when they got no reward.
NOT_FILLED = frozenset({"aborted", "kept"})


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
    result: RewardResult, preset: Any, keys: _Keys, evaluated: RewardResult | None, fill: float
) -> Any:
    """What slime stores in ``sample.reward`` for one result (``fill`` where it got none)."""
    if result.status == "kept":
        return preset
    if result.status == "aborted":
        return None
    reward = fill if result.reward is None else result.reward
    if keys.train is None:
        return reward
    value: dict[str, Any] = {}
    if isinstance(result.raw, Mapping) and len(result.terms) == 1:
        value.update(result.raw)  # e.g. dapo's `acc` and `pred`, for slime's logs
    value[keys.train] = reward
    if keys.eval is not None and keys.eval != keys.train:
        other = (evaluated or result).reward
        value[keys.eval] = fill if other is None else other
    return value


def _record(sample: Any, result: RewardResult, missing: MissingReward) -> None:
    """Leave ``result``'s route, status and terms in the sample's metadata for the log and
    post-process hooks, and whether its reward is ``missing.value`` in place of none (then, with
    ``missing.mask``, slime's ``remove_sample`` leaves it out of the loss)."""
    filled = result.reward is None and result.status not in NOT_FILLED
    if filled and missing.mask and hasattr(sample, "remove_sample"):
        sample.remove_sample = True
    metadata = getattr(sample, "metadata", None)
    if not isinstance(metadata, dict) or (result.status == "kept" and RECORD in metadata):
        return
    metadata[RECORD] = {
        "route": result.route,
        "status": result.status,
        "terms": result.terms,
        "filled": filled,
    }


def _warn_group_terms(router: Router, results: Sequence[RewardResult]) -> None:
    """Warn that a group-mode term was called with one sample (slime without ``--group-rm``)."""
    for result in results:
        route = router.routes.get(result.route or "")
        for term in route.terms if route is not None else ():
            if term.fn.mode == "group":
                _metrics.warn(
                    "group_term_per_sample",
                    f"{term.where} ({term.fn.name}) takes a group of samples, but slime calls "
                    f"the reward hook with one sample at a time (no --group-rm): the function "
                    f"sees one sample per call, and a reward computed across samples changes. "
                    f"Launch with --group-rm and --custom-rm-path "
                    f"rewardrouter.integrations.slime.batched_custom_rm (miles: "
                    f"rewardrouter.integrations.miles.batched_custom_rm), or set `mode: single` "
                    f"on the term if it scores each sample on its own",
                )


def _where(sample: Any, position: int) -> str:
    """A sample as messages name it: by the trainer's ``index`` (slime numbers every sample of
    a rollout), else by its position in the call."""
    index = getattr(sample, "index", None)
    return f"sample {position}" if index is None else f"sample {index}"


async def _score_each(
    args: Any, samples: Sequence[SampleLike], *, one: bool = False
) -> list[Any | RewardError]:
    """What slime stores for each sample, or, for a sample whose failure stops its call (under
    ``on_error: raise``), the :class:`RewardError` that says why: one sample's failure is its
    own. ``one``: the samples came in calls of one sample each."""
    keys = _Keys.of(args)
    router = _router(args, keys)
    views = without_self_references(samples)
    where = [_where(sample, i) for i, sample in enumerate(samples)]
    results = await router.score(views, args=args, failures="record")
    stops = settle_failures(results, where, DATA_NAMED_FIX)
    if one:
        _warn_group_terms(router, results)
    warn_unlabeled(views, results, LABELS_FROM, LABELS_FIX)
    _metrics.warn_misrouted(results)
    warn_preset_agent_rewards(samples, [r.status == "kept" for r in results])
    evaluated: Sequence[RewardResult | None] = [None] * len(views)
    if keys.eval != keys.train and _eval_differs(router):
        scored = await router.score(views, args=args, evaluation=True, failures="record")
        stops = {**settle_failures(scored, where, DATA_NAMED_FIX, count=False), **stops}
        evaluated = scored
    missing = router.config.missing_reward
    values: list[Any | RewardError] = []
    for i, (sample, result, other) in enumerate(zip(samples, results, evaluated, strict=True)):
        if i in stops:
            values.append(stops[i])
            continue
        _record(sample, result, missing)
        preset = getattr(sample, "reward", None)
        values.append(_slime_value(result, preset, keys, other, missing.value))
    return values


async def _score_flat(args: Any, samples: Sequence[SampleLike], *, one: bool = False) -> list[Any]:
    """What slime stores for each sample; raises the first sample's failure that stops the
    call (under ``on_error: raise``)."""
    values = await _score_each(args, samples, one=one)
    for value in values:
        if isinstance(value, RewardError):
            raise value
    return values


#: How concurrent one-sample calls are gathered (:mod:`._coalesce`): a batch goes when no call
#: has come for ``IDLE`` seconds, when its first call has waited ``LONGEST``, or at ``LARGEST``
#: calls. Next to a generation's seconds, 20 ms is no delay.
IDLE, LONGEST, LARGEST = 0.002, 0.02, 4096
#: Per event loop and ``args`` (by identity, held so that no other object takes its id): its
#: calls' batcher, or None where a route's term takes a group (decided at the loop's first call
#: with that ``args``).
_coalescers: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[int, tuple[Any, Coalescer[Any, Any] | None]]
] = weakref.WeakKeyDictionary()


def _has_group_terms(router: Router) -> bool:
    """Whether a route's term takes a group of samples (calls of it must not be gathered
    across prompts)."""
    return any(term.fn.mode == "group" for route in router.routes.values() for term in route.terms)


def _batcher(args: Any) -> Coalescer[Any, Any] | None:
    """The batcher that concurrent one-sample calls with ``args`` share in this event loop
    (:mod:`._coalesce`), or None when a route's term takes a group: its function must see the
    one sample (warned), never other prompts' answers."""
    loop = asyncio.get_running_loop()
    per_loop = _coalescers.get(loop)  # not setdefault: that makes a weak reference per call
    if per_loop is None:
        per_loop = _coalescers[loop] = {}
    entry = per_loop.get(id(args))
    if entry is None:
        gather = None
        if not _has_group_terms(_router(args, _Keys.of(args))):
            gather = Coalescer(
                functools.partial(_score_each, args), idle=IDLE, longest=LONGEST, largest=LARGEST
            )
        entry = per_loop[id(args)] = (args, gather)
    return entry[1]


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
    batcher = _batcher(args)
    if batcher is None:
        return (await _score_flat(args, [sample], one=True))[0]
    return await batcher.submit(sample)  # scored with the other calls in flight


async def batched_custom_rm(args: Any, samples: Sequence[Any]) -> list[Any]:
    """``--group-rm`` hook: one reward per sample, in order (route groups batched inside)."""
    return await _score(args, samples)


def run_post_process(
    args: Any,
    samples: Sequence[Any],
    framework: Framework,
    prompt_group_sizes: Sequence[int] | None = None,
) -> tuple[list[float], list[float]]:
    """The post-process hook of ``framework`` (see :mod:`._post_process`); refuses a config
    whose ``post_process`` ends in no advantage stage (:func:`rewardrouter.checks.no_advantage_stage`)."""
    keys = _Keys.of(args)
    source = config_source(args, "args")
    router = shared_router(source, reward_key=keys.train, eval_reward_key=keys.eval)
    missing = no_advantage_stage(
        router.config,
        f"--custom-reward-post-process-path rewardrouter.integrations.{framework}."
        f"post_process_rewards",
        f"drop --custom-reward-post-process-path to keep {POSSESSIVE[framework]} own normalization",
    )
    if missing is not None:
        raise ConfigError([missing], source.path)
    key = keys.train or router.config.reward_key
    done = post_process(router, args, samples, key, framework, prompt_group_sizes)
    return done.raw, done.advantages


def post_process_rewards(
    args: Any, samples: Sequence[SampleLike]
) -> tuple[list[float], list[float]]:
    """slime's ``--custom-reward-post-process-path`` hook: ``(raw_rewards, advantages)``.

    Runs the config's shaping stages and its advantage stage in place of slime's normalization:
    groups from ``group_index`` (any order, any sizes), else by position as slime does
    (``n_samples_per_prompt`` on ``args``); constant groups get exactly 0. A config whose
    ``post_process`` ends in no advantage stage is refused (:class:`~rewardrouter.ConfigError`
    naming the fix): ``{kind: none}`` says that the shaped rewards are the advantages. Both
    lists hold plain floats, one per sample; a sample without a reward (aborted, not applicable, skipped after a
    failure, or handed ``missing_reward.value`` by :func:`custom_rm`) has that value as raw
    reward and advantage 0.0, and stays out of its group's statistics. The batch is checked
    first (:mod:`._checks`): ``group_by: position`` over an incomplete last group raises
    :class:`~rewardrouter.SampleError`; a group holding answers to different prompts and the
    one-group fallback are counted warnings.

    >>> raw, advantages = post_process_rewards(args, samples)  # doctest: +SKIP
    """
    return run_post_process(args, samples, "slime")


def _flat(samples: Sequence[Any]) -> list[Any]:
    out: list[Any] = []
    for entry in samples:
        out.extend(_flat(entry) if isinstance(entry, list | tuple) else [entry])
    return out


def rollout_metrics(
    args: Any, samples: Sequence[Any], framework: Framework = "slime"
) -> dict[str, float]:
    """The figures of :mod:`._metrics` for one rollout batch, for a log function of your own.

    Routes, statuses and term values come from what :func:`custom_rm` left in each sample's
    metadata (samples scored elsewhere count by their route and reward; a filled one by its
    status alone, and in ``rewardrouter/filled``); constant groups from the shaped rewards,
    grouped as the post-process hook groups them, whose checks count here too (once per batch).
    """
    keys = _Keys.of(args)
    router = _router(args, keys)
    flat = _flat(samples)
    key = keys.train or router.config.reward_key
    done = post_process(router, args, flat, key, framework)
    records = [record_of(sample) for sample in flat]
    # samples scored elsewhere count by the route the router would give them, and their reward
    routes = iter(
        sample_routes(router, [s for s, r in zip(flat, records, strict=True) if r is None])
    )
    results = [
        RewardResult(reward, "kept" if reward is not None else "skipped", next(routes))
        if record is None
        else RewardResult(reward, record["status"], record["route"], terms=record["terms"])
        for record, reward in zip(records, training_rewards(flat, key), strict=True)
    ]
    filled = sum(1 for record in records if record is not None and record.get("filled"))
    return {
        **_metrics.score_metrics(results),
        **_metrics.group_metrics(done.shaped, done.groups),
        f"{_metrics.PREFIX}/filled": filled / len(flat) if flat else 0.0,
        **_metrics.warning_metrics(),
    }


def hand_rollout_metrics(
    rollout_id: int,
    args: Any,
    samples: Sequence[Any],
    rollout_extra_metrics: dict[str, Any] | None,
    framework: Framework,
) -> bool:
    """Add :func:`rollout_metrics` to the metrics the trainer logs for the rollout; False, so
    that its own logging still runs. Without a metrics dict (a rollout function that returned
    none) the figures go to the ``rewardrouter.slime`` logger at INFO. Sets
    ``args.logged_rollout_id``, as the log hook of slime's plugin contract does."""
    args.logged_rollout_id = rollout_id
    metrics = rollout_metrics(args, samples, framework)
    if isinstance(rollout_extra_metrics, dict):
        rollout_extra_metrics.update(metrics)
    else:
        log.info("rollout %s: %s", rollout_id, metrics)
    return False


def log_rollout(
    rollout_id: int,
    args: Any,
    samples: Sequence[Any],
    rollout_extra_metrics: dict[str, Any] | None,
    rollout_time: float,
) -> bool:
    """slime's ``--custom-rollout-log-function-path`` hook: the router's figures (routes, terms,
    statuses, constant groups, warnings) join the metrics slime logs for the rollout."""
    return hand_rollout_metrics(rollout_id, args, samples, rollout_extra_metrics, "slime")
