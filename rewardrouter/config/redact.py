"""Config values as they may be shown: credentials masked in reprs and messages.

A config holds secrets in a few places only: a URL's user name, password or query values
(``https://user:pw@host/v1?key=...``), request headers, and keys named like credentials
(``api_key``, ``token``, ``password``). :func:`redacted` masks them and leaves the rest as is;
the models that hold such values use it in their ``repr`` (``RewardTerm.kwargs``, the remote
kinds' settings). What is sent on the wire is untouched.

>>> redacted({"url": "https://u:pw@api.example.com/v1?api-version=2024&key=s3cret", "n": 3})
{'url': 'https://***:***@api.example.com/v1?api-version=***&key=***', 'n': 3}
>>> redacted({"headers": {"Authorization": "Bearer abc"}, "api_key": "abc", "model": "m"})
{'headers': {'Authorization': '***'}, 'api_key': '***', 'model': 'm'}
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"

#: Keys whose values are credentials; ``headers`` values are all masked (any may carry one).
_SECRET_KEY = re.compile(
    r"(api[_-]?key|token|secret|passw(or)?d|credential|authorization|cookie|signature)",
    re.IGNORECASE,
)


def redact_url(url: str) -> str:
    """``url`` with its user name, password and query values masked (its path kept)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return url if "@" not in url and "?" not in url else MASK
    if not parts.scheme or host is None:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        netloc = f"{MASK}:{MASK}@{hostport}" if ":" in userinfo else f"{MASK}@{hostport}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(key, MASK) for key, _ in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment and MASK))


def redacted(value: Any, key: str | None = None) -> Any:
    """``value`` with the credentials in it masked (see the module doc)."""
    headers = key is not None and key.lower() == "headers"
    if isinstance(value, str | bytes) and (headers or (key and _SECRET_KEY.search(key))):
        return MASK
    if isinstance(value, Mapping):
        if headers:
            return {k: MASK for k in value}
        return {k: redacted(v, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = [redacted(item) for item in value]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, str) and "://" in value:
        return redact_url(value)
    return value
