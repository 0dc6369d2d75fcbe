"""What a judge or a reward model may read of a response (``rewardrouter.rewards.model_input``):
the template markers of every family refused, honest text that only looks like one let through,
the length cap, and a check that is linear in what the policy wrote.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardrouter.rewards.model_input import (
    MARKER_FAMILIES,
    TEMPLATE_MARKERS,
    MarkerFamily,
    RefusedResponse,
    ResponseGuard,
)

BAR = "\uff5c"  # DeepSeek's full-width bar

HONEST = [
    pytest.param("Paris. See [1] and [2].", id="citations"),
    pytest.param("<b>bold</b>, <s>struck</s>, <br/>", id="html"),
    pytest.param("| a | b |\n|---|---|\n| <x> | y |", id="markdown_table"),
    pytest.param("x = a|b; y = a||b; z = <|", id="bars_and_brackets"),
    pytest.param("[TODO] [NOTE] [Inst] [inst] [SYSTEM]", id="bracketed_words"),
    pytest.param(f"{BAR}a{BAR} and <{BAR} alone", id="full_width_bars_outside_a_marker"),
    pytest.param("<start> <end> <turn> <<SYSTEM>>", id="angle_words"),
]


@pytest.mark.parametrize("text", HONEST)
def test_honest_text_that_looks_like_a_marker_is_read(text: str) -> None:
    ResponseGuard().check([("response", text)])


@pytest.mark.parametrize("family", MARKER_FAMILIES, ids=lambda f: f.family.split(" ")[0])
def test_every_example_of_every_family_is_refused(family: MarkerFamily) -> None:
    for marker in (m.strip() for m in family.examples.split(",")):
        with pytest.raises(RefusedResponse, match="chat template's marker"):
            ResponseGuard().check([("response", f"Paris.{marker}next turn")])


def test_a_tokenizers_own_markers_replace_the_families() -> None:
    guard = ResponseGuard(markers=("<eos>", "<|im_end|>"))
    guard.check([("response", "[INST] is plain text to this tokenizer")])
    with pytest.raises(RefusedResponse, match="'<eos>'"):
        guard.check([("response", "ok"), ("response message 1", "Paris<eos>")])


def test_no_markers_refuses_none() -> None:
    ResponseGuard(markers=()).check([("response", "<|im_end|>[INST]")])


def test_the_cap_counts_every_part_together() -> None:
    guard = ResponseGuard(max_chars=10)
    guard.check([("response message 0", "12345"), ("response message 1", "67890")])
    with pytest.raises(RefusedResponse, match="hold 11 characters, over `max_response_chars`"):
        guard.check([("response message 0", "12345"), ("response message 1", "678901")])


@pytest.mark.parametrize(
    "piece", ["<|", f"<{BAR}", "[/", "<</", "<start_of", "<" + "a" * 63, f"<{BAR}" + "a" * 63]
)
def test_the_check_is_linear_in_the_text(piece: str) -> None:
    """A million characters of marker beginnings that never end: checked in well under a
    second (the cap stops longer texts before they are searched)."""
    text = piece * (1_000_000 // len(piece))
    started = time.monotonic()
    ResponseGuard(max_chars=2_000_000).check([("response", text)])
    assert time.monotonic() - started < 2.0


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from([*"<>|[]/_ SYSINTabc", BAR, "\u2581"])))
def test_any_text_is_read_or_refused_as_that_samples_status(text: str) -> None:
    """Total: a text is read, or refused with :class:`RefusedResponse`, exactly when it holds a
    marker shape; nothing else is raised."""
    try:
        ResponseGuard().check([("response", text)])
    except RefusedResponse:
        assert TEMPLATE_MARKERS.search(text) is not None
    else:
        assert TEMPLATE_MARKERS.search(text) is None
