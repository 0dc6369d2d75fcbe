"""The settings of a ``remote`` reward term, read from the term's ``kwargs`` at compile time.

Example (a judge behind a bearer token, scored in batches of 32)::

    judge:
      kind: remote
      key: score                       # the reply is {"score": ..., ...}
      on_error: {value: 0.0}
      kwargs:
        url: http://127.0.0.1:8000/reward
        timeout: 30                    # seconds per request
        deadline: 50                   # seconds per sample (or batch), all attempts together
        retries: 3
        concurrency: 32
        auth_env: JUDGE_TOKEN          # sent as "Authorization: Bearer $JUDGE_TOKEN"
        batch: true
        batch_size: 32
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from rewardrouter.config.redact import redacted


class EndpointSettings(BaseModel):
    """How to reach one HTTP endpoint: every kind that posts JSON somewhere (``remote``, ``judge``,
    ``code`` on SandboxFusion) reads these fields. Every field has a default but ``url``."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", allow_inf_nan=False, hide_input_in_errors=True
    )

    url: str = Field(description="http(s) endpoint the requests go to.")
    timeout: float = Field(default=30.0, gt=0, description="Seconds one request may take.")
    deadline: float = Field(
        default=50.0,
        gt=0,
        description="Seconds for one sample (one batch in batch mode), every attempt and backoff "
        "included, counted from when its request has a `concurrency` slot. It must fit in the "
        "term's `timeout` with 0.25 s to spare (checked when the router compiles, but for "
        "`batch: true`; the router's default timeout is 60 s): a request waits for a slot only "
        "while the term's timeout can still give it its whole deadline.",
    )
    retries: int = Field(
        default=3, ge=0, description="Extra attempts after connection errors, timeouts, 5xx, 429."
    )
    backoff: float = Field(
        default=0.5,
        ge=0,
        description="First retry delay in seconds; doubles per attempt, jittered.",
    )
    max_backoff: float = Field(default=10.0, ge=0, description="Upper bound of one retry delay.")
    concurrency: int = Field(
        default=32,
        ge=1,
        description="Requests in flight at once; the others wait their turn (the clients of "
        "`rewardrouter serve` in turn), a request whose term's timeout could no longer give it "
        "its whole `deadline` goes on beyond the cap.",
    )
    max_reply_mb: float = Field(
        default=32.0,
        gt=0,
        description="Largest reply read, in MiB; a larger one is `invalid` (read no further).",
    )
    headers: dict[str, str] = Field(default_factory=dict, description="Extra request headers.")
    auth_env: str | None = Field(
        default=None,
        description="Environment variable holding the credential; its value is never logged.",
    )
    auth_header: str = Field(default="Authorization", description="Header that carries it.")
    auth_scheme: str = Field(
        default="Bearer", description='Prefix of the header value ("" sends the bare value).'
    )

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        from yarl import URL  # on use: `import rewardrouter` reads this module

        try:
            parsed = URL(url)
        except (TypeError, ValueError):
            parsed = URL()
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise ValueError(
                "not an http(s) URL with a host; expected e.g. http://127.0.0.1:8000/reward"
            )
        return url

    @model_validator(mode="after")
    def _one_authorization(self) -> EndpointSettings:
        from yarl import URL

        authorization = {h.lower() for h in self.headers} | (
            {self.auth_header.lower()} if self.auth_env else set()
        )
        if URL(self.url).user is not None and "authorization" in authorization:
            raise ValueError(
                "the url holds a user name (sent as an Authorization header) and "
                "`auth_env` or `headers` set Authorization too, which the HTTP client refuses "
                "on every request; keep one: remove the user from the url, or the other"
            )
        return self

    def __repr_args__(self) -> Any:
        # The URL's password and query values, and the headers, may be credentials.
        for name, value in super().__repr_args__():
            yield name, redacted(value, name)


class RemoteSettings(EndpointSettings):
    """How a ``remote`` term reaches its reward server, and what it posts."""

    url: str = Field(description="http(s) endpoint that scores a sample (or a batch).")
    batch: bool = Field(
        default=False,
        description="Post a route group as one JSON list and expect a list of the same length.",
    )
    batch_size: int | None = Field(
        default=None, ge=1, description="Batch mode: at most this many samples per request."
    )
    send_metadata: bool = Field(
        default=False, description="Add the sample's `metadata` to the request body."
    )

    @model_validator(mode="after")
    def _batch_size_needs_batch(self) -> RemoteSettings:
        if self.batch_size is not None and not self.batch:
            raise ValueError("`batch_size` only applies with `batch: true`; set both or neither")
        return self


#: Seconds a reward call keeps after its request's deadline, to read the reply: a request ends
#: (with its own status) before the call's deadline cuts the call.
AFTER_REQUEST = 0.25


def deadline_fits(deadline: float, seconds: float) -> tuple[str, str] | None:
    """Whether a request's ``deadline`` (``kwargs.deadline``) fits in its term's timeout
    ``seconds``, as :class:`~rewardrouter.rewards.registry.Budgeted` asks: with
    :data:`AFTER_REQUEST` it must be within it, or no request could be given its whole deadline
    (and the term, not the request's own deadline, would cut a slow one).

    >>> deadline_fits(50, 60) is None
    True
    >>> for line in deadline_fits(90, 60):
    ...     print(line)
    kwargs.deadline (90 s) and 0.25 s to read the reply are more than the term's timeout (60 s): the term would cut a slow request before its own deadline
    set kwargs.deadline to 50 or less, or `timeout: 108` or more on the term (or the router's `timeout`)
    """
    if deadline + AFTER_REQUEST <= seconds:
        return None
    below = math.floor(seconds * 5 / 6) if seconds >= 6 else round(seconds * 5 / 6, 2)
    return (
        f"kwargs.deadline ({deadline:g} s) and {AFTER_REQUEST:g} s to read the reply are more than "
        f"the term's timeout ({seconds:g} s): the term would cut a slow request before its own "
        "deadline",
        f"set kwargs.deadline to {below:g} or less, or `timeout: {math.ceil(deadline * 1.2)}` "
        "or more on the term (or the router's `timeout`)",
    )


def display_url(url: str) -> str:
    """``url`` without credentials, query or fragment: safe to show in messages and logs."""
    from yarl import URL

    try:
        parsed = URL(url)
    except (TypeError, ValueError):
        return "<unparsable url>"
    if not parsed.is_absolute():
        return "<not an absolute url>"
    return str(parsed.with_user(None).with_query(None).with_fragment(None))
