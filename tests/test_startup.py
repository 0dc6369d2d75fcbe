"""A fresh process loads what it uses: ``import rewardrouter`` and ``rewardrouter --help`` load
no heavy library, and torch waits for the advantage stage that needs it.

Each case runs in a new interpreter (the test process has long imported everything) and reads
the modules it loaded from ``python -X importtime``, which lists every module a process
imports, in a new process running the real command.
"""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

#: Libraries that cost a fresh process tenths of a second or more each (torch alone about 1.5 s).
HEAVY = (
    "torch",
    "numpy",
    "sympy",
    "math_verify",
    "latex2sympy2_extended",
    "aiohttp",
    "ray",
)
#: What a plain ``import rewardrouter`` leaves alone besides: the config stack and the CLI's.
CONFIG_STACK = ("pydantic", "omegaconf", "hydra", "yaml", "rich")

ROUTER = (
    "{'default_route': 'q', 'routes': {'q': {'rewards': {'em': {'kind': 'exact_match'}}}}, "
    "'post_process': [%s]}"
)
SAMPLES = (
    "[{'response': r, 'label': 'paris', 'group_index': g} "
    "for r, g in [('Paris', 0), ('Rome', 0), ('Paris', 1), ('paris', 1)]]"
)


def _imported(args: list[str]) -> tuple[set[str], str]:
    """The top-level packages a new ``python -X importtime ARGS`` imported, and its stdout."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    modules = {
        line.rpartition("|")[2].strip().split(".")[0]
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "rewardrouter" in modules  # the listing is there at all
    return modules, done.stdout


def _step(stage: str) -> list[str]:
    """A script: compile a router ending in ``stage``, score four samples, print which heavy
    libraries are loaded after compiling and scoring, then the advantages."""
    return [
        "-c",
        "import sys, rewardrouter\n"
        f"router = rewardrouter.compile_router({ROUTER % stage})\n"
        f"samples = {SAMPLES}\n"
        "results = router.score_sync(samples)\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
        "print(router.post_process(samples, results).advantages)\n",
    ]


def test_import_rewardrouter_loads_no_heavy_library() -> None:
    modules, _ = _imported(["-c", "import rewardrouter"])
    assert modules.isdisjoint(HEAVY + CONFIG_STACK), modules & {*HEAVY, *CONFIG_STACK}


def test_public_names_still_load_on_use() -> None:
    modules, out = _imported(
        ["-c", "import rewardrouter\nprint(rewardrouter.compile_router.__module__)"]
    )
    assert out.split() == ["rewardrouter.router"]
    assert "pydantic" in modules and "torch" not in modules


@pytest.mark.parametrize(
    ("flag", "output"),
    [
        pytest.param("--help", "usage: rewardrouter", id="help"),
        pytest.param("--version", "rewardrouter ", id="version"),
    ],
)
def test_help_and_version_load_neither_heavy_libraries_nor_the_config_stack(
    flag: str, output: str
) -> None:
    script = Path(sys.executable).with_name("rewardrouter")  # the installed console script
    command = [str(script)] if script.exists() else ["-m", "rewardrouter"]
    modules, out = _imported([*command, flag])
    assert out.startswith(output)
    assert modules.isdisjoint(HEAVY + CONFIG_STACK), modules & {*HEAVY, *CONFIG_STACK}


@pytest.mark.parametrize(
    ("stage", "advantages"),
    [
        pytest.param("{'kind': 'rloo', 'device': 'cpu'}", [1.0, -1.0, 0.0, 0.0], id="rloo"),
        pytest.param(
            "{'kind': 'grpo', 'std': 'none', 'device': 'cpu'}", [0.5, -0.5, 0.0, 0.0], id="dr_grpo"
        ),
        pytest.param(
            "{'kind': 'grpo', 'device': 'cpu'}",
            [0.7071057558059692, -0.7071057558059692, 0.0, 0.0],
            id="grpo_group_std",
        ),
    ],
)
def test_a_step_whose_estimator_needs_no_torch_never_imports_it(
    stage: str, advantages: list[float]
) -> None:
    modules, out = _imported(_step(stage))
    loaded, computed = out.splitlines()
    assert loaded == "[]"  # compiling and scoring: nothing heavy
    assert computed == str(advantages)
    assert "torch" not in modules and "numpy" in modules


@pytest.mark.skipif(
    not metadata.version("torch").endswith("+cpu"), reason="a torch build that may see CUDA"
)
def test_device_auto_with_a_cpu_only_torch_needs_no_torch_to_decide() -> None:
    modules, out = _imported(_step("{'kind': 'rloo'}"))
    assert out.splitlines()[1] == str([1.0, -1.0, 0.0, 0.0])
    assert "torch" not in modules


def test_grpo_with_a_batch_std_imports_torch_at_the_advantage_stage_only() -> None:
    modules, out = _imported(_step("{'kind': 'grpo', 'std': 'batch', 'device': 'cpu'}"))
    loaded, computed = out.splitlines()
    assert loaded == "[]"  # compiling and scoring: torch not yet
    assert computed == str([0.9999979734420776, -0.9999979734420776, 0.0, 0.0])
    assert "torch" in modules  # it orders the batch's sum (rewardrouter.advantage.host)
