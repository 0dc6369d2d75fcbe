"""The package graph is acyclic: every import between rewardrouter's packages goes down the
declared layer order — imports inside functions and the strings handed to
``importlib.import_module("rewardrouter...")`` or the project's own
``import_path("rewardrouter...")`` included. Imports under ``if TYPE_CHECKING:`` count too,
unless listed below. Inside one package, no module imports itself through others (a cycle that
only a deferred import keeps from failing counts too, since that import is its one fix). No
package imports another's private module or name (``_checks``, ``_NEEDS``): what two packages
share is public, in the lower one.
"""

from __future__ import annotations

import ast
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import pytest

import rewardrouter

PACKAGE = Path(rewardrouter.__file__).resolve().parent

#: Bottom to top: a package may import the packages of lower layers only. Packages that share a
#: layer may not import each other. ``__init__`` is ``rewardrouter/__init__.py``, the public face.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors",),  # the exception tree, Problem, did_you_mean
    ("introspect",),  # import by dotted path, read signatures
    ("supervise",),  # the child processes rewardrouter starts: started, watched, stopped
    ("sample", "results"),  # the public data types: what comes in, what comes out
    ("outcome",),  # what a reward call gave: its outcome, its value, the quick path's answer
    ("config",),  # pydantic models of a YAML, loading
    ("trajectory",),  # conversations as responses: validated, read per term
    ("execute",),  # the executor interface, its registry and backends
    ("remote",),  # the HTTP client of the remote kind
    ("rewards",),  # graders and resource kinds, one registry
    ("compile",),  # terms bound to resolved functions and executors
    ("route",),  # precedence, route groups, assembling results
    ("advantage",),  # group advantages on torch tensors
    ("shape",),  # shaping stages and the post-processing chain
    ("router",),  # Router and compile_router
    ("checks",),  # the batch checks the command line and the trainer hooks share
    ("integrations", "schema"),  # the router in trainers, as JSON Schema
    ("serve",),  # the router behind HTTP (it speaks the trainers' reward protocols)
    ("cli",),  # the command line
    ("__init__",),
    ("__main__",),  # python -m rewardrouter: the command line
)

#: ``(importing module, imported module)`` pairs allowed under ``if TYPE_CHECKING:`` only.
TYPE_ONLY: frozenset[tuple[str, str]] = frozenset()


@dataclass(frozen=True)
class Edge:
    source: str  # dotted module that imports
    target: str  # dotted module imported
    line: int
    how: str  # "top", "deferred" (inside a function or class body), "type-only", "by string"


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                lines.update(range(inner.lineno, (inner.end_lineno or inner.lineno) + 1))
    return lines


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def edges(root: Path) -> list[Edge]:
    """Every import of ``root``'s package by one of its modules, however it is written."""
    name = root.name
    found: list[Edge] = []
    for path in sorted(root.rglob("*.py")):
        module = _module_name(path, root)
        tree = ast.parse(path.read_text(), filename=str(path))
        type_only = _type_checking_lines(tree)
        top_level = {id(node) for node in tree.body}
        top_level |= {id(n) for node in tree.body if isinstance(node, ast.If) for n in node.body}
        for node in ast.walk(tree):
            targets: list[str] = []
            how = "top" if id(node) in top_level else "deferred"
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(module, path.name == "__init__.py", node)
                # `from pkg import sub` may name a submodule: count the deepest module it names.
                targets = [f"{target}.{alias.name}" for alias in node.names] or [target]
            elif (
                isinstance(node, ast.Call)
                and ast.unparse(node.func).endswith(("import_module", "import_path"))
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                # import_path takes `pkg.module.fn` or `pkg.module:fn`: the module is imported.
                targets, how = [node.args[0].value.replace(":", ".")], "by string"
            else:
                continue
            if node.lineno in type_only:
                how = "type-only"
            found += [
                Edge(module, target, node.lineno, how)
                for target in targets
                if target == name or target.startswith(name + ".")
            ]
    return found


def modules(root: Path) -> set[str]:
    """Every dotted module of ``root``'s package, package ``__init__`` s included."""
    return {_module_name(path, root) for path in root.rglob("*.py")}


def module_graph(found: Iterable[Edge], known: set[str]) -> dict[str, dict[str, Edge]]:
    """Module → the modules of its own package whose code importing it runs, with the edge.

    ``from pkg.a import fn`` runs ``pkg.a``; importing ``pkg.a.b`` from outside ``pkg.a`` also
    runs ``pkg/a/__init__.py`` first, so that counts as importing ``pkg.a`` too (a package whose
    ``__init__`` imports what imports the importer is a cycle at import time). Imports under
    ``if TYPE_CHECKING:`` run nothing.
    """
    graph: dict[str, dict[str, Edge]] = {}
    for edge in found:
        target = edge.target
        while target not in known and "." in target:
            target = target.rsplit(".", 1)[0]  # `pkg.a.fn` → `pkg.a`
        if edge.how == "type-only" or _package(edge.source) != _package(target):
            continue
        parts = target.split(".")
        for depth in range(2, len(parts) + 1):
            ran = ".".join(parts[:depth])
            if ran != edge.source and not edge.source.startswith(ran + "."):
                graph.setdefault(edge.source, {}).setdefault(ran, edge)
    return graph


def cycles(graph: dict[str, dict[str, Edge]]) -> list[str]:
    """One cycle per strongly connected set of modules, shortest from its first module, each
    step with the line and kind of the import that takes it."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[set[str]] = []

    def visit(module: str) -> None:  # Tarjan's algorithm
        order[module] = low[module] = len(order)
        stack.append(module)
        for target in graph.get(module, {}):
            if target not in order:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], order[target])
        if low[module] == order[module]:
            component = {stack.pop()}
            while module not in component:
                component.add(stack.pop())
            components.append(component)

    for module in sorted(graph):
        if module not in order:
            visit(module)
    out = []
    for component in components:
        if len(component) < 2:
            continue
        start = min(component)
        came_from: dict[str, str] = {}
        queue = deque([start])
        while start not in came_from:  # breadth first: the shortest way back to `start`
            module = queue.popleft()
            for target in sorted(graph[module]):
                if target in component and target not in came_from:
                    came_from[target] = module
                    queue.append(target)
        path = [start]
        while len(path) == 1 or path[-1] != start:
            path.append(came_from[path[-1]])
        path.reverse()
        steps = [f"{a} ({graph[a][b].line}, {graph[a][b].how})" for a, b in pairwise(path)]
        out.append(" → ".join([*steps, start]))
    return sorted(out)


def _package(module: str) -> str:
    """The layer unit of a dotted module: ``rewardrouter.execute.process.pool`` → ``execute``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def violations(found: list[Edge], layers: tuple[tuple[str, ...], ...]) -> list[str]:
    """Each edge that goes up the layer order, or sideways within a layer."""
    layer_of = {package: i for i, layer in enumerate(layers) for package in layer}
    out: list[str] = []
    for edge in found:
        source, target = _package(edge.source), _package(edge.target)
        if source == target:
            continue
        if target not in layer_of or source not in layer_of:
            unknown = source if source not in layer_of else target
            out.append(f"{edge.source}: package {unknown!r} has no place in LAYERS")
            continue
        if edge.how == "type-only" and (edge.source, edge.target) in TYPE_ONLY:
            continue
        if layer_of[target] >= layer_of[source]:
            out.append(
                f"{edge.source}:{edge.line} ({edge.how}) imports {edge.target}: {source} "
                f"(layer {layer_of[source]}) may not import {target} (layer {layer_of[target]})"
            )
    return out


def private_imports(found: list[Edge]) -> list[str]:
    """Each edge that reaches into another package's private module or name (a part after the
    package that starts with one underscore)."""
    out: list[str] = []
    for edge in found:
        if _package(edge.source) == _package(edge.target):
            continue
        private = [p for p in edge.target.split(".")[2:] if p.startswith("_") and p[:2] != "__"]
        if private:
            out.append(
                f"{edge.source}:{edge.line} imports {edge.target}: {private[0]!r} is private to "
                f"{_package(edge.target)}; make what both use public, in the lower package"
            )
    return out


def test_no_package_imports_another_packages_private_module() -> None:
    assert private_imports(edges(PACKAGE)) == []


@pytest.mark.parametrize(
    ("text", "found"),
    [
        pytest.param("from pkg.low._inner import f\n", "'_inner' is private to low", id="module"),
        pytest.param("from pkg.low.inner import _f\n", "'_f' is private to low", id="name"),
        pytest.param("from pkg.low import _inner\n", "'_inner' is private to low", id="from_pkg"),
        pytest.param("from pkg.low.inner import f\n", None, id="public"),
        pytest.param("from pkg.high._own import f\n", None, id="own_package"),
    ],
)
def test_the_private_import_check_finds_what_it_must(
    tmp_path: Path, text: str, found: str | None
) -> None:
    root = tmp_path / "pkg"
    for name, body in {"__init__.py": "", "low/__init__.py": "", "high/__init__.py": "",
                       "high/own.py": text}.items():  # fmt: skip
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(body)
    problems = private_imports(edges(root))
    if found is None:
        assert problems == []
    else:
        assert len(problems) == 1 and found in problems[0]


def test_every_import_goes_down_the_layers() -> None:
    found = edges(PACKAGE)
    assert len(found) > 100  # the walk sees the package's imports
    assert violations(found, LAYERS) == []


def test_every_package_and_top_level_module_has_a_layer() -> None:
    placed = {package for layer in LAYERS for package in layer}
    present = {
        path.stem if path.is_file() else path.name
        for path in PACKAGE.iterdir()
        if (path.suffix == ".py" or (path / "__init__.py").is_file())
    }
    assert present == placed


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        pytest.param(
            {"low.py": "def f():\n    from pkg import high\n"},
            ["pkg.low:2 (deferred) imports pkg.high: low (layer 0) may not import high (layer 1)"],
            id="deferred_upward",
        ),
        pytest.param(
            {"low.py": "import importlib\nimportlib.import_module('pkg.high.x')\n"},
            [
                "pkg.low:2 (by string) imports pkg.high.x: low (layer 0) may not import high "
                "(layer 1)"
            ],
            id="by_string",
        ),
        pytest.param(
            {
                "low.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.high\n"
            },
            ["pkg.low:3 (type-only) imports pkg.high: low (layer 0) may not import high (layer 1)"],
            id="type_checking",
        ),
        pytest.param(
            {"high/__init__.py": "from .sub import x\n", "high/sub.py": "from ..low import y\n"},
            [],
            id="relative_downward",
        ),
        pytest.param(
            {"low.py": "import_path('pkg.high.sub:fn')\n"},
            [
                "pkg.low:1 (by string) imports pkg.high.sub.fn: low (layer 0) may not import "
                "high (layer 1)"
            ],
            id="import_path_string",
        ),
        pytest.param(
            {"low.py": "from . import other\n", "other.py": ""},
            ["pkg.low: package 'other' has no place in LAYERS"],
            id="unplaced_package",
        ),
    ],
)
def test_the_check_finds_what_it_must(
    tmp_path: Path, files: dict[str, str], expected: list[str]
) -> None:
    root = tmp_path / "pkg"
    for name, text in {"__init__.py": "", "high/__init__.py": "", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / "low.py").touch()
    assert violations(edges(root), (("low",), ("high",))) == expected


def test_no_module_of_a_package_imports_itself_through_others() -> None:
    graph = module_graph(edges(PACKAGE), modules(PACKAGE))
    assert len(graph) > 50  # the graph sees the modules that import their own package's
    assert cycles(graph) == []


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        pytest.param(
            {"low/a.py": "from pkg.low import b\n", "low/b.py": "from pkg.low.a import f\n"},
            ["pkg.low.a (1, top) → pkg.low.b (1, top) → pkg.low.a"],
            id="two_modules",
        ),
        pytest.param(
            {"low/a.py": "from . import b\n", "low/b.py": "def f():\n    from . import a\n"},
            ["pkg.low.a (1, top) → pkg.low.b (2, deferred) → pkg.low.a"],
            id="closed_by_a_deferred_import",
        ),
        pytest.param(
            {
                "low/a.py": "import importlib\nimportlib.import_module('pkg.low.b')\n",
                "low/b.py": "import_path('pkg.low.a:f')\n",
            },
            ["pkg.low.a (2, by string) → pkg.low.b (1, by string) → pkg.low.a"],
            id="by_strings",
        ),
        pytest.param(
            {
                "low/a.py": "from . import b\n",
                "low/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n",
            },
            [],
            id="type_only_runs_nothing",
        ),
        pytest.param(
            {
                "low/labels.py": "from pkg.low.math.boxes import f\n",
                "low/math/__init__.py": "from pkg.low.math.kind import g\n",
                "low/math/kind.py": "from pkg.low.labels import h\n",
                "low/math/boxes.py": "",
            },
            [
                "pkg.low.labels (1, top) → pkg.low.math (1, top) → pkg.low.math.kind (1, top) "
                "→ pkg.low.labels"
            ],
            id="through_a_package_init",
        ),
        pytest.param(
            {
                "low/math/__init__.py": "from pkg.low.math.kind import g\n",
                "low/math/kind.py": "from pkg.low.math.boxes import f\n",
                "low/math/boxes.py": "",
            },
            [],
            id="a_package_init_and_its_own_modules",
        ),
        pytest.param(
            {"low/a.py": "from pkg.high import b\n", "high/b.py": "from pkg.low import a\n"},
            [],
            id="across_packages_is_the_layers_business",
        ),
    ],
)
def test_the_cycle_check_finds_what_it_must(
    tmp_path: Path, files: dict[str, str], expected: list[str]
) -> None:
    root = tmp_path / "pkg"
    for name, text in {"__init__.py": "", "low/__init__.py": "", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    assert cycles(module_graph(edges(root), modules(root))) == expected


BENCHMARKS = PACKAGE.parent / "benchmarks"


def script_graph(folder: Path) -> dict[str, dict[str, Edge]]:
    """Script → the scripts of ``folder`` it imports by plain name (they run with the folder on
    ``sys.path``), with the edge; deferred imports count, ``TYPE_CHECKING`` ones do not."""
    scripts = {path.stem for path in folder.glob("*.py")}
    graph: dict[str, dict[str, Edge]] = {}
    for path in sorted(folder.glob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        type_only = _type_checking_lines(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                if name in scripts and name != path.stem and node.lineno not in type_only:
                    edge = Edge(path.stem, name, node.lineno, "import")
                    graph.setdefault(path.stem, {}).setdefault(name, edge)
    return graph


def test_no_benchmark_script_imports_itself_through_others() -> None:
    graph = script_graph(BENCHMARKS)
    assert graph, "the graph sees the scripts that import each other"
    assert cycles(graph) == []


def test_the_script_check_finds_a_cycle_closed_by_a_deferred_import(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("import b\n")
    (tmp_path / "b.py").write_text("def main():\n    import a\n")
    assert cycles(script_graph(tmp_path)) == ["a (1, import) → b (2, import) → a"]


README = PACKAGE.parent / "README.md"


def _architecture() -> str:
    text = README.read_text()
    return text[
        text.index("## Architecture\n") : text.index("\n## ", text.index("## Architecture"))
    ]


def test_the_readme_draws_these_layers() -> None:
    section = _architecture()
    diagram = section.split("```text\n")[1].split("```")[0]
    drawn = [tuple(line.split("  ")[0].split(" · ")) for line in diagram.splitlines()]
    assert drawn == [layer for layer in reversed(LAYERS[:-2])]  # not the two entry points


def test_the_readme_has_a_paragraph_per_package_naming_real_files() -> None:
    section = _architecture()
    for layer in LAYERS[:-2]:
        for package in layer:
            path = PACKAGE / package if (PACKAGE / package).is_dir() else PACKAGE / f"{package}.py"
            head = f"**`{package}/`**" if path.is_dir() else f"**`{package}.py`**"
            assert head in section, f"no paragraph for {package}"
            paragraph = section.split(head, 1)[1].split("\n\n", 1)[0]
            for name in re.findall(r"`([\w/]+(?:\.py|/))`", paragraph):
                nested = path.is_dir() and any(path.rglob(name.rstrip("/")))
                here = [path / name, PACKAGE / name, PACKAGE.parent / name]
                assert nested or any(p.exists() for p in here), name
