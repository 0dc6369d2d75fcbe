"""Route groups, concurrency, ordering, term combination and invalid returns."""

from __future__ import annotations

import math
import time
from typing import Any

import pytest
import rr_testfns
from rr_testfns import row

from rewardrouter import RewardError, Sample


def _route(*terms: tuple[str, dict[str, Any]], match: list[str] | None = None) -> dict[str, Any]:
    return {"match": match or [], "rewards": dict(terms)}


def test_group_mode_called_once_per_route_group_with_its_members(make_router: Any) -> None:
    router = make_router(
        {
            "routes": {
                "a": _route(("g", {"path": "rr_testfns.group_len"})),
                "b": _route(("g", {"path": "rr_testfns.group_len"})),  # same fn + kwargs as a
                "c": _route(("g", {"path": "rr_testfns.async_group_len", "kwargs": {"scale": 2}})),
                "d": _route(("g", {"path": "rr_testfns.async_group_len", "kwargs": {"scale": 3}})),
                "e": _route(("x", {"path": "rr_testfns.length"})),
            }
        }
    )
    datasets = ["a", "c", "b", "d", "e", "a", "c", "d", "b", "e"]
    samples = [row("x" * (i + 1), dataset=d) for i, d in enumerate(datasets)]
    results = router.score_sync(samples)
    calls = sorted(rr_testfns.CALLS)
    assert calls == [
        ("async_group_len", ["xx", "xxxxxxx"]),  # route c: scale 2
        ("async_group_len", ["xxxx", "xxxxxxxx"]),  # route d: scale 3, a separate group
        ("group_len", ["x", "xxx", "xxxxxx", "xxxxxxxxx"]),  # routes a and b share one call
    ]
    scale = {"a": 1, "b": 1, "c": 2, "d": 3, "e": 1}
    assert [r.reward for r in results] == [scale[d] * (i + 1) for i, d in enumerate(datasets)]


@pytest.mark.parametrize(
    "path",
    [pytest.param("rr_testfns.slow", id="sync"), pytest.param("rr_testfns.async_slow", id="async")],
)
def test_single_mode_runs_concurrently(make_router: Any, path: str) -> None:
    router = make_router({"default_route": "s", "routes": {"s": _route(("t", {"path": path}))}})
    router.score_sync([row("warm-up")])  # thread pool start-up is not what is measured
    start = time.perf_counter()
    results = router.score_sync([row(str(i)) for i in range(20)])
    elapsed = time.perf_counter() - start
    assert [r.reward for r in results] == [1.0] * 20
    assert elapsed < 1.5, f"20 calls of 0.2 s took {elapsed:.2f} s: not concurrent"


def test_concurrency_cap_is_respected(make_router: Any) -> None:
    router = make_router(
        {
            "max_concurrency": 2,
            "default_route": "s",
            "routes": {"s": _route(("t", {"path": "rr_testfns.async_slow"}))},
        }
    )
    start = time.perf_counter()
    router.score_sync([row(str(i)) for i in range(4)])
    assert time.perf_counter() - start >= 0.39  # 4 calls, 2 at a time, 0.2 s each


def test_order_preserved_across_interleaved_routes(make_router: Any) -> None:
    router = make_router(
        {
            "routes": {
                "sync": _route(("t", {"path": "rr_testfns.length"})),
                "async": _route(
                    ("t", {"path": "rr_testfns.async_length"}),
                    ("u", {"kind": "exact_match", "weight": 100}),
                ),
                "group": _route(("t", {"path": "rr_testfns.group_len"})),
                "exact": _route(("t", {"kind": "exact_match"})),
            }
        }
    )
    names = ["sync", "async", "group", "exact"]
    samples = [row("y" * (i % 7 + 1), "yy", dataset=names[(i * 7) % 4]) for i in range(60)]
    results = router.score_sync(samples)
    for sample, result in zip(samples, results, strict=True):
        n = len(sample["response"])
        expected = {
            "sync": n,
            "group": n,
            "exact": float(n == 2),
            "async": n + 100 * float(n == 2),
        }[sample["metadata"]["dataset"]]
        assert (result.route, result.reward) == (sample["metadata"]["dataset"], expected)


def test_weighted_terms_and_not_applicable(make_router: Any) -> None:
    router = make_router(
        {
            "default_route": "r",
            "routes": {
                "r": _route(
                    ("correct", {"kind": "exact_match"}),
                    ("length", {"path": "rr_testfns.length", "weight": 0.5}),
                )
            },
        }
    )
    full, no_label = router.score_sync([row("abcd", "abcd"), row("abcd", None)])
    assert (full.reward, full.terms, full.status) == (3.0, {"correct": 1.0, "length": 4.0}, "ok")
    # exact_match returns None without a label: left out of the sum, not counted as 0.
    assert (no_label.reward, no_label.terms) == (2.0, {"correct": None, "length": 4.0})


def test_every_term_not_applicable_gives_no_reward(make_router: Any) -> None:
    router = make_router(
        {"default_route": "r", "routes": {"r": _route(("c", {"kind": "exact_match"}))}}
    )
    [result] = router.score_sync([row("abc", None)])
    assert (result.reward, result.status) == (None, "skipped")


def test_aborted_and_preset_samples(make_router: Any) -> None:
    config = {"default_route": "r", "routes": {"r": _route(("c", {"path": "rr_testfns.length"}))}}
    samples = [
        Sample(response="abc", status="aborted"),
        Sample(response="abc", reward=0.25),
        Sample(response="abc"),
    ]
    aborted, kept, scored = make_router(config).score_sync(samples)
    assert (aborted.status, aborted.reward) == ("aborted", None)
    assert (kept.status, kept.reward) == ("kept", 0.25)
    assert (scored.status, scored.reward) == ("ok", 3.0)
    rescored = make_router({**config, "rescore": True}).score_sync(samples[1:2])
    assert (rescored[0].status, rescored[0].reward) == ("ok", 3.0)


def test_dict_reward_uses_key_and_eval_key(make_router: Any) -> None:
    term = {"path": "rr_testfns.dict_reward", "key": "score", "eval_key": "acc"}
    router = make_router({"default_route": "r", "routes": {"r": _route(("d", term))}})
    [train] = router.score_sync([row("a", "b")])
    [evaluation] = router.score_sync([row("a", "b")], evaluation=True)
    assert (train.reward, train.raw) == (-1.0, {"score": -1.0, "acc": True})
    assert evaluation.reward == 1.0


@pytest.mark.parametrize(
    ("value", "found"),
    [
        pytest.param(float("nan"), "returned nan; rewards must be finite", id="nan"),
        pytest.param(math.inf, "returned inf", id="inf"),
        pytest.param("1.0", "returned str '1.0'; expected a number", id="string"),
        pytest.param(
            {"acc": 1.0},
            "returned a dict with keys ['acc']; set `key:`",
            id="dict_without_configured_key",
        ),
        pytest.param([1.0], "returned list [1.0]", id="list"),
    ],
)
def test_invalid_return_is_an_error_naming_sample_route_and_term(
    make_router: Any, value: Any, found: str
) -> None:
    router = make_router(
        {"default_route": "r", "routes": {"r": _route(("t", {"path": "rr_testfns.returns"}))}}
    )
    samples = [row("ok", value=1.0), row("bad", value=value)]
    with pytest.raises(RewardError) as info:
        router.score_sync(samples)
    message = str(info.value)
    assert "sample 1, route 'r', term 't' (rr_testfns.returns): invalid:" in message
    assert found in message
    assert (info.value.index, info.value.route, info.value.term) == (1, "r", "t")


def test_dict_without_its_key(make_router: Any) -> None:
    term = {"path": "rr_testfns.returns", "key": "score"}
    router = make_router({"default_route": "r", "routes": {"r": _route(("t", term))}})
    with pytest.raises(RewardError, match=r"dict without key 'score' \(keys: \['acc'\]\)"):
        router.score_sync([row("x", value={"acc": 1})])


@pytest.mark.parametrize(
    ("policy", "reward", "status"),
    [
        pytest.param("skip", None, "error", id="skip"),
        pytest.param({"value": -1.0}, -1.0, "error", id="fallback_value"),
    ],
)
def test_on_error_policies_record_the_failure(
    make_router: Any, policy: Any, reward: float | None, status: str
) -> None:
    term = {"path": "rr_testfns.raises", "on_error": policy}
    router = make_router({"default_route": "r", "routes": {"r": _route(("t", term))}})
    [result] = router.score_sync([row("x")])
    assert (result.reward, result.status) == (reward, status)
    assert result.error_message is not None
    assert "ValueError: cannot score 'x' (rr_testfns.py:" in result.error_message


def test_group_return_of_wrong_length_is_invalid_for_every_member(make_router: Any) -> None:
    term = {"path": "rr_testfns.short_group", "on_error": "skip"}
    router = make_router({"default_route": "r", "routes": {"r": _route(("t", term))}})
    results = router.score_sync([row("a"), row("b"), row("c")])
    assert [r.status for r in results] == ["invalid"] * 3
    assert results[0].error_message == "t: group call returned 2 rewards for 3 samples"


def test_score_sync_inside_a_running_event_loop(make_router: Any) -> None:
    import asyncio

    router = make_router(
        {"default_route": "r", "routes": {"r": _route(("t", {"path": "rr_testfns.length"}))}}
    )

    async def caller() -> float | None:
        return router.score_sync([row("abc")])[0].reward

    assert asyncio.run(caller()) == 3.0


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("rr_testfns.length", id="sync"),
        pytest.param("rr_testfns.async_length", id="async"),
    ],
)
def test_closed_router_refuses_work(make_router: Any, path: str) -> None:
    from rewardrouter import RewardRouterError

    router = make_router({"default_route": "r", "routes": {"r": _route(("t", {"path": path}))}})
    router.close()
    with pytest.raises(RewardRouterError, match="closed"):
        router.score_sync([row("abc")])


def test_unreadable_preset_reward_names_the_sample(make_router: Any) -> None:
    from rewardrouter import SampleError

    config = {
        "reward_key": "score",
        "default_route": "r",
        "routes": {"r": _route(("t", {"kind": "exact_match"}))},
    }
    router = make_router(config)
    samples = [Sample(response="a", reward={"score": 1.0}), Sample(response="b", reward={"acc": 1})]
    with pytest.raises(
        SampleError, match=r"sample 1 carries a reward that cannot be read: .*'score'"
    ):
        router.score_sync(samples)
    assert router.score_sync(samples[:1])[0].reward == 1.0


def test_one_route_naming_the_same_call_twice(make_router: Any) -> None:
    """Two terms with one function and kwargs but different weights: one group, both terms."""
    router = make_router(
        {
            "routes": {
                "a": _route(
                    ("g", {"path": "rr_testfns.group_len"}),
                    ("g_again", {"path": "rr_testfns.group_len", "weight": 0.5}),
                ),
                "b": _route(("g", {"path": "rr_testfns.group_len"})),
            }
        }
    )
    results = router.score_sync(
        [row("xx", dataset="a"), row("x", dataset="b"), row("xxxx", dataset="a")]
    )
    assert rr_testfns.CALLS == [("group_len", ["xx", "xx", "x", "xxxx", "xxxx"])]
    assert [r.reward for r in results] == [3.0, 1.0, 6.0]
    assert results[0].terms == {"g": 2.0, "g_again": 2.0}


def test_results_read_as_a_sequence(make_router: Any) -> None:
    router = make_router(
        {"default_route": "r", "routes": {"r": _route(("t", {"path": "rr_testfns.length"}))}}
    )
    results = router.score_sync([row("a"), Sample(response="b", status="aborted"), row("ccc")])
    assert len(results) == 3
    assert results.rewards == [1.0, None, 3.0]
    assert [r.status for r in results] == ["ok", "aborted", "ok"]
    assert results[-1].terms == {"t": 3.0}
    assert [r.reward for r in results[0:2]] == [1.0, None]
    with pytest.raises(IndexError):
        results[3]
