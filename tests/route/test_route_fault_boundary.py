"""Who is to blame for a failed call decides whether it may stop the batch.

A fault of the configuration, the dataset or the infrastructure may raise under ``on_error:
raise``; a failure of a built-in kind on the response (it raised, overran its deadline, its
worker died on it) is that sample's status, whatever ``on_error`` says: the policy wrote the
response, and one response must not end a training step.
"""

from __future__ import annotations

from typing import Any

import pytest
from rr_testfns import row

from rewardrouter import RewardError
from rewardrouter.compile.resolve import RewardFn
from rewardrouter.compile.routes import BoundTerm
from rewardrouter.outcome import MESSAGE_CHARS, Outcome, describe_exception, failed, setup_failed
from rewardrouter.remote.errors import (
    NotJson,
    RemoteInvalid,
    RemoteRejected,
    RemoteTimeout,
    TooLarge,
    Unsendable,
)
from rewardrouter.rewards.code.cases import LabelError as CodeLabelError
from rewardrouter.rewards.code.local import SandboxError
from rewardrouter.rewards.ifeval.kind import IfevalCheckError, IfevalDataMissing, IfevalLabelError
from rewardrouter.rewards.judge.parse import UnreadableScore
from rewardrouter.rewards.labels import LabelError
from rewardrouter.route.assemble import failure_fix, is_sample_fault


@pytest.mark.parametrize(
    ("exc", "setup"),
    [
        pytest.param(SandboxError("bwrap: no permission"), "infrastructure", id="sandbox_cannot_start"),
        pytest.param(RemoteRejected("404", 404), "infrastructure", id="server_refused"),
        pytest.param(RemoteRejected("413", 413), "infrastructure", id="batch_too_large"),
        pytest.param(RemoteTimeout("no answer"), "infrastructure", id="server_timed_out"),
        pytest.param(RemoteInvalid("not JSON"), "infrastructure", id="server_reply_unreadable"),
        pytest.param(IfevalDataMissing("punkt"), "infrastructure", id="nltk_data_missing"),
        pytest.param(LabelError("a dict label"), "data", id="label_no_grader_reads"),
        pytest.param(CodeLabelError("no tests"), "data", id="code_label_without_tests"),
        pytest.param(IfevalLabelError("unknown instruction"), "data", id="ifeval_label"),
        pytest.param(NotJson("a set label"), "data", id="label_not_json"),
        # what the response can cause
        pytest.param(OverflowError("int too large"), None, id="overflow"),
        pytest.param(RecursionError("too deep"), None, id="recursion"),
        pytest.param(MemoryError(), None, id="memory"),
        pytest.param(ValueError("bad text"), None, id="value_error"),
        pytest.param(UnreadableScore("two scores"), None, id="judge_reply_unreadable"),
        pytest.param(IfevalCheckError("check raised"), None, id="ifeval_check_raised"),
    ],
)  # fmt: skip
def test_a_failure_is_the_setups_only_when_its_class_says_so(
    exc: BaseException, setup: str | None
) -> None:
    assert failed(exc).setup_fault == setup
    assert not failed(exc).sample_fault


@pytest.mark.parametrize(
    "exc",
    [
        pytest.param(Unsendable("a lone surrogate"), id="response_not_unicode"),
        pytest.param(TooLarge("413 for this sample alone"), id="request_of_it_alone_too_large"),
    ],
)
def test_a_sample_fault_is_its_own_for_any_kind(exc: BaseException) -> None:
    outcome = failed(exc)
    assert (outcome.sample_fault, outcome.setup_fault) == (True, None)
    assert is_sample_fault(_term(builtin=False), outcome)


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no")


@pytest.mark.parametrize(
    ("exc", "says"),
    [
        pytest.param(ValueError("x" * 10**6), "(1,000,000 characters in all)", id="megabyte"),
        pytest.param(_Unprintable(), "its message cannot be shown: RuntimeError", id="broken_str"),
    ],
)
def test_a_failure_message_is_bounded_and_always_shown(exc: BaseException, says: str) -> None:
    message = describe_exception(exc)
    assert says in message and len(message) < MESSAGE_CHARS + 100


def _term(builtin: bool) -> BoundTerm:
    fn = RewardFn(name="grader", fn=print, mode="single", is_async=False, builtin=builtin)
    return BoundTerm(route="r", name="t", fn=fn, kwargs={})


@pytest.mark.parametrize(
    ("builtin", "outcome", "sample"),
    [
        pytest.param(True, failed(OverflowError()), True, id="builtin_raised_on_the_response"),
        pytest.param(True, Outcome(None, "timeout", "late"), True, id="builtin_overran"),
        pytest.param(True, Outcome(None, "invalid", "nan"), True, id="builtin_returned_nan"),
        pytest.param(True, failed(LabelError()), False, id="builtin_refused_the_label"),
        pytest.param(True, setup_failed("no worker starts"), False, id="builtin_workers_down"),
        pytest.param(False, failed(ValueError()), False, id="user_function_raised"),
        pytest.param(False, Outcome(None, "timeout", "late"), False, id="user_function_overran"),
        pytest.param(
            False, Outcome(None, "error", "malformed", sample_fault=True), True, id="malformed"
        ),
    ],
)
def test_whose_fault(builtin: bool, outcome: Outcome, sample: bool) -> None:
    assert is_sample_fault(_term(builtin), outcome) is sample


# -- through the router, under the default `on_error: raise` -------------------------------------


@pytest.mark.slow  # starts a worker pool
def test_a_built_in_kind_that_stalls_on_a_response_is_that_samples_timeout(
    make_router: Any,
) -> None:
    term = {"kind": "math", "timeout": 2, "executor": "process"}
    router = make_router({"default_route": "r", "routes": {"r": {"rewards": {"correct": term}}}})
    rows = [
        {"response": "\\boxed{42}", "label": "42"},
        {"response": "\\boxed{(x+y+z+1)^{60}}", "label": "42"},  # sympy expands for minutes
        {"response": "\\boxed{41}", "label": "42"},
    ]
    batch = router.score_sync(rows)  # no RewardError: the stall is that sample's alone
    assert [(r.reward, r.status) for r in batch] == [(1.0, "ok"), (None, "timeout"), (0.0, "ok")]
    assert batch.failures == ()
    assert "math failed on this response: the sample's own status" in (batch[1].error_message or "")


def test_a_user_function_that_raises_follows_its_on_error(make_router: Any) -> None:
    term = {"path": "rr_testfns.returns"}
    router = make_router({"default_route": "r", "routes": {"r": {"rewards": {"t": term}}}})
    with pytest.raises(RewardError, match=r"sample 1, route 'r', term 't'"):
        router.score_sync([row("a", value=1.0), row("b", value="not a number")])


@pytest.mark.parametrize(
    ("kind", "label"),
    [
        pytest.param("exact_match", {"a": 1}, id="a_dict_for_exact_match"),
        pytest.param("gpqa", "Argon", id="a_text_naming_no_option"),
        pytest.param("multiple_choice", 10**400, id="an_index_past_the_options"),
        pytest.param("gpqa", ["A", "C"], id="two_correct_options"),
        pytest.param("math", 10**5000, id="an_integer_too_long_to_write"),
    ],
)
def test_a_label_no_grader_reads_follows_its_on_error(
    make_router: Any, kind: str, label: Any
) -> None:
    term = {"kind": kind}
    router = make_router({"default_route": "r", "routes": {"r": {"rewards": {"t": term}}}})
    rows = [{"response": "C", "label": "C"}, {"response": "C", "label": label}]
    with pytest.raises(RewardError, match=r"sample 1, route 'r', term 't'.*LabelError"):
        router.score_sync(rows)


@pytest.mark.parametrize(
    ("fault", "says"),
    [
        pytest.param("sample", "grader failed on this response: the sample's own status", id="response"),
        pytest.param("data", "refused this sample's data: fix the sample's label", id="data"),
        pytest.param("infrastructure", "what grader runs on failed, not the response", id="infra"),
    ],
)  # fmt: skip
def test_the_fix_names_whose_fault_it_is(fault: Any, says: str) -> None:
    fix = failure_fix(_term(True), "error", "RemoteError: the model could not load", fault)
    assert says in fix, fix
