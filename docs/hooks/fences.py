"""MkDocs hook: a fence's ``norun: <reason>`` is for the docs test, not for readers.

The pages mark code that the test must not run as ```` ```bash norun: why ````; the site shows
the block as plain ```` ```bash ````.
"""

from __future__ import annotations

import re
from typing import Any

NORUN = re.compile(r"^(?P<fence>\s*```[\w-]+)[ \t]+norun:[^\n]*$", re.M)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    return NORUN.sub(r"\g<fence>", markdown)
