"""NeMo Gym for the tests that run its code: a virtual environment of its own, made on first use.

NeMo Gym's releases need Python 3.12 or newer, so its code runs in an interpreter of its own: a
venv of ``nemo-gym==VERSION`` made from a Python 3.12 found on this machine (``RR_PYTHON312``,
``python3.12`` on PATH, or pyenv's 3.12 versions), cached in the system's temporary folder
(``rr-nemo-gym-<version>-py<x.y>``) for later sessions and parallel workers; the first install
takes minutes. Without a 3.12 interpreter (or when the install fails) :func:`nemo_gym_python`
skips the test and says why. :func:`nemo_gym_client` runs NeMo Gym's own client there.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

VERSION = "0.4.0"

#: NeMo Gym's own client posting verify requests, as its agents do after a rollout
#: (``ServerClient.post`` to the resources server the global config names; ``/seed_session``
#: first, its cookies kept for ``/verify``); each reply validated as NeMo Gym's agents validate
#: it (``BaseVerifyResponse``). ``argv``: host, port; the rows are JSON lines on stdin; one
#: JSON line out per row: the reply's reward (or the status and error of a failed request).
CLIENT = """
import asyncio, json, sys
host, port = sys.argv[1], int(sys.argv[2])
del sys.argv[1:]  # NeMo Gym reads the command line as its own config overrides
from omegaconf import OmegaConf
from nemo_gym.base_resources_server import BaseVerifyResponse
from nemo_gym.config_types import BaseServerConfig
from nemo_gym.server_utils import ServerClient, get_response_json

async def main():
    config = OmegaConf.create(
        {"graded": {"resources_servers": {"rr": {"host": host, "port": port}}}}
    )
    client = ServerClient(
        head_server_config=BaseServerConfig(host=host, port=0), global_config_dict=config
    )
    for line in sys.stdin:
        row = json.loads(line)
        seeded = await client.post(server_name="graded", url_path="/seed_session", json=row)
        seeded.raise_for_status()
        reply = await client.post(
            server_name="graded", url_path="/verify", json=row, cookies=seeded.cookies
        )
        if reply.status != 200:
            print(json.dumps({"status": reply.status, "error": (await reply.text())[:300]}))
            continue
        verified = BaseVerifyResponse.model_validate(await get_response_json(reply))
        print(json.dumps({"reward": verified.reward}), flush=True)

asyncio.run(main())
"""


def _python312() -> str | None:
    given = os.environ.get("RR_PYTHON312")
    if given:
        return given
    found = shutil.which("python3.12")
    if found:
        return found
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    for version in sorted(root.glob("3.12*"), reverse=True):
        if (version / "bin" / "python").is_file():
            return str(version / "bin" / "python")
    return None


def nemo_gym_python() -> str:
    """The interpreter of a venv with ``nemo-gym`` installed; skips the test without one."""
    base = _python312()
    if base is None:
        pytest.skip(
            "NeMo Gym needs Python 3.12, and none is on this machine: set RR_PYTHON312 to one "
            "(or put python3.12 on PATH)"
        )
    venv = Path(tempfile.gettempdir()) / f"rr-nemo-gym-{VERSION}-py3.12"
    python = venv / "bin" / "python"
    done = venv / ".installed"
    if done.is_file():
        return str(python)
    with open(f"{venv}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one worker installs; the others wait for it
        if not done.is_file():
            shutil.rmtree(venv, ignore_errors=True)
            steps = [
                [base, "-m", "venv", str(venv)],
                [str(python), "-m", "pip", "install", "--quiet", f"nemo-gym=={VERSION}"],
            ]
            for step in steps:
                ran = subprocess.run(step, capture_output=True, text=True, timeout=1800)
                if ran.returncode != 0:
                    pytest.skip(
                        f"could not install nemo-gym=={VERSION} for Python 3.12 ({' '.join(step[:4])} "
                        f"exited {ran.returncode}): {ran.stderr[-500:]}"
                    )
            done.write_text(VERSION)
    return str(python)


def site_packages(python: str) -> Path:
    """The folder NeMo Gym's packages are installed in (its ``resources_servers`` among them)."""
    code = "import nemo_gym, pathlib; print(pathlib.Path(nemo_gym.__file__).parent.parent)"
    return Path(subprocess.check_output([python, "-c", code], text=True).strip())


def nemo_gym_client(python: str, host: str, port: int, rows: list[dict[str, Any]]) -> list[Any]:
    """What NeMo Gym's own client reads from the server at ``host:port`` for each row."""
    ran = subprocess.run(
        [python, "-c", CLIENT, host, str(port)],
        input="".join(json.dumps(row) + "\n" for row in rows),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    return [json.loads(line) for line in ran.stdout.splitlines() if line.startswith("{")]


def example_rollouts(python: str, server: str) -> list[dict[str, Any]]:
    """The rollouts NeMo Gym ships with resources server ``server`` (its
    ``data/example_rollouts.jsonl``: rows with their response and the reward NeMo Gym gave)."""
    path = site_packages(python) / "resources_servers" / server / "data" / "example_rollouts.jsonl"
    if not path.is_file():
        pytest.skip(f"nemo-gym=={VERSION} ships no {path.name} for {server}")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def rollout_sample(row: dict[str, Any], leave_out: tuple[str, ...] = ()) -> dict[str, Any]:
    """A NeMo Gym rollout as a sample: its prompt, its reply's text, its label, and the rest of
    its row as metadata (but ``leave_out``: fields a verify reply added)."""
    text = "".join(
        part["text"]
        for item in row["response"]["output"]
        if item["type"] == "message"
        for part in item["content"]
        if part["type"] == "output_text"
    )
    dropped = ("response", "expected_answer", *leave_out)
    return {
        "prompt": row["responses_create_params"]["input"],
        "response": text,
        "label": row["expected_answer"],
        "metadata": {k: v for k, v in row.items() if k not in dropped},
    }
