"""Route shaping inside trainers that compute advantages themselves (verl, TRL, OpenRLHF).

A route's ``shaping:`` stages map each of its rewards to a new reward (``clip``, ``scale``,
``quantize``) before any advantage is computed. slime and miles run them in the post-process
hook; trainers that normalize rewards on their own never call it, so their reward functions
apply the route stages to the rewards they return.

What a stage may read depends on what the trainer hands the reward function: verl and OpenRLHF
score one row per call and give no token counts, TRL gives a whole batch with each completion's
token ids. :func:`check_route_shaping` refuses, when the router is first used, the stages a
trainer cannot feed (every problem at once, with its YAML path); :func:`shape_rewards` runs the
rest.

>>> from rewardrouter import compile_router
>>> router = compile_router({"routes": {"qa": {"rewards": {"c": {"kind": "exact_match"}},
...                                            "shaping": [{"kind": "clip", "max": 0.5}]}}})
>>> check_route_shaping(router, TRL)
>>> shape_rewards(router, [1.0, None], ["qa", "qa"])
[0.5, None]
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass

from rewardrouter.errors import ConfigError, Problem
from rewardrouter.router import Router


@dataclass(frozen=True)
class Feeds:
    """What a trainer's reward call gives route stages: its name, the per-sample fields it
    carries, and whether a call holds one row (a stage then sees one sample)."""

    framework: str
    fields: frozenset[str]
    one_row: bool
    fix: str


VERL = Feeds(
    "verl",
    frozenset(),
    one_row=True,
    fix="move it to `post_process` and train with `algorithm.adv_estimator=rewardrouter`, which "
    "runs the global stages with each row's response length",
)
OPENRLHF = Feeds(
    "OpenRLHF",
    frozenset(),
    one_row=True,
    fix="OpenRLHF scores one row at a time without token counts; remove the stage or use a "
    "reward function that computes it",
)
TRL = Feeds(
    "TRL",
    frozenset({"response_length"}),
    one_row=False,
    fix="TRL hands reward functions no truncation flags or prompt groups; remove the stage",
)

#: The per-sample field each built-in stage reads (stages not listed read none).
NEEDS = {"overlong_penalty": "response_length", "truncation_penalty": "truncated"}

_checked: weakref.WeakKeyDictionary[Router, set[str]] = weakref.WeakKeyDictionary()


def check_route_shaping(router: Router, feeds: Feeds) -> None:
    """Raise :class:`~rewardrouter.ConfigError` listing each route stage ``feeds`` cannot run.

    Checked once per router and trainer; a refused config raises at every call.
    """
    done = _checked.setdefault(router, set())
    if feeds.framework in done:
        return
    problems: list[Problem] = []
    for name, route in router.routes.items():
        for i, stage in enumerate(route.shaping):
            where = f"routes.{name}.shaping[{i}]"
            need = NEEDS.get(stage.kind)
            if need is not None and need not in feeds.fields:
                problems.append(
                    Problem(
                        where,
                        f"`{stage.kind}` needs each sample's `{need}`, which {feeds.framework} "
                        f"does not hand its reward function",
                        feeds.fix,
                    )
                )
            elif stage.kind == "custom" and feeds.one_row:
                problems.append(
                    Problem(
                        where,
                        f"a custom stage receives the rewards of a batch, but {feeds.framework} "
                        f"scores one row per call: it would see one sample at a time",
                        feeds.fix,
                    )
                )
    if problems:
        raise ConfigError(problems)
    done.add(feeds.framework)


def shape_rewards(
    router: Router,
    rewards: Sequence[float | None],
    routes: Sequence[str | None],
    *,
    response_length: Sequence[float] | None = None,
) -> list[float | None]:
    """``rewards`` after their routes' shaping stages (``None`` stays ``None``).

    Returns the rewards unchanged, without touching torch, when no route of the batch shapes.
    """
    stages = router.post_processor.route_stages
    if not any(route in stages for route in routes):
        return list(rewards)
    from rewardrouter.shape.processor import PostProcessor

    shaped = PostProcessor(route_stages=stages)(
        rewards, routes=routes, response_length=response_length
    )
    return shaped.shaped
