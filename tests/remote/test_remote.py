"""The ``remote`` reward kind against real HTTP servers on 127.0.0.1, with injected faults.

Every case counts the requests server-side and bounds the wall time: nothing hangs past its
deadline, nothing is retried that should not be, no sample is lost or scored twice.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import pickle
import random
import time
import warnings
from datetime import datetime, timezone
from typing import Any, NamedTuple

import pytest
from rr_remote import Reply, Script, Seen, Servers, refused_url
from rr_testfns import row

from rewardrouter import ConfigError, RewardError, Router, RoutingError
from rewardrouter.remote.pool import REQUESTER, SessionPool, Slots
from rewardrouter.remote.retry import backoff_delay, retry_after

SECRET = "s3cr3t-t0ken-value"


def judge(url: str, on_error: Any = "skip", key: str | None = None, **settings: Any) -> dict:
    """A ``remote`` term; fast backoff so retries do not slow the tests down."""
    term: dict[str, Any] = {
        "kind": "remote",
        "on_error": on_error,
        "kwargs": {"url": url, "backoff": 0.01, **settings},
    }
    if key is not None:
        term["key"] = key
    return term


def judged(make_router: Any, term: dict[str, Any], **config: Any) -> Router:
    """A router whose every sample goes to one route scored by ``term``."""
    router: Router = make_router(
        {"default_route": "judged", "routes": {"judged": {"rewards": {"judge": term}}}, **config}
    )
    return router


def length(seen: Seen, attempt: int) -> Reply:
    """The reward is the length of the response (a list of them for a batch)."""
    if isinstance(seen.body, list):
        return Reply([len(b["response"]) for b in seen.body])
    return Reply(len(seen.body["response"]))


# -- one sample, one fault ---------------------------------------------------------------------


class Fault(NamedTuple):
    script: Script
    settings: dict[str, Any]
    reward: float | None
    status: str
    error: str | None
    requests: int
    within: float = 2.0  # seconds the whole call may take
    key: str | None = None


def first_then(first: Reply) -> Script:
    """``first`` on a sample's first attempt, the reward 1.0 after that."""
    return lambda seen, attempt: first if attempt == 0 else Reply(1.0)


FAULTS = [
    pytest.param(Fault(lambda s, a: Reply(0.75), {}, 0.75, "ok", None, 1), id="number"),
    pytest.param(
        Fault(
            lambda s, a: Reply({"score": 0.5, "why": "close"}), {}, 0.5, "ok", None, 1, 2.0, "score"
        ),
        id="dict_with_the_configured_key",
    ),
    pytest.param(
        Fault(
            lambda s, a: Reply({"acc": 1}),
            {},
            None,
            "invalid",
            "dict without key 'score'",
            1,
            2.0,
            "score",
        ),
        id="dict_without_the_configured_key",
    ),
    pytest.param(
        Fault(lambda s, a: Reply("good"), {}, None, "invalid", "returned str 'good'", 1),
        id="string_reply",
    ),
    pytest.param(
        Fault(lambda s, a: Reply(None), {}, None, "skipped", None, 1), id="null_is_not_applicable"
    ),
    pytest.param(
        Fault(first_then(Reply(status=500)), {}, 1.0, "ok", None, 2), id="500_then_success"
    ),
    pytest.param(
        Fault(first_then(Reply(status=502, raw=b"")), {}, 1.0, "ok", None, 2), id="502_then_success"
    ),
    pytest.param(
        Fault(
            lambda s, a: Reply(status=503),
            {"retries": 2},
            None,
            "error",
            "all 3 attempt(s) failed; last: HTTP 503 Service Unavailable",
            3,
        ),
        id="503_until_retries_run_out",
    ),
    pytest.param(
        Fault(
            lambda s, a: Reply(status=429, headers={"Retry-After": "30"}),
            {"deadline": 1.0},
            None,
            "timeout",
            "the 1 s deadline leaves",
            1,
            0.5,
        ),
        id="429_retry_after_past_the_deadline_gives_up_at_once",
    ),
    pytest.param(
        Fault(
            lambda s, a: Reply(delay=3.0),
            {"timeout": 0.2, "retries": 1},
            None,
            "timeout",
            "all 2 attempt(s) failed; last: no reply within 0.2 s",
            2,
            1.0,
        ),
        id="reply_slower_than_the_timeout",
    ),
    pytest.param(
        Fault(
            lambda s, a: Reply(status=500),
            {"retries": 100, "backoff": 0.05, "max_backoff": 0.1, "deadline": 0.6},
            None,
            "timeout",
            "the 0.6 s deadline leaves",
            -1,  # as many as fit
            1.0,
        ),
        id="retries_stop_at_the_deadline",
    ),
    pytest.param(
        Fault(
            lambda s, a: Reply(raw=b"{not json"),
            {},
            None,
            "invalid",
            "reply is not JSON: '{not json'",
            1,
        ),
        id="malformed_json",
    ),
    pytest.param(
        Fault(
            lambda s, a: Reply(raw=b""), {}, None, "invalid", "reply is not JSON: an empty body", 1
        ),
        id="empty_body",
    ),
    pytest.param(
        Fault(
            lambda s, a: Reply(raw=b"1" + b"0" * 400),
            {},
            None,
            "invalid",
            "beyond the range of a float",
            1,
        ),
        id="integer_beyond_float_range",
    ),
    pytest.param(
        Fault(
            lambda s, a: Reply({"detail": "no label"}, status=400),
            {},
            None,
            "error",
            """HTTP 400 Bad Request: '{"detail": "no label"}' (a 4xx reply: not retried)""",
            1,
        ),
        id="400_is_not_retried",
    ),
    pytest.param(
        Fault(lambda s, a: Reply(status=404), {}, None, "error", "HTTP 404 Not Found", 1),
        id="404_is_not_retried",
    ),
]


@pytest.mark.parametrize("fault", FAULTS)
def test_fault_ends_in_the_right_reward_or_status(
    make_router: Any, servers: Servers, fault: Fault
) -> None:
    server = servers.scripted(fault.script)
    router = judged(make_router, judge(server.url("/reward"), key=fault.key, **fault.settings))
    start = time.monotonic()
    [result] = router.score_sync([row("an answer", "a label")])
    elapsed = time.monotonic() - start
    assert (result.reward, result.status) == (fault.reward, fault.status), result.error_message
    if fault.error is None:
        assert result.error_message is None
    else:
        assert result.error_message is not None and fault.error in result.error_message
    if fault.requests >= 0:
        assert len(server.seen) == fault.requests
    else:
        assert len(server.seen) >= 2
    assert elapsed < fault.within, f"took {elapsed:.2f} s"


def test_retry_after_is_honoured(make_router: Any, servers: Servers) -> None:
    server = servers.scripted(first_then(Reply(status=429, headers={"Retry-After": "0.3"})))
    router = judged(make_router, judge(server.url()))
    start = time.monotonic()
    [result] = router.score_sync([row("x")])
    assert result.reward == 1.0
    assert time.monotonic() - start >= 0.3


def test_connection_refused_is_retried_then_fails_fast(make_router: Any) -> None:
    router = judged(make_router, judge(refused_url(), retries=2))
    start = time.monotonic()
    [result] = router.score_sync([row("x")])
    assert (result.reward, result.status) == (None, "error")
    assert result.error_message is not None
    assert "all 3 attempt(s) failed; last: ClientConnectorError" in result.error_message
    assert time.monotonic() - start < 2.0


def test_on_error_raise_names_sample_route_term_and_endpoint(
    make_router: Any, servers: Servers
) -> None:
    server = servers.scripted(lambda s, a: Reply(status=400 if s.body["response"] == "b" else 200))
    router = judged(make_router, judge(server.url("/score"), on_error="raise"))
    with pytest.raises(RewardError) as info:
        router.score_sync([row("a"), row("b")])
    message = str(info.value)
    assert (
        f"sample 1, route 'judged', term 'judge' (remote {server.url('/score')}): error:" in message
    )
    assert "HTTP 400" in message


def test_on_error_value_scores_the_failure_and_records_it(
    make_router: Any, servers: Servers
) -> None:
    server = servers.scripted(lambda s, a: Reply(raw=b"oops"))
    router = judged(make_router, judge(server.url(), on_error={"value": -1.0}))
    [result] = router.score_sync([row("x")])
    assert (result.reward, result.status) == (-1.0, "invalid")


# -- many samples --------------------------------------------------------------------------------


def test_no_sample_lost_or_duplicated_under_faults_and_the_cap_holds(
    make_router: Any, servers: Servers
) -> None:
    def script(seen: Seen, attempt: int) -> Reply:
        n = int(seen.body["response"])
        if n % 3 == 0 and attempt == 0:
            return Reply(status=500 if n % 2 else 429)
        return Reply(n, delay=0.005)

    server = servers.scripted(script)
    router = judged(make_router, judge(server.url(), concurrency=8, on_error="raise"))
    results = router.score_sync([row(str(n)) for n in range(300)])
    assert [r.reward for r in results] == [float(n) for n in range(300)]
    assert len(server.seen) == 300 + 100  # every third sample needed a second attempt
    assert server.responses() == {str(n): 2 if n % 3 == 0 else 1 for n in range(300)}
    assert server.in_flight_max <= 8


def test_concurrency_cap(make_router: Any, servers: Servers) -> None:
    server = servers.scripted(lambda s, a: Reply(1.0, delay=0.1))
    router = judged(make_router, judge(server.url(), concurrency=3))
    start = time.monotonic()
    router.score_sync([row(str(i)) for i in range(12)])
    assert server.in_flight_max == 3
    assert time.monotonic() - start >= 0.4  # four waves of three


def test_request_body_is_slimes_and_metadata_is_opt_in(make_router: Any, servers: Servers) -> None:
    server = servers.scripted(length)
    sample = {
        "prompt": [{"role": "user", "content": "hi"}],
        "response": "abc",
        "label": {"x": 1},
        "metadata": {"dataset": "judged", "lang": "en"},
    }
    judged(make_router, judge(server.url())).score_sync([sample])
    judged(make_router, judge(server.url(), send_metadata=True)).score_sync([sample])
    plain, with_metadata = (s.body for s in server.seen)
    assert plain == {
        "prompt": [{"role": "user", "content": "hi"}],
        "response": "abc",
        "label": {"x": 1},
    }
    assert with_metadata == {**plain, "metadata": {"dataset": "judged", "lang": "en"}}
    assert server.seen[0].headers["Content-Type"] == "application/json"


def test_a_sample_that_is_not_json_fails_alone(make_router: Any, servers: Servers) -> None:
    server = servers.scripted(length)
    router = judged(make_router, judge(server.url()))
    ok, bad = router.score_sync([row("ok", 1), row("bad", {1, 2})])
    assert ok.reward == 2.0
    assert (bad.status, bad.reward) == ("error", None)
    assert bad.error_message is not None and "cannot send the sample as JSON" in bad.error_message
    assert len(server.seen) == 1


def test_a_response_no_json_can_carry_is_its_samples_failure_under_raise(
    make_router: Any, servers: Servers
) -> None:
    # A lone surrogate cannot be written as UTF-8: the policy wrote it, so it is that sample's
    # status, whatever on_error says, never a server fault that stops the batch.
    server = servers.scripted(length)
    router = judged(make_router, judge(server.url(), on_error="raise"))
    ok, bad = router.score_sync([row("ok"), row("bad \ud800 text")])
    assert ok.reward == 2.0
    assert (bad.status, bad.reward) == ("error", None)
    assert "cannot send the sample as JSON" in (bad.error_message or "")
    assert len(server.seen) == 1


def too_large_over(limit: int) -> Script:
    """A server whose request bodies stop at ``limit`` bytes (413 beyond), scoring by length."""

    def script(seen: Seen, attempt: int) -> Reply:
        size = len(json.dumps(seen.body, ensure_ascii=False).encode())
        return Reply(status=413) if size > limit else length(seen, attempt)

    return script


@pytest.mark.parametrize("batch", [False, True], ids=["one_per_request", "batch"])
def test_a_response_too_large_for_the_server_fails_alone_under_raise(
    make_router: Any, servers: Servers, batch: bool
) -> None:
    # The policy made the request too large: a 413 for a request of that sample alone is its
    # own status (counted, never raised for the batch); a batch refused so is split to find it.
    server = servers.scripted(too_large_over(2_000))
    router = judged(make_router, judge(server.url(), on_error="raise", batch=batch))
    rows = [row("x"), row("y" * 5_000), row("zz"), row("w" * 3), row("v" * 4)]
    results = router.score_sync(rows)
    assert [r.reward for r in results] == [1.0, None, 2.0, 3.0, 4.0]
    assert results[1].status == "invalid"
    message = results[1].error_message or ""
    assert "TooLarge" in message and "HTTP 413" in message and "body limit" in message
    assert server.responses()["y" * 5_000] == (1 if not batch else 3)  # whole, half, alone


def test_a_413_for_every_sample_is_counted_and_says_to_raise_the_limit(
    make_router: Any, servers: Servers
) -> None:
    server = servers.scripted(too_large_over(10))
    router = judged(make_router, judge(server.url(), on_error="raise"))
    results = router.score_sync([row("x"), row("y")])
    assert [r.status for r in results] == ["invalid", "invalid"]
    assert all("raise its request body limit" in (r.error_message or "") for r in results)


# -- batch mode --------------------------------------------------------------------------------


class Batch(NamedTuple):
    script: Script
    batch_size: int | None
    rewards: list[float | None]
    statuses: list[str]
    requests: int
    error: str | None = None


BATCHES = [
    pytest.param(Batch(length, None, [1, 2, 3, 4, 5], ["ok"] * 5, 1), id="one_request_per_group"),
    pytest.param(Batch(length, 2, [1, 2, 3, 4, 5], ["ok"] * 5, 3), id="batch_size_splits"),
    pytest.param(
        Batch(
            lambda s, a: Reply([1.0] * (len(s.body) - 1)),
            None,
            [None] * 5,
            ["invalid"] * 5,
            1,
            "batch reply has 4 rewards for 5 samples",
        ),
        id="reply_of_the_wrong_length",
    ),
    pytest.param(
        Batch(
            lambda s, a: Reply({"rewards": []}),
            None,
            [None] * 5,
            ["invalid"] * 5,
            1,
            "batch reply is dict",
        ),
        id="reply_that_is_not_a_list",
    ),
    pytest.param(
        Batch(
            lambda s, a: (
                Reply(status=400) if any(b["response"] == "xxx" for b in s.body) else length(s, a)
            ),
            2,
            [1, 2, None, None, 5],
            ["ok", "ok", "error", "error", "ok"],
            3,
            "HTTP 400",
        ),
        id="a_failed_request_fails_its_samples_only",
    ),
]


@pytest.mark.parametrize("case", BATCHES)
def test_batch_mode(make_router: Any, servers: Servers, case: Batch) -> None:
    server = servers.scripted(case.script)
    term = judge(server.url("/batch"), batch=True, batch_size=case.batch_size)
    router = judged(make_router, term)
    results = router.score_sync([row("x" * n) for n in range(1, 6)])
    assert [r.reward for r in results] == case.rewards
    assert [r.status for r in results] == case.statuses
    assert len(server.seen) == case.requests
    assert server.responses() == {"x" * n: 1 for n in range(1, 6)}
    if case.error is not None:
        assert any(case.error in (r.error_message or "") for r in results)


def test_routes_with_equal_settings_share_one_batch(make_router: Any, servers: Servers) -> None:
    server = servers.scripted(length)
    term = judge(server.url(), batch=True)
    router = make_router({"routes": {"a": {"rewards": {"j": term}}, "b": {"rewards": {"k": term}}}})
    results = router.score_sync(
        [row("a", dataset="a"), row("bb", dataset="b"), row("aaa", dataset="a")]
    )
    assert [r.reward for r in results] == [1.0, 2.0, 3.0]
    assert [len(s.body) for s in server.seen] == [3]  # one request for the whole route group


def test_terms_with_different_settings_are_called_apart(make_router: Any, servers: Servers) -> None:
    server = servers.scripted(lambda s, a: Reply(1.0 if s.headers.get("X-Rubric") == "a" else 2.0))
    url = server.url()
    router = make_router(
        {
            "routes": {
                "a": {"rewards": {"j": judge(url, headers={"X-Rubric": "a"})}},
                "b": {"rewards": {"j": judge(url, headers={"X-Rubric": "b"})}},
            }
        }
    )
    results = router.score_sync([row("x", dataset="a"), row("x", dataset="b")])
    assert [r.reward for r in results] == [1.0, 2.0]


# -- one connection pool per router, whatever the event loop ------------------------------------


def pool_of(router: Router) -> SessionPool:
    return router.resources.get(SessionPool, SessionPool)


def test_score_sync_opens_and_closes_a_session_per_call(make_router: Any, servers: Servers) -> None:
    server = servers.scripted(length)
    router = judged(make_router, judge(server.url()))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, 4):  # three calls: three event loops, each its own session
            [result] = router.score_sync([row("x" * n)])
            assert result.reward == n
            assert pool_of(router).open_sessions == 0
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []


def test_one_loop_reuses_one_session_and_its_connections(
    make_router: Any, servers: Servers
) -> None:
    server = servers.scripted(lambda s, a: Reply(1.0, delay=0.005))
    router = judged(make_router, judge(server.url(), concurrency=4))

    async def scoring() -> int:
        for _ in range(3):
            results = await router.score([row(str(i)) for i in range(20)])
            assert all(r.reward == 1.0 for r in results)
        return pool_of(router).open_sessions

    assert asyncio.run(scoring()) == 1
    assert pool_of(router).open_sessions == 0  # closed when asyncio.run ended its loop
    assert len(server.seen) == 60
    assert len({s.peer for s in server.seen}) <= 4  # kept-alive connections, not one per call


def test_score_sync_inside_a_running_loop(make_router: Any, servers: Servers) -> None:
    server = servers.scripted(length)
    router = judged(make_router, judge(server.url()))

    async def caller() -> float | None:
        return router.score_sync([row("abcd")])[0].reward

    assert asyncio.run(caller()) == 4.0


def test_close_from_inside_the_loop_closes_the_session(make_router: Any, servers: Servers) -> None:
    server = servers.scripted(length)
    router = judged(make_router, judge(server.url()))

    async def scoring() -> bool:
        await router.score([row("a")])
        session = pool_of(router).here().session
        router.close()
        for _ in range(20):
            await asyncio.sleep(0.01)
            if session.closed:
                break
        return session.closed

    pool = pool_of(router)
    assert asyncio.run(scoring())
    assert pool.open_sessions == 0


def test_close_after_run_until_complete_closes_the_session(
    make_router: Any, servers: Servers
) -> None:
    server = servers.scripted(length)
    router = judged(make_router, judge(server.url()))
    loop = asyncio.new_event_loop()  # a loop driven by hand, neither running nor closed

    async def scoring() -> Any:
        await router.score([row("a")])
        return pool_of(router).here().session

    try:
        session = loop.run_until_complete(scoring())
        router.close()
        assert session.closed
    finally:
        loop.close()


def test_closed_router_refuses_remote_work(make_router: Any, servers: Servers) -> None:
    from rewardrouter import RewardRouterError

    server = servers.scripted(length)
    router = judged(make_router, judge(server.url(), on_error="raise"))
    router.close()
    with pytest.raises(RewardRouterError, match="closed"):
        router.score_sync([row("a")])
    assert server.seen == []


# -- credentials --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "header", "value"),
    [
        pytest.param({}, "Authorization", f"Bearer {SECRET}", id="bearer_by_default"),
        pytest.param(
            {"auth_header": "X-Api-Key", "auth_scheme": ""}, "X-Api-Key", SECRET, id="bare_value"
        ),
    ],
)
def test_credential_is_sent_from_the_environment(
    make_router: Any,
    servers: Servers,
    monkeypatch: pytest.MonkeyPatch,
    settings: dict[str, Any],
    header: str,
    value: str,
) -> None:
    monkeypatch.setenv("RR_JUDGE_TOKEN", SECRET)
    server = servers.scripted(length)
    router = judged(make_router, judge(server.url(), auth_env="RR_JUDGE_TOKEN", **settings))
    router.score_sync([row("x")])
    assert server.seen[0].headers[header] == value


def test_credential_never_appears_in_errors_logs_or_reprs(
    make_router: Any,
    servers: Servers,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("RR_JUDGE_TOKEN", SECRET)

    def echo_headers(seen: Seen, attempt: int) -> Reply:
        # A careless server that quotes the request headers back, first as a 503 (retried,
        # logged), then as a 401 (the final error).
        return Reply(seen.headers, status=503 if attempt == 0 else 401)

    server = servers.scripted(echo_headers)
    router = judged(make_router, judge(server.url(), auth_env="RR_JUDGE_TOKEN"))
    with caplog.at_level(logging.DEBUG):
        [result] = router.score_sync([row("x")])
        with pytest.raises(RewardError) as info:
            judged(
                make_router, judge(server.url(), auth_env="RR_JUDGE_TOKEN", on_error="raise")
            ).score_sync([row("y")])
    assert server.seen[0].headers["Authorization"] == f"Bearer {SECRET}"
    assert result.error_message is not None and "HTTP 401" in result.error_message
    assert "***" in result.error_message
    term = router.routes["judged"].terms[0]
    with pytest.raises(TypeError, match="cannot be sent to another process") as pickled:
        pickle.dumps(term.fn.fn)
    texts = {
        "error message": result.error_message,
        "raised error": str(info.value),
        "logs": caplog.text,
        "term repr": repr(term),
        "callable repr": repr(term.fn.fn),
        "router routes": repr(router.routes),
        "pickling error": str(pickled.value),
    }
    assert "retrying" in caplog.text  # the 503 was logged
    assert [where for where, text in texts.items() if SECRET in text] == []


def test_credentials_in_the_url_are_not_shown(make_router: Any, servers: Servers) -> None:
    server = servers.scripted(lambda s, a: Reply(status=400))
    url = server.url("/reward").replace("http://", "http://judge:pa55word@") + "?token=t0k3n"
    router = judged(make_router, judge(url, on_error="raise"))
    with pytest.raises(RewardError) as info:
        router.score_sync([row("x")])
    assert f"(remote {server.url('/reward')}): error:" in str(info.value)
    assert server.seen[0].headers["Authorization"].startswith("Basic ")  # still sent
    shown = [str(info.value), repr(router.routes)]
    assert [text for text in shown if "pa55word" in text or "t0k3n" in text] == []


def test_unset_credential_is_a_config_error(
    make_router: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RR_JUDGE_TOKEN", raising=False)
    with pytest.raises(ConfigError) as info:
        judged(make_router, judge("http://127.0.0.1:9/reward", auth_env="RR_JUDGE_TOKEN"))
    [problem] = info.value.problems
    assert problem.path == "routes.judged.rewards.judge.kwargs.auth_env"
    assert "'RR_JUDGE_TOKEN' is not set" in problem.message


# -- settings checked at compile time -----------------------------------------------------------

WHERE = "routes.judged.rewards.judge"


@pytest.mark.parametrize(
    ("term", "problems"),
    [
        pytest.param(
            {"kind": "remote"},
            [(f"{WHERE}.kwargs.url", "missing required key 'url'", None)],
            id="url_is_required",
        ),
        pytest.param(
            {"kind": "remote", "kwargs": {"url": "127.0.0.1:8000/reward"}},
            [(f"{WHERE}.kwargs.url", "not an http(s) URL with a host", None)],
            id="url_without_scheme",
        ),
        pytest.param(
            {"kind": "remote", "kwargs": {"url": "http://127.0.0.1/r", "timout": 3, "retries": -1}},
            [
                (f"{WHERE}.kwargs.retries", "greater than or equal to 0", None),
                (f"{WHERE}.kwargs.timout", "unknown key 'timout'", "did you mean 'timeout'?"),
            ],
            id="every_problem_at_once",
        ),
        pytest.param(
            {"kind": "remote", "kwargs": {"url": "http://127.0.0.1/r", "batch_size": 8}},
            [(f"{WHERE}.kwargs", "`batch_size` only applies with `batch: true`", None)],
            id="batch_size_without_batch",
        ),
        pytest.param(
            {"kind": "remote", "mode": "group", "kwargs": {"url": "http://127.0.0.1/r"}},
            [(f"{WHERE}.mode", "takes its mode from its settings", "kwargs.batch: true")],
            id="mode_is_not_a_remote_setting",
        ),
        pytest.param(
            {"kind": "remot", "kwargs": {"url": "http://127.0.0.1/r"}},
            [(f"{WHERE}.kind", "unknown built-in kind 'remot'", "did you mean 'remote'?")],
            id="typo_in_the_kind",
        ),
    ],
)
def test_settings_problems_have_yaml_paths(
    make_router: Any, term: dict[str, Any], problems: list[tuple[str, str, str | None]]
) -> None:
    with pytest.raises(ConfigError) as info:
        judged(make_router, term)
    found = sorted(info.value.problems, key=lambda p: p.path)
    assert len(found) == len(problems), info.value
    for problem, (path, message, hint) in zip(found, problems, strict=True):
        assert problem.path == path
        assert message in problem.message
        if hint is not None:
            assert problem.hint is not None and hint in problem.hint


def test_a_sample_cannot_name_the_remote_kind(make_router: Any) -> None:
    router = make_router({"routes": {"r": {"rewards": {"t": {"kind": "exact_match"}}}}})
    with pytest.raises(RoutingError, match="only a route term can name it"):
        router.score_sync([row("x", rm_type="remote")])


# -- retry arithmetic ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attempt", "low", "high"),
    [
        pytest.param(0, 0.25, 0.5, id="first_retry_within_base"),
        pytest.param(3, 2.0, 4.0, id="doubles_per_attempt"),
        pytest.param(10, 5.0, 10.0, id="capped"),
        pytest.param(10_000, 5.0, 10.0, id="no_overflow"),
    ],
)
def test_backoff_delay_is_jittered_within_its_bounds(attempt: int, low: float, high: float) -> None:
    rng = random.Random(7)
    delays = [backoff_delay(attempt, 0.5, 10.0, rng) for _ in range(200)]
    assert all(low <= d <= high for d in delays)
    assert len(set(delays)) > 100  # jittered, not constant


NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        pytest.param(None, None, id="absent"),
        pytest.param("3", 3.0, id="delay_seconds"),
        pytest.param(" 0.25 ", 0.25, id="fractional"),
        pytest.param("-4", 0.0, id="negative_is_now"),
        pytest.param("Thu, 01 Jan 2026 12:00:30 GMT", 30.0, id="http_date"),
        pytest.param("Thu, 01 Jan 2026 11:00:00 GMT", 0.0, id="date_in_the_past"),
        pytest.param("soon", None, id="unreadable"),
        pytest.param("nan", None, id="not_finite"),
    ],
)
def test_retry_after_header(header: str | None, seconds: float | None) -> None:
    assert retry_after(header, NOW) == seconds


@pytest.mark.parametrize(
    "settings",
    [
        pytest.param({"auth_env": "TOKEN"}, id="auth_env"),
        pytest.param({"headers": {"authorization": "Bearer x"}}, id="header"),
    ],
)
def test_a_url_user_beside_another_authorization_is_refused_at_compile(
    make_router: Any, settings: dict[str, Any]
) -> None:
    # The HTTP client would refuse every request; the config says so before the first one.
    kwargs = {"url": "http://user:pw@127.0.0.1:9/reward", **settings}
    with pytest.raises(ConfigError, match="holds a user name") as caught:
        make_router({"routes": {"r": {"rewards": {"t": {"kind": "remote", "kwargs": kwargs}}}}})
    assert "pw" not in str(caught.value)


async def _waits_then(slots: Slots, leave: str) -> bool:
    """Hold ``slots``' only slot, and have a second request wait behind it until it leaves:
    ``cancelled`` while it waits, ``handed`` cancelled just as the slot is handed to it, or
    ``expired`` by its ``until``; then whether a third request still gets the slot."""
    loop = asyncio.get_running_loop()

    async def second() -> None:
        async with slots.slot(until=loop.time() + (0.01 if leave == "expired" else 60)) as held:
            assert held is (leave != "expired")

    async with slots.slot():
        waiting = asyncio.create_task(second())
        await asyncio.sleep(0.05)
        if leave == "cancelled":
            waiting.cancel()
    if leave == "handed":
        waiting.cancel()  # the slot was handed over as the first left; it is handed on
    await asyncio.gather(waiting, return_exceptions=True)
    async with slots.slot(until=loop.time()) as third:
        return third and slots.held == 1


@pytest.mark.parametrize("leave", ["cancelled", "handed", "expired"])
def test_a_waiting_request_that_leaves_keeps_no_slot(leave: str) -> None:
    """However a waiting request leaves (cancelled while it waits, cancelled as the slot is
    handed to it, or gone on beyond the cap at its ``until``), the slot is free for the next."""
    slots = Slots(1)
    assert asyncio.run(_waits_then(slots, leave))
    assert (slots.held, slots.beyond) == (0, int(leave == "expired"))


def test_requesters_take_freed_slots_in_turn() -> None:
    """Two requesters, one asking for ten slots first: a freed slot goes to the one holding
    fewer, so the second's requests are served between the first's, not after them."""

    async def main() -> list[str]:
        slots, order = Slots(2), []

        async def request(who: str, name: str) -> None:
            REQUESTER.set(who)
            async with slots.slot():
                order.append(name)
                await asyncio.sleep(0.01)

        first = [request("a", f"a{i}") for i in range(10)]
        second = [request("b", f"b{i}") for i in range(3)]
        await asyncio.gather(*first, *second)
        return order

    order = asyncio.run(main())
    assert order.index("b2") < order.index("a6")
