"""Serve one NeMo Gym resources server on 127.0.0.1: run in NeMo Gym's own interpreter.

Not imported by rewardrouter: :mod:`~rewardrouter.rewards.nemo_gym.server` runs this file with
the interpreter a ``nemo_gym`` term names (:func:`~rewardrouter.supervise.boot.start_script`),
so it imports only the standard library, NeMo Gym and what NeMo Gym brings (uvicorn).

``argv``: the JSON of ``{"config": {instance: {"resources_servers": {server: {...}}}},
"instance": name, "ready": fd}``. The server is built as NeMo Gym's own ``run_webserver`` builds
it (its config read from the global config NeMo Gym reads from ``NEMO_GYM_CONFIG_DICT``, its
FastAPI app, its liveness route and exception middleware), without the head server and the Ray
cluster that ``ng_run`` starts beside it, and served on a port of the system's choosing. Once it
answers, ``{"port": N}`` is written to ``ready``; a failure to start writes ``{"error": ...}``.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import socket
import sys
import traceback
from typing import Any


def _tell(fd: int, message: dict[str, Any]) -> None:
    os.write(fd, (json.dumps(message) + "\n").encode())


def _server(config: dict[str, Any], instance: str, port: int) -> Any:
    """The resources server of ``instance``, configured as NeMo Gym configures it."""
    server_type, settings = next(iter(config[instance]["resources_servers"].items()))
    settings.update(host="127.0.0.1", port=port)
    entrypoint = str(settings.get("entrypoint", "app.py"))
    module_name = (
        f"resources_servers.{server_type}.{entrypoint.removesuffix('.py').replace('/', '.')}"
    )
    os.environ["NEMO_GYM_CONFIG_DICT"] = json.dumps(
        {**config, "head_server": {"host": "127.0.0.1", "port": 0}, "dry_run": False}
    )
    os.environ["NEMO_GYM_CONFIG_PATH"] = instance
    from nemo_gym.base_resources_server import SimpleResourcesServer
    from nemo_gym.config_types import BaseServerConfig
    from nemo_gym.global_config import get_global_config_dict
    from nemo_gym.server_utils import ServerClient

    module = importlib.import_module(module_name)
    found = [
        value
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, SimpleResourcesServer)
        and value.__module__ == module.__name__
    ]
    if len(found) != 1:
        raise LookupError(
            f"{module_name} defines {len(found)} resources server classes; expected one"
        )
    cls: Any = found[0]
    client = ServerClient(
        head_server_config=BaseServerConfig(host="127.0.0.1", port=0),
        global_config_dict=get_global_config_dict(),
    )
    return cls(config=cls.load_config_from_global_config(), server_client=client)


async def _serve(server: Any, sock: socket.socket, ready: int) -> None:
    import uvicorn

    app = server.setup_webserver()
    server.setup_liveness(app)
    server.setup_exception_middleware(app)
    web = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1, lifespan="on")
    )
    serving = asyncio.ensure_future(web.serve(sockets=[sock]))
    while not web.started:
        if serving.done():
            serving.result()
            raise RuntimeError("uvicorn stopped before it served")
        await asyncio.sleep(0.05)
    _tell(ready, {"port": sock.getsockname()[1]})
    await serving


def main() -> None:
    spec = json.loads(sys.argv[1])
    del sys.argv[1:]  # NeMo Gym reads the command line as its own config overrides
    ready = spec["ready"]
    try:
        if sys.version_info < (3, 12):
            raise RuntimeError(
                f"this interpreter is Python {sys.version.split()[0]}; NeMo Gym needs 3.12 or newer"
            )
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        server = _server(spec["config"], spec["instance"], sock.getsockname()[1])
    except BaseException as exc:  # everything a start can raise is reported, not a traceback
        frames = traceback.extract_tb(exc.__traceback__)
        where = f" ({frames[-1].filename}:{frames[-1].lineno})" if frames else ""
        _tell(ready, {"error": f"{type(exc).__name__}: {exc}{where}"})
        sys.exit(1)
    asyncio.run(_serve(server, sock, ready))


if __name__ == "__main__":
    main()
