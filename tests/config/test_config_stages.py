"""Every stage kind a config may name has its function: checked when the modules are imported
(``require_functions``), and here against the tables themselves. And every kind can be written
where it belongs in a YAML file: each at the end of ``post_process``, each shaping kind (and no
estimator) in a route's ``shaping``."""

from __future__ import annotations

from pathlib import Path

import pytest

from rewardrouter.advantage import estimators
from rewardrouter.config.load import load_config
from rewardrouter.config.stages import ADVANTAGE_KINDS, SHAPING_KINDS, require_functions
from rewardrouter.errors import ConfigError
from rewardrouter.shape.builtin import BUILTIN_STAGES


def test_every_shaping_kind_but_custom_has_a_builtin_function() -> None:
    assert SHAPING_KINDS - {"custom"} == set(BUILTIN_STAGES)


def test_every_advantage_kind_but_none_has_a_factor() -> None:
    assert ADVANTAGE_KINDS - {"none"} == set(estimators._FACTORS)


def test_a_kind_without_its_function_fails_loudly() -> None:
    with pytest.raises(RuntimeError, match="rloo have no function in advantage"):
        require_functions({"grpo", "rloo"}, {"grpo": None}, "advantage")


#: What each stage kind needs besides ``kind`` to be valid; a kind added to the stage models
#: without a row here fails the first test below.
SETTINGS: dict[str, str] = {
    "clip": "min: -1.0",
    "scale": "mul: 2.0",
    "overlong_penalty": "max_len: 8, buffer: 2",
    "truncation_penalty": "value: 0.0",
    "quantize": "step: 0.5",
    "custom": "path: my_stages.halve",
    "grpo": "std: none",
    "rloo": "dtype: float64",
    "reinforce_pp_baseline": "eps: 1.0e-4",
    "none": "device: cpu",
}


def test_every_stage_kind_has_a_row_here() -> None:
    assert set(SETTINGS) == ADVANTAGE_KINDS | SHAPING_KINDS


def _kinds_loaded(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "router.yaml"
    path.write_text(text)
    config = load_config(path)
    return [stage.kind for stage in [*config.routes["r"].shaping, *config.post_process]]


@pytest.mark.parametrize("kind", sorted(ADVANTAGE_KINDS | SHAPING_KINDS))
def test_every_stage_kind_can_end_post_process_in_a_yaml_file(tmp_path: Path, kind: str) -> None:
    text = f"""
routes:
  r:
    rewards: {{correct: {{kind: exact_match}}}}
post_process:
  - {{kind: clip, max: 1.0}}
  - {{kind: {kind}, {SETTINGS[kind]}}}
"""
    assert _kinds_loaded(tmp_path, text) == ["clip", kind]


@pytest.mark.parametrize("kind", sorted(ADVANTAGE_KINDS | SHAPING_KINDS))
def test_a_route_s_shaping_takes_every_shaping_kind_and_no_estimator(
    tmp_path: Path, kind: str
) -> None:
    text = f"""
routes:
  r:
    rewards: {{correct: {{kind: exact_match}}}}
    shaping: [{{kind: {kind}, {SETTINGS[kind]}}}]
"""
    if kind in SHAPING_KINDS:
        assert _kinds_loaded(tmp_path, text) == [kind]
        return
    with pytest.raises(ConfigError) as caught:
        _kinds_loaded(tmp_path, text)
    [problem] = caught.value.problems
    assert problem.path == "routes.r.shaping[0].kind"
    assert repr(kind) in problem.message and "'clip'" in problem.message
