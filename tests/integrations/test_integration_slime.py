"""slime / vime contract: the hooks called exactly as slime calls them.

slime awaits ``custom_rm(args, sample)`` per sample, ``custom_rm(args, samples)`` for a list
(``--group-rm``, or a fan-out generate function without it), stores what comes back in
``sample.reward`` and reads ``reward[args.reward_key]`` when ``--reward-key`` is set. It calls
``post_process_rewards(args, samples)`` synchronously on the flat training batch and trains on
the second list. The samples here carry slime's ``Sample`` field names and ``Status`` enum; the
config is the shipped ``examples/slime`` one, with its own reward module.
"""

from __future__ import annotations

import asyncio
import pickle
import statistics
import warnings
from argparse import Namespace
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from rr_frameworks import SlimeSample as Sample

from rewardrouter import ConfigError, RewardError, RewardRouterWarning, RoutingError
from rewardrouter.integrations import _metrics
from rewardrouter.integrations._router_cache import close_shared, shared_router
from rewardrouter.integrations._self_reference import (
    without_self_reference,
    without_self_references,
)
from rewardrouter.integrations._source import ConfigSource, parse_overrides
from rewardrouter.integrations.slime import (
    batched_custom_rm,
    custom_rm,
    log_rollout,
    post_process_rewards,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "slime"
ROUTER = EXAMPLE / "router.yaml"
GSM8K, SQUAD = "openai/gsm8k", "rajpurkar/squad"


def sample(response: str, label: str | None, dataset: str | None = SQUAD, **fields: Any) -> Sample:
    metadata = {"dataset": dataset} if dataset else {}
    metadata.update(fields.pop("metadata", {}))
    return Sample(response=response, label=label, metadata=metadata, **fields)


def slime_args(config: Path | str | None = ROUTER, **fields: Any) -> Namespace:
    """slime's ``args`` after ``--custom-config-path`` put ``rewardrouter_config`` on it."""
    values: dict[str, Any] = {
        "reward_key": None,
        "eval_reward_key": None,
        "group_rm": False,
        "custom_rm_path": "rewardrouter.integrations.slime.custom_rm",
        "n_samples_per_prompt": 4,
    }
    if config is not None:
        values["rewardrouter_config"] = str(config)
    values.update(fields)
    return Namespace(**values)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("REWARDROUTER_CONFIG", raising=False)
    monkeypatch.delenv("REWARDROUTER_OVERRIDES", raising=False)
    monkeypatch.syspath_prepend(str(EXAMPLE))  # slime_rewards, as PYTHONPATH gives it to slime
    monkeypatch.setattr(_metrics, "WARNINGS", Counter())  # counted and emitted per test
    monkeypatch.setattr(_metrics, "_emitted", set())
    monkeypatch.setattr(_metrics, "_counted", set())
    yield
    close_shared()


def run(coro: Any) -> Any:
    return asyncio.run(coro)


THINK_72 = "<think>48 + 24</think> \\boxed{72}"


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        pytest.param(sample(THINK_72, "72", GSM8K), 1.1, id="gsm8k_right_and_formatted"),
        pytest.param(sample("\\boxed{72}", "72", GSM8K), 1.0, id="gsm8k_right_no_think"),
        pytest.param(sample("<think>x</think> \\boxed{7}", "72", GSM8K), 0.1, id="gsm8k_wrong"),
        # alone in its call, a squad sample is the shortest of its group
        pytest.param(sample("Paris", "Paris"), 1.2, id="squad_right"),
        pytest.param(
            sample("Paris", "Paris", metadata={"rm_type": "boxed_exact_match"}),
            0.0,
            id="metadata_rm_type_beats_route",
        ),
    ],
)
def test_single_sample(row: Sample, expected: float) -> None:
    assert run(custom_rm(slime_args(), row)) == pytest.approx(expected)


def group_of_mixed_routes() -> list[Sample]:
    """One prompt group whose samples take three routes; the shortest answers are not squad's."""
    return [
        sample("PARIS!", "Paris", group_index=3),  # squad, right but longer
        sample("x", "Paris", group_index=3, metadata={"rm_type": "exact_match"}),
        sample("Paris", "Paris", group_index=3),  # squad, shortest squad answer
        sample("\\boxed{72}", "72", GSM8K, group_index=3),
        sample("", None, group_index=3, status=Sample.Status.ABORTED),
    ]


@pytest.mark.parametrize(
    "hook",
    [
        pytest.param(custom_rm, id="custom_rm_with_a_list"),
        pytest.param(batched_custom_rm, id="batched_custom_rm"),
    ],
)
def test_group_rm_scores_each_route_group_apart(hook: Any) -> None:
    rewards = run(hook(slime_args(group_rm=True), group_of_mixed_routes()))
    # brevity (0.2) goes to the shortest *squad* answer: the group reward never saw "x" or the
    # gsm8k sample, and the aborted sample is not scored at all
    assert rewards == pytest.approx([1.0, 0.0, 1.2, 1.0, None])


def test_fan_out_lists_without_group_rm() -> None:
    args = slime_args(group_rm=False)
    flat = run(custom_rm(args, [sample("Paris", "Paris", group_index=0), sample("Lyon", "Paris")]))
    nested = run(custom_rm(args, [[sample("\\boxed{72}", "72", GSM8K)], [sample("Rome", "Paris")]]))
    assert flat == pytest.approx([1.2, 0.2])
    assert nested == [[pytest.approx(1.0)], [pytest.approx(0.2)]]


@pytest.fixture
def format_only(tmp_path: Path) -> Path:
    """A config whose route has one dict-valued term (the example's think_format)."""
    path = tmp_path / "format_only.yaml"
    path.write_text(
        "route_by: [dataset]\n"
        "allowed_modules: [rewardrouter, slime_rewards]\n"
        "routes:\n"
        "  fmt:\n"
        "    rewards:\n"
        "      format: {path: slime_rewards.think_format, key: score}\n"
    )
    return path


THINK_ONLY = "<think>no answer</think>"


@pytest.mark.parametrize(
    ("keys", "overrides", "expected"),
    [
        pytest.param({}, (), 0.0, id="no_reward_key_gives_a_number"),
        pytest.param(
            {"reward_key": "score"},
            (),
            {"score": 0.0, "closed": 1.0},
            id="reward_key_gives_a_dict_with_the_term_entries",
        ),
        pytest.param(
            {"reward_key": "score", "eval_reward_key": "score"},
            (),
            {"score": 0.0, "closed": 1.0},
            id="same_eval_key_scores_once",
        ),
        pytest.param(
            {"reward_key": "score", "eval_reward_key": "acc"},
            ["routes.fmt.rewards.format.eval_key=closed"],
            {"score": 0.0, "closed": 1.0, "acc": 1.0},
            id="eval_reward_key_holds_the_evaluation_value",
        ),
    ],
)
def test_reward_key(
    format_only: Path, keys: dict[str, str], overrides: list[str], expected: Any
) -> None:
    args = slime_args(format_only, rewardrouter_overrides=overrides, **keys)
    reward = run(custom_rm(args, sample(THINK_ONLY, None, "fmt")))
    assert reward == expected
    if isinstance(reward, dict) and keys.get("reward_key"):
        assert reward[args.reward_key] == 0.0  # what slime trains on: reward[args.reward_key]


def test_reward_key_reaches_functions_that_samples_name() -> None:
    """--reward-key becomes the router's reward_key: a sample's own dict-valued function works."""
    named = sample(THINK_72, "72", GSM8K, custom_rm_path="slime_rewards.think_format")
    with_key = run(custom_rm(slime_args(reward_key="score"), [named]))
    assert with_key == [{"score": 1.0, "closed": 1.0}]
    close_shared()
    with pytest.raises(RewardError, match="key"):
        run(custom_rm(slime_args(), [named]))


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        pytest.param(
            sample("Paris", "Paris", status=Sample.Status.ABORTED), None, id="aborted_not_scored"
        ),
        pytest.param(sample("Lyon", "Paris", reward=0.25), 0.25, id="set_reward_kept"),
        pytest.param(
            sample("Lyon", "Paris", reward={"score": 0.5, "acc": 0}),
            {"score": 0.5, "acc": 0},
            id="set_dict_reward_kept_as_is",
        ),
    ],
)
def test_aborted_and_already_rewarded_samples(row: Sample, expected: Any) -> None:
    assert run(custom_rm(slime_args(reward_key="score"), [row])) == [expected]


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("rewardrouter.integrations.slime.custom_rm", id="slime_hook"),
        pytest.param("rewardrouter.integrations.slime.batched_custom_rm", id="group_hook"),
    ],
)
def test_sample_naming_the_hook_itself_is_routed_not_recursed(path: str) -> None:
    """slime copies an eval dataset's custom_rm_path (maybe this hook) onto its samples."""
    row = sample("Paris", "Paris", custom_rm_path=path)
    assert run(custom_rm(slime_args(), row)) == pytest.approx(1.2)


def test_hidden_hook_view_pickles_like_the_sample() -> None:
    """Views of such samples may cross into worker processes."""
    view = without_self_reference(
        sample("Paris", "Paris", custom_rm_path="rewardrouter.integrations.slime.custom_rm")
    )
    copy = pickle.loads(pickle.dumps(view))
    assert (copy.custom_rm_path, copy.response, copy.metadata) == (
        None,
        "Paris",
        {"dataset": SQUAD},
    )


HOOK = "rewardrouter.integrations.slime.custom_rm"


def test_a_batch_hides_hook_names_as_each_sample_alone_does() -> None:
    batch: list[Any] = [
        sample("Paris", "Paris"),  # names nothing: passed on as it is
        sample("Paris", "Paris", custom_rm_path=HOOK),
        sample("Paris", "Paris", metadata={"custom_rm_path": HOOK}),
        sample("Paris", "Paris", custom_rm_path="slime_rewards.think_format"),  # not a hook
        {"response": "Paris", "label": "Paris", "metadata": {"dataset": SQUAD}},  # a dict row
        SimpleNamespace(response="Paris", label="Paris", metadata=None),  # metadata not a dict
    ]
    views = without_self_references(batch)
    assert views[0] is batch[0] and views[3] is batch[3]
    for view, alone in zip(views, map(without_self_reference, batch), strict=True):
        fields = ("response", "label", "metadata", "custom_rm_path")
        assert [getattr(view, f, None) for f in fields] == [getattr(alone, f, None) for f in fields]
    assert getattr(views[1], "custom_rm_path", "") is None
    assert "custom_rm_path" not in views[2].metadata


def test_custom_rm_path_outside_allowed_modules_is_refused() -> None:
    row = sample("Paris", "Paris", custom_rm_path="os.system")
    with pytest.raises(RoutingError, match="allowed_modules"):
        run(custom_rm(slime_args(), row))


# -- post-process hook -------------------------------------------------------------------------


#: (group_index, reward) in batch order: groups of 3, 4, 2 and 3 (one aborted), shuffled; groups 1
#: and 2 are constant and fractional (float32 means of 0.3 or 7.3 are not exactly 0.3 or 7.3).
UNEVEN_GROUPS: list[tuple[int, float | None]] = [
    (2, 7.3),
    (0, 1.0),
    (1, 0.3),
    (3, 0.5),
    (1, 0.3),
    (0, 0.0),
    (2, 7.3),
    (1, 0.3),
    (3, None),
    (0, 1.0),
    (3, 0.2),
    (1, 0.3),
]


def batch_of_uneven_groups(key: str | None = None) -> list[Sample]:
    """:data:`UNEVEN_GROUPS` as scored samples; ``key``: rewards are dicts holding it."""
    out = []
    for group, reward in UNEVEN_GROUPS:
        value = reward if key is None or reward is None else {key: reward, "acc": 1}
        status = Sample.Status.ABORTED if reward is None else Sample.Status.COMPLETED
        out.append(sample("Paris", "Paris", group_index=group, reward=value, status=status))
    return out


def reference_grpo(rewards: list[float | None], groups: list[int]) -> list[float]:
    """(r - group mean) / (unbiased group std + 1e-6), float64; constant groups 0 by definition."""
    out = []
    for r, g in zip(rewards, groups, strict=True):
        members = [x for x, h in zip(rewards, groups, strict=True) if h == g and x is not None]
        if r is None or len(set(members)) == 1:
            out.append(0.0)
        else:
            mean = statistics.fmean(members)
            out.append((r - mean) / (statistics.stdev(members) + 1e-6))
    return out


@pytest.mark.parametrize(
    "key",
    [pytest.param(None, id="number_rewards"), pytest.param("score", id="dict_rewards_reward_key")],
)
def test_post_process_groups_by_group_index_with_exact_constant_groups(key: str | None) -> None:
    samples = batch_of_uneven_groups(key)
    raw, advantages = post_process_rewards(slime_args(reward_key=key), samples)
    values = [reward for _, reward in UNEVEN_GROUPS]
    assert len(raw) == len(advantages) == len(samples)
    assert all(type(x) is float for x in raw + advantages)
    assert raw == [0.0 if v is None else v for v in values]
    for got, (group, _) in zip(advantages, UNEVEN_GROUPS, strict=True):
        if group in (1, 2):
            assert got == 0.0  # exactly: no float32 rounding residue divided by a tiny std
    groups = [group for group, _ in UNEVEN_GROUPS]
    assert advantages == pytest.approx(reference_grpo(values, groups), rel=1e-5, abs=1e-6)


def test_post_process_runs_route_shaping_on_each_samples_route(tmp_path: Path) -> None:
    config = tmp_path / "router.yaml"
    config.write_text(
        ROUTER.read_text().replace(
            "post_process:", "    shaping: [{kind: scale, mul: 2.0}]\npost_process:"
        )
    )
    rows = [
        sample("x", "Paris", group_index=0, reward=1.0),  # squad: doubled
        sample("x", "Paris", group_index=0, reward=1.0, custom_rm_path=HOOK),  # squad too
        sample("x", "72", GSM8K, group_index=0, reward=1.0),  # gsm8k: as it is
        sample("x", "72", "unknown/set", group_index=0, reward=1.0),  # no route: as it is
    ]
    raw, advantages = post_process_rewards(slime_args(config), rows)
    assert raw == [1.0] * 4
    assert advantages == pytest.approx(reference_grpo([2.0, 2.0, 1.0, 1.0], [0] * 4), rel=1e-5)


def test_post_process_reads_each_status_as_written(tmp_path: Path) -> None:
    """Truncated samples (slime's enum member, or the word in any case) take the truncation
    penalty; aborted ones have no reward; "completed" and no status at all are plain rows."""
    config = tmp_path / "router.yaml"
    config.write_text(
        ROUTER.read_text().replace(
            "post_process:", "post_process:\n  - {kind: truncation_penalty, value: -1.0}"
        )
    )
    statuses: list[Any] = [
        Sample.Status.TRUNCATED,
        "truncated",
        "Truncated",
        Sample.Status.COMPLETED,
        "completed",
        None,
        Sample.Status.ABORTED,
        "ABORTED",
    ]
    rows = [sample("x", "Paris", group_index=0, reward=1.0, status=s) for s in statuses]
    raw, advantages = post_process_rewards(slime_args(config), rows)
    assert raw == [1.0] * 6 + [0.0, 0.0]
    shaped = [-1.0, -1.0, -1.0, 1.0, 1.0, 1.0]
    expected = reference_grpo([*shaped, None, None], [0] * 8)
    assert advantages == pytest.approx(expected, rel=1e-5)
    assert advantages[-2:] == [0.0, 0.0]


def test_post_process_hook_from_inside_a_running_event_loop() -> None:
    """slime may call the synchronous hook from code that runs an event loop."""

    async def inside() -> tuple[list[float], list[float]]:
        return post_process_rewards(slime_args(), batch_of_uneven_groups())

    raw, advantages = run(inside())
    assert len(raw) == len(advantages) == 12


# -- configuration -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        pytest.param(
            slime_args(None), {}, r"args\.rewardrouter_config.*REWARDROUTER_CONFIG", id="none_set"
        ),
        pytest.param(
            slime_args("no/such/router.yaml"),
            {},
            r"args\.rewardrouter_config: router config 'no/such/router.yaml' not found",
            id="missing_file_from_args",
        ),
        pytest.param(
            slime_args(None),
            {"REWARDROUTER_CONFIG": "gone.yaml"},
            r"REWARDROUTER_CONFIG: router config 'gone.yaml' not found",
            id="missing_file_from_env",
        ),
        pytest.param(
            slime_args(rewardrouter_overrides="routes.squad.rewards.correct.kind=exact_mach"),
            {},
            r"router\.yaml.*\n.*routes\.squad\.rewards\.correct\.kind.*\n.*'exact_match'",
            id="config_that_does_not_compile",
        ),
    ],
)
def test_config_problems_raise_from_every_call(
    args: Namespace, env: dict[str, str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for _ in range(2):  # the first call and the next: an error each time, never a hang
        with pytest.raises(ConfigError, match=message):
            run(custom_rm(args, sample("Paris", "Paris")))
    with pytest.raises(ConfigError, match=message):
        post_process_rewards(args, batch_of_uneven_groups())


def test_eval_reward_key_without_reward_key_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"(?s)args\.eval_reward_key.*set --reward-key as well"):
        run(custom_rm(slime_args(eval_reward_key="acc"), sample("Paris", "Paris")))


def test_config_from_environment_with_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REWARDROUTER_CONFIG", str(ROUTER))
    monkeypatch.setenv("REWARDROUTER_OVERRIDES", "routes.squad.rewards.brevity.weight=0.5")
    assert run(custom_rm(slime_args(None), sample("Paris", "Paris"))) == pytest.approx(1.5)


def test_router_is_compiled_once_per_process_and_config() -> None:
    source = ConfigSource(str(ROUTER))
    first = shared_router(source)
    assert shared_router(ConfigSource(str(ROUTER))) is first
    assert shared_router(source, reward_key="score") is not first  # another key, another router


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(None, (), id="unset"),
        pytest.param(["a=1", " b=2 "], ("a=1", "b=2"), id="list"),
        pytest.param("a=1,b=2", ("a=1", "b=2"), id="commas"),
        pytest.param("a=1  b=2", ("a=1", "b=2"), id="spaces"),
        pytest.param("m=[x,y], n='p, q'", ("m=[x,y]", "n='p, q'"), id="commas_inside_values"),
    ],
)
def test_parse_overrides(value: Any, expected: tuple[str, ...]) -> None:
    assert parse_overrides(value) == expected


# -- grouping as slime groups, when samples carry no group_index ------------------------------


def contract_router(tmp_path: Path) -> Path:
    """What a router for slime's contract samples needs: they name no dataset."""
    path = tmp_path / "router.yaml"
    path.write_text(
        "default_route: any\n"
        "routes: {any: {rewards: {correct: {kind: exact_match}}}}\n"
        "post_process: [{kind: grpo, std: none}]\n"
    )
    return path


@pytest.mark.parametrize(
    ("n", "batch", "rewards", "expected", "warned"),
    [
        pytest.param(2, 2, [0.0, 2.0, 10.0, 14.0], [-1.0, 1.0, -2.0, 2.0], False, id="runs_of_n"),
        # slime's own rule; a counted warning, since answers to different prompts are compared
        pytest.param(2, 2, [0.0, 2.0, 4.0], [-2.0, 0.0, 2.0], True, id="uneven_count_one_group"),
        pytest.param(None, None, [0.5, 1.5], [-0.5, 0.5], True, id="no_group_size_one_group"),
    ],
)
def test_post_process_without_group_index_groups_by_position_as_slime(
    tmp_path: Path,
    n: int | None,
    batch: int | None,
    rewards: list[float],
    expected: list[float],
    warned: bool,
) -> None:
    rows = [Sample(index=i, reward=r) for i, r in enumerate(rewards)]
    args = slime_args(contract_router(tmp_path), n_samples_per_prompt=n, rollout_batch_size=batch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        raw, advantages = post_process_rewards(args, rows)
    assert (raw, advantages) == (rewards, expected)
    one_group = [
        w for w in caught if "whole batch is normalized as one prompt group" in str(w.message)
    ]
    assert len(one_group) == warned
    counted = _metrics.warning_metrics().get("rewardrouter/warnings/one_prompt_group", 0.0)
    assert counted == float(warned)


@pytest.mark.filterwarnings("ignore::rewardrouter.RewardRouterWarning")
def test_a_batch_without_group_index_is_not_counted_as_a_mixed_prompt_group(
    tmp_path: Path,
) -> None:
    """The one-group fallback holds answers to different prompts by design: it is counted as
    ``one_prompt_group`` alone, not as a group_index that two prompts share."""
    rows = [Sample(index=i, prompt=f"p{i}", reward=float(i)) for i in range(3)]
    post_process_rewards(slime_args(contract_router(tmp_path), n_samples_per_prompt=None), rows)
    assert _metrics.WARNINGS["one_prompt_group"] == 1
    assert _metrics.WARNINGS["mixed_prompt_group"] == 0


def test_reward_hooks_score_contract_samples_with_their_rewards_cleared(tmp_path: Path) -> None:
    """slime's contract samples carry a reward already (kept as it is); cleared, the router
    scores them through the default route."""
    rows = [
        Sample(index=i, prompt=f"p{i}", response=f"r{i}", label=label)
        for i, label in enumerate(["r0", "x"])
    ]
    args = slime_args(contract_router(tmp_path))
    assert asyncio.run(custom_rm(args, rows[0])) == 1.0
    assert asyncio.run(batched_custom_rm(args, rows)) == [1.0, 0.0]


# -- what slime's logs carry -----------------------------------------------------------------


def test_group_term_called_one_sample_at_a_time_warns_once_with_the_fix() -> None:
    """The squad route's `brevity` term takes a group; slime without --group-rm calls the hook
    per sample, so the term sees groups of one."""
    row = sample("Paris", "Paris")
    with pytest.warns(RewardRouterWarning, match=r"routes\.squad\.rewards\.brevity .*--group-rm"):
        asyncio.run(custom_rm(slime_args(), row))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        asyncio.run(custom_rm(slime_args(), sample("Paris", "Paris")))  # counted, not repeated
        asyncio.run(batched_custom_rm(slime_args(), [row, row]))  # a group call: fine
    assert _metrics.warning_metrics() == {"rewardrouter/warnings/group_term_per_sample": 2.0}


def test_log_hook_adds_routes_terms_statuses_and_constant_groups() -> None:
    rows = [
        sample("so \\boxed{72}", "72", GSM8K, group_index=0),
        sample("\\boxed{7}", "72", GSM8K, group_index=0),
        sample("Paris", "Paris", group_index=1),
        sample("Paris", "Paris", group_index=1),
        sample("Paris", "Paris", group_index=2, status=Sample.Status.ABORTED),
    ]
    args = slime_args()
    for row, reward in zip(rows, asyncio.run(batched_custom_rm(args, rows)), strict=True):
        row.reward = reward
    metrics: dict[str, Any] = {"rollout/existing": 1.0}
    assert log_rollout(3, args, rows, metrics, 0.5) is False  # slime's own logging goes on
    assert metrics == {
        "rollout/existing": 1.0,
        "rewardrouter/gsm8k/count": 2.0,
        "rewardrouter/gsm8k/reward": pytest.approx((1.0 + 0.0) / 2),
        "rewardrouter/gsm8k/correct": 0.5,
        "rewardrouter/gsm8k/format": 0.0,
        "rewardrouter/squad/count": 2.0,
        "rewardrouter/squad/reward": pytest.approx(1.2),
        "rewardrouter/squad/correct": 1.0,
        "rewardrouter/squad/brevity": 1.0,
        "rewardrouter/status/ok": 0.8,
        "rewardrouter/status/aborted": 0.2,
        "rewardrouter/groups": 2.0,
        "rewardrouter/constant_groups": 0.5,
        "rewardrouter/filled": 0.0,
    }


@pytest.mark.parametrize("reward_key", [None, "score"])
def test_record_of_a_sample_scored_by_one_term_is_its_result(reward_key: str | None) -> None:
    """A route of one term that returns a float (an rm_type built-in here) is the common case,
    read from the batch's columns: its record says what the router's own result says."""
    rows = [
        sample(answer, "Paris", group_index=0, metadata={"rm_type": "exact_match"})
        for answer in ("x", "Paris", "paris")
    ]
    args = slime_args(reward_key=reward_key)
    rewards = run(batched_custom_rm(args, rows))
    expected = run(
        shared_router(ConfigSource(str(ROUTER)), reward_key=reward_key).score(
            [sample(r.response, r.label, metadata={"rm_type": "exact_match"}) for r in rows]
        )
    )
    assert [e.status for e in expected] == ["ok"] * 3
    assert [e.reward for e in expected] == [0.0, 1.0, 1.0]
    if reward_key is None:
        assert rewards == [0.0, 1.0, 1.0]
    else:
        assert rewards == [{"score": 0.0}, {"score": 1.0}, {"score": 1.0}]
    for row, result in zip(rows, expected, strict=True):
        assert row.metadata["rewardrouter"] == {
            "route": result.route,
            "status": "ok",
            "terms": result.terms,
            "filled": False,
        }
    for row, reward in zip(rows, rewards, strict=True):
        row.reward = reward
    metrics: dict[str, Any] = {}
    log_rollout(0, args, rows, metrics, 0.1)
    route = expected[0].route
    assert metrics[f"rewardrouter/{route}/count"] == 3.0
    assert metrics[f"rewardrouter/{route}/reward"] == pytest.approx(2 / 3)
    assert metrics["rewardrouter/status/ok"] == 1.0


def test_log_hook_counts_samples_scored_elsewhere_by_their_route() -> None:
    rows = [
        sample("x", "Paris", group_index=0, reward=1.0),
        sample("x", "Paris", group_index=0, reward=0.0, custom_rm_path=HOOK),
        sample("x", "72", GSM8K, group_index=1, reward=None),
    ]
    metrics: dict[str, Any] = {}
    log_rollout(0, slime_args(), rows, metrics, 0.1)
    assert {k: v for k, v in metrics.items() if "/status/" in k or k.endswith("/count")} == {
        "rewardrouter/squad/count": 2.0,
        "rewardrouter/gsm8k/count": 1.0,
        "rewardrouter/status/kept": pytest.approx(2 / 3),
        "rewardrouter/status/skipped": pytest.approx(1 / 3),
    }


# -- one-sample calls in flight together are scored in batches --------------------------------


@pytest.fixture
def single_terms(tmp_path: Path) -> Path:
    """A router whose terms all score one sample at a time: its calls may be gathered."""
    config = tmp_path / "router.yaml"
    config.write_text(
        "default_route: r\nroutes:\n  r:\n    rewards:\n      t: {path: rr_testfns.returns}\n"
    )
    return config


def test_concurrent_one_sample_calls_are_scored_in_batches(
    single_terms: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # slime without --group-rm: one custom_rm call per sample, all in flight at once
    import rewardrouter.integrations.slime as hooks

    batches: list[int] = []
    score_each = hooks._score_each

    async def counted(args: Any, samples: Any, **kw: Any) -> Any:
        batches.append(len(samples))
        return await score_each(args, samples, **kw)

    monkeypatch.setattr(hooks, "_score_each", counted)
    args = slime_args(single_terms)
    rows = [sample("x", None, metadata={"value": float(i)}) for i in range(300)]

    async def rollout() -> list[Any]:
        return await asyncio.gather(*(custom_rm(args, row) for row in rows))

    assert asyncio.run(rollout()) == [float(i) for i in range(300)]
    assert sum(batches) == 300 and len(batches) <= 2, batches  # not 300 calls of one


def test_a_gathered_samples_failure_is_raised_to_its_own_call_alone(single_terms: Path) -> None:
    args = slime_args(single_terms)
    rows = [sample("x", None, metadata={"value": v}) for v in (1.0, "not a number", 2.0)]

    async def rollout() -> list[Any]:
        return await asyncio.gather(*(custom_rm(args, r) for r in rows), return_exceptions=True)

    first, bad, last = asyncio.run(rollout())
    assert (first, last) == (1.0, 2.0)
    assert isinstance(bad, RewardError) and "not a number" in str(bad), bad


def test_calls_are_not_gathered_when_a_term_takes_a_group(monkeypatch: pytest.MonkeyPatch) -> None:
    # the shipped example has a group-mode term: gathering would hand it other prompts' answers
    import rewardrouter.integrations.slime as hooks

    sizes: list[int] = []
    score_each = hooks._score_each

    async def counted(args: Any, samples: Any, **kw: Any) -> Any:
        sizes.append(len(samples))
        return await score_each(args, samples, **kw)

    monkeypatch.setattr(hooks, "_score_each", counted)
    args = slime_args()
    rows = [sample("Paris", "Paris") for _ in range(3)]

    async def rollout() -> list[Any]:
        return await asyncio.gather(*(custom_rm(args, row) for row in rows))

    with pytest.warns(RewardRouterWarning, match="one sample at a time"):
        asyncio.run(rollout())
    assert sizes == [1, 1, 1]
