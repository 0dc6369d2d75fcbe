"""A NeMo Gym resources server that a ``nemo_gym`` term starts: in the interpreter the term
names, for as long as the router lives.

NeMo Gym's releases need Python 3.12 or newer and bring their own dependencies (Ray, MLflow,
FastAPI), so the server runs in NeMo Gym's own interpreter, as its own process, reached over HTTP
on 127.0.0.1. It is started when the router compiles (so a missing interpreter, a config NeMo
Gym refuses or a server that fails to start is a compile error, with the end of its log), by
:func:`~rewardrouter.supervise.boot.start_script` running :mod:`.launch` there; it is
ready when it answers. :meth:`ResourcesServer.close` (the router's ``close()``) stops it and
what it started; if the router's process dies first, the server's lifeline ends it.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rewardrouter.introspect import ResolveError
from rewardrouter.rewards.nemo_gym.settings import ServerSettings
from rewardrouter.supervise.boot import cut_lifeline, exit_cause, kill_group, start_script

#: The script the server's interpreter runs.
LAUNCH = Path(__file__).with_name("launch.py")
#: Seconds a stopped server has to exit before its process group is killed.
STOP_SECONDS = 5.0
#: Characters of the server's log an error quotes.
LOG_TAIL = 2_000


def server_config(settings: ServerSettings) -> tuple[dict[str, Any], str]:
    """The NeMo Gym config of the one server to start, and its instance name; raises
    :class:`ResolveError` naming the setting at fault."""
    config: Any = settings.config
    where = "kwargs.server.config"
    if settings.config_path is not None:
        import yaml

        where = "kwargs.server.config_path"
        try:
            config = yaml.safe_load(Path(settings.config_path).read_text())
        except (OSError, yaml.YAMLError) as exc:
            raise ResolveError(
                f"{where}: cannot read {settings.config_path!r}: {exc}",
                "give the path of one of NeMo Gym's config YAML files (resources_servers/<name>/"
                "configs/<name>.yaml)",
            ) from None
    instances = {
        name: body
        for name, body in (config or {}).items()
        if isinstance(body, Mapping)
        and isinstance(body.get("resources_servers"), Mapping)
        and len(body["resources_servers"]) == 1
    }
    if settings.instance is not None:
        if settings.instance not in instances:
            raise ResolveError(
                f"kwargs.server.instance: {settings.instance!r} is not a resources server of "
                f"the config (its resources servers: {', '.join(instances) or 'none'})",
                "name one of them",
            )
        name = settings.instance
    elif len(instances) != 1:
        raise ResolveError(
            f"{where}: holds {len(instances)} resources servers "
            f"({', '.join(instances) or 'none'}); expected one, written "
            "{instance: {resources_servers: {server: {entrypoint: app.py, ...}}}}",
            "name one with kwargs.server.instance"
            if instances
            else "give NeMo Gym's config of "
            "the server, as its resources_servers/<name>/configs/*.yaml write it",
        )
    else:
        name = next(iter(instances))
    return {name: json.loads(json.dumps(instances[name], default=str))}, name


class ResourcesServer:
    """A started resources server: its ``url``; :meth:`close` stops it (idempotent) and
    removes its log (``log``), unless an error named it."""

    def __init__(self, settings: ServerSettings) -> None:
        config, self.instance = server_config(settings)
        python = shutil.which(settings.python)
        if python is None:
            raise ResolveError(
                f"kwargs.server.python: no interpreter {settings.python!r} (not a file, or not "
                "executable)",
                "give the path of the Python (3.12 or newer) that has NeMo Gym installed, "
                "e.g. a venv's bin/python after `pip install nemo-gym`",
            )
        log = tempfile.NamedTemporaryFile(  # noqa: SIM115 - held as long as the server runs
            prefix=f"rewardrouter-nemo-gym-{self.instance}-", suffix=".log", delete=False
        )
        self.log = log.name
        self._keep_log = False  # an error names it: it stays; else close() removes it
        read, write = os.pipe()
        spec = json.dumps({"config": config, "instance": self.instance, "ready": write})
        try:
            self.process, self._lifeline = start_script(
                python, str(LAUNCH), [spec], [write], stdout=log, stderr=subprocess.STDOUT
            )
        finally:
            os.close(write)
            log.close()
        try:
            port = self._await_ready(read, settings.startup_timeout)
        except BaseException:
            self.close()
            raise
        finally:
            os.close(read)
        self.url = f"http://127.0.0.1:{port}"

    def _await_ready(self, fd: int, timeout: float) -> int:
        """The port the server answers on, once it does; :class:`ResolveError` otherwise."""
        ends = time.monotonic() + timeout
        received = b""
        while b"\n" not in received:
            left = ends - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise self._failed(f"did not answer within {timeout:g} s (`startup_timeout`)")
            chunk = os.read(fd, 4096)
            if not chunk:
                code = self.process.wait()
                raise self._failed(f"ended ({exit_cause(code)}) before it answered")
            received += chunk
        told = json.loads(received.split(b"\n", 1)[0])
        if "error" in told:
            raise self._failed(f"could not start: {told['error']}")
        return int(told["port"])

    def _failed(self, what: str) -> ResolveError:
        tail = ""
        with contextlib.suppress(OSError):
            tail = Path(self.log).read_text(errors="replace")[-LOG_TAIL:].strip()
        self._keep_log = bool(tail)  # the error names the log only when it holds something
        return ResolveError(
            f"kwargs.server: NeMo Gym's resources server {self.instance!r} {what}"
            + (f"; the end of its log ({self.log}):\n{tail}" if tail else ""),
            "check that kwargs.server.python has nemo-gym installed (pip install nemo-gym) and "
            "that NeMo Gym accepts the server's config",
        )

    def close(self) -> None:
        """Stop the server: ``SIGTERM``, then its process group killed after
        :data:`STOP_SECONDS`."""
        if self._lifeline < 0:
            return
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(STOP_SECONDS)
        kill_group(self.process.pid)
        self.process.wait()
        cut_lifeline(self._lifeline)
        self._lifeline = -1
        if not self._keep_log:
            with contextlib.suppress(OSError):
                os.unlink(self.log)

    def __repr__(self) -> str:
        return f"ResourcesServer({self.instance!r}, pid {self.process.pid})"
