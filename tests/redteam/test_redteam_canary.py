"""The red-team canary itself: a secret anywhere in what a test hands it fails the test, a
batch of results included (whose own repr is only a count)."""

from __future__ import annotations

import pytest

from rewardrouter import RewardResult
from rewardrouter.results import ScoreBatch

from .conftest import Canary


@pytest.mark.parametrize("field", ["raw", "error_message", "terms"])
def test_a_secret_in_a_result_of_a_batch_is_found(canary: Canary, field: str) -> None:
    leaked = {
        "raw": {"echo": canary.value},
        "error_message": f"judge said {canary.value}",
        "terms": {canary.value: 1.0},
    }[field]
    result = RewardResult(0.0, "error", "r", **{field: leaked})
    batch = ScoreBatch([Routed(), None], [1.0, None], [1.0, None], {1: result})
    assert canary.value not in repr(batch)  # what a check of the repr alone would miss
    with pytest.raises(AssertionError, match="the secret leaked"):
        canary.absent_from(batch)
    canary.absent_from(ScoreBatch([Routed()], [1.0], [1.0], {}))  # and a clean batch passes


class Routed:
    """Where a sample scored by its route's single term came from (what the router records)."""

    route_name, level, first_term, misplaced = "r", "route", "t", None
