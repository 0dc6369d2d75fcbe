from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import rr_testfns

from rewardrouter import Router, compile_router


@pytest.fixture(autouse=True)
def _clear_calls() -> Iterator[None]:
    rr_testfns.CALLS.clear()
    yield
    rr_testfns.CALLS.clear()


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
