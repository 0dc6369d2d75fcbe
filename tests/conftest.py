from __future__ import annotations

import json
import logging
import os
import time
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
    _cpu_report(terminalreporter)
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


# -- where the suite's CPU goes (RR_CPU_REPORT=<folder>) -------------------------------------------

#: Per test file: CPU seconds of the test process, of the processes it waited for (commands,
#: workers, servers, Ray's daemons at shutdown), and wall seconds; this process's tests only.
_CPU: dict[str, list[float]] = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    if not os.environ.get("RR_CPU_REPORT"):
        yield
        return
    before, started = os.times(), time.monotonic()
    yield
    after = os.times()
    spent = _CPU.setdefault(item.nodeid.split("::")[0], [0.0, 0.0, 0.0])
    spent[0] += after.user + after.system - before.user - before.system
    spent[1] += (after.children_user + after.children_system
                 - before.children_user - before.children_system)  # fmt: skip
    spent[2] += time.monotonic() - started


def pytest_sessionfinish(session: pytest.Session) -> None:
    folder = os.environ.get("RR_CPU_REPORT")
    if folder and _CPU:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"cpu.{worker}.json").write_text(json.dumps(_CPU))


def _cpu_report(terminalreporter: Any) -> None:
    """The CPU and wall seconds of the run's tests by family (tests/<family>/...), from every
    worker's record: where ``make test``'s time goes."""
    folder = os.environ.get("RR_CPU_REPORT")
    if not folder:
        return
    families: dict[str, list[float]] = {}
    for record in Path(folder).glob("cpu.*.json"):
        for path, spent in json.loads(record.read_text()).items():
            parts = path.split("/")
            family = parts[1] if len(parts) > 2 else "tests/*.py"
            total = families.setdefault(family, [0.0, 0.0, 0.0])
            for i, value in enumerate(spent):
                total[i] += value
    terminalreporter.write_sep(
        "=", "CPU by test family (s): tests, their waited-for children, wall"
    )
    for family, (own, children, wall) in sorted(families.items(), key=lambda f: -f[1][0] - f[1][1]):
        terminalreporter.write_line(
            f"  {family:<14} {own + children:7.1f} = {own:6.1f} + {children:6.1f}   {wall:7.1f}"
        )
    own, children, wall = (sum(f[i] for f in families.values()) for i in range(3))
    terminalreporter.write_line(
        f"  {'all':<14} {own + children:7.1f} = {own:6.1f} + {children:6.1f}   {wall:7.1f}"
    )


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
