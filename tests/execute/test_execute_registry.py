"""A new executor is one class and one registry line: registered here, from a test, it runs
routes, is checked at compile time and is closed with its router."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from rewardrouter import ConfigError, compile_router
from rewardrouter.errors import Problem
from rewardrouter.execute import EXECUTORS, Call, Executor, Outcome, Setup, register_executor
from rewardrouter.execute.executor import Callee
from rewardrouter.execute.registry import decide_here
from rewardrouter.outcome import UNDECIDED, QuickPath, failed
from rewardrouter.rewards import lookup
from rewardrouter.sample import Sample


class Journal(Executor):
    """Calls each sample in order on the event loop's thread and keeps a journal of the calls:
    a stand-in for a real backend (a batch queue, a remote sandbox)."""

    made: ClassVar[list[Journal]] = []

    def __init__(self, setup: Setup) -> None:
        super().__init__(setup)
        self.calls: list[tuple[str, int]] = []
        self.closed = False
        Journal.made.append(self)

    @classmethod
    def check(cls, name: str, callee: Callee, path: str) -> list[Problem]:
        if callee.mode == "group":
            return [Problem(path, f"{callee.name} takes a group; {name!r} calls one sample")]
        return super().check(name, callee, path)

    async def run(self, call: Call, samples: Sequence[Any]) -> Sequence[Outcome]:
        self.calls.append((call.callee.name, len(samples)))
        outcomes = []
        for sample in samples:
            try:
                outcomes.append(Outcome(call.callee.fn(call.args, sample, **call.kwargs)))
            except Exception as exc:
                outcomes.append(failed(exc))
        return outcomes

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def journal() -> Iterator[type[Journal]]:
    register_executor("journal", Journal)
    Journal.made.clear()
    yield Journal
    del EXECUTORS["journal"]


def _config(path: str, **term: Any) -> dict[str, Any]:
    return {
        "default_route": "r",
        "routes": {"r": {"rewards": {"t": {"path": path, "executor": "journal", **term}}}},
    }


def test_a_registered_executor_runs_a_route(journal: type[Journal]) -> None:
    with compile_router(_config("rr_testfns.length")) as router:
        assert journal.made == []  # made on first use, not by compiling
        results = router.score_sync([{"response": "abc"}, {"response": "de"}])
        [made] = journal.made
    assert [r.reward for r in results] == [3.0, 2.0]
    assert made.calls == [("rr_testfns.length", 2)]
    assert made.closed  # closed with its router


def test_its_outcomes_get_the_router_s_failure_policies(journal: type[Journal]) -> None:
    config = _config("rr_testfns.raises", on_error={"value": -1.0})
    with compile_router(config) as router:
        [result] = router.score_sync([{"response": "x"}])
    assert (result.reward, result.status) == (-1.0, "error")


def test_its_compile_time_check_and_the_base_checks_apply(journal: type[Journal]) -> None:
    with pytest.raises(ConfigError) as info:
        compile_router(
            {
                "default_route": "r",
                "routes": {
                    "r": {
                        "rewards": {
                            "group": {"path": "rr_testfns.group_len", "executor": "journal"},
                            "aio": {"path": "rr_testfns.async_length", "executor": "journal"},
                        }
                    }
                },
            }
        )
    assert [str(p).splitlines()[0] for p in info.value.problems] == [
        "routes.r.rewards.group.executor: rr_testfns.group_len takes a group; 'journal' calls "
        "one sample",
        "routes.r.rewards.aio.executor: rr_testfns.async_length is an async function; executor "
        "'journal' runs plain functions",
    ]


class JournalSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    label: str = "journal"
    max_calls: int = Field(default=100, ge=1)


class LabelledJournal(Journal):
    """A journal whose settings come from ``executors.<its name>``."""

    settings_model = JournalSettings

    async def run(self, call: Call, samples: Sequence[Any]) -> Sequence[Outcome]:
        label = self.setup.settings_as(JournalSettings).label
        outcomes = await super().run(call, samples)
        return [Outcome(f"{label}:{outcome.value}") for outcome in outcomes]


@pytest.fixture
def labelled() -> Iterator[None]:
    register_executor("journal", LabelledJournal)
    Journal.made.clear()
    yield
    del EXECUTORS["journal"]


@pytest.mark.parametrize(
    ("executors", "expected"),
    [
        pytest.param({"journal": {"label": "mine"}}, "mine", id="its_settings"),
        pytest.param({}, "journal", id="the_model_s_defaults"),
        pytest.param({"journal": {}}, "journal", id="empty_settings"),
    ],
)
def test_a_registered_executor_reads_its_own_settings(
    labelled: None, executors: dict[str, Any], expected: str
) -> None:
    config = {**_config("rr_testfns.length"), "executors": executors}
    with compile_router(config) as router:
        [outcome] = asyncio.run(
            router.executors.run("journal", _call(router), [Sample(response="abc")])
        )
    assert outcome.value == f"{expected}:3.0"


def _call(router: Any) -> Call:
    [term] = router.routes["r"].terms
    return Call(term.fn, None)


@pytest.mark.parametrize(
    ("executors", "expected"),
    [
        pytest.param(
            {"journal": {"lable": "x"}},
            "executors.journal.lable: unknown key 'lable'\n    did you mean 'label'? expected one of: "
            "label, max_calls",
            id="typo_in_its_settings",
        ),
        pytest.param(
            {"journal": {"max_calls": 0}},
            "executors.journal.max_calls: Input should be greater than or equal to 1 (found 0)",
            id="a_setting_its_model_refuses",
        ),
        pytest.param(
            {"jurnal": {"label": "x"}},
            "executors.jurnal: unknown executor 'jurnal'\n    did you mean 'journal'?",
            id="typo_in_its_name",
        ),
        pytest.param(
            {"thread": {"workers": 2}},
            "executors.thread: executor 'thread' takes no settings\n    remove `executors.thread`",
            id="an_executor_without_settings",
        ),
    ],
)
def test_executor_settings_are_checked_when_the_router_compiles(
    labelled: None, executors: dict[str, Any], expected: str
) -> None:
    with pytest.raises(ConfigError) as info:
        compile_router({**_config("rr_testfns.length"), "executors": executors})
    assert [str(p) for p in info.value.problems] == [expected]


def test_an_unknown_executor_is_a_compile_problem_with_the_known_names() -> None:
    with pytest.raises(ConfigError) as info:
        compile_router(_config("rr_testfns.length", executor="jornal"))
    [problem] = info.value.problems
    assert problem.path == "routes.r.rewards.t.executor"
    assert problem.message == "unknown executor 'jornal'"
    assert problem.hint == "expected one of: auto, inline, thread, process, ray"


def test_names_are_checked_when_registered() -> None:
    with pytest.raises(ValueError, match="already registered"):
        register_executor("thread", Journal)
    with pytest.raises(ValueError, match="identifier other than 'auto'"):
        register_executor("auto", Journal)


class EvenIsZero:
    """A reward callable with a quick path (:class:`QuickPath`): an even-length response is 0.0
    at once; an odd one is left to the full call, which scores the length."""

    def __init__(self, has_quick: bool = True) -> None:
        self.has_quick = has_quick

    def __call__(self, args: Any, sample: Any) -> float:
        return float(len(sample.response))

    def quick(self, args: Any, sample: Any) -> Any:
        return 0.0 if len(sample.response) % 2 == 0 else UNDECIDED


@dataclass(frozen=True)
class _Callee:
    fn: Any
    mode: Literal["single", "group"] = "single"
    name: str = "fn"
    is_async: bool = False


SAMPLES = [Sample(response=r) for r in ["ab", "abc", "abcd"]]


@pytest.mark.parametrize(
    ("fn", "mode", "values", "rest"),
    [
        pytest.param(EvenIsZero(), "single", [0.0, UNDECIDED, 0.0], [1], id="decides_the_even"),
        pytest.param(EvenIsZero(has_quick=False), "single", [], [0, 1, 2], id="quick_path_off"),
        pytest.param(EvenIsZero(), "group", [], [0, 1, 2], id="group_mode_never"),
        pytest.param(lambda args, sample: 1.0, "single", [], [0, 1, 2], id="plain_function"),
    ],
)
def test_the_quick_path_runs_here_on_what_it_decides(
    fn: Any, mode: Literal["single", "group"], values: list[Any], rest: list[int]
) -> None:
    decided, left = decide_here(Call(_Callee(fn, mode), None), SAMPLES)
    assert [outcome.value for outcome in decided] == values
    assert left == rest


def test_built_in_graders_offer_their_quick_path_through_the_protocol() -> None:
    math, f1 = lookup("math"), lookup("f1")
    assert math is not None and f1 is not None
    assert isinstance(math, QuickPath) and math.has_quick
    assert not f1.has_quick
    assert not isinstance(len, QuickPath)
