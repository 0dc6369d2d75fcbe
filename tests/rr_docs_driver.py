"""Run pages' blocks in order, each page in its own folder, as a reader would (tests/test_docs.py).

``python rr_docs_driver.py`` reads one request per line on stdin, a JSON object naming a page's
``plan`` (a JSON file of its runnable blocks: ``where``, ``language``, ``title``, ``code``), the
``folder`` to run it in and the ``log`` file for what it prints, and answers ``ok`` or
``failed`` on a line of stdout. One interpreter serves every page, so importing rewardrouter is
paid once; between pages the folder leaves ``sys.path`` and the modules imported from it are
forgotten, so each page sees only what its own blocks made.

A block with a title is written to that file; a ``yaml`` block is then loaded and compiled as a
router config, a ``json`` block parsed, a ``python`` block run as a script of its own (a fresh
``__main__`` namespace, the folder first on ``sys.path``), a ``bash`` block run with
``bash -euo pipefail``. The first block that fails ends the page with its place in the page.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any


def run(block: dict[str, Any]) -> None:
    code, title, language = block["code"], block["title"], block["language"]
    if title is not None:
        Path(title).parent.mkdir(parents=True, exist_ok=True)
        Path(title).write_text(code)
    if language == "yaml":
        from rewardrouter import compile_router, load_config

        path = Path(title) if title is not None else Path(".block.yaml")
        if title is None:
            path.write_text(code)
        with compile_router(load_config(path)):
            pass
    elif language == "json":
        json.loads(code)
    elif language == "python" and title is None:
        exec(compile(code, block["where"], "exec"), {"__name__": "__main__"})
    elif language == "bash":
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", code])
        if done.returncode != 0:
            raise SystemExit(f"exited {done.returncode}")


def page(plan: Path, folder: Path) -> bool:
    """Every block of ``plan`` in ``folder``; False at the first that fails."""
    os.chdir(folder)
    os.environ["HOME"] = str(folder)
    sys.path.insert(0, str(folder))  # as `python block.py` run from this folder has it
    try:
        for block in json.loads(plan.read_text()):
            print(f"=== {block['where']} ({block['language']})", flush=True)
            try:
                run(block)
            except BaseException:  # SystemExit from a block or a bash failure included
                print(f"FAILED {block['where']}\n--- block\n{block['code']}", flush=True)
                traceback.print_exc()
                return False
        return True
    finally:
        sys.path.remove(str(folder))
        for name, module in list(sys.modules.items()):
            if str(getattr(module, "__file__", None) or "").startswith(str(folder)):
                del sys.modules[name]


def main() -> int:
    answers = os.fdopen(os.dup(1), "w", buffering=1)  # the replies; fd 1 goes to each page's log
    for line in sys.stdin:
        request = json.loads(line)
        with open(request["log"], "w") as log:
            sys.stdout.flush()
            sys.stderr.flush()
            saved = os.dup(1), os.dup(2)
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            try:
                passed = page(Path(request["plan"]), Path(request["folder"]))
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
        answers.write("ok\n" if passed else "failed\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
