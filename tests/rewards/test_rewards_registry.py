"""Every built-in: registered, picklable, the same in a spawned process, routable by rm_type."""

from __future__ import annotations

import inspect
import json
import multiprocessing
import pickle
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from rewardrouter import ConfigError
from rewardrouter.introspect import ResolveError, check_values
from rewardrouter.rewards import BUILTINS, BuiltinReward, kind_names, known_kinds, lookup

SLIME_NAMES = ["math", "dapo", "deepscaler", "f1", "gpqa", "random"]


@dataclass
class Sample:
    """The fields a built-in reads."""

    response: str
    label: Any
    metadata: dict[str, Any] = field(default_factory=dict)


# One sample each kind can grade: a thinking response ending in a box and an Answer: line.
SAMPLE = Sample(
    "<think>Half of 4 is 2.</think>\nThe answer is (B), that is \\boxed{2}.\nAnswer: 2",
    "2",
    {"choices": ["1", "2", "3"]},
)


def _score(kind: str) -> Any:
    reward = lookup(kind)
    assert reward is not None
    return reward(None, SAMPLE)


def test_slime_names_are_known() -> None:
    kinds = known_kinds()
    for name in SLIME_NAMES:
        assert name in kinds
        assert f"boxed_{name}" in kinds or not BUILTINS[name].boxable


def test_every_kind_has_a_row_in_the_readmes_kinds_table() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "kinds" / "index.md").read_text()
    table = page.partition("## Built-in kinds")[2].partition("\n\n`math`")[0]
    rows = {name for cell in re.findall(r"^\| (`[^|]+`) \|", table, re.M) for name in
            re.findall(r"`([a-z0-9_<>]+)`", cell)}  # fmt: skip
    # the `boxed_<kind>` row stands for every boxed variant of a kind
    named = {k for k in kind_names() if not (k.startswith("boxed_") and k[6:] in BUILTINS)}
    assert named - rows == set()
    assert "boxed_<kind>" in rows


def test_every_builtin_states_a_contract() -> None:
    for spec in BUILTINS.values():
        assert spec.summary, spec.name
        assert "Contract:" in (spec.grade.__doc__ or ""), spec.name


def test_cpu_heavy_graders_declare_it() -> None:
    heavy = {name for name, spec in BUILTINS.items() if spec.cpu_heavy}
    assert heavy == {"math", "dapo", "deepscaler"}


@pytest.mark.parametrize("kind", [k for k in known_kinds() if k != "random"])
def test_pickles_and_scores_the_same(kind: str) -> None:
    reward = lookup(kind)
    copy = pickle.loads(pickle.dumps(reward))
    assert copy == reward
    assert copy(None, SAMPLE) == reward(None, SAMPLE)  # type: ignore[misc]


def _score_all(kinds: list[str]) -> list[Any]:
    return [_score(kind) for kind in kinds]


def _call(reward: BuiltinReward) -> Any:
    return reward(None, SAMPLE)


def test_every_builtin_runs_in_a_spawned_process() -> None:
    kinds = [k for k in known_kinds() if k != "random"]
    rewards = [lookup(k) for k in kinds]
    context = multiprocessing.get_context("spawn")
    with context.Pool(1) as pool:
        remote = pool.map(_call, rewards)  # each reward pickled into a fresh interpreter
        remote_random = pool.map(_call, [lookup("random")])
    assert remote == _score_all(kinds)
    assert remote_random[0] in (0.0, 1.0)


@pytest.mark.parametrize(
    ("kind", "response", "label", "expected"),
    [
        # only the last box's content is compared
        pytest.param("boxed_exact_match", "a \\boxed{x} b \\boxed{y} c", "y", 1.0, id="last_box"),
        pytest.param("boxed_exact_match", "a \\boxed{x} b \\boxed{y} c", "x", 0.0, id="not_first"),
        # no box: an empty answer
        pytest.param("boxed_exact_match", "y", "y", 0.0, id="no_box"),
        # boxed_math grades the content itself (slime looks for \boxed again and scores 0)
        pytest.param("boxed_math", "so \\boxed{\\frac{1}{2}}", "0.5", 1.0, id="boxed_math"),
        # boxed_deepscaler needs no </think> once the box is extracted
        pytest.param("boxed_deepscaler", "\\boxed{2}", "2", 1.0, id="boxed_deepscaler"),
    ],
)
def test_boxed_kinds_grade_the_box_content(
    kind: str, response: str, label: str, expected: float
) -> None:
    reward = lookup(kind)
    assert reward is not None
    assert reward(None, Sample(response, label)) == expected


EXPECTED = {
    "math": 1.0,
    "boxed_math": 1.0,
    "dapo": {"score": 1.0, "acc": True, "pred": "2"},
    "boxed_dapo": {"score": 1.0, "acc": True, "pred": "2"},
    "deepscaler": 1.0,
    "boxed_deepscaler": 1.0,
    # 8 answer tokens after </think> (answer is b that is boxed2 answer 2), one of them the label
    "f1": pytest.approx(2 / 9),
    "boxed_f1": 1.0,
    "exact_match": 0.0,
    "boxed_exact_match": 1.0,
    "gpqa": 1.0,
    "boxed_gpqa": 1.0,
    "multiple_choice": 1.0,
    "boxed_multiple_choice": 1.0,
    "think_format": 1.0,
    "boxed_format": 1.0,
}


@pytest.mark.parametrize("kind", sorted(EXPECTED))
def test_hand_scored_sample(kind: str) -> None:
    assert _score(kind) == EXPECTED[kind]


@pytest.mark.parametrize("kind", [k for k in known_kinds() if k != "random"])
def test_rm_type_routes_to_the_builtin(make_router: Any, kind: str) -> None:
    router = make_router(
        {"reward_key": "score", "routes": {"r": {"rewards": {"t": {"kind": "exact_match"}}}}}
    )
    row = {"response": SAMPLE.response, "label": SAMPLE.label,
           "metadata": {**SAMPLE.metadata, "rm_type": kind}}  # fmt: skip
    [result] = router.score_sync([row])
    expected = _score(kind)
    assert result.level == "rm_type"
    assert result.reward == (expected["score"] if isinstance(expected, dict) else expected)


def test_dapo_without_key_is_a_compile_error(make_router: Any) -> None:
    with pytest.raises(ConfigError, match="set `key: score`"):
        make_router({"routes": {"r": {"rewards": {"t": {"kind": "dapo"}}}}})


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_every_builtin_keyword_is_checked_at_compile_time(name: str) -> None:
    # compile_router checks a term's kwargs values against the annotations: each keyword's own
    # default fits, and a value of no checked type is refused (an annotation the check cannot
    # read would let a bad value through silently)
    grade = BUILTINS[name].grade
    parameters = inspect.signature(grade).parameters.values()
    for keyword in [p for p in parameters if p.kind is p.KEYWORD_ONLY]:
        check_values(grade, {keyword.name: keyword.default}, name)
        with pytest.raises(ResolveError, match=f"kwargs.{keyword.name}: {name} got"):
            check_values(grade, {keyword.name: object()}, name)


def test_each_kind_is_registered_by_the_module_the_table_names() -> None:
    from rewardrouter.rewards import KIND_MODULES, RESOURCE_KINDS, load_all

    load_all()
    registered = {
        **{name: spec.grade.__module__ for name, spec in BUILTINS.items()},
        **{name: spec.build.__module__ for name, spec in RESOURCE_KINDS.items()},
    }
    assert registered == KIND_MODULES


def test_a_router_imports_the_graders_it_names_alone() -> None:
    # A fresh interpreter: compiling an exact_match router loads neither math (sympy), nor the
    # tool kinds (jsonschema), nor the code sandbox, nor the judge's client.
    code = (
        "import sys, json\n"
        "from rewardrouter import compile_router\n"
        "config = {'default_route': 'q', 'routes': {'q': {'rewards': {'t': {'kind': 'exact_match'}}}}}\n"
        "with compile_router(config) as router:\n"
        "    assert router.score_sync([{'response': 'Paris', 'label': 'paris'}]).rewards == [1.0]\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(done.stdout))
    kept_out = {
        "sympy", "jsonschema", "rewardrouter.rewards.math", "rewardrouter.rewards.tool_use.calls",
        "rewardrouter.rewards.code", "rewardrouter.rewards.judge", "rewardrouter.rewards.choice",
        "rewardrouter.rewards.ifeval.kind", "rewardrouter.remote",
    }  # fmt: skip
    assert loaded & kept_out == set()
    assert "rewardrouter.rewards.exact" in loaded
