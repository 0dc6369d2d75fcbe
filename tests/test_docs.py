"""Every page of the manual runs as a reader would run it, and the site builds.

The pages: README.md, docs/**/*.md, examples/*/README.md and benchmarks/README.md. The
convention (docs/development.md states it for writers):

- a fence's first word is its language: ``python`` and ``bash`` blocks run, ``yaml`` blocks are
  router configs (loaded and compiled), ``json`` blocks are parsed, ``text`` blocks are output
  and never run;
- ``title="NAME"`` after the language makes the block a file: the test writes it to ``NAME``
  before the page's later blocks run (a ``python`` file is written, not run; a ``yaml`` file is
  written, then compiled);
- ``norun: <reason>`` after the language keeps a code block from running; the reason is required;
- any other fence (a bare one included) fails :func:`test_every_block_is_run_or_marked`.

Each page's blocks run in order, in one fresh folder that holds links to the repository's
``conf/``, ``examples/``, ``schemas/`` and ``benchmarks/`` (what the root of a clone holds): a
block may use only what the repository ships and what the page's earlier blocks made. One
driver process runs every page in turn (``tests/rr_docs_driver.py``): Python blocks as scripts
of their own namespace, bash blocks with ``bash -euo pipefail``, ``rewardrouter`` commands as
processes of their own.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a long file: `make test` starts it first

ROOT = Path(__file__).resolve().parents[1]
PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").rglob("*.md")),
    *sorted((ROOT / "examples").glob("*/README.md")),
    ROOT / "benchmarks" / "README.md",
]
SHIPPED = ("conf", "examples", "schemas", "benchmarks")

RUN = {"python", "bash"}
CHECKED = {"yaml", "json"}
OUTPUT = {"text"}

_FENCE = re.compile(r"^(?P<indent>\s*)```(?P<info>[^`]*)$")
_TITLE = re.compile(r'^title="(?P<name>[\w./-]+)"$')


@dataclass(frozen=True)
class Block:
    """A fenced block: where it starts (``docs/cli.md:15``), its language, marker and code."""

    where: str
    language: str
    norun: str | None
    title: str | None
    code: str


def blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page``, in order (indented fences in lists included)."""
    found: list[Block] = []
    lines = page.read_text().splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        language, _, rest = opening["info"].strip().partition(" ")
        rest = rest.strip()
        norun = rest[len("norun:") :].strip() if rest.startswith("norun:") else None
        title = _TITLE.match(rest)
        if rest and norun is None and title is None:
            norun = ""  # an attribute that is neither `norun: reason` nor a title: unmarked
            language = f"{language} {rest}"
        end = i + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        code = textwrap.dedent("\n".join(lines[i + 1 : end])) + "\n"
        where = f"{page.relative_to(ROOT)}:{i + 1}"
        found.append(Block(where, language, norun, title and title["name"], code))
        i = end + 1
    return found


BY_PAGE = {page: blocks(page) for page in PAGES}
ALL = [block for page in PAGES for block in BY_PAGE[page]]


def runnable(page: Path) -> list[Block]:
    return [b for b in BY_PAGE[page] if b.language in RUN | CHECKED and b.norun is None]


RUNNABLE_PAGES = [page for page in PAGES if runnable(page)]


def test_every_block_is_run_or_marked() -> None:
    wrong = [
        f"{b.where}: ```{b.language}"
        for b in ALL
        if b.language not in RUN | CHECKED | OUTPUT or b.norun == ""
    ]
    assert not wrong, (
        "fences must be ```python, ```bash, ```yaml or ```json (run or checked, optionally "
        'with title="FILE"), ```text (output), or a code language followed by '
        "`norun: <reason>`:\n" + "\n".join(wrong)
    )
    # the extractor still finds the manual's blocks, and the pages still make their own files
    assert sum(len(runnable(page)) for page in PAGES) >= 30
    assert sum(b.title is not None for b in ALL) >= 4


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "reader"
    folder.mkdir()
    for name in SHIPPED:
        (folder / name).symlink_to(ROOT / name)
    return folder


def _env(folder: Path, columns: int = 120) -> dict[str, str]:
    return {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(folder),
        "COLUMNS": str(columns),
        "LANG": "C.UTF-8",
    }


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[subprocess.Popen[str]]:
    """One interpreter that runs the pages (tests/rr_docs_driver.py), started once."""
    home = tmp_path_factory.mktemp("home")
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "rr_docs_driver.py")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=_env(home),
        text=True,
    )
    yield process
    assert process.stdin is not None
    process.stdin.close()
    process.wait(timeout=60)


@pytest.mark.parametrize(
    "page", RUNNABLE_PAGES, ids=[str(p.relative_to(ROOT)) for p in RUNNABLE_PAGES]
)
def test_page(page: Path, tmp_path: Path, driver: subprocess.Popen[str]) -> None:
    """The page's blocks, in order, in a fresh folder."""
    folder = _folder(tmp_path)
    plan, log = tmp_path / "plan.json", tmp_path / "page.log"
    plan.write_text(json.dumps([asdict(b) for b in runnable(page)]))
    assert driver.stdin is not None and driver.stdout is not None
    driver.stdin.write(json.dumps({"plan": str(plan), "folder": str(folder), "log": str(log)}))
    driver.stdin.write("\n")
    driver.stdin.flush()
    ready, _, _ = select.select([driver.stdout], [], [], 600)
    answer = driver.stdout.readline().strip() if ready else "no answer in 600 s"
    assert answer == "ok", f"{page.relative_to(ROOT)}: {answer}\n{log.read_text()[-8000:]}"


def test_the_quick_start_output_is_what_the_job_prints(tmp_path: Path) -> None:
    """Every page's `make run` output, table and all, is today's output of the job."""
    shown = [b for b in ALL if b.language == "text" and "rewards per route" in b.code]
    assert shown, "no page shows the quick start's output any more"
    folder = _folder(tmp_path)
    done = subprocess.run(
        ["rewardrouter", "router=mixed"],
        cwd=folder,
        env=_env(folder, columns=80),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    printed = " ".join(done.stdout.split())
    for block in shown:
        assert " ".join(block.code.split()) in printed, (
            f"{block.where} no longer shows what `rewardrouter router=mixed` prints; paste:\n"
            f"{done.stdout}"
        )


def test_the_site_builds_without_a_warning(tmp_path: Path) -> None:
    """`make docs`: MkDocs with --strict; a broken link, anchor or API reference fails."""
    if shutil.which("mkdocs", path=str(Path(sys.executable).parent)) is None:
        pytest.fail("mkdocs is not installed: pip install -e '.[docs]' (make test installs it)")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-6000:]
    warnings = [line for line in done.stderr.splitlines() if line.startswith("WARNING")]
    assert not warnings, "\n".join(warnings)
    assert (tmp_path / "site" / "reference" / "index.html").is_file()


def test_the_readme_links_every_kind_page() -> None:
    readme = (ROOT / "README.md").read_text()
    pages = sorted((ROOT / "docs" / "kinds").glob("*.md"))
    assert len(pages) > 5
    unlinked = [p.name for p in pages if f"(docs/kinds/{p.name})" not in readme]
    assert unlinked == [], f"README's manual links no page for {unlinked}"


@pytest.mark.parametrize(
    ("target", "extras"),
    [("run", {"ifeval-lean"}), ("docs", {"ifeval-lean", "docs"})],
)
def test_make_run_and_docs_install_what_the_readme_says_and_no_test_tools(
    target: str, extras: set[str]
) -> None:
    """What `make run` and `make docs` would install from scratch (`make -n -B`): the runtime
    (and the docs extra), never the test tools and trainers' packages of `make test` (GBs); and
    `make run` installs bubblewrap where it can, as the README's quick start says."""
    if shutil.which("make") is None:
        pytest.skip("needs make")
    done = subprocess.run(
        ["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True, check=True
    )
    installs = [line for line in done.stdout.splitlines() if "pip install" in line]
    named = {e for line in installs for group in re.findall(r'-e "\.\[([^]]*)\]"', line)
             for e in group.split(",")}  # fmt: skip
    assert named == extras, installs
    assert not [line for line in installs if re.search(r"verl|openrlhf|bfcl|pytest", line)]
    if target == "run":
        assert "apt-get install -y -qq bubblewrap" in done.stdout
        readme = (ROOT / "README.md").read_text()
        assert re.search(r"bubblewrap for the code sandbox: as root on Debian or Ubuntu", readme)
