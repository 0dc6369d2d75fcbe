"""Every grader is a total function of the response: generated hostile text of every class
(huge numbers, deep nesting, control, bidi and lone-surrogate characters, NUL bytes, megabyte
floods, JSON bombs, TeX macros, chat markers, think tags, mixtures), handed to each grader
directly, gets a reward in the grader's range or ``None``, never an exception, and what runs in
the router's own process (a grader that ``executor: auto`` runs inline, a CPU-heavy grader's
quick path) answers each, megabytes included, in bounded time: a linear pass does, a quadratic
one would take hours. IFEval's checks, which run in worker processes, are total on the same
text. A label that no grader can read is a :class:`~rewardrouter.outcome.DataFault`, the
dataset's fault, whatever the label holds.

The graders come from the registry (boxed variants included), so a grader added without an entry
in :data:`GRADED` fails :func:`test_every_grader_has_a_fuzz_entry`. The router-level fuzz test,
which scores these responses beside honest rows, is ``tests/redteam/test_redteam_fuzz.py``; the
strategies are in ``tests/rr_hostile.py`` (seeded here; ``RR_FUZZ_EXAMPLES=N`` for a long run).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
import rr_hostile
from hypothesis import given
from hypothesis import strategies as st

from rewardrouter.compile.executors import choose_executor
from rewardrouter.compile.resolve import resolve_builtin
from rewardrouter.outcome import UNDECIDED, DataFault, to_value
from rewardrouter.rewards.registry import (
    BUILTINS,
    RESOURCE_KINDS,
    BuiltinReward,
    Resources,
    known_kinds,
    lookup,
)
from rewardrouter.sample import Sample


@dataclass(frozen=True)
class Graded:
    """How a grader is fuzzed: a label it reads, and the range of the value it returns (read
    with ``key`` from a dict)."""

    label: Any
    low: float = 0.0
    high: float = 1.0
    key: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


#: One row per grader of the registry; a boxed variant shares its grader's row.
GRADED = {
    "math": Graded("42"),
    "dapo": Graded("42", low=-1.0, key="score"),
    "deepscaler": Graded("42"),
    "gpqa": Graded("C"),
    "multiple_choice": Graded("C", metadata={"choices": ["Rome", "Lyon", "Paris", "Nice"]}),
    "exact_match": Graded("Paris"),
    "f1": Graded(["Paris", "the city of Paris"]),
    "think_format": Graded(None),
    "boxed_format": Graded(None),
    "random": Graded(None),
    "deterministic_random": Graded(None),
}

#: Seconds a grader that runs in the router's own process may take on a megabyte of text: a
#: linear pass takes a fraction of that on a loaded machine, a quadratic one hours.
INLINE_SECONDS = 3.0


def base(kind: str) -> str:
    reward = lookup(kind)
    assert reward is not None, kind
    return reward.name


def runs_inline(kind: str) -> bool:
    return choose_executor(resolve_builtin(kind, {}), "auto") == "inline"


def in_range(kind: str, raw: Any) -> None:
    """``raw`` is ``None`` or reads as a finite value in ``kind``'s range."""
    graded = GRADED[base(kind)]
    value = to_value(raw, graded.key)
    if value is not None:
        assert math.isfinite(value) and graded.low <= value <= graded.high, (kind, raw)


def call(kind: str, response: str, label: Any, *, quick: bool = False) -> Any:
    reward = lookup(kind)
    assert isinstance(reward, BuiltinReward)
    sample = Sample(response=response, label=label, metadata=dict(GRADED[reward.name].metadata))
    return reward.quick(None, sample) if quick else reward(None, sample)


KINDS = known_kinds()
INLINE = [k for k in KINDS if runs_inline(k)]
HEAVY = [k for k in KINDS if not runs_inline(k)]


def test_every_grader_has_a_fuzz_entry() -> None:
    assert sorted(BUILTINS) == sorted(GRADED)
    assert INLINE and HEAVY and sorted(INLINE + HEAVY) == KINDS


@pytest.mark.parametrize("kind", KINDS)
@rr_hostile.fuzz_settings(15)
@given(responses=rr_hostile.one_of_each())
def test_a_grader_is_total_and_bounded_on_every_class(kind: str, responses: dict[str, str]) -> None:
    # a CPU-heavy grader's full call runs in a worker process, killed at the term's deadline
    # (tests/redteam/test_redteam_fuzz.py); its quick path runs here, in the router's process,
    # and must be as bounded as an inline grader
    quick = kind in HEAVY
    for name, response in responses.items():
        begun = time.perf_counter()
        try:
            raw = call(kind, response, GRADED[base(kind)].label, quick=quick)
        except Exception as exc:
            exc.add_note(f"{kind} raised on {name}: {response[:80]!r}")
            raise
        took = time.perf_counter() - begun
        if raw is not UNDECIDED:
            in_range(kind, raw)
        assert took < INLINE_SECONDS, (
            f"{kind} took {took:.1f} s on {name} ({len(response):,} characters)"
        )


#: IFEval instructions whose checks are linear in the text, each with its kwargs (lm-eval's title
#: and placeholder checks are quadratic in a run of brackets within the kind's 20,000-character
#: bound: they run under a worker's deadline, fuzzed through the router in
#: tests/redteam/test_redteam_fuzz.py)
IFEVAL_INSTRUCTIONS = {
    "punctuation:no_comma": {},
    "keywords:forbidden_words": {"forbidden_words": ["secret"]},
    "keywords:letter_frequency": {"letter": "e", "let_frequency": 3, "let_relation": "less than"},
    "change_case:english_lowercase": {},
    "detectable_format:json_format": {},
    "detectable_format:constrained_response": {},
    "detectable_format:number_bullet_lists": {"num_bullets": 2},
    "detectable_content:postscript": {"postscript_marker": "P.S."},
    "language:response_language": {"language": "en"},
    "length_constraints:number_words": {"relation": "at least", "num_words": 5},
    "length_constraints:number_sentences": {"relation": "at least", "num_sentences": 2},
    "startend:end_checker": {"end_phrase": "Is there anything else I can help with?"},
}


@pytest.mark.parametrize("mode", ["strict", "loose"])
@rr_hostile.fuzz_settings(5)
@given(responses=rr_hostile.one_of_each())
def test_ifeval_checks_are_total(mode: str, responses: dict[str, str]) -> None:
    kind = RESOURCE_KINDS["ifeval"]
    check = kind.build(kind.settings(mode=mode, score="fraction"), Resources()).fn
    label = {
        "instruction_id_list": list(IFEVAL_INSTRUCTIONS),
        "kwargs": list(IFEVAL_INSTRUCTIONS.values()),
    }
    for name, response in responses.items():
        value = check(None, Sample(response=response, label=label))
        assert value is not None and 0.0 <= value <= 1.0, (name, value)


JUNK_LABELS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.sampled_from([10**400, 10**5000]),  # 10**5000: past the limit of int-to-text
    st.floats(),
    st.text(max_size=30),
    st.sampled_from(rr_hostile.HUGE_NUMBERS + rr_hostile.MACROS + rr_hostile.JSON_ODDITIES),
    st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8)),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
        max_leaves=6,
    ),
    st.builds(object),
)


@pytest.mark.parametrize("kind", sorted(GRADED))
@rr_hostile.fuzz_settings(40)
@given(label=JUNK_LABELS, response=st.sampled_from(["\\boxed{42}", "Answer: C", "Paris", ""]))
def test_a_label_is_read_or_refused_as_the_datas_fault(
    kind: str, label: Any, response: str
) -> None:
    # whatever a dataset stores as the label: a reward, None, or a DataFault (the batch's to
    # stop for under on_error: raise), never another exception (which would blame the response)
    try:
        raw = call(kind, response, label, quick=kind in HEAVY)
    except DataFault:
        return
    if raw is not UNDECIDED:
        in_range(kind, raw)
