"""Run a command where the kernel refuses new namespaces, as a container runtime's default
seccomp profile does: ``python tests/rr_seccomp.py COMMAND [ARGS...]``.

The filter is the code sandbox's own (:func:`rewardrouter.rewards.code.harness.seccomp_program`)
restricted to namespaces: ``unshare``, ``setns`` and a ``clone`` asking for any new namespace
fail with EPERM, ``clone3`` with ENOSYS (so the C library falls back to ``clone``); everything
else is allowed. Then it executes the command under it.
"""

from __future__ import annotations

import os
import sys

from rewardrouter.rewards.code.harness import install_seccomp


def refuse_namespaces() -> None:
    """Install the filter on this process (and everything it executes)."""
    install_seccomp(refused=("unshare", "setns"))


if __name__ == "__main__":
    refuse_namespaces()
    os.execv(sys.argv[1], sys.argv[1:])
