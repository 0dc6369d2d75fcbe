"""Every kind that takes a label returns ``None`` (not applicable) for a missing one: no label,
a blank string, an empty list; ``ifeval`` too, when its metadata names no instructions either.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from rewardrouter.rewards import BUILTINS, lookup
from rewardrouter.rewards.ifeval.kind import IfevalReward, IfevalSettings

MISSING = [
    pytest.param(None, id="none"),
    pytest.param("", id="empty"),
    pytest.param("  \n", id="blank"),
    pytest.param([], id="empty_list"),
    pytest.param((), id="empty_tuple"),
    # how an empty Parquet list column arrives
    pytest.param(np.array([]), id="empty_numpy_array"),
]
# the kinds that grade against a label (the others judge the response's form alone)
LABELLED = sorted(name for name, spec in BUILTINS.items() if spec.boxable)


@dataclass
class Sample:
    """The fields a reward reads."""

    response: str
    label: Any
    metadata: dict[str, Any] = field(default_factory=dict)
    prompt: str = "Write."


@pytest.mark.parametrize("label", MISSING)
@pytest.mark.parametrize("kind", LABELLED)
def test_a_builtin_is_not_applicable_without_a_label(kind: str, label: Any) -> None:
    reward = lookup(kind)
    assert reward is not None
    assert reward(None, Sample("The answer is (C), that is \\boxed{C}.", label)) is None


@pytest.mark.parametrize("label", MISSING)
@pytest.mark.parametrize("score", ["all", "fraction", "punctuation:no_comma"])
def test_ifeval_is_not_applicable_without_instructions(label: Any, score: str) -> None:
    reward = IfevalReward(IfevalSettings(score=score))
    assert reward(None, Sample("no commas here", label, {"dataset": "ifeval"})) is None


@pytest.mark.parametrize(
    "label",
    [
        pytest.param({"instruction_id_list": [], "kwargs": []}, id="empty_list_of_them"),
        pytest.param('{"instruction_id_list": [], "kwargs": []}', id="its_json"),
    ],
)
def test_ifeval_is_not_applicable_to_an_empty_list_of_instructions(label: Any) -> None:
    # "all" of no instructions would be a free 1.0, and "fraction" a division by zero
    for score in ("all", "fraction"):
        assert IfevalReward(IfevalSettings(score=score))(None, Sample("text", label)) is None


def test_ifeval_reads_the_metadata_when_the_label_is_missing() -> None:
    metadata = {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}
    reward = IfevalReward(IfevalSettings())
    assert reward(None, Sample("no commas here", None, metadata)) == 1.0
    assert reward(None, Sample("one, two", "", metadata)) == 0.0
