"""``ray.runtime_env`` for the actors of the ``ray`` executor, local directories included.

Ray accepts local paths in ``py_modules`` and ``working_dir`` only at the job level
(``ray.init(runtime_env=...)``); an actor's ``runtime_env`` must name packages already in the
cluster. A router often runs in a process that is connected already (a trainer's driver, a
rollout actor), where it cannot change the job's environment, so it does for its actors what
``ray.init`` does for a job: each local entry is zipped and uploaded to the cluster's store,
content-addressed (``gcs://_ray_pkg_<hash>.zip``, uploaded once, whichever router asks), and the
actors get those URIs. Every node then imports the modules from the package, whether or not
they are on its disk.

Through Ray Client the router cannot upload; the host program passes ``runtime_env`` to its
own ``ray.init`` (a router that connects through Ray Client itself does so).
"""

from __future__ import annotations

import copy
import inspect
import os
import tempfile
from collections.abc import Callable, Mapping
from typing import Any

from rewardrouter.errors import RewardRouterError

#: The entries of a runtime env that may name local paths.
LOCAL_PATH_FIELDS = ("py_modules", "working_dir")


def shipped(runtime_env: Mapping[str, Any]) -> dict[str, Any]:
    """``runtime_env`` with its local ``py_modules`` and ``working_dir`` uploaded to the
    cluster this process is connected to, as URIs an actor accepts. Raises
    :class:`RewardRouterError` naming the entry when a path cannot be uploaded."""
    env = copy.deepcopy(dict(runtime_env))
    if not any(env.get(name) for name in LOCAL_PATH_FIELDS):
        return env
    try:
        from ray._private.runtime_env.py_modules import upload_py_modules_if_needed
        from ray._private.runtime_env.working_dir import upload_working_dir_if_needed
    except ImportError as exc:  # a Ray release that moved them
        raise RewardRouterError(
            f"ray.runtime_env: this Ray release cannot upload local paths for actors ({exc}); "
            f"pass the runtime env to `ray.init(runtime_env=...)` in the host program instead"
        ) from None
    with tempfile.TemporaryDirectory(prefix="rewardrouter-ray-") as scratch:
        for name, upload in (
            ("py_modules", upload_py_modules_if_needed),
            ("working_dir", upload_working_dir_if_needed),
        ):
            if env.get(name):
                env = _upload(name, upload, env, scratch)
    env.pop("excludes", None)  # applied while zipping; actors do not accept it
    return env


def _upload(
    name: str, upload: Callable[..., dict[str, Any]], env: dict[str, Any], scratch: str
) -> dict[str, Any]:
    options: dict[str, Any] = {"scratch_dir": scratch}
    if "include_gitignore" in inspect.signature(upload).parameters:  # Ray >= 2.50
        options["include_gitignore"] = True
    try:
        return upload(env, **options)
    except Exception as exc:
        lines = str(exc).strip().splitlines()
        cause = f"{type(exc).__name__}: {lines[-1] if lines else ''}"
        raise RewardRouterError(
            f"ray.runtime_env.{name}: {env[name]!r} could not be uploaded to the Ray cluster "
            f"({cause}); expected package directories, .py or .whl files (relative paths are "
            f"read from {os.getcwd()}) or URIs the cluster can fetch"
        ) from exc
