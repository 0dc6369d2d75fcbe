"""Checkouts of trainers that are not pip packages (slime, miles), and of other projects whose
code or data tests read (FastChat's judge, public MT-Bench runs, Prometheus' parser,
simple-evals' answer prefixes, MGSM's exemplars, lighteval's extraction tests).

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
    package: str  # the import package at the checkout's root (a folder path below it)
    needs: tuple[str, ...] = ()  # modules its code imports that tests must have installed
    paths: tuple[str, ...] = ()  # the folders tests read, extracted alone (default: all)

    @property
    def name(self) -> str:
        """The repository's name (its temporary folder and clone are named after it)."""
        return self.repo.rsplit("/", 1)[1]


SLIME = Trainer("THUDM/slime", "RR_SLIME", "slime", needs=("httpx",))
MILES = Trainer("radixark/miles", "RR_MILES", "miles")
#: verifiers' repository: its ``environments/`` hold the tasksets verifiers publishes (each a
#: package folder of its own, ``environments/<name>/<name>/``).
VERIFIERS = Trainer("PrimeIntellect-ai/verifiers", "RR_VERIFIERS", "verifiers")
#: FastChat: MT-Bench's judge (``fastchat/llm_judge/common.py`` reads its ``[[rating]]``).
FASTCHAT = Trainer("lm-sys/FastChat", "RR_FASTCHAT", "fastchat", paths=("fastchat",))
#: Public MT-Bench runs: GPT-4's single-answer judgments as FastChat wrote them, each with the
#: score FastChat read (``fastchat/llm_judge/data/mt_bench/model_judgment/gpt-4_single*.jsonl``).
MT_BENCH_RUNS = (
    Trainer("dreaming-panda/MTBench", "RR_MT_BENCH_RUN_1", "fastchat", paths=("fastchat",)),
    Trainer("alvarobartt/FastChat", "RR_MT_BENCH_RUN_2", "fastchat", paths=("fastchat",)),
    Trainer("muhan421/fastchat-eval", "RR_MT_BENCH_RUN_3", "fastchat", paths=("fastchat",)),
)
#: Prometheus: its judge's parser (``[RESULT] 4``) and that parser's tests.
PROMETHEUS = Trainer(
    "prometheus-eval/prometheus-eval",
    "RR_PROMETHEUS",
    "libs/prometheus-eval/prometheus_eval",
    paths=("libs/prometheus-eval",),
)
#: simple-evals: its multilingual MMLU's localized answer prefixes and the letters it maps to A to
#: D (``common.py``).
SIMPLE_EVALS = Trainer(
    "openai/simple-evals", "RR_SIMPLE_EVALS", "sampler", paths=("common.py", "mgsm_eval.py")
)
#: url-nlp: MGSM's native chain-of-thought exemplars in 11 languages (``mgsm/exemplars.py``).
URL_NLP = Trainer("google-research/url-nlp", "RR_URL_NLP", "mgsm", paths=("mgsm/exemplars.py",))
#: lighteval: its extraction tests, multilingual math among them.
LIGHTEVAL = Trainer(
    "huggingface/lighteval",
    "RR_LIGHTEVAL",
    "tests",
    paths=("tests/unit/metrics/test_extractive_match.py",),
)


def _mirror(trainer: Trainer) -> Path:
    root = Path(os.environ.get("RR_MIRRORS", "/work/.mirror"))
    return root / trainer.repo.replace("/", "+") / "repo"


def _extracted(git_dir: Path, name: str, paths: tuple[str, ...] = ()) -> Path:
    """HEAD of ``git_dir`` (its ``paths`` alone, when given) as a folder in the temporary folder,
    extracted once per commit. A snapshot may lack its largest files: then the files it holds
    are written, and a test that needs another one fails on it."""
    commit = subprocess.run(
        ["git", f"--git-dir={git_dir}", "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    target = Path(tempfile.gettempdir()) / f"rr-checkout-{name}-{commit[:12]}"
    if target.is_dir():
        return target
    partial = target.with_name(f"{target.name}.{uuid.uuid4().hex}.part")
    archive = subprocess.run(
        ["git", f"--git-dir={git_dir}", "archive", "--format=tar", "HEAD", "--", *paths],
        capture_output=True,
    )
    if archive.returncode == 0:
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(partial, filter="data")
    else:  # a file of the tree is not in the snapshot
        _write_present_files(git_dir, partial, paths)
    try:
        partial.rename(target)  # another worker may have finished first: keep its copy
    except OSError:
        shutil.rmtree(partial, ignore_errors=True)
    return target


def found(trainer: Trainer) -> Path | None:
    """The root of a checkout of ``trainer``, or None when there is none."""
    given = os.environ.get(trainer.env)
    if given:
        root = Path(given)
        if not (root / trainer.package).is_dir():
            pytest.fail(f"{trainer.env}={given} holds no {trainer.package}/ package folder")
        return root
    if _mirror(trainer).is_dir():
        return _extracted(_mirror(trainer), trainer.name, trainer.paths)
    return None


def how_to_get(trainer: Trainer) -> str:
    """What to run for a checkout of ``trainer``."""
    return (
        f"git clone https://github.com/{trainer.repo} /tmp/{trainer.name} and set "
        f"{trainer.env}=/tmp/{trainer.name}"
    )


def _write_present_files(git_dir: Path, folder: Path, paths: tuple[str, ...]) -> None:
    """The regular files of HEAD (under ``paths``) whose contents ``git_dir`` holds, written
    under ``folder``; links and the files it lacks are left out."""
    git = ["git", f"--git-dir={git_dir}"]
    listing = subprocess.run(
        [*git, "ls-tree", "-r", "-z", "HEAD", "--", *paths], capture_output=True, check=True
    ).stdout
    files: list[tuple[bytes, bytes, str]] = []  # mode, object, path
    for entry in filter(None, listing.split(b"\0")):
        meta, path = entry.split(b"\t", 1)
        mode, kind, sha = meta.split()
        if kind == b"blob" and mode in (b"100644", b"100755"):
            files.append((mode, sha, os.fsdecode(path)))
    contents = subprocess.run(
        [*git, "cat-file", "--batch"],
        input=b"".join(sha + b"\n" for _, sha, _ in files),
        capture_output=True,
        check=True,
    ).stdout
    at = 0
    for mode, _, path in files:
        end = contents.index(b"\n", at)
        header = contents[at:end].split()
        at = end + 1
        if header[-1] == b"missing":
            continue
        size = int(header[2])
        file = folder / path
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(contents[at : at + size])
        if mode == b"100755":
            file.chmod(0o755)
        at += size + 1


def checkout(trainer: Trainer) -> Path:
    """The root of a checkout of ``trainer``; skips the calling test when there is none."""
    root = found(trainer)
    if root is None:
        pytest.skip(f"no {trainer.repo} checkout: {how_to_get(trainer)}")
    for module in trainer.needs:
        pytest.importorskip(
            module, reason=f"{trainer.repo}'s code imports it: pip install {module}"
        )
    return root
