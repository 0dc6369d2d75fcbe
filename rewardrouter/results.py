"""What scoring produced: one :class:`RewardResult` per sample, and the :class:`ScoreBatch`
that holds a whole call's results by column.

A batch of 100,000 samples should not cost 100,000 objects when a trainer only wants the
rewards: most samples are scored by one term that returned a plain float, and for those the
batch keeps just the value. :class:`ScoreBatch` is a ``Sequence[RewardResult]``: indexing and
iteration build the full result on demand, and :attr:`ScoreBatch.rewards` reads the column.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
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
    """

    reward: float | None
    status: Status
    route: str | None = None
    level: str | None = None
    terms: dict[str, float | None] = field(default_factory=dict)
    raw: Any = None
    error_message: str | None = None

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


class ScoreBatch(Sequence[RewardResult]):
    """One :class:`RewardResult` per scored sample, in input order.

    ``full`` holds the results that were built whole (aborted, kept, several terms, failures, non
    float returns); every other sample ``i`` was scored ``ok`` by the single term of route
    ``origins[i]``, which returned ``values[i]``, weighted into ``rewards[i]``.

    >>> class Routed:
    ...     route_name, level, first_term = "gsm8k", "route", "correct"
    >>> batch = ScoreBatch([Routed(), None], [0.5, None], [1.0, None],
    ...                    {1: RewardResult(None, "aborted")})
    >>> batch.rewards, batch[0].terms, batch[1].status
    ([0.5, None], {'correct': 1.0}, 'aborted')
    """

    __slots__ = ("_full", "_origins", "_rewards", "_values")

    def __init__(
        self,
        origins: Sequence[Origin | None],
        rewards: list[float | None],
        values: list[float | None],
        full: dict[int, RewardResult],
    ) -> None:
        self._origins = origins
        self._rewards = rewards
        self._values = values
        self._full = full

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
        return RewardResult(self._rewards[i], "ok", origin.route_name, origin.level, terms, value)

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

    def __repr__(self) -> str:
        return f"ScoreBatch({len(self)} results, {len(self._full)} stored whole)"
