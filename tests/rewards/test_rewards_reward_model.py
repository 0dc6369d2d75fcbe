"""``reward_model`` on a served model: real HTTP servers on 127.0.0.1 answering in vLLM's and
SGLang's reply shapes (:mod:`rr_reward_model`), through ``compile_router``.

The server scores each input by the words it holds ("good" 2.0, "bad" -1.0, else 0.5), so every
expected reward is known in advance; it records every request, so the tests see what was sent.
"""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

import pytest
from rr_remote import Reply, Seen, Servers
from rr_reward_model import model_server, reply, texts_of, tiny_reward_model

from rewardrouter import ConfigError
from rewardrouter.rewards.reward_model import RewardModelSettings
from rewardrouter.rewards.reward_model.scores import ScoreCache, Scored

APIS = ["vllm_classify", "vllm_score", "vllm_pooling", "sglang"]
PATHS = {
    "vllm_classify": "/classify",
    "vllm_score": "/score",
    "vllm_pooling": "/pooling",
    "sglang": "/classify",
}


def score_of(text: str) -> float:
    return 2.0 if "good" in text else -1.0 if "bad" in text else 0.5


def rm_router(make_router: Any, url: str, api: str = "vllm_classify", **kwargs: Any) -> Any:
    settings = {"api": api, "url": url, "model": "rm-1b", "backoff": 0.01, **kwargs}
    term: dict[str, Any] = {"kind": "reward_model", "key": "score", "kwargs": settings}
    return make_router({"routes": {"chat": {"rewards": {"rm": term}}}})


def rows(*responses: Any, prompt: Any = "Say something.") -> list[dict[str, Any]]:
    return [{"prompt": prompt, "response": r, "metadata": {"dataset": "chat"}} for r in responses]


@pytest.mark.parametrize("api", APIS)
def test_each_api_is_asked_in_its_shape_and_read(
    make_router: Any, servers: Servers, api: str
) -> None:
    server = servers.scripted(model_server(api, score_of))
    plain = {} if api == "vllm_score" else {"template": "plain"}  # a pair has no template
    router = rm_router(make_router, server.url(), api, **plain)
    results = router.score_sync(rows("a good answer", "a bad answer", "meh"))
    assert [r.reward for r in results] == [2.0, -1.0, 0.5]
    (seen,) = server.seen  # one request for the three inputs
    assert seen.path == PATHS[api]
    if api == "vllm_score":  # the pair: prompts and responses, in order
        assert seen.body["text_1"] == ["Say something."] * 3
        assert seen.body["text_2"] == ["a good answer", "a bad answer", "meh"]
    elif api == "sglang":  # SGLang's EmbeddingReqInput: text only
        assert seen.body == {
            "text": [f"Say something.\n{r}" for r in ("a good answer", "a bad answer", "meh")]
        }
    else:
        assert seen.body["model"] == "rm-1b"
        assert seen.body["input"][0] == "Say something.\na good answer"
    # vLLM's classifiers apply a sigmoid unless asked for the head's raw output
    assert seen.body.get("use_activation", "absent") == (
        False if api in ("vllm_classify", "vllm_score") else "absent"
    )


@pytest.mark.parametrize(
    ("normalize", "expected"),
    [
        pytest.param("none", [2.0, -1.0], id="none_is_the_raw_score"),
        pytest.param("sigmoid", [1 / (1 + math.exp(-2.0)), 1 / (1 + math.exp(1.0))], id="sigmoid"),
        pytest.param({"scale": 0.5, "shift": 1.0}, [2.0, 0.5], id="affine"),
    ],
)
def test_normalize_keeps_the_raw_score(
    make_router: Any, servers: Servers, normalize: Any, expected: list[float]
) -> None:
    server = servers.scripted(model_server("vllm_classify", score_of))
    router = rm_router(make_router, server.url(), template="plain", normalize=normalize)
    results = router.score_sync(rows("good", "bad"))
    assert [r.reward for r in results] == pytest.approx(expected)
    assert [r.raw["raw"] for r in results] == [2.0, -1.0]


def test_a_full_url_is_used_as_it_is(make_router: Any, servers: Servers) -> None:
    server = servers.scripted(model_server("vllm_classify", score_of))
    router = rm_router(make_router, server.url("/v1/classify"), template="plain")
    assert router.score_sync(rows("good"))[0].reward == 2.0
    assert [s.path for s in server.seen] == ["/v1/classify"]


def test_without_a_tokenizer_vllm_renders_each_conversation(
    make_router: Any, servers: Servers
) -> None:
    server = servers.scripted(model_server("vllm_classify", score_of))
    router = rm_router(make_router, server.url())
    prompt = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}]
    results = router.score_sync(rows("good", "bad", prompt=prompt))
    assert [r.reward for r in results] == [2.0, -1.0]
    assert sorted(len(s.body["messages"]) for s in server.seen) == [3, 3]  # one per request
    assert server.seen[0].body["messages"][-1]["role"] == "assistant"


def test_a_local_tokenizer_renders_the_chat_template_and_batches(
    make_router: Any, servers: Servers, tmp_path: Path
) -> None:
    folder = tiny_reward_model(tmp_path / "rm")
    server = servers.scripted(model_server("sglang", score_of))
    router = rm_router(make_router, server.url(), "sglang", tokenizer=str(folder))
    results = router.score_sync(rows("good", "bad"))
    assert [r.reward for r in results] == [2.0, -1.0]
    (seen,) = server.seen
    assert seen.body["text"][0] == (
        "<|im_start|>user\nSay something.<|im_end|>\n<|im_start|>assistant\ngood<|im_end|>\n"
    )


def test_identical_inputs_are_sent_once(make_router: Any, servers: Servers) -> None:
    server = servers.scripted(model_server("vllm_classify", score_of))
    router = rm_router(make_router, server.url(), template="plain", batch_size=2)
    group = rows("good", "bad", "good", "good", "meh", "bad")
    assert [r.reward for r in router.score_sync(group)] == [2.0, -1.0, 2.0, 2.0, 0.5, -1.0]
    sent = [t for s in server.seen for t in texts_of("vllm_classify", s.body)]
    assert sorted(sent) == sorted({f"Say something.\n{r}" for r in ("good", "bad", "meh")})
    router.score_sync(group)  # kept: asked again, nothing is sent
    assert len(server.seen) == 2


def test_a_kept_score_is_keyed_by_a_digest_not_by_the_response() -> None:
    # 256 kept scores of 100,000-character inputs hold 32 bytes of key each, not the inputs
    cache = ScoreCache(256)
    inputs = [f"{i}" + "x" * 100_000 for i in range(300)]

    async def compute(todo: list[Any]) -> list[Scored]:
        return [float(len(t)) for t in todo]

    assert asyncio.run(cache.scores(inputs, compute)) == [float(len(t)) for t in inputs]
    kept = cache._done
    assert len(kept) == 256 and {len(key) for key in kept} == {32}


def test_server_errors_are_retried_and_4xx_is_not(make_router: Any, servers: Servers) -> None:
    def script(seen: Seen, attempt: int) -> Reply:
        texts = texts_of("vllm_classify", seen.body)
        if any("refused" in t for t in texts):
            return Reply({"error": {"message": "bad request"}}, status=400)
        if attempt == 0:
            return Reply({"error": "overloaded"}, status=503)
        return Reply(reply("vllm_classify", [score_of(t) for t in texts]))

    server = servers.scripted(script)
    router = rm_router(make_router, server.url(), template="plain")
    ok, refused = router.score_sync(rows("good", "refused"), failures="record")
    assert (ok.reward, ok.status) == (2.0, "ok")
    assert refused.status == "error" and "400" in refused.error_message
    # the batch (503, then 400 for holding the refused input), its halves: ok alone after a
    # 503, the refused input once, never again
    counts = [texts_of("vllm_classify", s.body) for s in server.seen]
    assert counts.count(["Say something.\nrefused"]) == 1


def test_one_unreadable_reply_fails_its_input_alone(make_router: Any, servers: Servers) -> None:
    def script(seen: Seen, attempt: int) -> Reply:
        texts = texts_of("vllm_classify", seen.body)
        if any("spoil" in t for t in texts):
            return Reply(reply("vllm_classify", [1.0] * (len(texts) + 1)))  # one too many
        return Reply(reply("vllm_classify", [score_of(t) for t in texts]))

    server = servers.scripted(script)
    router = rm_router(make_router, server.url(), template="plain")
    results = router.score_sync(rows("good", "bad", "spoil", "good x"), failures="record")
    assert [r.reward for r in results] == [2.0, -1.0, None, 2.0]
    assert results[2].status == "invalid"


def test_the_credential_is_sent_and_never_shown(
    make_router: Any, servers: Servers, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "sk-reward-model-0123456789"
    monkeypatch.setenv("RM_TOKEN", token)

    def script(seen: Seen, attempt: int) -> Reply:
        return Reply({"error": f"token {seen.headers.get('Authorization')} is not allowed"}, 403)

    server = servers.scripted(script)
    router = rm_router(make_router, server.url(), template="plain", auth_env="RM_TOKEN")
    (result,) = router.score_sync(rows("good"), failures="record")
    assert server.seen[0].headers["Authorization"] == f"Bearer {token}"
    assert result.status == "error" and "403" in result.error_message
    assert token not in repr(result) and token not in repr(router)


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        pytest.param({"api": "vllm_classify"}, "needs `url`", id="served_without_url"),
        pytest.param(
            {"api": "local", "url": "http://127.0.0.1:1"}, "remove `url`", id="local_with_url"
        ),
        pytest.param(
            {"api": "vllm_score", "url": "http://127.0.0.1:1", "template": "chat"},
            "sends the prompt and the response as a pair",
            id="score_api_with_a_template",
        ),
        pytest.param(
            {"api": "sglang", "url": "http://127.0.0.1:1", "template": "chat"},
            "needs `tokenizer`",
            id="sglang_chat_without_tokenizer",
        ),
        pytest.param(
            {
                "api": "vllm_classify",
                "url": "http://127.0.0.1:1",
                "normalize": {"scale": 1, "x": 2},
            },
            "Extra inputs",
            id="affine_with_an_unknown_field",
        ),
        pytest.param(
            {"api": "local", "label": "good", "label_index": 1},
            r"`label` \('good'\) and `label_index` \(1\) both say which output is the reward; "
            "keep one",
            id="label_and_label_index",
        ),
        pytest.param(
            {"api": "vllm_classify", "url": "http://127.0.0.1:1", "label": "good"},
            "api 'vllm_classify' reads the server's outputs by position: set `label_index`",
            id="label_by_name_on_a_served_model",
        ),
    ],
)
def test_settings_refuse_what_cannot_work(kwargs: dict[str, Any], expected: str) -> None:
    with pytest.raises(ValueError, match=expected):
        RewardModelSettings.model_validate({"model": "rm", **kwargs})


def test_a_term_without_key_is_refused_at_compile_time(make_router: Any) -> None:
    term = {
        "kind": "reward_model",
        "kwargs": {"api": "sglang", "url": "http://127.0.0.1:1", "model": "rm"},
    }
    with pytest.raises(ConfigError) as caught:
        make_router({"routes": {"chat": {"rewards": {"rm": term}}}})
    assert "routes.chat.rewards.rm.key" in str(caught.value)
    assert "key: score" in str(caught.value)


def test_a_tokenizer_folder_that_holds_none_is_refused(make_router: Any, tmp_path: Path) -> None:
    kwargs = {
        "api": "sglang",
        "url": "http://127.0.0.1:1",
        "model": "rm",
        "tokenizer": str(tmp_path),
    }
    term = {"kind": "reward_model", "key": "score", "kwargs": kwargs}
    with pytest.raises(ConfigError, match=r"no tokenizer_config\.json"):
        make_router({"routes": {"chat": {"rewards": {"rm": term}}}})


def test_pooling_reads_the_last_tokens_row_in_index_order(
    make_router: Any, servers: Servers
) -> None:

    def script(seen: Seen, attempt: int) -> Reply:
        data = [{"index": i, "object": "pooling", "data": [[0.1], [0.2], [score_of(t)]]}
                for i, t in enumerate(texts_of("vllm_pooling", seen.body))]  # fmt: skip
        return Reply({"object": "list", "model": "rm", "data": data[::-1]})  # any order

    server = servers.scripted(script)
    router = rm_router(make_router, server.url(), "vllm_pooling", template="plain")
    assert [r.reward for r in router.score_sync(rows("good", "bad", "meh"))] == [2.0, -1.0, 0.5]


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        pytest.param({}, [None, None], id="two_outputs_and_no_label_index_is_not_a_guess"),
        pytest.param({"label_index": 1}, [2.0, -1.0], id="label_index_names_the_output"),
    ],
)
def test_a_reply_of_two_outputs_is_read_at_the_named_one(
    make_router: Any, servers: Servers, kwargs: dict[str, Any], expected: list[float | None]
) -> None:
    def script(seen: Seen, attempt: int) -> Reply:
        texts = texts_of("vllm_classify", seen.body)
        data = [{"index": i, "label": "LABEL_1", "probs": [-5.0, score_of(t)], "num_classes": 2}
                for i, t in enumerate(texts)]  # fmt: skip
        return Reply({"object": "list", "model": "rm", "data": data})

    server = servers.scripted(script)
    router = rm_router(make_router, server.url(), template="plain", **kwargs)
    results = router.score_sync(rows("good", "bad"), failures="record")
    assert [r.reward for r in results] == expected
    if expected[0] is None:
        assert [r.status for r in results] == ["invalid"] * 2
        assert (
            "'probs' holds 2 outputs, and the term does not say which one is the reward; set "
            "`label_index` to its position (the model card tells which)"
        ) in results[0].error_message


def test_a_trajectory_is_scored_whole_with_its_tool_calls(
    make_router: Any, servers: Servers
) -> None:
    server = servers.scripted(model_server("vllm_classify", score_of))
    router = rm_router(make_router, server.url())
    call = {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}}
    trajectory = [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "Paris"},
        {"role": "assistant", "content": "a good answer: Paris"},
    ]
    (result,) = router.score_sync(rows(trajectory))
    assert result.reward == 2.0
    (seen,) = server.seen
    messages = seen.body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[1]["tool_calls"][0]["function"] == {"name": "search", "arguments": "{}"}
    assert messages[2]["tool_call_id"] == "c1"


def test_a_refusal_that_is_no_inputs_fault_is_not_split(make_router: Any, servers: Servers) -> None:
    """401, 403, 404 refuse every request alike: the batch fails at once, in one request."""
    server = servers.scripted(lambda seen, attempt: Reply({"error": "who are you?"}, status=401))
    router = rm_router(make_router, server.url(), template="plain")
    results = router.score_sync(rows("good", "bad", "meh", "good too"), failures="record")
    assert [r.status for r in results] == ["error"] * 4
    assert len(server.seen) == 1
