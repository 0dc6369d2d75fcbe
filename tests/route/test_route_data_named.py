"""What a *sample* may name through ``custom_rm_path``: functions defined in ``allowed_modules``
(not names those modules import), paths listed in ``allowed_functions``, and inside rewardrouter
only its trainer hooks. Rejected names cost bounded memory however many arrive."""

from __future__ import annotations

import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from rr_testfns import row

from rewardrouter import ConfigError, RoutingError

TESTS = Path(__file__).resolve().parents[1]


def _router(make_router: Any, **config: Any) -> Any:
    base = {
        "allowed_modules": ["rr_data_named"],
        "routes": {"exact": {"match": ["org/exact"], "rewards": {"t": {"kind": "exact_match"}}}},
    }
    return make_router({**base, **config})


@pytest.mark.parametrize(
    ("path", "reward"),
    [
        pytest.param("rr_data_named.defined_here", 2.0, id="function_defined_there"),
        pytest.param("rr_data_named.scorer", 3.0, id="instance_of_a_class_defined_there"),
    ],
)
def test_a_sample_may_name_what_an_allowed_module_defines(
    make_router: Any, path: str, reward: float
) -> None:
    [result] = _router(make_router).score_sync([row("x", custom_rm_path=path)])
    assert (result.reward, result.level) == (reward, "custom_rm_path")


@pytest.mark.parametrize(
    ("path", "found"),
    [
        pytest.param("rr_data_named.Popen", "subprocess.Popen", id="class_it_imports"),
        pytest.param("rr_data_named.execv", "posix.execv", id="function_it_imports"),
        pytest.param("rr_data_named.reexported", "rr_testfns.length", id="function_re_exported"),
        pytest.param("rr_data_named.wrapped", "functools.partial", id="foreign_callable_object"),
    ],
)
def test_a_sample_may_not_name_what_an_allowed_module_imports(
    make_router: Any, path: str, found: str
) -> None:
    with pytest.raises(RoutingError) as info:
        _router(make_router).score_sync([row("x", custom_rm_path=path)])
    message = str(info.value)
    assert f"{path!r} is {found}, which its module imports from outside allowed_modules" in message
    assert "allowed_functions" in message


def test_allowed_functions_lists_a_path_defined_elsewhere(make_router: Any) -> None:
    router = _router(make_router, allowed_functions=["rr_data_named.reexported"])
    [result] = router.score_sync([row("abcd", custom_rm_path="rr_data_named.reexported")])
    assert result.reward == 4.0


@pytest.mark.parametrize(
    ("path", "why"),
    [
        pytest.param("rewardrouter.supervise.boot.kill_group", "part of rewardrouter's machinery"),
        pytest.param("rewardrouter.introspect.import_path", "part of rewardrouter's machinery"),
        pytest.param("rewardrouter.rewards.code.local.subprocess", "is a module, not a function"),
    ],
)
def test_inside_rewardrouter_data_reaches_only_the_trainer_hooks(
    make_router: Any, path: str, why: str
) -> None:
    router = _router(make_router, allowed_modules=["rewardrouter"])
    with pytest.raises(RoutingError) as info:
        router.score_sync([row("x", custom_rm_path=path)])
    assert why in str(info.value)


def test_rejected_names_keep_memory_bounded(make_router: Any) -> None:
    router = _router(make_router)

    def reject(names: range) -> None:
        for i in names:
            with pytest.raises(RoutingError):
                router.decide(row("x", rm_type=f"no_such_kind_{i}"))

    reject(range(2_000))  # the bounded cache of failures is full
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        reject(range(2_000, 12_000))
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 1_000_000, f"10,000 rejected names kept {grown:,} bytes"


# -- a module that calls sys.exit() at import -----------------------------------------------------


def test_a_module_that_exits_at_import_is_a_config_error(make_router: Any) -> None:
    config = {"default_route": "r", "routes": {"r": {"rewards": {"t": {"path": "rr_exits.grade"}}}}}
    with pytest.raises(ConfigError) as info:
        make_router(config)
    [problem] = info.value.problems
    assert problem.path == "routes.r.rewards.t.path"
    assert "importing 'rr_exits' called sys.exit(7) (rr_exits.py:5)" in problem.message


def test_a_sample_naming_a_module_that_exits_is_unroutable(make_router: Any) -> None:
    router = _router(make_router, allowed_modules=["rr_exits"])
    with pytest.raises(RoutingError, match=r"called sys\.exit\(7\)"):
        router.score_sync([row("x", custom_rm_path="rr_exits.grade")])


def test_validate_reports_a_module_that_exits_instead_of_exiting_with_it(tmp_path: Path) -> None:
    config = tmp_path / "router.yaml"
    config.write_text(
        "default_route: r\nroutes:\n  r:\n    rewards:\n      t: {path: rr_exits.grade}\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "rewardrouter.cli.main", "validate", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PYTHONPATH": str(TESTS), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert "called sys.exit(7)" in done.stdout + done.stderr
