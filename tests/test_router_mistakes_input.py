"""Mistakes in how the Python API is called: each is an error that names the fix, never a
plausible reward (a dict scored key by key, an override string read character by character)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from rr_testfns import row

from rewardrouter import (
    ConfigError,
    RewardError,
    RouterConfig,
    RoutingError,
    Sample,
    load_config,
)

ROUTER = "default_route: r\nroutes:\n  r:\n    rewards:\n      correct: {kind: exact_match}\n"


def _router(make_router: Any) -> Any:
    return make_router(
        {"default_route": "r", "routes": {"r": {"rewards": {"correct": {"kind": "exact_match"}}}}}
    )


@pytest.mark.parametrize(
    ("samples", "found"),
    [
        # iterating a dict scored its keys as samples ("`response` is missing" per key)
        pytest.param(
            {"response": "x", "label": "x"}, "one dict (keys: response, label)", id="one_dict"
        ),
        pytest.param("x", "a str 'x'", id="a_string"),
        pytest.param(Sample(response="x", label="x"), "one Sample object", id="one_sample_object"),
    ],
)
def test_one_sample_instead_of_a_list_says_to_wrap_it(
    make_router: Any, samples: Any, found: str
) -> None:
    router = _router(make_router)
    with pytest.raises(RoutingError) as sync:
        router.score_sync(samples)
    assert str(sync.value) == (
        f"score_sync(samples): got {found}; expected a list of samples; wrap one sample in a "
        f"list: router.score_sync([sample])"
    )
    with pytest.raises(RoutingError) as awaited:
        asyncio.run(router.score(samples))
    assert str(awaited.value) == (
        f"score(samples): got {found}; expected a list of samples; wrap one sample in a list: "
        f"router.score([sample])"
    )
    assert router.score_sync([row("x", "x")]).rewards == [1.0]


def test_an_override_string_instead_of_a_list_says_to_wrap_it(tmp_path: Path) -> None:
    path = tmp_path / "router.yaml"
    path.write_text(ROUTER)
    with pytest.raises(ConfigError) as raised:
        load_config(path, "routes.r.rewards.correct.weight=0.5")  # a str is a Sequence[str]
    assert str(raised.value) == (
        f"invalid reward router config in {path} (1 problem):\n"
        f"  - <overrides>: got the string 'routes.r.rewards.correct.weight=0.5'; expected a list "
        f"of overrides\n"
        f"    wrap it in a list: load_config('{path}', ['routes.r.rewards.correct.weight=0.5'])"
    )
    config: RouterConfig = load_config(path, ["routes.r.rewards.correct.weight=0.5"])
    assert config.routes["r"].rewards["correct"].weight == 0.5


@pytest.mark.parametrize(
    ("kind", "label", "error"),
    [
        # ended "fix exact_match where the message says it raised": the library's own code
        pytest.param(
            "exact_match",
            {"a": 1},
            "LabelError: label is a dict with keys 'a'; expected a string, a number, a list of "
            'them, SQuAD\'s answers ({"text": [...]}) or verl\'s reward_model ({"ground_truth": '
            "...}); map data.columns.label to the column that holds the answer, or convert the "
            "labels",
            id="exact_match_dict_label",
        ),
    ],
)
def test_a_built_in_kind_that_refuses_its_input_points_at_the_data_not_its_code(
    make_router: Any, kind: str, label: Any, error: str
) -> None:
    router = make_router(
        {"default_route": "r", "routes": {"r": {"rewards": {"correct": {"kind": kind}}}}}
    )
    with pytest.raises(RewardError) as raised:
        router.score_sync([{"response": "x", "label": label}])
    message = str(raised.value)
    assert message.startswith(f"sample 0, route 'r', term 'correct' ({kind}): error: {error}")
    assert message.endswith(
        f"the built-in kind {kind} refused this sample's data: fix the sample's label or "
        f"metadata (or the kwargs on routes.r.rewards.correct) as the message says, "
        f"or set `on_error: skip` or `on_error: {{value: 0.0}}` on routes.r.rewards.correct to "
        f"record them"
    )
    assert "where the message says it raised" not in message
