"""What scoring one sample produced."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

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
