"""HumanEval's own problems through ``kind: code``: do its tests convert, and does each canonical
solution (written by HumanEval's authors, not by us) pass them while a wrong one fails?

Reads ``HumanEval.jsonl.gz`` (or ``.jsonl``) from a checkout of openai/human-eval at run time,
grades each problem's canonical solution and a wrong one (the prompt with ``return None``) through
a compiled router, and prints a table: problems whose tests the grader checks outside the
program, canonical solutions scored 1.0, wrong ones scored 0.0, and the tests refused (with the
construct that stopped them).

    python benchmarks/humaneval.py PATH/human-eval/data/HumanEval.jsonl.gz
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

from rewardrouter import compile_router
from rewardrouter.rewards.code import LabelError, parse_tests


def problems(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def fenced(program: str) -> str:
    return f"```python\n{program}\n```"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("data", type=Path, help="HumanEval.jsonl.gz of a human-eval checkout")
    opts = parser.parse_args()
    rows = problems(opts.data)
    refused: Counter[str] = Counter()
    graded = []
    for row in rows:
        label = {"test": row["test"], "entry_point": row["entry_point"]}
        try:
            parse_tests(label)
        except LabelError as exc:
            found = re.search(r"\): ([^;]+);", str(exc))
            refused[found.group(1) if found else str(exc)[:60]] += 1
            continue
        graded.append((row, label))
    config = {
        "routes": {
            "code": {
                "rewards": {
                    "tests": {
                        "kind": "code",
                        "kwargs": {"scoring": "all", "limits": {"timeout": 10}},
                    }
                }
            }
        }
    }
    samples = [
        {"response": fenced(row["prompt"] + body), "label": label, "metadata": {"dataset": "code"}}
        for row, label in graded
        for body in (row["canonical_solution"], "    return None\n")
    ]
    began = time.perf_counter()
    with compile_router(config) as router:
        results = router.score_sync(samples)
    took = time.perf_counter() - began
    right = [r.reward for r in results[0::2]]
    wrong = [r.reward for r in results[1::2]]
    failing = [row["task_id"] for (row, _), r in zip(graded, right, strict=True) if r != 1.0]
    print(f"{len(rows)} HumanEval problems, graded in {took:.1f} s")
    print(f"tests checked outside the program   {len(graded):>4}")
    print(f"canonical solution scored 1.0       {right.count(1.0):>4}")
    print(f"`return None` scored 0.0            {wrong.count(0.0):>4}")
    print(f"tests refused                       {sum(refused.values()):>4}")
    for why, count in refused.most_common():
        print(f"  {count:>3}  {why}")
    if failing:
        print(f"canonical solutions not scored 1.0: {', '.join(failing)}")


if __name__ == "__main__":
    main()
