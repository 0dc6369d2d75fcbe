"""Why a remote reward call failed. Each becomes the call's outcome, so ``on_error`` applies.

::

    RemoteError                        a call that failed (status ``error``)
    ├── RemoteRejected                 the server refused the request (4xx other than 429):
    │                                  not retried, the same request would be refused again
    ├── RemoteUnavailable              connection errors, 5xx or 429 until the retries ran out
    ├── RemoteTimeout (TimeoutError)   every attempt timed out, or the deadline left no time for
    │                                  another attempt (status ``timeout``)
    └── RemoteInvalid (InvalidReturn)  a reply that is not JSON, or a batch reply that is not a
                                       list of one reward per sample (status ``invalid``)

    Unsendable (ValueError)            the sample cannot be written as JSON (a lone surrogate in
                                       its text): the sample's own failure, not the server's

Messages name the endpoint without credentials and never contain the credential itself.
"""

from __future__ import annotations

from rewardrouter.outcome import InfrastructureFault, InvalidReturn


class RemoteError(InfrastructureFault):
    """A remote reward call that failed; the message says what the server did (a fault of the
    server or the way to it, so the term's ``on_error`` decides, ``raise`` included)."""


class RemoteRejected(RemoteError):
    """The server answered with a 4xx status other than 429."""


class RemoteUnavailable(RemoteError):
    """Connection errors, 5xx or 429 replies outlasted the retries."""


class RemoteTimeout(RemoteError, TimeoutError):
    """The attempts timed out, or the sample's deadline passed."""


class RemoteInvalid(RemoteError, InvalidReturn):
    """The reply cannot be read as rewards."""


class Unsendable(ValueError):
    """The request cannot be written as JSON: what the sample holds (a lone surrogate, which no
    UTF-8 can carry), never the server or the way to it, so not a :class:`RemoteError`."""
