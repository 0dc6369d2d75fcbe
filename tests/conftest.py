from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import rr_testfns

from rewardrouter import Router, compile_router

#: How a file marks every test of its own slow (a line of its own, at the top level).
SLOW_FILE = "pytestmark = pytest.mark.slow"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under ``-m "not slow"`` (``make test-quick``), a file whose every test is slow is not
    imported at all: it would be collected only to be deselected, and importing the trainers'
    packages (verl, OpenRLHF, Ray, transformers) is most of the quick tier's collection time."""
    if config.getoption("markexpr", "") != "not slow" or collection_path.suffix != ".py":
        return None
    if not collection_path.name.startswith("test_"):
        return None
    with collection_path.open(encoding="utf-8") as source:
        if any(line.startswith(SLOW_FILE) for line in source):
            return True
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files with a ``slow`` test first, each file's tests in their order: ``make test``
    hands whole files to its workers in this order (``--dist loadfile --no-loadscope-reorder``),
    so that the long files start at once and the many short ones fill the end, rather than one
    long file running alone while the other workers are done."""
    slow = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.path not in slow)


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The last lines of a run that skipped tests: how many, and why, grouped by reason (a
    missing trainer checkout, no CUDA device), so that such a run never reads as a full pass."""
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        return
    reasons: dict[str, int] = {}
    for report in skipped:
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        reason = reason.removeprefix("Skipped: ")
        reasons[reason] = reasons.get(reason, 0) + 1
    terminalreporter.write_sep("=", f"NOT A FULL RUN: {len(skipped)} test(s) skipped", yellow=True)
    for reason, count in sorted(reasons.items(), key=lambda item: -item[1]):
        terminalreporter.write_line(f"  {count} skipped: {reason}")


@pytest.fixture(autouse=True)
def _clear_calls() -> Iterator[None]:
    rr_testfns.CALLS.clear()
    yield
    rr_testfns.CALLS.clear()


@pytest.fixture(autouse=True)
def _root_logger_as_it_was() -> Iterator[None]:
    """Handlers and the level a test's code gave the root logger (``logging.basicConfig`` in a
    command run in-process) go with the test: left behind, they write to the test's closed
    capture stream and let INFO records of libraries reach the tests that follow."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    for handler in root.handlers[:]:
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)


@pytest.fixture(autouse=True)
def _fresh_trainer_warnings() -> Iterator[None]:
    """Each test starts with no trainer-hook warning counted or emitted: the counters are a
    trainer process's own, and one worker runs many test files."""
    from rewardrouter.integrations import _metrics

    for kept in (_metrics.WARNINGS, _metrics._emitted, _metrics._counted):
        kept.clear()
    yield


@pytest.fixture
def make_router() -> Iterator[Any]:
    """``make_router(config_dict) -> Router``; every router made is closed after the test."""
    made: list[Router] = []

    def make(config: dict[str, Any]) -> Router:
        router = compile_router(config)
        made.append(router)
        return router

    yield make
    for router in made:
        router.close()


@pytest.fixture
def servers() -> Iterator[Any]:
    """An ``rr_remote.Servers``: the HTTP servers a test starts on 127.0.0.1, stopped after it."""
    from rr_remote import Servers  # aiohttp, for the tests that serve only

    started = Servers()
    yield started
    started.stop()
