"""verl: a reward function that routes each row by its ``data_source``, and an advantage estimator.

Hydra overrides for ``verl.trainer.main_ppo`` (verl 0.9)::

    reward.custom_reward_function.path=pkg://rewardrouter.integrations.verl
    reward.custom_reward_function.name=compute_score
    +reward.custom_reward_function.reward_kwargs.rewardrouter_config=/abs/path/router.yaml
    algorithm.adv_estimator=rewardrouter                       # optional: the config's advantages
    +algorithm.rewardrouter_config=/abs/path/router.yaml       # where that estimator runs

(or export ``REWARDROUTER_CONFIG`` where verl's workers run). verl before 0.9 reads the reward
function from the top-level ``custom_reward_function.*``; 0.9 ignores that key and silently grades
with its own default, so a launch that names rewardrouter there stops with the fix. The same
check, run when verl loads this module in the launching process, loads and compiles the router
configs the command line names and stops the launch, listing every problem, on one that
:func:`compute_score` or the estimator cannot run (see :mod:`._verl_launch`;
``python -m rewardrouter.integrations.verl <overrides>`` checks any launch and then runs
``main_ppo`` unchanged).

**Rewards.** verl's reward managers call :func:`compute_score` per row,
``compute_score(data_source=..., solution_str=..., ground_truth=..., extra_info=...)``, from
executor threads (or await :func:`compute_score_async`); the ``batch`` manager of older releases
calls it once per batch with ``data_sources``, ``solution_strs``, ``ground_truths``,
``extra_infos``. Each row becomes a sample: ``response`` = the solution string, ``label`` = the
ground truth, ``metadata`` = ``extra_info`` plus ``data_source`` (keep ``data_source`` in
``route_by``; an ``rm_type`` in ``extra_info`` overrides the route). The remaining keyword
arguments (``reward_kwargs``) are the ``args`` reward functions receive. The route's ``shaping``
stages apply to the reward (stages verl cannot feed are refused when the router compiles).

Every row returns the same keys, which verl keeps as ``reward_extra_info`` (dumped with each
rollout, averaged per data source in validation metrics):

- ``score``: the training reward (0.0 when there is none: verl has no "no reward");
- ``scored``: 1.0 when the route's terms produced it (status ``ok``), else 0.0;
- ``route``, ``status``: the route's name and the status (strings);
- ``status/<s>`` for ``skipped``, ``error``, ``timeout``, ``invalid``: 1.0 when the row has it;
- ``<route>/<term>``: each configured term's value on its route's rows, ``None`` elsewhere.

**Trajectories.** verl's reward managers hand over the decoded response; an agent loop that
keeps its messages in its output's ``extra_fields`` (``output.extra_fields["messages"] =
agent_data.messages``) passes them on in ``extra_info``, where the router reads the conversation
when its config sets ``trajectory: {messages_field: messages}``.

**Advantages.** Importing this module registers ``rewardrouter`` in verl's advantage-estimator
registry (rewardrouter declares it as a ``verl.plugins`` entry point, so every verl process
imports it, the trainer's included): ``algorithm.adv_estimator=rewardrouter`` runs the config's
``post_process`` chain on the trainer's device, grouped by ``uid``. See
:mod:`._verl_advantage`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

from rewardrouter.errors import ConfigError
from rewardrouter.integrations import _verl_advantage, _verl_launch
from rewardrouter.integrations._router_cache import shared_router
from rewardrouter.integrations._source import CONFIG_FIELD, OVERRIDES_FIELD, config_source
from rewardrouter.integrations.route_shaping import shape_rewards
from rewardrouter.results import RewardResult
from rewardrouter.router import Router
from rewardrouter.sample import Sample

__all__ = ["DATA_SOURCE_FIELD", "compute_advantage", "compute_score", "compute_score_async"]

#: The metadata field that carries verl's ``data_source`` (listed in the default ``route_by``).
DATA_SOURCE_FIELD = _verl_launch.DATA_SOURCE_FIELD

#: Statuses that get a numeric column of their own (1.0 on the rows that have them).
STATUS_COLUMNS = ("skipped", "error", "timeout", "invalid")

compute_advantage = _verl_advantage.compute_advantage

Score = dict[str, Any]


def _rows(
    data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any, batch: dict[str, Any]
) -> tuple[list[Sample], bool]:
    """The samples of one call, and whether it was the batch form."""
    if batch or not (solution_str is None or isinstance(solution_str, str)):
        sources = batch.get("data_sources", data_source)
        solutions = batch.get("solution_strs", solution_str)
        truths = batch.get("ground_truths", ground_truth)
        extras = batch.get("extra_infos", extra_info)
        n = len(solutions)
        truths = [None] * n if truths is None else truths
        extras = [None] * n if extras is None else extras
        rows = zip(sources, solutions, truths, extras, strict=True)
        return [_sample(*row) for row in rows], True
    return [_sample(data_source, solution_str, ground_truth, extra_info)], False


def _sample(data_source: Any, solution: Any, ground_truth: Any, extra_info: Any) -> Sample:
    metadata = dict(extra_info) if isinstance(extra_info, Mapping) else {}
    metadata[DATA_SOURCE_FIELD] = data_source
    return Sample(response=solution or "", label=ground_truth, metadata=metadata)


def _term_columns(router: Router) -> dict[str, None]:
    """A ``<route>/<term>`` column per configured term, all ``None`` (filled per row)."""
    return {
        f"{name}/{term.name}": None for name, route in router.routes.items() for term in route.terms
    }


def _scores(router: Router, results: list[RewardResult]) -> list[Score]:
    shaped = shape_rewards(router, [r.reward for r in results], [r.route for r in results])
    empty = _term_columns(router)
    scores = []
    for result, reward in zip(results, shaped, strict=True):
        score: Score = {
            "score": 0.0 if reward is None else reward,
            "scored": float(result.status == "ok"),
            "route": result.route,
            "status": result.status,
        }
        score.update({f"status/{s}": float(result.status == s) for s in STATUS_COLUMNS})
        score.update(empty)
        if result.route in router.routes:  # a sample's rm_type / custom_rm_path has no column
            score.update({f"{result.route}/{t}": v for t, v in result.terms.items()})
        scores.append(score)
    return scores


def _prepare(
    data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any, kwargs: dict[str, Any]
) -> tuple[Router, list[Sample], bool, SimpleNamespace]:
    batch: dict[str, Any] = {
        name: kwargs.pop(name)
        for name in ("data_sources", "solution_strs", "ground_truths", "extra_infos")
        if name in kwargs
    }
    router = shared_router(config_source(kwargs, "reward_kwargs"))
    problems = _verl_launch.reward_problems(router)
    if problems:
        raise ConfigError(problems)
    samples, is_batch = _rows(data_source, solution_str, ground_truth, extra_info, batch)
    kwargs.pop(CONFIG_FIELD, None)
    kwargs.pop(OVERRIDES_FIELD, None)
    return router, samples, is_batch, SimpleNamespace(**kwargs)


def compute_score(
    data_source: Any = None,
    solution_str: Any = None,
    ground_truth: Any = None,
    extra_info: Any = None,
    **kwargs: Any,
) -> Score | list[Score]:
    """verl's reward function: one row (strings) or a batch (``data_sources=...`` or sequences).

    >>> compute_score(data_source="openai/gsm8k", solution_str="#### 72", ground_truth="72",
    ...               rewardrouter_config="router.yaml")  # doctest: +SKIP
    {'score': 1.0, 'scored': 1.0, 'route': 'gsm8k', 'status': 'ok', ..., 'gsm8k/correct': 1.0}
    """
    router, samples, is_batch, args = _prepare(
        data_source, solution_str, ground_truth, extra_info, kwargs
    )
    scores = _scores(router, list(router.score_sync(samples, args=args)))
    return scores if is_batch else scores[0]


async def compute_score_async(
    data_source: Any = None,
    solution_str: Any = None,
    ground_truth: Any = None,
    extra_info: Any = None,
    **kwargs: Any,
) -> Score | list[Score]:
    """:func:`compute_score` for callers that await (verl's asynchronous reward loop)."""
    router, samples, is_batch, args = _prepare(
        data_source, solution_str, ground_truth, extra_info, kwargs
    )
    scores = _scores(router, list(await router.score(samples, args=args)))
    return scores if is_batch else scores[0]


if __name__ == "__main__":
    _verl_launch.main()
else:
    _verl_launch.check_launch(sys.argv[1:])
    _verl_advantage.register()
