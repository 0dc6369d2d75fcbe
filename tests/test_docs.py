"""Every code block of README.md and examples/*/README.md runs, read from the Markdown itself.

The convention (the README's Development section states it for writers):

- a fence's first word is its language: ``python`` and ``bash`` blocks run, ``yaml`` blocks are
  validated as router configs (with ``RouterConfig``), ``json`` blocks are parsed, ``text``
  blocks are output and never run;
- ``norun: <reason>`` after the language keeps a code block from running; the reason is required;
- any other fence (a bare one included) fails :func:`test_every_block_is_run_or_marked`;
- blocks run in a scratch folder that holds ``conf/`` and ``examples/`` (links to the repository's)
  and stand-ins for the user's files the prose names: ``my.jsonl``, ``router.yaml``,
  ``my_router.yaml`` and ``my_rewards.py``; ``/abs/path`` in a block is that folder.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from rewardrouter.config.models import RouterConfig

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "examples").glob("*/README.md"))]

RUN = {"python", "bash"}
CHECKED = {"yaml", "json"}
OUTPUT = {"text"}

_FENCE = re.compile(r"^(?P<indent>\s*)```(?P<info>[^`]*)$")


@dataclass(frozen=True)
class Block:
    """A fenced block: where it starts (``README.md:15``), its language, marker and code."""

    doc: Path
    line: int
    language: str
    norun: str | None
    code: str

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


def blocks(doc: Path) -> list[Block]:
    """Every fenced block of ``doc``, in order (indented fences in lists included)."""
    found: list[Block] = []
    lines = doc.read_text().splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        info = opening["info"].strip()
        language, _, rest = info.partition(" ")
        norun = rest.strip()[len("norun:") :].strip() if rest.strip().startswith("norun:") else None
        if rest.strip() and norun is None:
            norun = ""  # an attribute that is not `norun: reason`: reported as unmarked
            language = f"{language} {rest.strip()}"
        end = i + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        code = textwrap.dedent("\n".join(lines[i + 1 : end]))
        found.append(Block(doc, i + 1, language, norun, code + "\n"))
        i = end + 1
    return found


ALL = [block for doc in DOCS for block in blocks(doc)]
RUNNABLE = [b for b in ALL if b.language in RUN | CHECKED and b.norun is None]


def test_every_block_is_run_or_marked() -> None:
    wrong = [
        f"{b.where}: ```{b.language}"
        for b in ALL
        if b.language not in RUN | CHECKED | OUTPUT or b.norun == ""
    ]
    assert not wrong, (
        "fences must be ```python, ```bash, ```yaml or ```json (run or checked), ```text (output), "
        "or a code language followed by `norun: <reason>`:\n" + "\n".join(wrong)
    )
    assert len(RUNNABLE) >= 10  # the extractor still finds the README's blocks


# -- the scratch folder --------------------------------------------------------------------------

#: The reader's own router: small, with hand-scored examples and a reward module of their own.
MY_ROUTER = """\
default_route: qa
allowed_modules: [rewardrouter, my_rewards]
routes:
  qa:
    match: [rajpurkar/squad]
    rewards:
      correct: {kind: f1, on_error: skip}  # the example's code and IFEval labels: no text
    examples:
      - {response: "The Paris.", label: Paris, reward: 1.0}
  mine:
    rewards:
      mine: {path: my_rewards.custom_rm, kwargs: {strict: true}}
    examples:
      - {response: "42", label: "42", reward: 1.0}
"""

MY_REWARDS = """\
def custom_rm(args, sample, strict=False):
    return float(sample.response.strip() == str(sample.label).strip())


def judge(args, sample):
    right = sample.response.strip() == str(sample.label).strip()
    return {"score": float(right), "acc": right}
"""


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("docs")
    for name in ("conf", "examples"):
        (folder / name).symlink_to(ROOT / name)
    shutil.copy(ROOT / "examples" / "data" / "mixed.jsonl", folder / "my.jsonl")
    for name in ("router.yaml", "my_router.yaml"):
        (folder / name).write_text(MY_ROUTER)
    (folder / "my_rewards.py").write_text(MY_REWARDS)
    return folder


def _run(command: list[str], scratch: Path, block: Block) -> None:
    env = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(scratch),
        "COLUMNS": "120",
    }
    done = subprocess.run(
        command, cwd=scratch, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, (
        f"{block.where} exited {done.returncode}\n--- block\n{block.code}"
        f"--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}"
    )


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.where for b in RUNNABLE])
def test_block(block: Block, scratch: Path) -> None:
    code = block.code.replace("/abs/path", str(scratch))
    if block.language == "yaml":
        RouterConfig.model_validate(yaml.safe_load(code) or {})
    elif block.language == "json":
        json.loads(code)
    elif block.language == "bash":
        script = scratch / "block.sh"
        script.write_text(code)
        _run(["bash", "-euo", "pipefail", str(script)], scratch, block)
    else:
        # Run as pasted into a script of the reader's: no `if __name__ == "__main__":` guard.
        script = scratch / "block.py"
        script.write_text(code)
        _run([sys.executable, str(script)], scratch, block)


def test_the_quick_start_output_is_what_the_job_prints(scratch: Path) -> None:
    """The README's `make run` output, table and all, is today's output of the job."""
    readme = next(b for b in ALL if b.language == "text" and "rewards per route" in b.code)
    env = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(scratch),
        "COLUMNS": "80",
    }
    done = subprocess.run(
        ["rewardrouter", "router=mixed"],
        cwd=scratch,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    printed = " ".join(done.stdout.split())
    assert " ".join(readme.code.split()) in printed, (
        f"{readme.where} no longer shows what `rewardrouter router=mixed` prints; paste:\n"
        f"{done.stdout}"
    )
