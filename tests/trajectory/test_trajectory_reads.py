"""A sample's response as a conversation: what each term reads of it (``reads:``), that plain
text reads as before, that a malformed conversation is its own sample's status, and the config
checks of ``reads``."""

from __future__ import annotations

import asyncio
import pickle
from typing import Any

import pytest

from rewardrouter import ConfigError, Sample, compile_router
from rewardrouter.config.models import TrajectoryConfig
from rewardrouter.trajectory import (
    Conversation,
    ResponseView,
    TrajectoryError,
    parse_conversation,
    read_response,
)


def search_call(call_id: str, arguments: Any) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "search", "arguments": arguments},
    }


#: A trajectory as an agent loop writes it: a tool call, its result, a final answer in parts.
AGENT = [
    {"role": "system", "content": "Answer briefly."},
    {"role": "user", "content": "What is the capital of France?"},
    {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [search_call("c1", '{"q": "France"}')],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "France: capital Paris."},
    {
        "role": "assistant",
        "content": [
            {"type": "image_url", "image_url": {"url": "x"}},
            {"type": "text", "text": "Paris"},
        ],
    },
]

READINGS = [
    pytest.param("final_answer", "Paris", id="final_answer_is_the_last_assistant_text"),
    pytest.param("assistant_text", "Let me look.\n\nParis", id="assistant_text_joins_turns"),
    pytest.param(
        "tool_calls",
        '{"name": "search", "arguments": "{\\"q\\": \\"France\\"}"}',
        id="tool_calls_one_json_line_each",
    ),
    pytest.param(
        "transcript",
        "system: Answer briefly.\n\nuser: What is the capital of France?\n\nassistant: Let me look."
        '\n\nassistant -> search({"q": "France"})\n\ntool: France: capital Paris.\n\nassistant: Paris',
        id="transcript_every_message",
    ),
]


@pytest.mark.parametrize(("reads", "expected"), READINGS)
def test_each_reading_of_a_conversation(reads: Any, expected: str) -> None:
    assert read_response(AGENT, reads, TrajectoryConfig()) == expected


@pytest.mark.parametrize(
    ("reads", "expected"),
    [
        pytest.param("final_answer", "42", id="final_answer_is_the_text"),
        pytest.param("transcript", "42", id="transcript_is_the_text"),
        pytest.param("tool_calls", "", id="no_tool_calls_in_text"),
    ],
)
def test_plain_text_reads_as_itself(reads: Any, expected: str) -> None:
    assert read_response("42", reads, TrajectoryConfig()) == expected


def test_a_conversation_cut_at_a_tool_call_answers_with_that_messages_text() -> None:
    assert read_response(AGENT[:3], "final_answer", TrajectoryConfig()) == "Let me look."
    silent = [
        *AGENT[:2],
        {"role": "assistant", "content": None, "tool_calls": AGENT[2]["tool_calls"]},
    ]
    assert read_response(silent, "final_answer", TrajectoryConfig()) == ""


def test_arguments_given_as_an_object_are_read_as_their_json() -> None:
    convo = parse_conversation(
        [{"role": "assistant", "content": None, "tool_calls": [search_call("c", {"q": "Paris"})]}],
        TrajectoryConfig(),
    )
    assert convo.tool_calls[0].arguments == '{"q": "Paris"}'


MALFORMED = [
    pytest.param({"role": "user"}, "expected a list of chat messages", id="not_a_list"),
    pytest.param([], "no message", id="empty"),
    pytest.param(["hello"], "message 0 is a str", id="message_not_an_object"),
    pytest.param([{"role": "robot", "content": "x"}], "role 'robot'", id="unknown_role"),
    pytest.param([{"content": "x"}], "message 0 has no `role`", id="no_role"),
    pytest.param([{"role": "user", "content": 5}], "`content` is a int", id="content_a_number"),
    pytest.param([{"role": "user", "content": ["x"]}], "content part 0", id="part_not_an_object"),
    pytest.param(
        [{"role": "user", "content": [{"type": "text"}]}],
        "has no string `text`",
        id="text_part_without_text",
    ),
    pytest.param(
        [{"role": "user", "content": "", "tool_calls": [search_call("c", "{}")]}],
        "only assistant messages call tools",
        id="user_calls_a_tool",
    ),
    pytest.param(
        [{"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]}],
        "has no function `name`",
        id="call_without_name",
    ),
    pytest.param(
        [{"role": "assistant", "tool_calls": [search_call("c", 5)]}],
        "`arguments` is a int",
        id="arguments_a_number",
    ),
    pytest.param(
        [{"role": "assistant", "tool_calls": [search_call("c", {"at": {1, 2}})]}],
        "cannot be written as JSON",
        id="arguments_not_json_serializable",
    ),
]


@pytest.mark.parametrize(("response", "found"), MALFORMED)
def test_malformed_conversations_say_what_is_wrong(response: Any, found: str) -> None:
    with pytest.raises(TrajectoryError, match="the sample's conversation is malformed") as info:
        parse_conversation(response, TrajectoryConfig())
    assert found in str(info.value)


@pytest.mark.parametrize(
    ("limits", "response", "bound"),
    [
        pytest.param(
            TrajectoryConfig(max_messages=3),
            [{"role": "user", "content": "x"}] * 4,
            "max_messages=3",
            id="messages",
        ),
        pytest.param(
            TrajectoryConfig(max_chars=10),
            [{"role": "user", "content": "x" * 11}],
            "max_chars=10",
            id="characters",
        ),
        pytest.param(
            TrajectoryConfig(max_chars=10),
            [{"role": "assistant", "tool_calls": [search_call("c", '{"q": "' + "x" * 20 + '"}')]}],
            "max_chars=10",
            id="argument_characters",
        ),
        pytest.param(
            TrajectoryConfig(max_parts=2),
            [{"role": "user", "content": [{"type": "text", "text": "x"}] * 3}],
            "max_parts=2",
            id="content_parts",
        ),
    ],
)
def test_bounds_name_the_setting_to_raise(
    limits: TrajectoryConfig, response: Any, bound: str
) -> None:
    with pytest.raises(TrajectoryError, match=f"trajectory.{bound}"):
        parse_conversation(response, limits)


def qa_router(**term: Any) -> Any:
    return compile_router(
        {
            "default_route": "qa",
            "routes": {"qa": {"rewards": {"answer": {"kind": "exact_match", **term}}}},
        }
    )


def test_every_text_kind_grades_the_final_answer_by_default() -> None:
    with qa_router() as router:
        batch = router.score_sync(
            [
                {"response": "Paris", "label": "Paris"},
                {"response": AGENT, "label": "Paris"},
                {"response": AGENT, "label": "Lyon"},
            ]
        )
    assert [r.reward for r in batch] == [1.0, 1.0, 0.0]


def test_a_term_reads_what_its_reads_names() -> None:
    with qa_router(reads="assistant_text") as router:
        batch = router.score_sync([{"response": AGENT, "label": "Let me look. Paris"}])
    assert batch[0].reward == 1.0


def test_a_malformed_conversation_fails_its_sample_alone() -> None:
    bad = [{"role": "robot", "content": "Paris"}]
    with qa_router() as router:
        batch = router.score_sync(
            [{"response": AGENT, "label": "Paris"}, {"response": bad, "label": "Paris"}],
            failures="record",
        )
    assert (batch[0].reward, batch[0].status) == (1.0, "ok")
    assert (batch[1].reward, batch[1].status) == (None, "error")
    assert batch.failures == ()  # the sample's own status, not a failed call to report
    assert batch[1].error_message is not None
    assert "message 0 has role 'robot'" in batch[1].error_message
    assert "the conversation is malformed: the sample's own status" in batch[1].error_message


def test_a_malformed_conversation_is_recorded_even_under_on_error_raise() -> None:
    with qa_router() as router:  # on_error: raise, failures: raise (the defaults)
        batch = router.score_sync(
            [{"response": [{"role": "robot"}]}, {"response": "Paris", "label": "Paris"}]
        )
    assert [(r.reward, r.status) for r in batch] == [(None, "error"), (1.0, "ok")]
    assert batch.failures == ()


def test_on_error_value_scores_a_malformed_conversation() -> None:
    with qa_router(on_error={"value": -1.0}) as router:
        batch = router.score_sync([{"response": [{"role": "robot"}], "label": "Paris"}])
    assert (batch[0].reward, batch[0].status) == (-1.0, "error")


def test_group_mode_functions_never_see_a_malformed_conversation() -> None:
    config = {
        "default_route": "qa",
        "routes": {"qa": {"rewards": {"g": {"path": "rr_trajectory_fns.lengths"}}}},
    }
    with compile_router(config) as router:
        batch = router.score_sync(
            [{"response": AGENT}, {"response": [{"role": "robot"}]}, {"response": "abc"}],
            failures="record",
        )
    # the group call got the two readable samples as text (it raises on anything else)
    assert [r.reward for r in batch] == [5.0, None, 3.0]  # len("Paris"), error, len("abc")
    assert [r.status for r in batch] == ["ok", "error", "ok"]


def test_terms_reading_different_parts_are_separate_calls() -> None:
    config = {
        "default_route": "qa",
        "routes": {
            "qa": {
                "rewards": {
                    "final": {"path": "rr_trajectory_fns.lengths"},
                    "all": {
                        "path": "rr_trajectory_fns.lengths",
                        "reads": "assistant_text",
                        "weight": 0,
                    },
                }
            }
        },
    }
    with compile_router(config) as router:
        batch = router.score_sync([{"response": AGENT}])
    assert batch[0].terms == {"final": 5.0, "all": float(len("Let me look.\n\nParis"))}


def test_conversations_in_a_metadata_field_when_the_response_is_the_trained_text() -> None:
    config = {
        "default_route": "qa",
        "trajectory": {"messages_field": "messages"},
        "routes": {"qa": {"rewards": {"answer": {"kind": "exact_match"}}}},
    }
    text = "<|im_start|>assistant\nLet me look...Paris<|im_end|>"
    with compile_router(config) as router:
        batch = router.score_sync(
            [
                {"response": text, "label": "Paris", "metadata": {"messages": AGENT}},
                {"response": "Paris", "label": "Paris", "metadata": {}},
            ]
        )
    assert [r.reward for r in batch] == [1.0, 1.0]


def test_worker_processes_read_the_same_text() -> None:
    with qa_router(executor="process") as router:
        batch = router.score_sync(
            [{"response": AGENT, "label": "Paris"}, {"response": "Lyon", "label": "Paris"}]
        )
    assert [r.reward for r in batch] == [1.0, 0.0]


@pytest.mark.parametrize(
    ("term", "path"),
    [
        pytest.param(
            {"kind": "turns", "reads": "final_answer"},
            "routes.qa.rewards.t.reads",
            id="trajectory_kind_reads_whole",
        ),
        pytest.param({"kind": "exact_match", "reads": "everything"}, "reads", id="unknown_reading"),
        pytest.param(
            {"kind": "exact_match", "reads": "conversation"},
            "routes.qa.rewards.t.reads",
            id="text_kind_reads_no_conversation_object",
        ),
    ],
)
def test_reads_is_checked_when_the_router_compiles(term: dict[str, Any], path: str) -> None:
    with pytest.raises(ConfigError) as info:
        compile_router({"routes": {"qa": {"rewards": {"t": term}}}})
    assert path in str(info.value)


def test_a_trainers_sample_is_seen_through_not_changed() -> None:
    class TrainerSample:
        def __init__(self) -> None:
            self.response = "trained text"
            self.loss_mask = [1, 0, 1]
            self.metadata: dict[str, Any] = {}

    sample = TrainerSample()
    view = ResponseView(sample, "Paris")
    assert (view.response, view.loss_mask, sample.response) == ("Paris", [1, 0, 1], "trained text")
    copy = pickle.loads(pickle.dumps(Sample(response="x")))
    assert copy.response == "x"
    assert isinstance(read_response(AGENT, "conversation", TrajectoryConfig()), Conversation)


def test_the_server_scores_a_posted_conversation() -> None:
    import json

    from rewardrouter.serve.scoring import BATCH, answer

    body = json.dumps(
        [{"response": AGENT, "label": "Paris"}, {"response": [{"role": "robot"}], "label": "Paris"}]
    ).encode()
    with qa_router() as router:
        status, reply = asyncio.run(answer(router, BATCH, body))
    # one reward per sample; the malformed one has none (the server logs its status)
    assert (status, json.loads(reply)) == (200, [1.0, None])


def test_a_trainers_sample_reaches_worker_processes_with_its_reading() -> None:
    from rr_frameworks import SlimeSample

    config = {
        "default_route": "qa",
        "trajectory": {"messages_field": "messages"},
        "routes": {"qa": {"rewards": {"answer": {"kind": "exact_match", "executor": "process"}}}},
    }
    samples = [
        SlimeSample(response="<trained text>", label="Paris", metadata={"messages": AGENT}),
        SlimeSample(response="Paris", label="Paris"),
    ]
    with compile_router(config) as router:
        batch = router.score_sync(samples)
    assert [r.reward for r in batch] == [1.0, 1.0]
    assert samples[0].response == "<trained text>"
