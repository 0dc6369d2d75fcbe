"""load_config: OmegaConf + overrides + validation, every problem with its YAML path."""

from __future__ import annotations

from pathlib import Path

import pytest

from rewardrouter import ConfigError, RouterConfig, load_config


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "router.yaml"
    path.write_text(text)
    return path


GOOD = """
routes:
  gsm8k:
    match: [openai/gsm8k]
    rewards:
      correct: {kind: exact_match}
"""


def test_loads_and_applies_overrides(tmp_path: Path) -> None:
    config = load_config(
        _write(tmp_path, GOOD),
        ["routes.gsm8k.rewards.correct.weight=0.2", "default_route=gsm8k"],
    )
    assert isinstance(config, RouterConfig)
    assert config.routes["gsm8k"].rewards["correct"].weight == 0.2
    assert config.default_route == "gsm8k"


def test_config_is_frozen(tmp_path: Path) -> None:
    config = load_config(_write(tmp_path, GOOD))
    with pytest.raises(ValueError, match="frozen"):
        config.default_route = "x"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "overrides", "expected"),
    [
        pytest.param(
            GOOD + "default_route: ???\n",
            (),
            ["default_route: mandatory value `???` was never set"],
            id="missing_mandatory",
        ),
        pytest.param(
            GOOD.replace("[openai/gsm8k]", '["${datasets.gsm}"]'),
            (),
            ["routes.gsm8k.match[0]: interpolation '${datasets.gsm}' does not resolve"],
            id="bad_interpolation",
        ),
        pytest.param(
            GOOD.replace("correct: {kind: exact_match}", "correct: {kind: exact_match, wieght: 2}"),
            (),
            [
                "routes.gsm8k.rewards.correct.wieght: unknown key 'wieght'\n    did you mean 'weight'?"
            ],
            id="typo_in_term",
        ),
        pytest.param(
            GOOD + "post_process:\n  - {kind: clip, mn: 0}\n",
            (),
            ["post_process[0].mn: unknown key 'mn'"],
            id="typo_inside_tagged_union_reported_as_key",
        ),
        pytest.param(
            GOOD + "post_process:\n  - {kind: clp}\n",
            (),
            ["post_process[0].kind: unknown kind 'clp'"],
            id="unknown_stage_kind",
        ),
        pytest.param(
            GOOD + "post_process:\n  - {kind: grpo}\n  - {kind: clip, max: 1}\n",
            (),
            ["post_process: advantage stage `grpo` at position 0 must be the last stage"],
            id="advantage_not_last",
        ),
        pytest.param(
            GOOD,
            ["routes.gsm8k.rewards.correct.weight=heavy"],
            ["routes.gsm8k.rewards.correct.weight: Input should be a valid number"],
            id="override_of_wrong_type",
        ),
        pytest.param(
            GOOD.replace("correct: {kind: exact_match}", "correct: {weight: 1}"),
            (),
            ["routes.gsm8k.rewards.correct: set exactly one of `kind` (a built-in) or `path`"],
            id="term_without_function",
        ),
        pytest.param(
            GOOD.replace("[openai/gsm8k]", "openai/gsm8k"),
            (),
            [
                "routes.gsm8k.match: must be a list, found 'openai/gsm8k'\n    write it as a list: [openai/gsm8k]"
            ],
            id="match_not_a_list",
        ),
        pytest.param(
            GOOD + "route_by: dataset\n",
            (),
            ["route_by: must be a list, found 'dataset'\n    write it as a list: [dataset]"],
            id="route_by_not_a_list",
        ),
        pytest.param(
            GOOD.replace("gsm8k:\n", "openai/gsm8k:\n"),
            (),
            [
                "routes: route name 'openai/gsm8k' is not a plain identifier; name the route e.g. "
                "'openai_gsm8k' and put 'openai/gsm8k' under its `match:`"
            ],
            id="route_name_not_identifier",
        ),
    ],
)
def test_problem(tmp_path: Path, text: str, overrides: list[str], expected: list[str]) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(_write(tmp_path, text), overrides)
    problems = [str(p) for p in info.value.problems]
    for want in expected:
        assert any(p.startswith(want) for p in problems), problems


def test_every_unset_value_is_reported(tmp_path: Path) -> None:
    text = "default_route: ???\nreward_key: ???\nroutes:\n  a:\n    rewards:\n      t:\n        kind: ???\n"
    with pytest.raises(ConfigError) as info:
        load_config(_write(tmp_path, text))
    paths = [p.path for p in info.value.problems]
    assert paths == ["default_route", "reward_key", "routes.a.rewards.t.kind"]


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_config(tmp_path / "nope.yaml")


def test_no_hydra_initialization(tmp_path: Path) -> None:
    from hydra.core.global_hydra import GlobalHydra

    load_config(_write(tmp_path, GOOD))
    assert not GlobalHydra.instance().is_initialized()
