"""Executor and timeout settings: what ``auto`` picks, which choices the compiler refuses (with
their YAML paths), and how timeouts and executors shape route groups."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from rr_execution import router_config

from rewardrouter import ConfigError, compile_router
from rewardrouter.compile.executors import choose_executor
from rewardrouter.compile.resolve import RewardFn, resolve_builtin
from rewardrouter.config.models import DEFAULT_TIMEOUT, RouterConfig
from rewardrouter.execute.process.settings import ProcessSettings
from rewardrouter.execute.registry import settings_of
from rewardrouter.execute.tasks import ChunkSizer
from rewardrouter.execute.wire import FIELDS, restore, snapshot
from rewardrouter.rewards import BuiltinReward
from rewardrouter.sample import Sample


def _problems(config: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        compile_router(config)
    return [str(p) for p in info.value.problems]


@pytest.mark.parametrize(
    ("path", "executor", "expected"),
    [
        pytest.param(
            "rr_execution.LAMBDA",
            "process",
            "routes.r.rewards.t.executor: rr_execution.LAMBDA cannot run in a worker process: "
            "it is a lambda\n    define it at the top level of a module",
            id="lambda",
        ),
        pytest.param(
            "rr_execution.CLOSURE",
            "process",
            "routes.r.rewards.t.executor: rr_execution.CLOSURE cannot run in a worker process: "
            "it is defined inside another function",
            id="closure",
        ),
        pytest.param(
            "rr_execution.async_grade",
            "process",
            "routes.r.rewards.t.executor: rr_execution.async_grade is an async function; "
            "executor 'process' runs plain functions\n    remove `executor`",
            id="async_in_a_process",
        ),
        pytest.param(
            "rr_execution.async_grade",
            "thread",
            "routes.r.rewards.t.executor: rr_execution.async_grade is an async function; "
            "executor 'thread' runs plain functions",
            id="async_on_a_thread",
        ),
    ],
)
def test_impossible_executor_is_a_compile_problem(path: str, executor: str, expected: str) -> None:
    [problem] = _problems(router_config(path, executor=executor))
    assert problem.startswith(expected)


def test_every_executor_problem_is_reported_at_once() -> None:
    config = router_config("rr_execution.LAMBDA")
    config["routes"]["r"]["rewards"]["u"] = {
        "path": "rr_execution.async_grade",
        "executor": "thread",
    }
    assert [p.split(":")[0] for p in _problems(config)] == [
        "routes.r.rewards.t.executor",
        "routes.r.rewards.u.executor",
    ]


@pytest.mark.parametrize(
    ("router", "term", "path"),
    [
        pytest.param({}, {"executor": "processes"}, "routes.r.rewards.t.executor", id="typo"),
        pytest.param({}, {"timeout": 0}, "routes.r.rewards.t.timeout", id="zero_timeout"),
        pytest.param({}, {"timeout": -1.0}, "routes.r.rewards.t.timeout", id="negative"),
        pytest.param({"timeout": 0}, {}, "timeout", id="zero_router_timeout"),
        pytest.param(
            {"executors": {"process": {"workers": 0}}},
            {},
            "executors.process.workers",
            id="no_workers",
        ),
        pytest.param(
            {"process_pool": {"workers": 0}},
            {},
            "executors.process.workers",
            id="no_workers_in_the_older_spelling",
        ),
        pytest.param(
            {"executors": {"process": {"warm_calls": -1}}},
            {},
            "executors.process.warm_calls",
            id="negative_warm_calls",
        ),
    ],
)
def test_bad_settings_are_config_errors_at_their_path(
    router: dict[str, Any], term: dict[str, Any], path: str
) -> None:
    config = {"routes": {"r": {"rewards": {"t": {"path": "rr_execution.misbehave", **term}}}}}
    assert [p.split(":")[0] for p in _problems({**config, **router})] == [path]


def _fn(*, is_async: bool = False, cpu_heavy: bool = False) -> RewardFn:
    return RewardFn("f", print, "single", is_async=is_async, cpu_heavy=cpu_heavy)


@pytest.mark.parametrize(
    ("fn", "setting", "expected"),
    [
        pytest.param(_fn(cpu_heavy=True), "auto", "process", id="cpu_heavy_builtin"),
        pytest.param(_fn(is_async=True), "auto", "inline", id="async"),
        pytest.param(_fn(), "auto", "thread", id="plain"),
        pytest.param(_fn(), "inline", "inline", id="plain_inline_on_request"),
        pytest.param(_fn(cpu_heavy=True), "thread", "thread", id="explicit_wins"),
    ],
)
def test_auto_executor(fn: RewardFn, setting: Any, expected: str) -> None:
    assert choose_executor(fn, setting) == expected


def test_builtins_declare_their_executor() -> None:
    # The reward library marks its CPU-heavy graders (symbolic math) with cpu_heavy; the others
    # are light (linear in their input) and run inline, where a thread hop would cost more.
    exact = resolve_builtin("exact_match", {})
    assert choose_executor(exact, "auto") == "inline"
    assert choose_executor(resolve_builtin("math", {}), "auto") == "process"
    reward = exact.fn
    assert isinstance(reward, BuiltinReward) and pickle.loads(pickle.dumps(reward)) == reward


@pytest.mark.parametrize(
    ("router", "term", "expected"),
    [
        pytest.param({}, {}, DEFAULT_TIMEOUT, id="defaults"),
        pytest.param({"timeout": 20.0}, {}, 20.0, id="router_default"),
        pytest.param({"timeout": 20.0}, {"timeout": 2.5}, 2.5, id="term_wins"),
    ],
)
def test_timeout_precedence(router: dict[str, Any], term: dict[str, Any], expected: float) -> None:
    config = {
        **router,
        "routes": {"r": {"rewards": {"t": {"path": "rr_execution.misbehave", **term}}}},
    }
    with compile_router(config) as compiled:
        [bound] = compiled.routes["r"].terms
    assert (bound.executor, bound.timeout) == ("thread", expected)


def test_executor_and_timeout_are_part_of_the_call_key() -> None:
    term = {"path": "rr_execution.misbehave"}
    config = {
        "routes": {
            "a": {"rewards": {"t": term}},
            "b": {"rewards": {"t": term}},
            "c": {"rewards": {"t": {**term, "timeout": 3.0}}},
            "d": {"rewards": {"t": {**term, "executor": "inline"}}},
        }
    }
    with compile_router(config) as router:
        keys = {name: route.terms[0].call_key for name, route in router.routes.items()}
    assert keys["a"] == keys["b"]  # one route group for a and b
    assert len({keys["a"], keys["c"], keys["d"]}) == 3


def test_process_pool_defaults() -> None:
    pool = settings_of("process", RouterConfig())
    assert isinstance(pool, ProcessSettings)
    fields = (pool.workers, pool.chunk_seconds, pool.start_method, pool.warm_calls)
    assert fields == (None, 0.05, "auto", 8)


@pytest.mark.parametrize(
    ("observed", "remaining", "workers", "expected"),
    [
        pytest.param(None, 1000, 4, 1, id="unknown_cost_sends_one_call"),
        pytest.param((0.001, 10), 1000, 4, 250, id="cheap_calls_capped_by_fair_share"),
        pytest.param((0.001, 10), 100_000, 4, 500, id="cheap_calls_fill_the_target"),
        pytest.param((1.0, 10), 1000, 4, 1, id="slow_calls_travel_alone"),
        pytest.param((0.001, 10), 3, 4, 1, id="tail_spreads_over_workers"),
    ],
)
def test_chunk_sizes(
    observed: tuple[float, int] | None, remaining: int, workers: int, expected: int
) -> None:
    sizer = ChunkSizer(target=0.05)
    if observed is not None:
        sizer.observe("fn", *observed)
    assert sizer.size("fn", remaining, workers) == expected


class _Spec:
    rm_type = "math"
    custom_rm_path = None


class _FrameworkSample:
    response = "x"
    label = 1
    metadata = {"dataset": "d"}  # noqa: RUF012
    reward_spec = _Spec()
    rollout_log_probs = (0.1, 0.2)  # a trainer's own field: not part of the snapshot


@pytest.mark.parametrize(
    ("sample", "expected"),
    [
        pytest.param(
            Sample(response="r", label="l", metadata={"k": 1}, group_index=2, extra={"e": 1}),
            Sample(response="r", label="l", metadata={"k": 1}, group_index=2, extra={"e": 1}),
            id="sample_round_trips",
        ),
        pytest.param(
            _FrameworkSample(),
            Sample(
                prompt=None,
                response="x",
                label=1,
                metadata={"dataset": "d"},
                reward_spec={"rm_type": "math", "custom_rm_path": None},
            ),
            id="framework_object_becomes_a_sample",
        ),
    ],
)
def test_snapshots_are_plain_and_picklable(sample: Any, expected: Sample) -> None:
    values = snapshot(sample)
    assert len(values) == len(FIELDS)
    assert restore(pickle.loads(pickle.dumps(values))) == expected


@pytest.mark.parametrize(
    ("written", "read"),
    [
        pytest.param(
            {"process_pool": {"workers": 2}}, {"process": {"workers": 2}}, id="process_pool"
        ),
        pytest.param({"ray": {"actors": 4}}, {"ray": {"actors": 4}}, id="ray"),
        pytest.param(
            {"process_pool": {"workers": 2}, "executors": {"ray": {"actors": 4}}},
            {"ray": {"actors": 4}, "process": {"workers": 2}},
            id="beside_the_new_spelling",
        ),
    ],
)
def test_the_older_top_level_spellings_still_read(
    written: dict[str, Any], read: dict[str, Any]
) -> None:
    assert RouterConfig.model_validate(written).executors == read


def test_both_spellings_of_one_executor_s_settings_are_refused() -> None:
    config = {"process_pool": {"workers": 2}, "executors": {"process": {"workers": 4}}}
    assert _problems(config) == [
        "<root>: `process_pool` and `executors.process` both set the process executor; keep "
        "`executors.process` (`process_pool` is its older spelling) and remove `process_pool`"
    ]
