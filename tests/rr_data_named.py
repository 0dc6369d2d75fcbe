"""A reward module as users write them, with names it imports: what data may and may not name
through ``custom_rm_path`` (for the data-named-code guard tests)."""

from __future__ import annotations

import functools
from os import execv  # noqa: F401  (imported names: data must not reach them through here)
from subprocess import Popen  # noqa: F401
from typing import Any

from rr_testfns import length as reexported  # noqa: F401  (defined in rr_testfns)


def defined_here(args: Any, sample: Any) -> float:
    return 2.0


class Scorer:
    def __call__(self, args: Any, sample: Any) -> float:
        return 3.0


scorer = Scorer()  # an instance of a class defined here
wrapped = functools.partial(defined_here)  # a functools object: defined in functools
