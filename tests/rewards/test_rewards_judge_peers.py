"""``judge``'s MT-Bench and Prometheus parsers against the peers' own, on the peers' own data.

Read at run time from checkouts (``tests/rr_checkouts.py``; nothing of theirs is copied here)
and compared by ``benchmarks/judge_suites.py``, which prints the same tables:

- GPT-4's MT-Bench judgments of public FastChat runs, each read by ``parser: mt_bench`` and by
  FastChat's own patterns compiled from its ``fastchat/llm_judge/common.py``;
- the cases of Prometheus' parser tests, each read by ``parser: prometheus`` and by Prometheus'
  ``parse_output`` imported from its checkout.

Each test skips, saying how to provide it, when its checkout is not there.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
import rr_benchmarks
from rr_checkouts import FASTCHAT, MT_BENCH_RUNS, PROMETHEUS, checkout, found, how_to_get


@pytest.fixture(scope="module")
def suites() -> ModuleType:
    return rr_benchmarks.load("judge_suites")


def report(suites: ModuleType, tally: Any) -> str:
    return f"\n{suites.HEADER}\n{tally.row()}"


def test_mt_bench_reads_every_gpt4_judgment_fastchat_reads(suites: ModuleType) -> None:
    fastchat = checkout(FASTCHAT)
    runs = [root for run in MT_BENCH_RUNS if (root := found(run)) is not None]
    if not runs:
        pytest.skip(f"no public MT-Bench run: {how_to_get(MT_BENCH_RUNS[0])}")
    tally, unlike_record = suites.mt_bench(fastchat, runs)
    print(report(suites, tally))
    # FastChat's patterns, compiled from its code, give the score it recorded for each
    assert unlike_record == []
    assert tally.peer_reads > 0
    # the same score wherever FastChat reads one, and no score where it reads none
    assert tally.false_positives == []
    assert tally.misses == []
    assert tally.agreements == tally.cases


def test_prometheus_reads_its_own_parser_tests_without_a_false_positive(
    suites: ModuleType,
) -> None:
    tally, failing = suites.prometheus(checkout(PROMETHEUS))
    print(report(suites, tally))
    assert failing == []  # Prometheus' parser passes its tests: its verdicts are the ones meant
    assert tally.peer_reads > 0
    assert tally.false_positives == []
    # every score written in Prometheus' format ([RESULT] N) is read; what `prometheus` refuses
    # is a score written without the marker its rubric asks for ("Score: 3"), which its own
    # parser also reads
    assert [v.reply for v in tally.misses if "[result]" in v.reply.lower()] == []
