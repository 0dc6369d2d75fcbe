"""How ``rewardrouter serve`` bounds its connections and splits its scoring: one frozen
:class:`ServeOptions`, each field a command-line flag of the same name.

==========================  ==========  ==========================================================
flag                        default     what it bounds
==========================  ==========  ==========================================================
``--max-connections``       4096        connections open at once; at the cap a new connection
                                        closes the longest-idle one (else the oldest unfinished
                                        request head), or gets a 503 when every one is busy
``--header-timeout``        10 s        from a request's first byte to the end of its head
``--keep-alive-timeout``    60 s        from a connection's opening, or its last reply, to the
                                        end of its next request's head (an idle connection)
``--body-timeout``          30 s        a body's grace period: it may take this long, plus one
``--min-body-rate-kb``      16 KiB/s    second per this many KiB received
``--small-request-kb``      256 KiB     bodies up to this size are scored by a scoring process
                                        of their own (0: one scoring process for all)
==========================  ==========  ==========================================================

>>> ServeOptions(header_timeout=2).header_timeout
2
>>> ServeOptions(header_timeout=0, max_connections=-1)
Traceback (most recent call last):
...
rewardrouter.errors.ConfigError: invalid reward router config (2 problems):
  - --max-connections: -1 is not a count: expected a whole number of at least 1
    give one, e.g. --max-connections 4096, or leave it out for the default (4096, lowered to what the open-file limit allows)
  - --header-timeout: 0 is not a duration: expected a positive number of seconds
    give one, e.g. --header-timeout 10, or leave it out for the default 10
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Literal

from rewardrouter.errors import ConfigError, Problem

#: The connection cap when none is given (lowered to what the open-file limit allows).
MAX_CONNECTIONS = 4096

Kind = Literal["count", "seconds", "KiB", "KiB/s"]

#: What each kind of value is called in a message, and what it must be.
_EXPECTED: dict[Kind, tuple[str, str]] = {
    "count": ("a count", "a whole number of at least 1"),
    "seconds": ("a duration", "a positive number of seconds"),
    "KiB": ("a size", "a number of KiB, 0 or more"),
    "KiB/s": ("a rate", "a positive number of KiB per second"),
}


def option_problem(value: object, name: str, given: str | None = None) -> Problem | None:
    """Why ``value`` (written ``given`` on the command line) cannot be :class:`ServeOptions`
    field ``name`` (None: it can).

    >>> print(option_problem("10s", "header_timeout"))
    --header-timeout: 10s is not a duration: expected a positive number of seconds
        give one, e.g. --header-timeout 10, or leave it out for the default 10
    """
    kind = KINDS[name]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        ok = False
    elif kind == "count":
        ok = value >= 1 and float(value).is_integer()
    else:
        ok = value >= 0 if kind == "KiB" else value > 0
    if ok:
        return None
    what, expected = _EXPECTED[kind]
    flag = flag_of(name)
    return Problem(
        flag,
        f"{given if given is not None else value} is not {what}: expected {expected}",
        f"give one, e.g. {flag} {_EXAMPLES[name]}, or leave it out for the default "
        f"{_DEFAULTS[name]}",
    )


#: An example value of each field, and how its default reads.
_EXAMPLES = {
    "max_connections": "4096",
    "header_timeout": "10",
    "keep_alive_timeout": "60",
    "body_timeout": "30",
    "min_body_rate_kb": "16",
    "small_request_kb": "256",
}
_DEFAULTS = {
    **_EXAMPLES,
    "max_connections": f"({MAX_CONNECTIONS}, lowered to what the open-file limit allows)",
}


@dataclass(frozen=True)
class ServeOptions:
    """The server's bounds on connections and its split of scoring work (see the module's
    table). Raises :class:`~rewardrouter.ConfigError` naming every field that is out of range.

    ``max_connections=None`` takes :data:`MAX_CONNECTIONS`, lowered to what this process may
    open (see :func:`rewardrouter.serve.guard.connection_cap`).
    """

    max_connections: int | None = None
    header_timeout: float = 10.0
    keep_alive_timeout: float = 60.0
    body_timeout: float = 30.0
    min_body_rate_kb: float = 16.0
    small_request_kb: float = 256.0

    def __post_init__(self) -> None:
        problems: list[Problem] = []
        for field in fields(self):
            value = getattr(self, field.name)
            problem = None if value is None else option_problem(value, field.name)
            if problem is not None:
                problems.append(problem)
        if problems:
            raise ConfigError(problems)

    @property
    def small_request_bytes(self) -> int:
        """The largest body the small-request lane takes (0: no such lane)."""
        return int(self.small_request_kb * 1024)

    @property
    def min_body_rate(self) -> float:
        """The body floor in bytes per second."""
        return self.min_body_rate_kb * 1024


#: The kind of each field's value.
KINDS: dict[str, Kind] = {
    "max_connections": "count",
    "header_timeout": "seconds",
    "keep_alive_timeout": "seconds",
    "body_timeout": "seconds",
    "min_body_rate_kb": "KiB/s",
    "small_request_kb": "KiB",
}


def flag_of(name: str) -> str:
    """The command-line flag of field ``name``.

    >>> flag_of("min_body_rate_kb")
    '--min-body-rate-kb'
    """
    return "--" + name.replace("_", "-")
