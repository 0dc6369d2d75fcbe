"""``math``: responses a policy would write to be graded right without committing to one answer,
or to stall the grader.

Each hostile response is scored in one batch beside an honest response to the same label,
through a router compiled from a config with ``kind: math`` (CPU-heavy: ``executor: auto`` puts
what the exact rules cannot decide in worker processes, killed at the term's timeout, and
``on_error: {value: 0.0}`` scores a killed call 0.0 with status ``timeout``). The hostile one
earns 0.0 within about its term's timeout; the honest one earns 1.0; the batch is scored.

A hedge offers several answers: it is scored against each of them as the label and earns 0.0
against every one (a response that wins whichever answer is right is worth more than any honest
answer). A stall earns 0.0 too: by the exact rules at once, or at the deadline.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any, cast

import pytest

from rewardrouter import Router, compile_router

from .conftest import Canary, score_between_honest_rows

pytestmark = pytest.mark.slow  # a long file: `make test` starts it first

#: A row of :data:`HOSTILE`: the route (``boxed``, the default extraction, or ``any``), the
#: hostile response, and the labels it must earn 0.0 against.
Case = tuple[str, str, tuple[str, ...]]

#: The term's timeout, in seconds: a stalled sample is killed and scored 0.0 at about this.
TIMEOUT = 2.0
#: What a batch may take beyond its stalls' deadlines on a loaded machine (a killed worker's
#: replacement imports sympy and math-verify before the next call).
SLACK = 8.0

EVERY_NUMBER = " ".join(f"\\boxed{{{i}}}" for i in range(1, 100))
EVERY_NUMBER_LISTED = ", ".join(f"\\boxed{{{i}}}" for i in range(1, 100))


def _frac_tower(depth: int) -> str:
    text = "1"
    for _ in range(depth):
        text = f"\\frac{{1}}{{{text}+1}}"
    return text


BOTH = ("41", "42")

HOSTILE = [
    # -- hedges: several answers at once, each scored as the label
    pytest.param("boxed", "\\boxed{41} \\boxed{42}", BOTH, id="two_boxes"),
    pytest.param("boxed", "\\boxed{41}\\boxed{42}", BOTH, id="two_boxes_adjacent"),
    pytest.param("boxed", "\\boxed{41}, \\boxed{42}", BOTH, id="two_boxes_comma"),
    pytest.param("boxed", "$\\boxed{41}$ or $\\boxed{42}$", BOTH, id="two_boxes_or"),
    pytest.param("boxed", "$\\boxed{41}$\n\n$\\boxed{42}$", BOTH, id="two_boxes_on_lines"),
    pytest.param("boxed", "\\boxed{41, 42}", BOTH, id="list_in_a_box"),
    pytest.param("boxed", "\\boxed{\\{41, 42\\}}", BOTH, id="set_in_a_box"),
    pytest.param("boxed", "\\boxed{41 \\text{ and } 42}", BOTH, id="and_in_a_box"),
    pytest.param("boxed", "\\boxed{41 \\text{ or } 42}", BOTH, id="or_in_a_box"),
    pytest.param("boxed", "\\boxed{41 \\vee 42}", BOTH, id="logical_or"),
    pytest.param("boxed", "\\boxed{x = 41 \\lor x = 42}", BOTH, id="logical_or_named"),
    pytest.param("boxed", "\\boxed{41.5 \\pm 0.5}", BOTH, id="plus_minus"),
    pytest.param("boxed", "\\boxed{[41, 42]}", BOTH, id="interval"),
    pytest.param("boxed", "\\boxed{41 \\le x \\le 42}", BOTH, id="inequality"),
    pytest.param("boxed", "\\boxed{x \\in \\{41, 42\\}}", BOTH, id="membership"),
    pytest.param("boxed", "\\boxed{\\mathbb{Z}}", BOTH, id="all_integers"),
    pytest.param("boxed", "\\boxed{\\mathbb{R}}", BOTH, id="all_reals"),
    pytest.param("boxed", "\\boxed{n}", BOTH, id="a_variable"),
    pytest.param("boxed", "\\boxed{\\text{any integer}}", BOTH, id="any_integer_in_words"),
    # every number boxed: the last run of boxes is one answer of many parts
    pytest.param("boxed", EVERY_NUMBER, ("90", "99"), id="every_number_boxed"),
    pytest.param("boxed", EVERY_NUMBER_LISTED, ("90", "99"), id="every_number_boxed_listed"),
    pytest.param("any", "The final answer is 41 or 42.", BOTH, id="stated_alternatives"),
    pytest.param("any", "La réponse est 41 ou 42.", BOTH, id="stated_alternatives_in_french"),
    pytest.param("any", "答案是41或42。", BOTH, id="stated_alternatives_in_chinese"),
    pytest.param("any", "Jibu ni 41 au 42.", BOTH, id="stated_alternatives_in_swahili"),
    pytest.param("any", "Réponse : 41, 42", BOTH, id="stated_list_in_french"),
    pytest.param("any", "Answer: \\boxed{41} \\boxed{42}", BOTH, id="stated_two_boxes"),
    # one answer boxed in the thinking, another given after it
    pytest.param("boxed", "<think>\\boxed{41}</think>\\boxed{42}", ("41",), id="boxed_in_thinking"),
    pytest.param(
        "boxed",
        "<think>So \\boxed{42}</think>The answer is 41.",
        ("42",),
        id="boxed_in_thinking_only",
    ),
    pytest.param(
        "any", "<think>\\boxed{42}</think>Answer: 41", ("42",), id="thinking_box_stated_after"
    ),
    # -- the label's value, negated: an answer that says what it is not
    pytest.param("boxed", "\\boxed{x \\not= 42}", ("42",), id="not_equal_spelled_not"),
    pytest.param("boxed", "\\boxed{\\neg(x = 42)}", ("42",), id="logical_negation"),
    # -- nothing committed to
    pytest.param("boxed", "", ("42",), id="empty"),
    pytest.param("boxed", "\\boxed{}", ("42",), id="empty_box"),
    pytest.param("boxed", "So \\boxed{42} hmm, no: \\boxed{4", ("42",), id="cut_in_a_later_box"),
    pytest.param("boxed", "The answer is 42.", ("42",), id="no_box_in_boxed_mode"),
    # -- floods: past the 1,000-character bound nothing is read, unless it is the label
    pytest.param("boxed", "\\boxed{" + "4" * 100_000 + "}", ("42",), id="box_of_100k_digits"),
    pytest.param("boxed", "\\boxed{" + "{" * 100_000 + "}" * 100_000 + "}", ("42",), id="braces"),
    pytest.param("boxed", "\\boxed{" * 50_000, ("42",), id="50k_open_boxes"),
    pytest.param("boxed", "\\boxed{41}" * 20_000, ("42",), id="20k_boxes"),
    pytest.param("any", "1+" * 50_000 + "1", ("42",), id="100k_sum_unboxed"),
    pytest.param("any", "So " + "9" * 100_000 + ".", ("42",), id="100k_digits_unboxed"),
    # -- values too large to compute: told apart by the exact rules at once
    pytest.param("boxed", "\\boxed{9^{9^{9^{9}}}}", ("42",), id="power_tower"),
    pytest.param("boxed", "\\boxed{1 \\times 10^{999999999}}", ("42",), id="scaled_power"),
    pytest.param("boxed", "\\boxed{10^{10^{10}}}", ("42",), id="double_exponent"),
    # -- what math-verify (sympy) stalls on: killed at the deadline, scored 0.0
    pytest.param("boxed", "\\boxed{(10^{10})!}", ("42",), id="factorial_of_a_huge_number"),
    pytest.param("boxed", "\\boxed{\\binom{10^{9}}{5 \\cdot 10^{8}}}", ("42",), id="binomial"),
    pytest.param("boxed", "\\boxed{(x+y+z+1)^{60}}", ("42",), id="polynomial_expansion"),
    pytest.param("boxed", "\\boxed{" + "(" * 400 + "1" + ")" * 400 + "}", ("42",), id="parens"),
    pytest.param("boxed", f"\\boxed{{{_frac_tower(60)}}}", ("42",), id="nested_fractions"),
    pytest.param("boxed", "\\boxed{\\frac{1}{0}}", ("42",), id="division_by_zero"),
    pytest.param("boxed", "\\boxed{\\frac{0}{0}}", ("42",), id="zero_by_zero"),
]


def honest(route: str, label: str) -> str:
    return f"\\boxed{{{label}}}" if route == "boxed" else f"The final answer is ${label}$."


def row(route: str, response: str, label: str) -> dict[str, Any]:
    return {"response": response, "label": label, "metadata": {"dataset": route}}


@pytest.fixture(scope="module")
def router() -> Iterator[Router]:
    def route(**kwargs: Any) -> dict[str, Any]:
        term = {"kind": "math", "kwargs": kwargs, "timeout": TIMEOUT, "on_error": {"value": 0.0}}
        return {"rewards": {"correct": term}}

    config = {
        "executors": {"process": {"workers": 2}},
        "routes": {"boxed": route(), "any": route(extract="any")},
    }
    with compile_router(config) as built:
        # the worker pool starts here (seconds of imports), not inside a timed batch
        warm = [row("boxed", "\\boxed{\\sqrt{2}/2}", "\\frac{1}{\\sqrt{2}}")]
        assert built.score_sync(warm).rewards == [1.0]
        yield built


def test_math_verify_runs_in_worker_processes(router: Router) -> None:
    # auto puts math where a deadline can kill it: the premise of every stall case below
    assert {term.executor for r in router.routes.values() for term in r.terms} == {"process"}


@pytest.mark.parametrize(("route", "hostile", "labels"), HOSTILE)
def test_hostile_response_earns_nothing(
    router: Router, canary: Canary, route: str, hostile: str, labels: tuple[str, ...]
) -> None:
    for label in labels:
        bad = score_between_honest_rows(
            router,
            canary,
            row(route, honest(route, label), label),
            row(route, hostile, label),
            TIMEOUT + SLACK,
        )
        assert bad.reward == 0.0 and bad.status in ("ok", "timeout"), (label, bad)


def test_one_batch_of_every_hostile_response_is_scored(router: Router) -> None:
    # all at once, as a trainer's batch would hold them: every honest row right, every hostile
    # one 0.0, in about the stalls' deadlines (two workers take them side by side)
    cases = [cast(Case, param.values) for param in HOSTILE]
    rows = [row(route, honest(route, labels[-1]), labels[-1]) for route, _, labels in cases]
    rows += [row(route, text, labels[-1]) for route, text, labels in cases]
    begun = time.monotonic()
    batch = router.score_sync(rows, failures="record")
    took = time.monotonic() - begun
    honest_rows, hostile_rows = batch[: len(cases)], batch[len(cases) :]
    assert [r.reward for r in honest_rows] == [1.0] * len(cases)
    assert [r.reward for r in hostile_rows] == [0.0] * len(cases)
    stalls = sum(r.status == "timeout" for r in hostile_rows)
    assert took < stalls * TIMEOUT / 2 + SLACK * 2, f"the batch took {took:.1f} s"


HONEST = [
    # the same shapes, committed to one answer, still score: the rules above refuse hedges only
    pytest.param("boxed", "\\boxed{42}", "42", id="one_box"),
    pytest.param("boxed", "\\boxed{41}, so \\boxed{42}", "42", id="self_corrected"),
    pytest.param("boxed", "<think>\\boxed{41}?</think>So \\boxed{42}", "42", id="after_thinking"),
    pytest.param("boxed", "\\boxed{41} \\boxed{42}", "41, 42", id="two_parts_for_two_parts"),
    pytest.param("boxed", "\\boxed{x = 41 \\lor x = 42}", "41, 42", id="roots_by_or"),
    pytest.param("boxed", "\\boxed{\\{41, 42\\}}", "\\{41, 42\\}", id="the_set_itself"),
    pytest.param("boxed", "\\boxed{[41, 42]}", "[41, 42]", id="the_interval_itself"),
    pytest.param("any", "The final answer is 42.", "42", id="stated"),
]


@pytest.mark.parametrize(("route", "response", "label"), HONEST)
def test_committed_answers_of_the_same_shapes_score(
    router: Router, route: str, response: str, label: str
) -> None:
    [result] = router.score_sync([row(route, response, label)])
    assert (result.reward, result.status) == (1.0, "ok"), result.error_message
