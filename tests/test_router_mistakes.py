"""Mistakes a trainer's code can make with the library: never a plausible reward.

A missing response, a fractional group id, a term that did not apply, a failure whose fix is
not ``on_error``: each is an error naming the sample, or a warning counted on the batch.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from rr_frameworks import SlimeSample, trainer_args
from rr_testfns import row

from rewardrouter import (
    ConfigError,
    RewardError,
    RewardRouterWarning,
    RouterConfig,
    RoutingError,
    Sample,
    SampleError,
)
from rewardrouter.integrations._router_cache import close_shared
from rewardrouter.integrations.slime import custom_rm as slime_custom_rm
from rewardrouter.integrations.slime import rollout_metrics
from rewardrouter.integrations.trl import reward_function
from rewardrouter.integrations.verl import compute_score as verl_compute_score
from rewardrouter.results import ScoreWarning


def _router(make_router: Any, *terms: tuple[str, dict[str, Any]], **config: Any) -> Any:
    return make_router({"default_route": "r", "routes": {"r": {"rewards": dict(terms)}}, **config})


EXACT = ("correct", {"kind": "exact_match"})


@pytest.mark.parametrize(
    "sample",
    [
        pytest.param({"label": "x"}, id="dict_without_response"),
        pytest.param({"response": None, "label": "x"}, id="dict_with_null_response"),
        pytest.param(Sample(response=None, label="x"), id="object_with_null_response"),
    ],
)
def test_a_sample_without_a_response_is_not_scored_as_empty(make_router: Any, sample: Any) -> None:
    router = _router(make_router, EXACT)
    with pytest.raises(RoutingError, match=r"sample 1: `response` is missing or null"):
        router.score_sync([row("x", "x"), sample])
    [(index, message)] = router.check([row("x", "x"), sample])
    assert index == 1 and message.startswith("`response` is missing or null")


@pytest.mark.parametrize(
    ("response", "found"),
    [
        pytest.param(
            {"role": "assistant", "content": "x"},
            "dict {'content': 'x', 'role': 'assistant'}",
            id="one_message_not_a_list",
        ),
        pytest.param(5, "int 5", id="a_number"),
        pytest.param(b"x", "bytes b'x'", id="bytes"),
    ],
)
def test_a_response_that_is_neither_text_nor_a_conversation_is_refused(
    make_router: Any, response: Any, found: str
) -> None:
    router = _router(make_router, EXACT)
    expected = (
        f"`response` is {found}, neither text nor a conversation; give the model's answer as a "
        "string, or a conversation as a list of chat messages (`{role, content}` objects)"
    )
    with pytest.raises(RoutingError, match=re.escape(f"sample 1: `response` is {found}, ")):
        router.score_sync([row("x", "x"), {"response": response, "label": "x"}])
    [(index, message)] = router.check([row("x", "x"), {"response": response, "label": "x"}])
    assert (index, message) == (1, expected)


def test_a_huge_wrong_response_is_named_in_a_short_message(make_router: Any) -> None:
    [(_, message)] = _router(make_router, EXACT).check([{"response": {"k": "v" * 10**6}}])
    assert len(message) < 300 and message.startswith("`response` is dict {'k': 'vvvv")


def test_an_empty_response_is_still_an_answer(make_router: Any) -> None:
    [result] = _router(make_router, EXACT).score_sync([row("", "x")])
    assert (result.reward, result.status) == (0.0, "ok")


def test_an_aborted_sample_needs_no_response(make_router: Any) -> None:
    [result] = _router(make_router, EXACT).score_sync([{"status": "aborted"}])
    assert result.status == "aborted"


@pytest.mark.parametrize(
    ("group", "message"),
    [
        pytest.param(0.7, "group_index must be an integer, found 0.7", id="fraction"),
        pytest.param("a", "group_index must be an integer, found str 'a'", id="string"),
        pytest.param(2**70, "group_index 1180591620717411303424 is outside the 64-bit", id="huge"),
        pytest.param(True, "group_index must be an integer, found bool", id="bool"),
        pytest.param(
            None, "no group_index, but the advantage stage `grpo` groups by it", id="none"
        ),
    ],
)
def test_group_ids_the_advantage_stage_cannot_use(
    make_router: Any, group: Any, message: str
) -> None:
    router = _router(make_router, EXACT, post_process=[{"kind": "grpo"}])
    samples = [{**row("x", "x"), "group_index": 0}, {**row("y", "x"), "group_index": group}]
    results = router.score_sync(samples)
    with pytest.raises(SampleError, match=rf"sample 1: {re.escape(message)}"):
        router.post_process(samples, results)
    [(index, found)] = router.check(samples)
    assert index == 1 and message in found


def test_integral_float_group_ids_are_groups(make_router: Any) -> None:
    router = _router(make_router, EXACT, post_process=[{"kind": "grpo"}])
    samples = [{**row(r, "x"), "group_index": g} for r, g in (("x", 1.0), ("y", 1), ("x", 2.0))]
    processed = router.post_process(samples, router.score_sync(samples))
    assert processed.advantages[0] == -processed.advantages[1] != 0.0
    assert processed.advantages[2] == 0.0


def test_warnings_count_terms_that_did_not_apply(make_router: Any) -> None:
    router = _router(make_router, EXACT, ("len", {"path": "rr_testfns.length", "weight": 0.1}))
    batch = router.score_sync([row("x", "x"), row("y", None), row("z", "")])
    assert batch.rewards == [1.1, 0.1, 0.1]
    assert batch.warnings == [ScoreWarning("not_applicable", "r", 2, (1, 2), term="correct")]
    assert str(batch.warnings[0]).startswith("routes.r.rewards.correct: 2 sample(s): returned None")


def test_warnings_count_skipped_samples_and_recorded_failures(make_router: Any) -> None:
    router = make_router(
        {
            "routes": {
                "label": {"rewards": {"correct": {"kind": "exact_match"}}},
                "fails": {
                    "rewards": {"t": {"path": "rr_testfns.raises", "on_error": {"value": 0.0}}}
                },
            },
        }
    )
    batch = router.score_sync([row("x", None, dataset="label"), row("x", "x", dataset="fails")])
    assert batch.warnings == [
        ScoreWarning("skipped", "label", 1, (0,)),
        ScoreWarning("failed", "fails", 1, (1,), status="error"),
    ]


def test_a_batch_scored_as_intended_has_no_warnings(make_router: Any) -> None:
    assert _router(make_router, EXACT).score_sync([row("x", "x"), row("y", "x")]).warnings == []


def test_recorded_failures_keep_the_rest_of_the_batch(make_router: Any) -> None:
    router = _router(make_router, ("t", {"path": "rr_testfns.returns"}))
    samples = [row("a", value=1.0), row("b", value="oops"), row("c", value=0.5)]
    batch = router.score_sync(samples, failures="record")
    assert batch.rewards == [1.0, None, 0.5]
    assert batch.failures == (1,)
    assert batch.warnings == []  # a failure is not a warning
    assert "returned str 'oops'" in (batch[1].error_message or "")


@pytest.mark.parametrize(
    ("term", "value", "fix"),
    [
        pytest.param(
            {"path": "rr_testfns.returns", "key": "scor"},
            {"score": 1.0, "acc": 1.0},
            "did you mean 'score'? set the term's `key:`",
            id="typo_in_key",
        ),
        pytest.param(
            {"path": "rr_testfns.raises"},
            1.0,
            "fix rr_testfns.raises where the message says it raised",
            id="function_raised",
        ),
        pytest.param(
            {"path": "rr_testfns.slow", "timeout": 0.05},
            1.0,
            "raise `timeout` on routes.r.rewards.t (now 0.05 s)",
            id="deadline",
        ),
        pytest.param(
            {"kind": "remote", "kwargs": {"url": "http://127.0.0.1:9/reward", "retries": 0}},
            1.0,
            "the reward server is unreachable or failing: fix the cause above",
            id="server_down",  # port 9 (discard) is closed on loopback
        ),
    ],
)
def test_a_failure_names_its_own_fix(
    make_router: Any, term: dict[str, Any], value: Any, fix: str
) -> None:
    router = _router(make_router, ("t", term))
    with pytest.raises(RewardError) as caught:
        router.score_sync([row("x", value=value)])
    assert fix in str(caught.value)


@pytest.mark.parametrize(
    ("term", "stage", "where"),
    [
        pytest.param(
            {"weight": float("nan")}, None, "routes.r.rewards.correct.weight", id="weight"
        ),
        pytest.param({"on_error": {"value": float("inf")}}, None, "on_error.value", id="fallback"),
        pytest.param(
            {"timeout": float("inf")}, None, "routes.r.rewards.correct.timeout", id="timeout"
        ),
        pytest.param({}, {"kind": "clip", "min": float("nan")}, "post_process[0].min", id="clip"),
        pytest.param(
            {}, {"kind": "quantize", "step": 1e-320}, "post_process[0].step", id="quantize"
        ),
    ],
)
def test_config_numbers_must_be_finite(
    make_router: Any, term: dict[str, Any], stage: dict[str, Any] | None, where: str
) -> None:
    config = {
        "default_route": "r",
        "routes": {"r": {"rewards": {"correct": {"kind": "exact_match", **term}}}},
        "post_process": [stage] if stage else [],
    }
    with pytest.raises(ConfigError) as caught:
        make_router(config)
    assert where in str(caught.value)


# Two routes of different kinds, so that a sample graded by the wrong one shows in its reward.
TWO_ROUTES: dict[str, Any] = {
    "routes": {
        "gsm8k": {"match": ["openai/gsm8k"], "rewards": {"correct": {"kind": "exact_match"}}},
        "other": {"rewards": {"len": {"path": "rr_testfns.length"}}},
    },
}


@pytest.mark.parametrize(
    "dataset",
    [
        pytest.param("OpenAI/GSM8K", id="case"),
        pytest.param(" openai/gsm8k\n", id="surrounding_whitespace"),
        pytest.param("GSM8K", id="route_name_in_another_case"),
    ],
)
@pytest.mark.parametrize("default", [pytest.param("other", id="default"), pytest.param(None)])
def test_a_dataset_string_in_another_case_reaches_its_route(
    make_router: Any, dataset: str, default: str | None
) -> None:
    router = make_router({**TWO_ROUTES, "default_route": default})
    [result] = router.score_sync([row("4", "4", dataset=dataset)])
    assert (result.route, result.reward) == ("gsm8k", 1.0)  # not `other`'s length, 1.0 by luck
    decision = router.resolver.decide(Sample(response="4", metadata={"dataset": dataset}))
    assert "case and surrounding spaces ignored" in decision.reason


def test_dataset_strings_that_differ_only_in_case_are_one_dataset(make_router: Any) -> None:
    config = {
        "routes": {
            **TWO_ROUTES["routes"],
            "other": {
                "match": ["OpenAI/GSM8K "],
                "rewards": {"len": {"path": "rr_testfns.length"}},
            },
        }
    }
    with pytest.raises(ConfigError) as caught:
        make_router(config)
    assert (
        "routes.other.match[0]: dataset 'OpenAI/GSM8K ' is already matched by route 'gsm8k' "
        "(as 'openai/gsm8k')\n    a dataset string may be matched by one route only, ignoring "
        "case and surrounding whitespace; remove one of them"
    ) in str(caught.value)


@pytest.mark.parametrize(
    ("sample", "message"),
    [
        pytest.param(
            {"response": "4", "metadata": {"Dataset": "openai/gsm8k"}},
            "metadata has 'Dataset' = 'openai/gsm8k', but route_by fields are read by exact "
            "name — rename the field to 'dataset', or add 'Dataset' to `route_by`",
            id="field_in_another_case",
        ),
        pytest.param(
            {"response": "4", "data_source": "openai/gsm8k"},
            "'data_source' = 'openai/gsm8k' is a top-level field of the sample, and routing "
            "reads route_by fields from `metadata` — move it into the row's metadata "
            '({"metadata": {"data_source": ...}})',
            id="verl_top_level_data_source",
        ),
    ],
)
def test_a_routing_field_out_of_place_is_named(
    make_router: Any, sample: dict[str, Any], message: str
) -> None:
    router = make_router({**TWO_ROUTES, "default_route": None})
    with pytest.raises(RoutingError) as caught:
        router.score_sync([sample])
    assert str(caught.value).endswith(message)


def trl_optional_label(completions: list[str], solution: Any = None, **kwargs: Any) -> list[float]:
    """A TRL-style reward whose label parameter has a default."""
    return [
        float(c == s)
        for c, s in zip(completions, solution or [None] * len(completions), strict=True)
    ]


def trl_two_optional_labels(
    completions: list[str], solution: Any = None, answer: Any = None
) -> list[float]:
    return [0.0] * len(completions)


def test_a_trl_label_parameter_with_a_default_still_gets_the_label(make_router: Any) -> None:
    router = _router(make_router, ("t", {"path": "test_router_mistakes.trl_optional_label"}))
    assert router.score_sync([row("4", "4"), row("5", "4")]).rewards == [1.0, 0.0]


def test_two_label_parameters_with_defaults_are_refused(make_router: Any) -> None:
    with pytest.raises(ConfigError) as caught:
        _router(make_router, ("t", {"path": "test_router_mistakes.trl_two_optional_labels"}))
    assert (
        "routes.r.rewards.t.path: test_router_mistakes.trl_two_optional_labels has several "
        "label-like parameters with defaults ['solution', 'answer']; a TRL-style term hands the "
        "label to one parameter\n    make the label's parameter required (no default), e.g. "
        "`def trl_two_optional_labels(completions, solution, **kwargs)`"
    ) in str(caught.value)


@pytest.mark.parametrize(
    ("terms", "message"),
    [
        pytest.param(
            [("correct", {"kind": "exact_match", "weight": 0})],
            "routes.r.rewards.correct.weight: weight 0 on its only term 'correct': every reward "
            "of route 'r' would be 0.0 and every group constant (no training signal), though the "
            "terms column shows values",
            id="only_term",
        ),
        pytest.param(
            [
                ("correct", {"kind": "exact_match", "weight": 0}),
                ("len", {"path": "rr_testfns.length", "weight": 0.0}),
            ],
            "routes.r.rewards: weight 0 on every term (correct, len): every reward of route 'r' "
            "would be 0.0",
            id="every_term",
        ),
    ],
)
def test_a_route_weighted_zero_everywhere_is_refused(
    make_router: Any, terms: list[tuple[str, dict[str, Any]]], message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        _router(make_router, *terms)
    assert message in str(caught.value)
    assert "give a term a nonzero weight; to log a term without training on it" in str(caught.value)


def test_a_zero_weight_term_beside_a_weighted_one_is_logged(make_router: Any) -> None:
    router = _router(make_router, EXACT, ("len", {"path": "rr_testfns.length", "weight": 0}))
    [result] = router.score_sync([row("abc", "abc")])
    assert result.reward == 1.0


def _trl_rewards(config: dict[str, Any], dataset: list[str], completions: list[str]) -> Any:
    """The rewards TRL's GRPOTrainer would get from the router's TRL hook for these rows."""
    reward = reward_function(RouterConfig.model_validate(config))
    try:
        return reward(
            prompts=["q"] * len(completions),
            completions=completions,
            dataset=dataset,
            solution=["4"] * len(completions),
        )
    finally:
        close_shared()


def test_through_the_trl_hook_a_dataset_in_another_case_reaches_its_route() -> None:
    config = {**TWO_ROUTES, "default_route": "other"}
    assert _trl_rewards(config, ["OpenAI/GSM8K", " openai/gsm8k"], ["4", "5"]) == [1.0, 0.0]


def test_through_the_trl_hook_a_route_weighted_zero_is_refused() -> None:
    config = {"routes": {"r": {"rewards": {"correct": {"kind": "exact_match", "weight": 0}}}}}
    with pytest.raises(ConfigError, match=r"routes\.r\.rewards\.correct\.weight: weight 0"):
        _trl_rewards(config, ["r"], ["4"])


@pytest.mark.parametrize(
    ("path", "fix"),
    [
        pytest.param(
            "rr_data_named.Scorer",
            "create one instance at module level (`scorer = Scorer(...)` in rr_data_named) and "
            "name that: rr_data_named.scorer",
            id="callable_class",
        ),
        pytest.param(
            "collections.OrderedDict",
            "name the function that computes the value (collections.<function>)",
            id="plain_class",
        ),
    ],
)
def test_an_import_path_naming_a_class_is_refused(make_router: Any, path: str, fix: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _router(make_router, ("t", {"path": path}))
    cls = path.rpartition(".")[2]
    assert str(caught.value).endswith(
        f"routes.r.rewards.t.path: {path} is a class, not a function: calling it would build "
        f"an instance of {cls} instead of computing a value\n    {fix}"
    )


def test_a_sample_naming_a_class_is_told_to_name_an_instance(make_router: Any) -> None:
    router = make_router({"routes": {}, "allowed_modules": ["rr_data_named"]})
    with pytest.raises(RoutingError) as caught:
        router.score_sync(
            [{"response": "x", "metadata": {"custom_rm_path": "rr_data_named.Scorer"}}]
        )
    assert "rr_data_named.Scorer is a class, not a function" in str(caught.value)
    assert "name that: rr_data_named.scorer" in str(caught.value)


def test_through_verl_a_route_by_without_data_source_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "router.yaml"
    config.write_text(
        "route_by: [dataset]\ndefault_route: r\nroutes:\n  r:\n    rewards:\n"
        "      c: {kind: exact_match}\n"
    )
    try:
        with pytest.raises(ConfigError) as caught:
            verl_compute_score("openai/gsm8k", "4", "4", None, rewardrouter_config=str(config))
    finally:
        close_shared()
    assert str(caught.value).endswith(
        "route_by: verl's compute_score gives each row's dataset as 'data_source', which "
        "route_by ['dataset'] does not list, so no row would be routed by its dataset\n"
        "    add it: route_by: ['dataset', 'data_source'] (fields are tried in order)"
    )


def test_through_verl_a_data_source_in_another_case_reaches_its_route(tmp_path: Path) -> None:
    config = tmp_path / "router.yaml"
    config.write_text(
        "default_route: other\nroutes:\n  gsm8k:\n    match: [openai/gsm8k]\n    rewards:\n"
        "      correct: {kind: exact_match}\n  other:\n    rewards:\n"
        "      len: {path: rr_testfns.length}\n"
    )
    try:
        score = verl_compute_score("OpenAI/GSM8K ", "4", "4", None, rewardrouter_config=str(config))
    finally:
        close_shared()
    assert isinstance(score, dict)  # one row in, one score dict out
    assert (score["route"], score["score"]) == ("gsm8k", 1.0)


def test_a_routing_field_out_of_place_is_named_when_the_default_route_takes_it(
    make_router: Any,
) -> None:
    router = make_router({**TWO_ROUTES, "default_route": "other"})
    decision = router.resolver.decide(Sample(response="4", metadata={"Dataset": "openai/gsm8k"}))
    assert decision.reason == (
        "no route_by field matched a route; metadata has 'Dataset' = 'openai/gsm8k', but "
        "route_by fields are read by exact name — rename the field to 'dataset', or add "
        "'Dataset' to `route_by`"
    )


#: What a counted ``misplaced_route_field`` warning says after its route and count.
MISPLACED = (
    "scored by default_route, likely not the route meant: no route_by field is in their "
    "metadata, yet they carry one elsewhere: "
)
IN_ANOTHER_CASE = (
    "metadata has 'Dataset', but route_by fields are read by exact name — rename the field to "
    "'dataset', or add 'Dataset' to `route_by`"
)
AT_THE_TOP_LEVEL = (
    "'data_source' is a top-level field of the sample, and routing reads route_by fields from "
    '`metadata` — move it into the row\'s metadata ({"metadata": {"data_source": ...}})'
)


@pytest.mark.parametrize(
    ("samples", "found"),
    [
        pytest.param(
            [{"response": "4", "metadata": {"Dataset": "openai/gsm8k"}}] * 2,
            IN_ANOTHER_CASE,
            id="field_in_another_case",
        ),
        pytest.param(
            [{"response": "4", "data_source": "openai/gsm8k"}] * 2,
            AT_THE_TOP_LEVEL,
            id="verl_top_level_data_source",
        ),
        pytest.param(
            [{"response": "4", "Dataset": "openai/gsm8k"}] * 2,
            "'Dataset' is a top-level field of the sample, and routing reads route_by fields "
            "from `metadata` — move it into the row's metadata "
            '({"metadata": {"dataset": ...}})',
            id="top_level_in_another_case",
        ),
    ],
)
@pytest.mark.parametrize("terms", [1, 2], ids=["one_term", "two_terms"])
def test_a_routing_field_out_of_place_that_the_default_route_takes_is_counted(
    make_router: Any, samples: list[dict[str, Any]], found: str, terms: int
) -> None:
    other: dict[str, Any] = {"len": {"path": "rr_testfns.length"}}
    if terms == 2:  # a result stored whole, not read from the batch's columns
        other["bonus"] = {"kind": "exact_match", "weight": 0.5}
    config = {**TWO_ROUTES, "default_route": "other"}
    config["routes"] = {**TWO_ROUTES["routes"], "other": {"rewards": other}}
    router = make_router(config)
    well_placed = {"response": "4", "metadata": {"dataset": "openai/gsm8k"}}
    batch = router.score_sync([samples[0], well_placed, samples[1]])
    assert [r.route for r in batch] == ["other", "gsm8k", "other"]
    assert [r.misplaced for r in batch] == [found, None, found]
    misplaced = [w for w in batch.warnings if w.code == "misplaced_route_field"]
    assert misplaced == [ScoreWarning("misplaced_route_field", "other", 2, (0, 2), misplaced=found)]
    assert str(misplaced[0]) == f"routes.other: 2 sample(s): {MISPLACED}{found}"


def test_a_sample_without_route_by_fields_anywhere_is_no_routing_warning(make_router: Any) -> None:
    router = make_router({**TWO_ROUTES, "default_route": "other"})
    batch = router.score_sync([{"response": "4", "metadata": {"source": "mine"}}])
    assert (batch[0].route, batch[0].misplaced, batch.warnings) == ("other", None, [])


def _misplaced_config(tmp_path: Path) -> Path:
    path = tmp_path / "router.yaml"
    path.write_text(
        "default_route: other\nroutes:\n  gsm8k:\n    match: [openai/gsm8k]\n    rewards:\n"
        "      correct: {kind: exact_match}\n  other:\n    rewards:\n"
        "      len: {path: rr_testfns.length}\n"
    )
    return path


def test_through_the_trl_hook_a_routing_column_in_another_case_is_a_counted_warning() -> None:
    config = {**TWO_ROUTES, "default_route": "other"}
    reward = reward_function(RouterConfig.model_validate(config))
    logged: dict[str, float] = {}
    try:
        with pytest.warns(RewardRouterWarning) as caught:
            rewards = reward(
                prompts=["q", "q"],
                completions=["4", "44"],
                Dataset=["openai/gsm8k", "openai/gsm8k"],  # TRL passes the column as named
                solution=["4", "4"],
                log_metric=logged.__setitem__,
            )
    finally:
        close_shared()
    assert rewards == [1.0, 2.0]  # lengths, from the default route: not the gsm8k grader
    assert logged["rewardrouter/warnings/misplaced_route_field"] == 2.0
    assert [str(w.message) for w in caught] == [
        f"routes.other: 2 sample(s): {MISPLACED}{IN_ANOTHER_CASE}; counted in "
        f"rewardrouter/warnings/misplaced_route_field"
    ]


def test_through_the_slime_hook_a_routing_field_in_another_case_is_a_counted_warning(
    tmp_path: Path,
) -> None:
    args = trainer_args(
        "rewardrouter.integrations.slime",
        False,
        rewardrouter_config=str(_misplaced_config(tmp_path)),
    )
    samples = [
        SlimeSample(
            group_index=0, index=i, response=r, label="4", metadata={"Dataset": "openai/gsm8k"}
        )
        for i, r in enumerate(["4", "44"])
    ]
    try:
        with pytest.warns(RewardRouterWarning) as caught:
            rewards = [asyncio.run(slime_custom_rm(args, s)) for s in samples]  # one per call
        metrics = rollout_metrics(args, samples)
    finally:
        close_shared()
    assert rewards == [1.0, 2.0]
    assert metrics["rewardrouter/warnings/misplaced_route_field"] == 2.0
    assert metrics["rewardrouter/other/count"] == 2.0
    assert [str(w.message) for w in caught] == [  # warned once, counted per sample
        f"routes.other: 1 sample(s): {MISPLACED}{IN_ANOTHER_CASE}; counted in "
        f"rewardrouter/warnings/misplaced_route_field"
    ]
