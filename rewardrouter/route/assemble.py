"""From routed samples and their calls' outcomes to one :class:`ScoreBatch`, applying ``on_error``.

:class:`Triage` is what the router learns before any call: which samples are settled without
one (aborted, or carrying a reward) and which route each other sample takes.
:func:`assemble` then reads every route group's outcomes once: a sample whose route has one term
that returned a plain finite float keeps just that value (the common case, kept cheap: no
per-sample object); every other sample's outcomes go through :func:`combine`, the one place
where a term's ``on_error`` policy turns a failed call into a reward.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, Literal

from rewardrouter.compile.routes import BoundTerm, CompiledRoute
from rewardrouter.errors import RewardError
from rewardrouter.outcome import FloatReturns, InvalidReturn, Outcome, to_value
from rewardrouter.results import RewardResult, ScoreBatch, Status
from rewardrouter.route.groups import RouteGroup
from rewardrouter.route.precedence import Decision
from rewardrouter.trajectory import MALFORMED

Calls = list[tuple[BoundTerm, Outcome]]


@dataclass
class Triage:
    """The samples of one ``score`` call sorted before any reward call.

    ``settled`` holds the results of samples that need no call (aborted, or carrying a reward);
    every other sample ``i`` has ``decisions[i]`` and is listed under its route in ``routed``
    (indices ascending).
    """

    decisions: list[Decision | None]
    settled: dict[int, RewardResult] = field(default_factory=dict)
    routed: dict[str, tuple[CompiledRoute, list[int]]] = field(default_factory=dict)


def assemble(
    triage: Triage,
    groups: Sequence[RouteGroup],
    outcomes: Sequence[Sequence[Outcome]],
    evaluation: bool,
    record: bool = False,
) -> ScoreBatch:
    """The results of every sample of ``triage``, in input order, from each group's outcomes.

    Raises :class:`RewardError` for the first failure whose term says ``on_error: raise``,
    unless ``record``: then such a failure is recorded like ``on_error: skip`` and the sample
    listed in the batch's ``failures``.
    """
    n = len(triage.decisions)
    rewards: list[float | None] = [None] * n
    values: list[float | None] = [None] * n
    pending: dict[int, Calls] = {}
    alone = {name: len(route.terms) == 1 for name, (route, _) in triage.routed.items()}
    for group, group_outcomes in zip(groups, outcomes, strict=True):
        for (i, term), value, outcome in _returns(group, group_outcomes):
            if (
                type(value) is float
                and (outcome is None or outcome.status == "ok")
                and alone[term.route]
                and (reward := term.weight * value) - reward == 0.0  # finite, weight included
            ):
                rewards[i] = reward
                values[i] = value
            else:
                pending.setdefault(i, []).append((term, outcome or Outcome(value)))
    full = dict(triage.settled)
    recorded: list[int] | None = [] if record else None
    for i, calls in pending.items():
        decision = triage.decisions[i]
        assert decision is not None  # only routed samples have calls
        full[i] = combine(i, decision, calls, evaluation, recorded)
    return ScoreBatch(triage.decisions, rewards, values, full, tuple(sorted(recorded or ())))


def _returns(
    group: RouteGroup, outcomes: Sequence[Outcome]
) -> Iterable[tuple[tuple[int, BoundTerm], Any, Outcome | None]]:
    """``((sample index, term), returned value, outcome)`` per member; the outcome is None for a
    group call that returned plain floats (no per-sample object is made for them)."""
    if isinstance(outcomes, FloatReturns):
        return zip(group.members(), outcomes.values, repeat(None))
    return ((member, o.value, o) for member, o in zip(group.members(), outcomes, strict=True))


def combine(
    index: int,
    decision: Decision,
    calls: Calls,
    evaluation: bool,
    recorded: list[int] | None = None,
) -> RewardResult:
    """The result of sample ``index`` from its ``(term, outcome)`` pairs (any order).

    Raises :class:`RewardError` for the first failure, in term order, whose term says
    ``on_error: raise`` — unless ``recorded`` is a list: then the failure is recorded like
    ``on_error: skip`` (its message carrying the fix) and ``index`` appended to ``recorded``.
    """
    route = decision.route
    if len(calls) > 1:
        order = {t.name: k for k, t in enumerate(route.terms)}
        calls = sorted(calls, key=lambda c: order[c[0].name])
    terms: dict[str, float | None] = {}
    total, applied, skip = 0.0, False, False
    status: Status = "ok"
    first_fault: Fault = None
    errors: list[str] = []
    for term, (call_status, value, message, hint), fault in _read_each(calls, evaluation):
        if value is not None and not math.isfinite(total + term.weight * value):
            message = _beyond_range(term, value, total)
            call_status, value = "invalid", None
            fault = "sample" if term.fn.builtin else None
        sample_fault = fault == "sample"
        if call_status != "ok":
            fix = hint or failure_fix(term, call_status, message or "", fault)
            value, skipped = _on_error(
                index,
                route.name,
                term,
                call_status,
                message,
                fix,
                recorded is not None or sample_fault,  # the sample's own fault: never raised
            )
            skip |= skipped
            if status == "ok":
                status, first_fault = call_status, fault
            if term.on_error == "raise":  # recorded instead of raised
                errors.append(f"{term.name}: {message} ({fix})")
                if recorded is not None and not sample_fault and index not in recorded[-1:]:
                    recorded.append(index)
            else:
                errors.append(f"{term.name}: {message}")
        terms[term.name] = value
        if value is not None:
            total += term.weight * value
            applied = True
    if status == "ok" and not applied:
        status = "skipped"
    raw: Any = calls[0][1].value if len(calls) == 1 else {t.name: o.value for t, o in calls}
    return RewardResult(
        reward=total if applied and not skip else None,
        status=status,
        route=route.name,
        level=decision.level,
        terms=terms,
        raw=raw,
        error_message="; ".join(errors) or None,
        misplaced=decision.misplaced,
        fault=first_fault,
    )


def _beyond_range(term: BoundTerm, value: float, total: float) -> str:
    """Why a finite term value cannot count: times its weight (and with the terms before it
    added) it is no longer a finite float."""
    others = f", added to the other terms' {total:g}," if total else ""
    return (
        f"returned {value:g}, which times its weight {term.weight:g}{others} is beyond the "
        f"range of a float; rewards must be finite"
    )


#: Whose fault a failed call is: the sample's (never raised), the dataset's or the
#: infrastructure's (``on_error`` decides), or None: the function's own (``on_error`` decides).
Fault = Literal["sample", "data", "infrastructure"] | None


def _read_each(
    calls: Calls, evaluation: bool
) -> Iterator[tuple[BoundTerm, tuple[Status, float | None, str | None, str | None], Fault]]:
    """Each term with its call's status, training (or evaluation) value, error message and,
    when the value's reader knows it, what to change; then whose fault a failure is (see
    :func:`is_sample_fault`)."""
    for term, outcome in calls:
        if outcome.status != "ok":
            fault: Fault = "sample" if is_sample_fault(term, outcome) else outcome.setup_fault
            yield term, (outcome.status, None, outcome.error, None), fault
            continue
        try:
            read = to_value(outcome.value, term.key_for(evaluation))
            yield term, ("ok", read, None, None), None
        except InvalidReturn as exc:
            fault = "sample" if term.fn.builtin else None
            yield term, ("invalid", None, str(exc), exc.hint), fault


def is_sample_fault(term: BoundTerm, outcome: Outcome) -> bool:
    """Whether ``outcome``'s failure is the sample's own, never raised for the batch: marked so
    (a malformed conversation), or a failure of a built-in kind that is not the setup's (a
    grader that raised on the response, overran its deadline on it, or whose worker died on it:
    every other input of a built-in kind is checked or set by the config)."""
    return outcome.sample_fault or (term.fn.builtin and not outcome.setup_fault)


def _on_error(
    index: int,
    route: str,
    term: BoundTerm,
    status: Status,
    message: str | None,
    fix: str,
    record: bool = False,
) -> tuple[float | None, bool]:
    """What ``term``'s ``on_error`` makes of a failed call: ``(value, skipped)``, or a raise
    (a skip when the caller records failures)."""
    policy = term.on_error
    if policy == "raise" and not record:
        raise RewardError(
            f"sample {index}, route {route!r}, term {term.name!r} ({term.fn.name}): "
            f"{status}: {message}. {fix}",
            index=index,
            route=route,
            term=term.name,
            function=term.fn.name,
        )
    if policy in ("raise", "skip"):
        return None, True
    assert not isinstance(policy, str)
    return policy.value, False


#: How executors and the remote client begin the message of a failure that is not the reward
#: function's own: the fix is in the infrastructure, not in the function or its config.
_INFRASTRUCTURE = {
    "the worker": "the worker processes failed, not the function",
    "a worker": "the worker processes failed, not the function",
    "worker processes": "the worker processes failed, not the function",
    "the Ray actor pool": "the Ray actors failed, not the function",
    "RemoteUnavailable": "the reward server is unreachable or failing",
    "RemoteRejected": "the reward server refused the request",
    "RemoteTimeout": "the reward server did not answer in time",
}


def failure_fix(term: BoundTerm, status: str, message: str, fault: Fault = None) -> str:
    """What to do about a failed call, by its cause (``fault``): the response, the dataset, the
    infrastructure it ran on, or the function and its deadline; ``on_error`` comes last, as the
    way to record such failures."""
    where = term.where or "the term"
    if fault == "sample":
        what = (
            "the conversation is malformed"
            if message.startswith(MALFORMED)
            else f"{term.fn.name} failed on this response"
        )
        fallback = "" if term.on_error != "raise" else ", reward None"
        return f"{what}: the sample's own status{fallback}, counted, never the batch's"
    record = f"or set `on_error: skip` or `on_error: {{value: 0.0}}` on {where} to record them"
    cause = next((v for k, v in _INFRASTRUCTURE.items() if message.startswith(k)), None)
    if cause is None and fault == "infrastructure":
        cause = f"what {term.fn.name} runs on failed, not the response"
    if cause is not None:
        return f"{cause}: fix the cause above (then run again), {record}"
    if status == "timeout":
        return (
            f"raise `timeout` on {where} (now {term.timeout:g} s) if such calls may take "
            f"longer, {record}"
        )
    if status == "invalid":
        return f"make {term.fn.name} return a number, a dict with its `key`, or None, {record}"
    if fault == "data" or term.fn.builtin:  # the cause is in the data or the config
        return (
            f"the built-in kind {term.fn.name} refused this sample's data: fix the sample's "
            f"label or metadata (or the kwargs on {where}) as the message says, {record}"
        )
    return f"fix {term.fn.name} where the message says it raised, {record}"
