"""``benchmarks/external_suites.py`` finds a peer suite's gold/prediction pair copied into tests.

The peer suite is read at run time only; its pairs found in the project's ``tests/`` are listed
(and fail the benchmark). Here the suite and the tests are made up, so that the search itself is
shown to find a pair re-wrapped or reordered, and nothing else.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
import rr_benchmarks


@pytest.fixture(scope="module")
def suites() -> ModuleType:
    return rr_benchmarks.load("external_suites")


def test_copied_pairs_are_found_rewrapped_or_reordered(suites: ModuleType, tmp_path: Path) -> None:
    case = suites.Case("test_peer::test_fractions", "$\\frac{3}{8}$", "0.375", True)
    same_answer = suites.Case("test_peer::test_same", "7", "7", True)  # no pair to copy
    (tmp_path / "test_ours.py").write_text(
        "ROWS = [\n"
        '    ("0.375", "\\\\boxed{\\\\frac{3}{8}}"),\n'  # reordered and boxed: line 2
        '    ("\\\\frac{5}{8}", "0.625"),\n'  # a case of the same class of our own
        "]\n"
        'check("$\\\\frac{3}{8}$", "0.375")\n'  # a call's arguments: line 5
        'check("7", "7")\n'
    )
    found = suites.copied_pairs([case, same_answer], tmp_path)
    assert [(Path(where).name, line, c) for where, line, c in found] == [
        ("test_ours.py", 2, case),
        ("test_ours.py", 5, case),
    ]
