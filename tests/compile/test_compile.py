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
        # a value of the wrong case or type is refused, not silently read as the default
        pytest.param(
            _term({"kind": "math", "kwargs": {"extract": "Any"}}),
            "routes.r.rewards.t.kwargs.extract: built-in 'math' got extract='Any'; expected one "
            "of 'boxed', 'any'\n    did you mean 'any'?",
            id="builtin_kwarg_literal_case",
        ),
        pytest.param(
            _term({"kind": "boxed_math", "kwargs": {"extract": "boxd"}}),
            "routes.r.rewards.t.kwargs.extract: built-in 'boxed_math' got extract='boxd'",
            id="builtin_kwarg_literal_typo",
        ),
        # an environment interpolation gives a string: "false" would be truthy
        pytest.param(
            _term({"kind": "exact_match", "kwargs": {"case_sensitive": "false"}}),
            "routes.r.rewards.t.kwargs.case_sensitive: built-in 'exact_match' got "
            "case_sensitive='false' (a string); expected true or false\n    write the value "
            "unquoted in YAML; a value read from an environment variable is a string until "
            "decoded: ${oc.decode:${oc.env:NAME}}",
            id="builtin_kwarg_bool_as_string",
        ),
        pytest.param(
            _term({"kind": "think_format", "kwargs": {"opened_by_prompt": 1}}),
            "routes.r.rewards.t.kwargs.opened_by_prompt: built-in 'think_format' got "
            "opened_by_prompt=1; expected true or false",
            id="builtin_kwarg_bool_as_int",
        ),
        pytest.param(
            _term({"kind": "random", "kwargs": {"p": "0.3"}}),
            "routes.r.rewards.t.kwargs.p: built-in 'random' got p='0.3' (a string); expected a "
            "number\n    write the value unquoted",
            id="builtin_kwarg_number_as_string",
        ),
        pytest.param(
            _term({"kind": "deterministic_random", "kwargs": {"salt": 7}}),
            "routes.r.rewards.t.kwargs.salt: built-in 'deterministic_random' got salt=7; "
            "expected a string",
            id="builtin_kwarg_str_as_int",
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


@pytest.mark.parametrize(
    ("kind", "kwargs"),
    [
        pytest.param("math", {"extract": "any"}, id="literal"),
        pytest.param("exact_match", {"case_sensitive": True}, id="bool"),
        pytest.param("random", {"p": 1}, id="int_for_float"),
        pytest.param("deterministic_random", {"p": 0.25, "salt": "run-1"}, id="float_and_str"),
    ],
)
def test_builtin_kwargs_values_that_fit_compile(kind: str, kwargs: dict[str, Any]) -> None:
    with compile_router(_term({"kind": kind, "kwargs": kwargs})) as router:
        assert router.routes["r"].terms[0].kwargs == kwargs


def test_every_bad_builtin_value_is_reported() -> None:
    config = _term({"kind": "deterministic_random", "kwargs": {"p": "1", "salt": None}})
    assert [p.split("\n")[0] for p in _problems(config)] == [
        "routes.r.rewards.t.kwargs.p: built-in 'deterministic_random' got p='1' (a string); "
        "expected a number",
        "routes.r.rewards.t.kwargs.salt: built-in 'deterministic_random' got salt=None; "
        "expected a string",
    ]


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
