"""The exception tree of rewardrouter.

::

    RewardRouterError                 base of everything rewardrouter raises on purpose
    ├── ConfigError                   a config that cannot be loaded, validated or compiled;
    │                                 lists every problem, each with its YAML path
    ├── RoutingError                  a sample that no route accepts, or that names a function
    │                                 it may not run (sample index, fields seen, what to do)
    ├── SampleError                   samples that lack a field a stage needs (group_index for
    │                                 an advantage stage, response_length for overlong_penalty)
    └── RewardError                   a reward call that failed under ``on_error: raise``
                                      (sample index, route, term, function, cause)

    RewardRouterWarning (UserWarning) something legitimate that is often a mistake; counted,
                                      and emitted once per message

User mistakes are printed by the command line without a traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any


class RewardRouterError(Exception):
    """Base class of every error rewardrouter raises on purpose."""


class RewardRouterWarning(UserWarning):
    """A legitimate setup that is often a mistake (the message says what to check)."""


@dataclass(frozen=True)
class Problem:
    """One problem found in a config: where, what was found, what was expected, what to do."""

    path: str
    message: str
    hint: str | None = None

    def __str__(self) -> str:
        where = self.path or "<root>"
        text = f"{where}: {self.message}"
        return f"{text}\n    {self.hint}" if self.hint else text


class ConfigError(RewardRouterError):
    """A config that cannot be loaded, validated or compiled.

    ``problems`` holds every problem found, not only the first, so that a user fixes a config in
    one pass.
    """

    def __init__(self, problems: Sequence[Problem], source: str | None = None) -> None:
        self.problems = tuple(problems)
        self.source = source
        head = f"invalid reward router config{f' in {source}' if source else ''}"
        count = len(self.problems)
        body = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{head} ({count} problem{'s' if count != 1 else ''}):\n{body}")

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled as it was built (a child process's config error reaches its parent whole).
        return type(self), (self.problems, self.source)


class RoutingError(RewardRouterError):
    """A sample that cannot be routed, or that names a function it is not allowed to run."""


class SampleError(RewardRouterError):
    """Samples that lack a field the configured post-processing needs."""


class RewardError(RewardRouterError):
    """A reward call failed and its term's ``on_error`` policy is ``raise``."""

    def __init__(
        self,
        message: str,
        *,
        index: int | None = None,
        route: str | None = None,
        term: str | None = None,
        function: str | None = None,
    ) -> None:
        self.index = index
        self.route = route
        self.term = term
        self.function = function
        super().__init__(message)


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """``"did you mean 'x'?"`` for the closest choice, or None when nothing is close."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else None


def short_repr(value: Any, width: int = 80) -> str:
    """``repr(value)`` as a message shows it: at most ``width`` characters, ``...`` where cut.

    >>> short_repr("x" * 100, 10)
    "'xxxxxx..."
    """
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def message_of(exc: BaseException, limit: int) -> str:
    """``str(exc)``, cut at ``limit`` characters (saying how long it was), or a note that it
    cannot be shown when the exception's own ``__str__`` raises.

    >>> message_of(ValueError("x" * 30), 10)
    'xxxxxxxxxx... (30 characters in all)'
    """
    try:
        message = str(exc)
    except Exception as inner:  # a reward function's own exception class may be broken
        return f"<its message cannot be shown: {type(inner).__name__} in __str__>"
    if len(message) > limit:
        return f"{message[:limit]}... ({len(message):,} characters in all)"
    return message


def listed(problems: Sequence[tuple[int, str]], what: str, shown: int = 10) -> str:
    """``"2 sample(s) cannot be scored:\n  - sample 0: ..."``: the first ``shown`` problems."""
    lines = "\n".join(f"  - sample {i}: {why}" for i, why in problems[:shown])
    more = f"\n  … and {len(problems) - shown} more" if len(problems) > shown else ""
    return f"{len(problems)} sample(s) {what}:\n{lines}{more}"
