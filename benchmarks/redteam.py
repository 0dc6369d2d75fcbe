"""The red-team suite as a table: how many hostile outputs each class holds, and how many held.

Runs ``tests/redteam`` (every hostile program and response, each beside an honest sample of the
same batch, through the router) with pytest and prints one row per reward kind and attack class:
cases, cases that held (the hostile output earned nothing, the honest one was scored right,
the secret stayed out of every result and log), skipped (a set-up this machine cannot make) and
seconds. A row whose cases did not all hold is a hole in a grader.

    python benchmarks/redteam.py [pytest arguments, e.g. -k code]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

SUITE = Path(__file__).resolve().parent.parent / "tests" / "redteam"


def main() -> int:
    with tempfile.TemporaryDirectory() as where:
        report = Path(where) / "redteam.xml"
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(SUITE),
             f"--junitxml={report}", *sys.argv[1:]],
            capture_output=True,
            text=True,
            check=False,
        )  # fmt: skip
        if not report.exists():
            sys.stderr.write(done.stdout[-3000:] + done.stderr[-3000:])
            return done.returncode or 1
        cases = ET.parse(report).getroot().iter("testcase")
        rows: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0, 0, 0.0])
        for case in cases:
            kind = case.get("classname", "").rsplit(".", 1)[-1].removeprefix("test_redteam_")
            name = case.get("name", "").split("[", 1)[0].removeprefix("test_")
            row = rows[(kind, name)]
            row[0] += 1
            if case.find("skipped") is not None:
                row[2] += 1
            elif case.find("failure") is None and case.find("error") is None:
                row[1] += 1
            row[3] += float(case.get("time", 0.0))
    width = max(len(name) for _, name in rows) + 2
    print(f"{'kind':<8}{'class':<{width}}{'cases':>6}{'held':>6}{'skipped':>9}{'seconds':>9}")
    totals = [0, 0, 0, 0.0]
    for (kind, name), (count, held, skipped, seconds) in sorted(rows.items()):
        print(f"{kind:<8}{name:<{width}}{count:>6}{held:>6}{skipped:>9}{seconds:>9.1f}")
        for i, value in enumerate((count, held, skipped, seconds)):
            totals[i] += value
    count, held, skipped, seconds = totals
    print(f"{'all':<8}{'':<{width}}{count:>6}{held:>6}{skipped:>9}{seconds:>9.1f}")
    print(f"pytest: {done.stdout.strip().splitlines()[-1] if done.stdout.strip() else '?'}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
