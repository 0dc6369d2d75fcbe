"""verl: ``custom_reward_function`` entry points that route by ``data_source``.

Hydra overrides for ``verl.trainer.main_ppo``::

    custom_reward_function.path=pkg://rewardrouter.integrations.verl
    custom_reward_function.name=compute_score
    +custom_reward_function.reward_kwargs.rewardrouter_config=/abs/path/router.yaml

(or export ``REWARDROUTER_CONFIG`` where the reward workers run). One function serves every reward
manager: the ``naive``/``dapo`` managers call it per sample,
``compute_score(data_source=..., solution_str=..., ground_truth=..., extra_info=...)``;
``reward_model.reward_manager=batch`` calls it once per batch with ``data_sources``,
``solution_strs``, ``ground_truths``, ``extra_infos``; the asynchronous reward loop may await
:func:`compute_score_async` instead.

Each row becomes a sample: ``response`` = the solution string, ``label`` = the ground truth,
``metadata`` = ``extra_info`` plus ``data_source`` (so ``route_by`` must list ``data_source``,
as the default does; ``extra_info`` may carry ``rm_type`` to override a row's route). The
remaining keyword arguments (``reward_kwargs``) are the ``args`` reward functions receive.

Every result is ``{"score": reward, "scored": 1.0 | 0.0}``: verl trains on ``score`` and logs
every key, so every row carries the same keys. verl has no "no reward": a row whose terms all
returned None, or whose failure ``on_error`` resolved, has ``scored`` 0.0 (and ``score`` 0.0 when
no value was produced), which verl logs next to the reward.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

from rewardrouter.integrations._router_cache import shared_router
from rewardrouter.integrations._source import CONFIG_FIELD, OVERRIDES_FIELD, config_source
from rewardrouter.results import RewardResult
from rewardrouter.router import Router
from rewardrouter.sample import Sample

__all__ = ["DATA_SOURCE_FIELD", "compute_score", "compute_score_async"]

#: The metadata field that carries verl's ``data_source`` (listed in the default ``route_by``).
DATA_SOURCE_FIELD = "data_source"

Score = dict[str, float]


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


def _score(result: RewardResult) -> Score:
    reward = result.reward
    return {"score": 0.0 if reward is None else reward, "scored": float(result.status == "ok")}


def _prepare(
    data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any, kwargs: dict[str, Any]
) -> tuple[Router, list[Sample], bool, SimpleNamespace]:
    batch: dict[str, Any] = {
        name: kwargs.pop(name)
        for name in ("data_sources", "solution_strs", "ground_truths", "extra_infos")
        if name in kwargs
    }
    router = shared_router(config_source(kwargs, "reward_kwargs"))
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
    {'score': 1.0, 'scored': 1.0}
    >>> compute_score(data_sources=["openai/gsm8k"], solution_strs=["#### 7"],
    ...               ground_truths=["72"], extra_infos=[{}])  # doctest: +SKIP
    [{'score': 0.1, 'scored': 1.0}]
    """
    router, samples, is_batch, args = _prepare(
        data_source, solution_str, ground_truth, extra_info, kwargs
    )
    scores = [_score(r) for r in router.score_sync(samples, args=args)]
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
    scores = [_score(r) for r in await router.score(samples, args=args)]
    return scores if is_batch else scores[0]
