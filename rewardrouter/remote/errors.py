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

    SampleFault                        the sample's own failure, not the server's (that
    │                                  sample's status whatever ``on_error``)
    ├── Unsendable (ValueError)        the sample's text cannot be written as UTF-8 (a lone
    │                                  surrogate)
    └── TooLarge (InvalidReturn)       a request of this one sample was refused as too large
                                       (HTTP 413); a request of several is split to find it

    NotJson (DataFault)                the sample's label or metadata holds a value JSON cannot
                                       write (a set, bytes, NaN): the dataset's fault, so
                                       ``on_error`` decides

Messages name the endpoint without credentials and never contain the credential itself.
"""

from __future__ import annotations

from rewardrouter.outcome import DataFault, InfrastructureFault, InvalidReturn, SampleFault


class RemoteError(InfrastructureFault):
    """A remote reward call that failed; the message says what the server did (a fault of the
    server or the way to it, so the term's ``on_error`` decides, ``raise`` included)."""


class RemoteRejected(RemoteError):
    """The server answered with a 4xx status other than 429 (``status``)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class RemoteUnavailable(RemoteError):
    """Connection errors, 5xx or 429 replies outlasted the retries."""


class RemoteTimeout(RemoteError, TimeoutError):
    """The attempts timed out, or the sample's deadline passed."""


class RemoteInvalid(RemoteError, InvalidReturn):
    """The reply cannot be read as rewards."""


class Unsendable(SampleFault, ValueError):
    """The request cannot be written as JSON: what the sample holds (a lone surrogate, which no
    UTF-8 can carry), never the server or the way to it, so not a :class:`RemoteError`."""


class NotJson(DataFault):
    """The request cannot be written as JSON because of a value the dataset or trainer gave
    (a set, bytes, a NaN in the label or metadata): a fault of the data, not the response's."""


class TooLarge(SampleFault, InvalidReturn):
    """The server refused a request that carried this one sample as too large (HTTP 413): what
    the sample holds made it so (a response of megabytes), so it is that sample's status, and
    its neighbours are scored. Every sample refused so means the server's body limit is too low
    for the data; the message says so."""
