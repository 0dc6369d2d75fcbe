"""The red-team suite's shared set-up: outputs a policy would write to game a grader or take the
trainer down, one test table per reward kind.

Every test runs with a secret in the trainer's environment and a secret file outside any
sandbox (``canary``); neither may show in a reward result, a log record or an error message,
and the trainer process (this one) must still be alive afterwards. A test proves a hostile
output earns nothing by asserting reward 0 (or that sample's own error status) next to an honest
sample of the same batch that is scored right.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rewardrouter import RewardResult, Router

#: The name of the environment variable that holds the trainer's secret during a test.
CANARY_ENV = "REWARDROUTER_REDTEAM_SECRET"


@dataclass(frozen=True)
class Canary:
    """A secret that must never leave the trainer: ``value`` is in the environment variable
    ``CANARY_ENV`` and in the file ``path`` (mode 0600, outside any sandbox)."""

    value: str
    path: Path

    def absent_from(self, *things: object) -> None:
        for thing in things:
            if isinstance(thing, Sequence) and not isinstance(thing, str | bytes):
                thing = list(thing)  # a batch's repr is a count: look at each of its results
            assert self.value not in repr(thing), f"the secret leaked into {repr(thing)[:300]}"


@pytest.fixture(scope="module")
def canary_value() -> str:
    """The secret of a test module: one value for all its tests, so that the servers and worker
    processes that a module starts once (and that inherit the environment they start in) hold
    the very secret that each of its tests looks for."""
    return f"canary-{secrets.token_hex(12)}"


@pytest.fixture(autouse=True)
def canary(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    canary_value: str,
) -> Iterator[Canary]:
    value = canary_value
    path = tmp_path / "trainer-secret.txt"
    path.write_text(value)
    path.chmod(0o600)
    monkeypatch.setenv(CANARY_ENV, value)
    caplog.set_level(logging.DEBUG)
    found = Canary(value, path)
    yield found
    assert value not in caplog.text, "the secret reached a log record"
    assert path.read_text() == value, "the trainer's secret file was changed"


def score_between_honest_rows(
    router: Router,
    canary: Canary,
    honest: dict[str, Any],
    hostile: dict[str, Any],
    deadline: float,
) -> RewardResult:
    """Score ``honest``, ``hostile``, ``honest`` as one batch and return the hostile row's
    result, for the caller's own check of it. Checked here: both honest rows are scored right
    (1.0, ``ok``), the batch ends within ``deadline`` seconds, the secret is in no result, and
    the hostile row's error message, if any, is short and quotes none of what it wrote."""
    begun = time.monotonic()
    batch = router.score_sync([honest, hostile, honest], failures="record")
    took = time.monotonic() - begun
    first, bad, last = batch
    assert (first.reward, first.status) == (1.0, "ok"), first.error_message
    assert (last.reward, last.status) == (1.0, "ok"), last.error_message
    assert took < deadline, f"the batch took {took:.1f} s"
    canary.absent_from(*batch)
    if bad.error_message is not None:  # a status says what happened, never what was written
        written = str(hostile["response"])
        assert len(bad.error_message) < 500 and written[:50] not in bad.error_message
    return bad
