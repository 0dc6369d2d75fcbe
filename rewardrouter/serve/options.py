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
``--write-timeout``         30 s        from the start of a reply to the client's taking all of
                                        it: an unread reply is dropped, its connection closed
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
from dataclasses import dataclass, field, fields
from typing import Any, Literal, NamedTuple

from rewardrouter.errors import ConfigError, Problem

#: The connection cap when none is given (lowered to what the open-file limit allows).
MAX_CONNECTIONS = 4096

Kind = Literal["count", "seconds", "KiB", "KiB/s"]


class KindText(NamedTuple):
    """How a kind of value reads: what it is called in a message, what it must be, and its
    flags' metavar in ``--help``."""

    called: str
    expected: str
    metavar: str


KIND_TEXT: dict[Kind, KindText] = {
    "count": KindText("a count", "a whole number of at least 1", "N"),
    "seconds": KindText("a duration", "a positive number of seconds", "SECONDS"),
    "KiB": KindText("a size", "a number of KiB, 0 or more", "KIB"),
    "KiB/s": KindText("a rate", "a positive number of KiB per second", "KIB"),
}


@dataclass(frozen=True)
class Flag:
    """How a :class:`ServeOptions` field reads as a command-line flag: its field's
    ``metadata["flag"]``. Its default is the field's own."""

    kind: Kind
    #: The flag's ``--help``, less its default (appended from the field's).
    help: str
    #: For a field that defaults to None: the value None stands for, lowered to what the
    #: open-file limit allows.
    lowered_from: int | None = None


def _flag(default: float | None, kind: Kind, help: str, lowered_from: int | None = None) -> Any:
    """A :class:`ServeOptions` field with ``default`` and its :class:`Flag`."""
    return field(default=default, metadata={"flag": Flag(kind, help, lowered_from)})


def option_problem(value: object, name: str, given: str | None = None) -> Problem | None:
    """Why ``value`` (written ``given`` on the command line) cannot be :class:`ServeOptions`
    field ``name`` (None: it can).

    >>> print(option_problem("10s", "header_timeout"))
    --header-timeout: 10s is not a duration: expected a positive number of seconds
        give one, e.g. --header-timeout 10, or leave it out for the default 10
    """
    kind = FLAGS[name].kind
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        ok = False
    elif kind == "count":
        ok = value >= 1 and float(value).is_integer()
    else:
        ok = value >= 0 if kind == "KiB" else value > 0
    if ok:
        return None
    text = KIND_TEXT[kind]
    flag = flag_of(name)
    example = f"{default_of(name):g}"
    lowered = FLAGS[name].lowered_from is not None
    return Problem(
        flag,
        f"{given if given is not None else value} is not {text.called}: expected {text.expected}",
        f"give one, e.g. {flag} {example}, or leave it out for the default "
        + (f"({example}, lowered to what the open-file limit allows)" if lowered else example),
    )


@dataclass(frozen=True)
class ServeOptions:
    """The server's bounds on connections and its split of scoring work (see the module's
    table). Raises :class:`~rewardrouter.ConfigError` naming every field that is out of range.

    ``max_connections=None`` takes :data:`MAX_CONNECTIONS`, lowered to what this process may
    open (see :func:`rewardrouter.serve.guard.connection_cap`).
    """

    max_connections: int | None = _flag(
        None,
        "count",
        "connections open at once; beyond it a new connection closes the one idle longest (else "
        "the one whose request head began first), or gets a 503 when every one has a request in "
        "progress",
        lowered_from=MAX_CONNECTIONS,
    )
    header_timeout: float = _flag(
        10.0,
        "seconds",
        "seconds from a request's first byte to the end of its head; a slower head (slowloris) "
        "gets a 408 and its connection is closed",
    )
    keep_alive_timeout: float = _flag(
        60.0,
        "seconds",
        "seconds a connection may wait, from its opening or its last reply, until its next "
        "request's head is complete: an idle connection is closed after it",
    )
    body_timeout: float = _flag(
        30.0,
        "seconds",
        "seconds of grace for a request body, extended by a second per --min-body-rate-kb KiB "
        "received; a body slower than that gets a 408 and its connection is closed",
    )
    min_body_rate_kb: float = _flag(
        16.0, "KiB/s", "the body rate floor in KiB per second, after --body-timeout"
    )
    write_timeout: float = _flag(
        30.0,
        "seconds",
        "seconds a client has to take its whole reply, from when the server begins to write it; "
        "a reply still unread then is dropped (its memory freed) and its connection closed",
    )
    small_request_kb: float = _flag(
        256.0,
        "KiB",
        "bodies up to this many KiB are scored by a scoring process of their own, so that a large "
        "batch never delays them; 0: one scoring process for every request",
    )

    def __post_init__(self) -> None:
        problems: list[Problem] = []
        for option in fields(self):
            value = getattr(self, option.name)
            problem = None if value is None else option_problem(value, option.name)
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


#: The :class:`Flag` of each field.
FLAGS: dict[str, Flag] = {f.name: f.metadata["flag"] for f in fields(ServeOptions)}
_DEFAULT_OPTIONS = ServeOptions()


def default_of(name: str) -> float:
    """The default of field ``name``: its field's, or the value its None stands for (before
    it is lowered to fit)."""
    default: float | None = getattr(_DEFAULT_OPTIONS, name)
    if default is None:
        lowered_from = FLAGS[name].lowered_from
        assert lowered_from is not None
        return lowered_from
    return default


def flag_of(name: str) -> str:
    """The command-line flag of field ``name``.

    >>> flag_of("min_body_rate_kb")
    '--min-body-rate-kb'
    """
    return "--" + name.replace("_", "-")
