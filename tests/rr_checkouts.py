"""Checkouts of trainers that are not pip packages (slime, miles), for tests that run their code.

A checkout is found, in order, at the path in the environment variable the trainer names
(``RR_SLIME=/path/to/slime``), or in a fetched mirror of its repository: a git directory
``$RR_MIRRORS/<owner>+<name>/repo`` (``RR_MIRRORS`` defaults to ``/work/.mirror``), whose HEAD is
extracted once into the system's temporary folder (``rr-checkout-<name>-<commit>``) and reused
by later sessions and parallel workers. Without either, :func:`checkout` skips the test and
says how to provide one.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class Trainer:
    """A trainer's repository and what its tested modules import beyond rewardrouter's deps."""

    repo: str  # owner/name on GitHub
    env: str  # the variable that may hold a checkout's path
    package: str  # the import package at the checkout's root
    needs: tuple[str, ...] = ()  # modules its code imports that tests must have installed


SLIME = Trainer("THUDM/slime", "RR_SLIME", "slime", needs=("httpx",))
MILES = Trainer("radixark/miles", "RR_MILES", "miles")
#: verifiers' repository: its ``environments/`` hold the tasksets verifiers publishes (each a
#: package folder of its own, ``environments/<name>/<name>/``).
VERIFIERS = Trainer("PrimeIntellect-ai/verifiers", "RR_VERIFIERS", "verifiers")


def _mirror(trainer: Trainer) -> Path:
    root = Path(os.environ.get("RR_MIRRORS", "/work/.mirror"))
    return root / trainer.repo.replace("/", "+") / "repo"


def _extracted(git_dir: Path, name: str) -> Path:
    """HEAD of ``git_dir`` as a folder in the temporary folder, extracted once per commit."""
    commit = subprocess.run(
        ["git", f"--git-dir={git_dir}", "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    target = Path(tempfile.gettempdir()) / f"rr-checkout-{name}-{commit[:12]}"
    if target.is_dir():
        return target
    archive = subprocess.run(
        ["git", f"--git-dir={git_dir}", "archive", "--format=tar", "HEAD"],
        capture_output=True,
        check=True,
    ).stdout
    partial = target.with_name(f"{target.name}.{uuid.uuid4().hex}.part")
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(partial, filter="data")
    try:
        partial.rename(target)  # another worker may have finished first: keep its copy
    except OSError:
        shutil.rmtree(partial, ignore_errors=True)
    return target


def checkout(trainer: Trainer) -> Path:
    """The root of a checkout of ``trainer``; skips the calling test when there is none."""
    given = os.environ.get(trainer.env)
    if given:
        root = Path(given)
        if not (root / trainer.package).is_dir():
            pytest.fail(f"{trainer.env}={given} holds no {trainer.package}/ package folder")
    elif _mirror(trainer).is_dir():
        root = _extracted(_mirror(trainer), trainer.package)
    else:
        pytest.skip(
            f"no {trainer.repo} checkout: git clone https://github.com/{trainer.repo} "
            f"/tmp/{trainer.package} and set {trainer.env}=/tmp/{trainer.package}"
        )
    for module in trainer.needs:
        pytest.importorskip(
            module, reason=f"{trainer.repo}'s code imports it: pip install {module}"
        )
    return root
