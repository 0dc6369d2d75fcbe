"""What scoring produced: one :class:`RewardResult` per sample, and the :class:`ScoreBatch`
that holds a whole call's results by column.

A batch of 100,000 samples should not cost 100,000 objects when a trainer only wants the
rewards: most samples are scored by one term that returned a plain float, and for those the
batch keeps just the value. :class:`ScoreBatch` is a ``Sequence[RewardResult]``: indexing and
iteration build the full result on demand, and :attr:`ScoreBatch.rewards` reads the column.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, overload

Status = Literal["ok", "skipped", "aborted", "kept", "error", "timeout", "invalid"]

#: Statuses that mean a reward call failed (the term's ``on_error`` policy decided the reward).
FAILED: frozenset[str] = frozenset({"error", "timeout", "invalid"})


@dataclass(slots=True)
class RewardResult:
    """The outcome of scoring one sample.

    ``reward`` is the training value: the weighted sum of the terms that applied, ``None`` when no
    term applied, the sample was aborted, or a failure was skipped. ``status``:

    - ``ok``: scored; ``skipped``: every term returned None (not applicable);
    - ``aborted``: an aborted sample, never scored; ``kept``: it carried a reward already;
    - ``error`` / ``timeout`` / ``invalid``: a call raised, overran its deadline or returned
      something unusable; ``error_message`` says what, and ``on_error`` decided ``reward``.

    ``fault``, for a failed sample: whose fault its first failure is: ``sample`` (its response
    or conversation: never raised), ``data`` (its label or metadata), ``infrastructure`` (a
    server, a sandbox, worker processes), or None (the reward function's own).

    ``misplaced`` is set when ``default_route`` scored a sample that carries a route_by field
    where routing does not read it (``Dataset`` in metadata, a top-level ``data_source``): what
    was found and the fix. The batch counts it (``misplaced_route_field``).
    """

    reward: float | None
    status: Status
    route: str | None = None
    level: str | None = None
    terms: dict[str, float | None] = field(default_factory=dict)
    raw: Any = None
    error_message: str | None = None
    misplaced: str | None = None
    fault: Literal["sample", "data", "infrastructure"] | None = None

    @property
    def failed(self) -> bool:
        return self.status in FAILED


class Origin(Protocol):
    """Where a sample scored by a single term came from (a routing decision is one)."""

    @property
    def route_name(self) -> str:
        """The route that scored the sample."""

    @property
    def level(self) -> str:
        """The precedence level that chose the route."""

    @property
    def first_term(self) -> str:
        """The name of the route's (only) term."""

    @property
    def misplaced(self) -> str | None:
        """A route_by field out of place, when ``default_route`` took the sample for want of it."""


WarningCode = Literal["not_applicable", "skipped", "failed", "misplaced_route_field"]

_WARNING_TEXT: dict[str, str] = {
    "not_applicable": "returned None (not applicable) while the route's other terms applied: "
    "the reward is theirs alone (a grader does this for a missing or blank label)",
    "skipped": "no term applied: reward None, left out of group statistics",
    "failed": "calls failed and the term's `on_error` decided the reward",
    "misplaced_route_field": "scored by default_route, likely not the route meant: no route_by "
    "field is in their metadata, yet they carry one elsewhere",
}


@dataclass(frozen=True)
class ScoreWarning:
    """Samples that were scored, but not the way their route intends: counted, never raised.

    ``code``: ``not_applicable`` (``term`` returned None while other terms of the route
    applied, so the reward comes from those alone), ``skipped`` (no term applied) or
    ``failed`` (a call failed and ``on_error`` gave a fallback value or skipped the sample;
    ``status`` says how it failed) or ``misplaced_route_field`` (``default_route`` scored samples
    that carry a route_by field where routing does not read it; ``misplaced`` says what was
    found and the fix).
    ``samples`` holds the first ten sample indices. Trainers log these per batch, e.g.
    ``for w in batch.warnings: log(f"reward/{w.code}/{w.route}", w.count)``.
    """

    code: WarningCode
    route: str
    count: int
    samples: tuple[int, ...]
    term: str | None = None
    status: str | None = None
    misplaced: str | None = None

    @property
    def where(self) -> str:
        """The YAML path the warning is about: ``routes.gsm8k.rewards.correct``."""
        return f"routes.{self.route}" + (f".rewards.{self.term}" if self.term else "")

    def __str__(self) -> str:
        what = _WARNING_TEXT[self.code] + (f" (status {self.status})" if self.status else "")
        if self.misplaced:
            what += f": {self.misplaced}"
        return f"{self.where}: {self.count} sample(s): {what}"


def count_warnings(results: Iterable[tuple[int, RewardResult]]) -> list[ScoreWarning]:
    """The :class:`ScoreWarning` s of ``(sample index, result)`` pairs, one per code, route,
    term and status, in order of first appearance."""
    found: dict[tuple[str, str, str | None, str | None, str | None], list[int]] = {}
    for i, result in results:
        route = result.route
        if route is None:
            continue
        if result.misplaced is not None:
            key = ("misplaced_route_field", route, None, None, result.misplaced)
            found.setdefault(key, []).append(i)
        if result.status == "skipped":
            found.setdefault(("skipped", route, None, None, None), []).append(i)
        elif result.failed:
            found.setdefault(("failed", route, None, result.status, None), []).append(i)
        elif result.status == "ok" and len(result.terms) > 1:
            for term, value in result.terms.items():
                if value is None:
                    found.setdefault(("not_applicable", route, term, None, None), []).append(i)
    return [
        ScoreWarning(code, route, len(idx), tuple(idx[:10]), term, status, misplaced)  # type: ignore[arg-type]
        for (code, route, term, status, misplaced), idx in found.items()
    ]


class ScoreBatch(Sequence[RewardResult]):
    """One :class:`RewardResult` per scored sample, in input order.

    ``full`` holds the results that were built whole (aborted, kept, several terms, failures, non
    float returns); every other sample ``i`` was scored ``ok`` by the single term of route
    ``origins[i]``, which returned ``values[i]``, weighted into ``rewards[i]``.

    >>> class Routed:
    ...     route_name, level, first_term, misplaced = "gsm8k", "route", "correct", None
    >>> batch = ScoreBatch([Routed(), None], [0.5, None], [1.0, None],
    ...                    {1: RewardResult(None, "aborted")})
    >>> batch.rewards, batch[0].terms, batch[1].status
    ([0.5, None], {'correct': 1.0}, 'aborted')
    """

    __slots__ = ("_full", "_origins", "_rewards", "_values", "failures")

    def __init__(
        self,
        origins: Sequence[Origin | None],
        rewards: list[float | None],
        values: list[float | None],
        full: dict[int, RewardResult],
        failures: tuple[int, ...] = (),
    ) -> None:
        self._origins = origins
        self._rewards = rewards
        self._values = values
        self._full = full
        #: Samples whose failure an ``on_error: raise`` term would have raised, recorded
        #: instead (``score(..., failures="record")``); their reward is None.
        self.failures = failures

    def __len__(self) -> int:
        return len(self._rewards)

    def _result(self, i: int) -> RewardResult:
        full = self._full.get(i)
        if full is not None:
            return full
        origin = self._origins[i]
        assert origin is not None  # every sample without a full result was routed
        value = self._values[i]
        terms = {origin.first_term: value}
        return RewardResult(
            self._rewards[i],
            "ok",
            origin.route_name,
            origin.level,
            terms,
            value,
            None,
            origin.misplaced,
        )

    @overload
    def __getitem__(self, index: int) -> RewardResult: ...

    @overload
    def __getitem__(self, index: slice) -> list[RewardResult]: ...

    def __getitem__(self, index: int | slice) -> RewardResult | list[RewardResult]:
        if isinstance(index, slice):
            return [self._result(i) for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"result {index} of a batch of {len(self)}")
        return self._result(index)

    def __iter__(self) -> Iterator[RewardResult]:
        return (self._result(i) for i in range(len(self)))

    @property
    def rewards(self) -> list[float | None]:
        """The training values, without building a result per sample."""
        rewards = list(self._rewards)
        for i, result in self._full.items():
            rewards[i] = result.reward
        return rewards

    @property
    def warnings(self) -> list[ScoreWarning]:
        """What this batch counted but did not raise (see :class:`ScoreWarning`); ``[]`` for a
        batch scored as its routes intend. A sample scored ok by a single term warns only when
        ``default_route`` took it with a route_by field out of place, so this reads the results
        stored whole and the routing decisions of the others."""
        failures = set(self.failures)
        found = {i: r for i, r in self._full.items() if i not in failures}
        for i, origin in enumerate(self._origins):
            if origin is not None and origin.misplaced is not None and i not in self._full:
                found[i] = self._result(i)
        return count_warnings(sorted(found.items()))

    def __repr__(self) -> str:
        return f"ScoreBatch({len(self)} results, {len(self._full)} stored whole)"
