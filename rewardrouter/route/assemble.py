"""Turn each sample's term outcomes into a :class:`RewardResult`, applying ``on_error``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rewardrouter.compile.routes import BoundTerm
from rewardrouter.errors import RewardError
from rewardrouter.execute.outcome import Outcome
from rewardrouter.execute.values import InvalidReturn, to_value
from rewardrouter.results import RewardResult, Status


def combine(
    index: int,
    route: str,
    level: str,
    calls: Sequence[tuple[BoundTerm, Outcome]],
    evaluation: bool,
) -> RewardResult:
    """The result of one sample from its ``(term, outcome)`` pairs, in term order.

    Raises :class:`RewardError` for the first failure whose term says ``on_error: raise``.
    """
    terms: dict[str, float | None] = {}
    total = 0.0
    applied = False
    skip = False
    status: Status = "ok"
    errors: list[str] = []
    for term, outcome in calls:
        call_status, message = outcome.status, outcome.error
        value: float | None = None
        if call_status == "ok":
            try:
                value = to_value(outcome.value, term.key_for(evaluation))
            except InvalidReturn as exc:
                call_status, message = "invalid", str(exc)
        if call_status != "ok":
            policy = term.on_error
            if policy == "raise":
                raise RewardError(
                    f"sample {index}, route {route!r}, term {term.name!r} ({term.fn.name}): "
                    f"{call_status}: {message}. Set `on_error: skip` or `on_error: {{value: 0.0}}` "
                    f"on {term.where or 'the term'} to record such failures instead of raising",
                    index=index,
                    route=route,
                    term=term.name,
                    function=term.fn.name,
                )
            if status == "ok":
                status = call_status
            errors.append(f"{term.name}: {message}")
            if policy == "skip":
                skip = True
            else:
                value = policy.value
        terms[term.name] = value
        if value is not None:
            total += term.weight * value
            applied = True
    if status == "ok" and not applied:
        status = "skipped"
    raw_out: Any = calls[0][1].value if len(calls) == 1 else {t.name: o.value for t, o in calls}
    return RewardResult(
        reward=total if applied and not skip else None,
        status=status,
        route=route,
        level=level,
        terms=terms,
        raw=raw_out,
        error_message="; ".join(errors) or None,
    )
