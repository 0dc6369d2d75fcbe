"""A real multi-node Ray cluster on this machine, for the ``ray`` executor's cluster tests.

Each node is its own ``ray start --block`` process group (a head, then nodes that join it), with
its own temp dir and ports, so that a test can kill one node — every process of it, at once, as
when a machine is lost — and start another. Nothing here runs ``ray stop``, which would stop
every Ray instance on the machine, other users' included.

Token authentication: a process that has started a local Ray instance (recent Ray turns token
mode on for it, with this machine's token) can run actors only on a cluster in token mode, and
one that has not, only on a cluster without it — whichever earlier code ran. So
:meth:`LocalCluster.for_this_machine` makes a cluster that authenticates with this machine's
token, and :meth:`LocalCluster.join` connects this process to it in token mode.

>>> cluster = LocalCluster.for_this_machine()   # doctest: +SKIP
>>> head = cluster.start(cpus=1, head=True)     # doctest: +SKIP
>>> node = cluster.start(cpus=1)                # doctest: +SKIP
>>> cluster.join(log_to_driver=False)           # ray.init(address=...)  # doctest: +SKIP
>>> node.kill()                                 # doctest: +SKIP
>>> cluster.stop()                              # doctest: +SKIP
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RAY = str(Path(sys.executable).with_name("ray"))
#: Seconds a node may take to start on a loaded machine.
START_SECONDS = 90.0
#: The GCS declares a silent node dead after period times threshold: 1.5 s here, not 15 s.
FAST_HEALTH_CHECKS = {
    "RAY_health_check_period_ms": "500",
    "RAY_health_check_timeout_ms": "500",
    "RAY_health_check_failure_threshold": "3",
}


def machine_token() -> str | None:
    """This machine's Ray token (made if it has none, as a first local ``ray.init`` does), or
    None where Ray has no token authentication."""
    done = subprocess.run(
        [RAY, "get-auth-token", "--generate"], capture_output=True, text=True, check=False
    )
    return done.stdout.strip() if done.returncode == 0 else None


_handed_out: set[int] = set()


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports free now and never handed out before by this process: the
    sockets stay bound until all are chosen (one bound and closed at a time can give the same
    port twice, which ``ray start`` refuses)."""
    held: list[socket.socket] = []
    try:
        ports: list[int] = []
        while len(ports) < count:
            sock = socket.socket()
            held.append(sock)
            sock.bind(("127.0.0.1", 0))
            port: int = sock.getsockname()[1]
            if port not in _handed_out:
                _handed_out.add(port)
                ports.append(port)
        return ports
    finally:
        for sock in held:
            sock.close()


@dataclass(eq=False)
class Node:
    """One ``ray start --block`` process group."""

    process: subprocess.Popen[bytes]
    temp_dir: Path
    log: Path
    cpus: int

    def kill(self) -> None:
        """Every process of the node dies at once (SIGKILL to its process group)."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


@dataclass(eq=False)
class LocalCluster:
    """A head and the nodes that join it; ``env`` is added to every node's environment."""

    env: Mapping[str, str] = field(default_factory=dict)
    address: str = ""
    nodes: list[Node] = field(default_factory=list)
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="rrc")))

    @classmethod
    def for_this_machine(cls) -> LocalCluster:
        """A cluster that authenticates with this machine's token, where Ray has tokens."""
        token = machine_token()
        if token is None:
            return cls()
        return cls(env={"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token})

    def join(self, **options: Any) -> None:
        """``ray.init`` this process into the cluster (in token mode if the cluster is)."""
        import ray

        if self.env.get("RAY_AUTH_MODE") == "token":
            # Ray reads the mode when it is imported; a local ray.init re-reads it so, too.
            os.environ["RAY_AUTH_MODE"] = "token"
            ray._raylet.Config.initialize("")
        ray.init(address=self.address, **options)

    def start(self, cpus: int, head: bool = False) -> Node:
        """Start a node with ``cpus`` CPUs (the head first) and wait until the cluster has it."""
        temp_dir = Path(tempfile.mkdtemp(prefix="n", dir=self.root))  # short: socket paths
        log = temp_dir / "start.log"
        ports = free_ports(5)
        args = [
            RAY, "start", "--block", "--disable-usage-stats", f"--num-cpus={cpus}",
            f"--temp-dir={temp_dir}", "--node-ip-address=127.0.0.1",
            "--object-store-memory=100000000", "--min-worker-port=0", "--max-worker-port=0",
            f"--dashboard-agent-listen-port={ports[0]}", f"--dashboard-agent-grpc-port={ports[1]}",
            f"--metrics-export-port={ports[2]}", f"--runtime-env-agent-port={ports[3]}",
        ]  # fmt: skip
        if head:
            port = ports[4]
            self.address = f"127.0.0.1:{port}"
            args += ["--head", f"--port={port}", "--include-dashboard=false"]
        else:
            args += [f"--address={self.address}"]
        # This process's Ray settings (an address, an authentication mode that an earlier
        # ray.init set here) are not the cluster's: only ``env`` says those.
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
        env = {**inherited, **FAST_HEALTH_CHECKS, **self.env}
        with log.open("wb") as out:
            process = subprocess.Popen(
                args, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        node = Node(process, temp_dir, log, cpus)
        self.nodes.append(node)
        deadline = time.monotonic() + START_SECONDS
        while b"Ray runtime started" not in log.read_bytes():
            if process.poll() is not None or time.monotonic() > deadline:
                node.kill()
                raise RuntimeError(f"ray start failed:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)
        return node

    def stop(self) -> None:
        """Kill every node (the head last) and remove their temp dirs."""
        for node in reversed(self.nodes):
            node.kill()
        self.nodes.clear()
        shutil.rmtree(self.root, ignore_errors=True)
