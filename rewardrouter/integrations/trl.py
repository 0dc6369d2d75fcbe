"""TRL: a reward function for ``GRPOTrainer`` (and its relatives) that routes by a dataset column.

::

    from rewardrouter.integrations.trl import reward_function

    trainer = GRPOTrainer(
        model=...,
        reward_funcs=reward_function("router.yaml", route_column="dataset"),
        train_dataset=dataset,  # columns: prompt, solution, dataset
    )

TRL calls a reward function as ``fn(prompts=..., completions=..., completion_ids=...,
trainer_state=..., log_extra=..., log_metric=..., **columns)``, with every other dataset column
as a list repeated per completion, and expects one reward per completion, ``None`` meaning "not
applicable". Each completion becomes a sample: ``prompt`` as given, ``response`` = the completion
(for conversational data, its messages, tool calls and tool results included: each term reads the
last assistant message's text unless its ``reads:`` names another part), ``label`` = the
``label_column`` value, ``metadata`` = every dataset column of the row (so ``route_column`` must
be one of the config's ``route_by`` fields).

The checks the command line runs on its rows run here on each call (:mod:`._checks`): a
``label_column`` that TRL does not pass (a dataset without it) raises
:class:`~rewardrouter.ConfigError` naming the columns it has (``label_column=None`` for data
without reference answers); samples whose label is null and whose graders did not apply are
counted (``rewardrouter/warnings/label_missing``) and warned about once. A route's ``shaping`` stages apply to its rewards
(each completion's token count is its ``response_length``; stages that need what TRL does not
pass, truncation flags or prompt groups, are refused when the router compiles).

What TRL logs: each completion's route and status go to the completions table through
``log_extra`` (columns ``rewardrouter_route``, ``rewardrouter_status``); through
``log_metric``, per route its mean reward and count and each term's mean value
(``rewardrouter/<route>/reward``, ``.../count``, ``rewardrouter/<route>/<term>``: the per-function
breakdown TRL shows for separate reward functions), the fraction of each status
(``rewardrouter/status/<status>``), the prompt groups and the fraction whose rewards are all
equal (``rewardrouter/groups``, ``rewardrouter/constant_groups``; a group is a prompt's
completions), and counted warnings.

The reward is a top-level callable class: it pickles (for trainers that run rewards in another
process) and compiles its router on first use in each process. ``asynchronous=True`` gives an
``async`` callable (TRL >= 1.14 awaits it on its own event loop, concurrently with other async
rewards). Rewards shaped or normalized by TRL itself are TRL's business: the router's
``post_process`` stages do not run here.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, cast, overload

from rewardrouter.checks import absent_column
from rewardrouter.config.models import RouterConfig
from rewardrouter.errors import ConfigError, Problem
from rewardrouter.integrations._checks import warn_unlabeled
from rewardrouter.integrations._metrics import (
    group_metrics,
    score_metrics,
    warn_misrouted,
    warning_metrics,
)
from rewardrouter.integrations._router_cache import shared_router
from rewardrouter.integrations._source import ConfigSource
from rewardrouter.integrations.route_shaping import TRL, check_route_shaping, shape_rewards
from rewardrouter.results import RewardResult
from rewardrouter.router import Router
from rewardrouter.sample import Sample
from rewardrouter.trajectory import is_conversation

__all__ = ["AsyncRouterReward", "RouterReward", "completion_text", "reward_function"]

#: Keyword arguments TRL adds to the dataset columns; they are not row metadata.
TRL_KWARGS = frozenset(
    {"completion_ids", "trainer_state", "log_extra", "log_metric", "environments"}
)


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):  # multimodal content parts: keep the text parts
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return str(content)


def completion_text(completion: Any) -> str:
    """The text of a completion: a string, or the last assistant message of a conversation.

    >>> completion_text([{"role": "assistant", "content": "42"}])
    '42'
    """
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence):
        messages = [m for m in completion if isinstance(m, Mapping)]
        answers = [m for m in messages if m.get("role") == "assistant"] or messages
        return _content_text(answers[-1].get("content")) if answers else ""
    return _content_text(completion)


def _response(completion: Any) -> Any:
    """A completion as the router's response: a conversational completion stays the list of
    messages (TRL's tool-calling loop appends its ``tool`` results to it), which each term reads
    as its ``reads:`` says (the last assistant message's text by default)."""
    return completion if is_conversation(completion) else completion_text(completion)


class _RouterRewardBase:
    """What the sync and async rewards share: the config, the column mapping, the logging."""

    def __init__(
        self,
        config: str | os.PathLike[str] | RouterConfig,
        *,
        route_column: str = "dataset",
        label_column: str | None = "solution",
        overrides: Sequence[str] = (),
        name: str = "rewardrouter",
    ) -> None:
        self._source: ConfigSource | RouterConfig
        if isinstance(config, RouterConfig):
            if overrides:
                raise TypeError(
                    "overrides apply to a config file; for a RouterConfig object, apply them "
                    "when loading it: load_config(path, overrides)"
                )
            self._source = config
        else:
            self._source = ConfigSource(os.fspath(config), tuple(overrides), "reward_function")
        self.route_column = route_column
        self.label_column = label_column
        self.__name__ = name  # TRL logs each reward function under its name

    def __repr__(self) -> str:
        source = self._source if isinstance(self._source, RouterConfig) else self._source.path
        kind = type(self).__name__
        return f"{kind}({source!r}, route_column={self.route_column!r}, name={self.__name__!r})"

    def _router(self) -> Router:
        router = shared_router(self._source)
        check_route_shaping(router, TRL)
        if self.route_column not in router.config.route_by:
            raise ConfigError(
                [
                    Problem(
                        "route_by",
                        f"route_column {self.route_column!r} is not one of the config's "
                        f"route_by fields {list(router.config.route_by)}",
                        f"add {self.route_column!r} to `route_by`, or pass the route_column "
                        f"that holds the dataset names",
                    )
                ]
            )
        return router

    def _samples(
        self, prompts: Sequence[Any], completions: Sequence[Any], columns: Mapping[str, Any]
    ) -> list[Sample]:
        n = len(completions)
        rows = {
            name: values
            for name, values in columns.items()
            if name not in TRL_KWARGS and isinstance(values, Sequence) and len(values) == n
        }
        ids = columns.get("completion_ids")
        labels = None if self.label_column is None else self._labels(rows, columns)
        return [
            Sample(
                prompt=prompts[i] if i < len(prompts) else "",
                response=_response(completions[i]),
                label=None if labels is None else labels[i],
                metadata={name: values[i] for name, values in rows.items()},
                response_length=len(ids[i]) if ids is not None and i < len(ids) else None,
                index=i,
            )
            for i in range(n)
        ]

    def _labels(self, rows: Mapping[str, Any], columns: Mapping[str, Any]) -> Any:
        """The ``label_column`` values; :class:`ConfigError` when TRL passed no such column."""
        assert self.label_column is not None
        problem = absent_column(
            "label",
            self.label_column,
            [name for name in columns if name not in TRL_KWARGS],
            "label_column",
            "pass the column that holds the reference answers: "
            "reward_function(..., label_column=<column>) (label_column=None: the data has none)",
            holder="the rows TRL passes do",
            taken=(self.route_column,),
        )
        if problem is not None:
            raise ConfigError([problem])
        return rows.get(self.label_column)

    def _finish(
        self,
        router: Router,
        samples: Sequence[Sample],
        results: Sequence[RewardResult],
        columns: Mapping[str, Any],
    ) -> list[float | None]:
        if self.label_column is not None:
            warn_unlabeled(
                samples,
                results,
                f"the dataset column {self.label_column!r} (label_column), null in those rows",
                "give those rows a reference answer, or pass label_column=<column> if another "
                "column holds them",
            )
        warn_misrouted(results)
        lengths = [s.response_length for s in samples]
        rewards = shape_rewards(
            router,
            [r.reward for r in results],
            [r.route for r in results],
            response_length=None if None in lengths else cast("list[float]", lengths),
        )
        log_extra: Callable[[str, list[Any]], None] | None = columns.get("log_extra")
        log_metric: Callable[[str, float], None] | None = columns.get("log_metric")
        if log_extra is not None:
            log_extra("rewardrouter_route", [r.route for r in results])
            log_extra("rewardrouter_status", [r.status for r in results])
        if log_metric is not None:
            metrics = {
                **score_metrics(results),
                **group_metrics(rewards, [repr(s.prompt) for s in samples]),
                **warning_metrics(),
            }
            for name, value in metrics.items():
                log_metric(name, value)
        return rewards


class RouterReward(_RouterRewardBase):
    """A synchronous TRL reward function backed by a router; see :func:`reward_function`."""

    def __call__(
        self, prompts: Sequence[Any], completions: Sequence[Any], **columns: Any
    ) -> list[float | None]:
        samples = self._samples(prompts, completions, columns)
        router = self._router()
        return self._finish(router, samples, router.score_sync(samples), columns)


class AsyncRouterReward(_RouterRewardBase):
    """An ``async`` TRL reward function backed by a router; see :func:`reward_function`."""

    async def __call__(
        self, prompts: Sequence[Any], completions: Sequence[Any], **columns: Any
    ) -> list[float | None]:
        samples = self._samples(prompts, completions, columns)
        router = self._router()
        return self._finish(router, samples, await router.score(samples), columns)


@overload
def reward_function(
    config: str | os.PathLike[str] | RouterConfig,
    *,
    route_column: str = ...,
    label_column: str | None = ...,
    overrides: Sequence[str] = ...,
    name: str = ...,
    asynchronous: Literal[False] = ...,
) -> RouterReward: ...


@overload
def reward_function(
    config: str | os.PathLike[str] | RouterConfig,
    *,
    route_column: str = ...,
    label_column: str | None = ...,
    overrides: Sequence[str] = ...,
    name: str = ...,
    asynchronous: Literal[True],
) -> AsyncRouterReward: ...


def reward_function(
    config: str | os.PathLike[str] | RouterConfig,
    *,
    route_column: str = "dataset",
    label_column: str | None = "solution",
    overrides: Sequence[str] = (),
    name: str = "rewardrouter",
    asynchronous: bool = False,
) -> RouterReward | AsyncRouterReward:
    """A TRL reward function scoring each completion with the router that ``config`` describes.

    ``config`` is a router YAML path (with optional dotlist ``overrides``) or a
    :class:`~rewardrouter.RouterConfig`. ``route_column`` is the dataset column holding each
    row's dataset name, ``label_column`` the one holding its reference answer (``None``: the
    data has none; a column TRL does not pass raises :class:`~rewardrouter.ConfigError` at the
    first call); ``name`` is what
    TRL logs the reward under. The config is compiled at the first call; a config that cannot be
    found or compiled raises :class:`~rewardrouter.ConfigError` from that call.

    >>> reward = reward_function("router.yaml", route_column="dataset")
    >>> reward(prompts=["2+2?"], completions=["\\\\boxed{4}"], solution=["4"],
    ...        dataset=["gsm8k"])  # doctest: +SKIP
    [1.0]
    """
    kind = AsyncRouterReward if asynchronous else RouterReward
    return kind(
        config, route_column=route_column, label_column=label_column, overrides=overrides, name=name
    )
