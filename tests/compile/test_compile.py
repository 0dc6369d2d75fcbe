"""compile_router: every problem class reported with its YAML path, all at once."""

from __future__ import annotations

from typing import Any

import pytest

from rewardrouter import ConfigError, compile_router


def _problems(config: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        compile_router(config)
    return [str(p) for p in info.value.problems]


def _term(term: dict[str, Any], **route: Any) -> dict[str, Any]:
    return {"routes": {"r": {"rewards": {"t": term}, **route}}}


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        pytest.param(
            _term({"kind": "exact_mach"}),
            "routes.r.rewards.t.kind: unknown built-in kind 'exact_mach'\n    did you mean 'exact_match'?",
            id="unknown_kind",
        ),
        pytest.param(
            _term({"path": "rr_testfnz.length"}),
            "routes.r.rewards.t.path: module 'rr_testfnz' not found (from 'rr_testfnz.length')\n"
            "    did you mean 'rr_testfns'?",
            id="missing_module",
        ),
        pytest.param(
            _term({"path": "rewardrouter.rewards.exakt.fn"}),
            "routes.r.rewards.t.path: module 'rewardrouter.rewards.exakt' not found",
            id="missing_submodule",
        ),
        pytest.param(
            _term({"path": "rr_testfns.lenght"}),
            "routes.r.rewards.t.path: module 'rr_testfns' has no attribute 'lenght'\n"
            "    did you mean 'length'?",
            id="missing_function",
        ),
        pytest.param(
            _term({"path": "rr_testfns.NOT_CALLABLE"}),
            "routes.r.rewards.t.path: 'rr_testfns.NOT_CALLABLE' is a int, not a function",
            id="not_callable",
        ),
        pytest.param(
            _term({"path": "rr_testfns.label_match", "kwargs": {"bonsu": 1}}),
            "routes.r.rewards.t.kwargs.bonsu: rr_testfns.label_match takes no argument 'bonsu'",
            id="unknown_kwarg",
        ),
        pytest.param(
            _term({"kind": "exact_match", "kwargs": {"case_sensitiv": True}}),
            "routes.r.rewards.t.kwargs.case_sensitiv: built-in 'exact_match' takes no argument",
            id="unknown_builtin_kwarg",
        ),
        pytest.param(
            _term({"path": "rr_testfns.needs_kw"}),
            "routes.r.rewards.t.path: rr_testfns.needs_kw requires 'threshold'",
            id="missing_required_kwarg",
        ),
        pytest.param(
            _term({"path": "rr_testfns.no_sample_param"}),
            "routes.r.rewards.t.path: cannot tell whether rr_testfns.no_sample_param scores one "
            "sample or a group",
            id="mode_unclear",
        ),
        pytest.param(
            _term({"kind": "exact_match", "key": "score"}),
            "routes.r.rewards.t.key: built-in 'exact_match' returns a number",
            id="key_on_number_builtin",
        ),
        pytest.param(
            {
                "routes": {
                    "a": {"match": ["org/x"], "rewards": {"t": {"kind": "exact_match"}}},
                    "b": {"match": ["org/y", "org/x"], "rewards": {"t": {"kind": "exact_match"}}},
                }
            },
            "routes.b.match[1]: dataset 'org/x' is already matched by route 'a'",
            id="dataset_matched_twice",
        ),
        pytest.param(
            {"default_route": "fallbak", **_term({"kind": "exact_match"})},
            "default_route: route 'fallbak' does not exist (routes: r)",
            id="default_route_missing",
        ),
        pytest.param(
            {"allowed_modules": ["my-rewards"], **_term({"kind": "exact_match"})},
            "allowed_modules[0]: 'my-rewards' is not a module name",
            id="allowed_module_not_a_module",
        ),
    ],
)
def test_compile_problem(config: dict[str, Any], expected: str) -> None:
    problems = _problems(config)
    assert any(p.startswith(expected) for p in problems), problems


def test_all_problems_reported_together() -> None:
    config = {
        "default_route": "nope",
        "routes": {
            "a": {"rewards": {"x": {"kind": "mathh"}, "y": {"path": "rr_testfns.lenght"}}},
            "b": {"rewards": {"z": {"path": "no_such_module_anywhere.fn"}}},
        },
    }
    with pytest.raises(ConfigError) as info:
        compile_router(config)
    paths = [p.path for p in info.value.problems]
    assert paths == [
        "routes.a.rewards.x.kind",
        "routes.a.rewards.y.path",
        "routes.b.rewards.z.path",
        "default_route",
    ]
    assert "(4 problems)" in str(info.value)


def test_dict_builtin_without_key_says_which_key(monkeypatch: pytest.MonkeyPatch) -> None:
    from rewardrouter.rewards import registry

    def graded(response: str, label: Any, metadata: Any) -> dict[str, Any]:
        return {"score": 1.0, "acc": True}

    spec = registry.Builtin("test_dict", graded, returns="dict", keys=("score", "acc"))
    monkeypatch.setitem(registry.BUILTINS, "test_dict", spec)
    problems = _problems(_term({"kind": "test_dict"}))
    assert problems == [
        "routes.r.rewards.t.key: built-in 'test_dict' returns a dict {score, acc} but the term "
        "sets no `key`\n    set `key: score` to train on 'score'"
    ]
    assert _problems(_term({"kind": "test_dict", "key": "scor"})) == [
        "routes.r.rewards.t.key: built-in 'test_dict' returns no entry 'scor' (entries: score, acc)"
        "\n    did you mean 'score'?"
    ]


def test_module_that_fails_to_import_is_reported(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "broken_rewards.py").write_text("import not_installed_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    problems = _problems(_term({"path": "broken_rewards.fn"}))
    assert problems[0].startswith(
        "routes.r.rewards.t.path: importing 'broken_rewards' failed: it imports "
        "'not_installed_dependency', which is not installed"
    )
