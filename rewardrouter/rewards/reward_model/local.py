"""A Hugging Face ``AutoModelForSequenceClassification`` run in a worker process of its own.

The trainer's process renders each sample (:class:`~.tokenized.ChatRenderer`) and sends the
texts of a route group, each distinct text once, to one worker process that holds the model:
on the GPU when torch sees one (``device: auto``), else on the CPU. The worker tokenizes, drops
an input longer than ``max_tokens`` (``invalid``, never truncated: a truncated response would be
scored on what it did not say), sorts the rest by length and packs them into forward passes of
at most ``max_batch_tokens`` padded tokens. The score is output ``label_index`` of the head at
the last real token, as the model's own ``forward`` picks it.

The worker starts when the router is built, so the model loads while the trainer generates.
One call at a time reaches it; a call that outlasts ``deadline`` seconds kills the worker (its
inputs are ``timeout``), and the next call starts a new one. A worker that fails to load
reports why, and every call then fails with that message until the router is rebuilt.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
from concurrent.futures import ThreadPoolExecutor
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from typing import Any, ClassVar

from rewardrouter.execute.process.boot import die_with_parent, start_python
from rewardrouter.remote.errors import RemoteError, RemoteTimeout
from rewardrouter.rewards.reward_model.conversation import Unusable
from rewardrouter.rewards.reward_model.scores import ScoreCache, Scored, score_samples
from rewardrouter.rewards.reward_model.settings import RewardModelSettings

#: Seconds a stopping worker has before it is killed.
STOP_GRACE = 5.0


class LocalRewardModel:
    """``await model(args, samples)``: one ``{"score", "raw"}`` (or failure) per sample."""

    #: The router hands it each response as a validated conversation (rewardrouter.trajectory);
    #: a plain-text response comes as one assistant message.
    reads_conversation: ClassVar[bool] = True

    __slots__ = ("_cache", "_lock", "_thread", "_worker", "name", "renderer", "settings")

    def __init__(self, settings: RewardModelSettings, renderer: Any) -> None:
        self.settings = settings
        self.renderer = renderer
        self.name = f"reward model {settings.model!r} (local)"
        self._cache = ScoreCache(settings.cache_size)
        self._lock = threading.Lock()
        self._worker: _Worker | None = _Worker(settings, renderer.chat)
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="rewardrouter-reward-model")

    def __repr__(self) -> str:
        return f"LocalRewardModel({self.name!r})"

    async def __call__(self, args: Any, samples: Any) -> list[Any]:
        return await score_samples(
            samples, self.renderer.render, self._cache, self._score, self.settings.normalize
        )

    async def _score(self, texts: list[str]) -> list[Scored]:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._thread, self._exchange, texts)
        except RemoteError as exc:  # every input of the call fails with it, each on its own
            return [exc] * len(texts)

    def _exchange(self, texts: list[str]) -> list[Scored]:
        with self._lock:
            if self._worker is None:
                raise RemoteError(f"{self.name} is closed")
            if self._worker.lost:
                self._worker = self._worker.restarted()
            try:
                replies = self._worker.score(texts)
            except RemoteTimeout:
                self._worker.kill()
                raise
        return [value if kind == "ok" else Unusable(str(value)) for kind, value in replies]

    def close(self) -> None:
        """Stop the worker (idempotent)."""
        with self._lock:
            worker, self._worker = self._worker, None
        if worker is not None:
            worker.stop()
        self._thread.shutdown(wait=False)


class _Worker:
    """The worker process and the parent's end of its pipe."""

    def __init__(self, settings: RewardModelSettings, chat: bool) -> None:
        self.settings = settings
        self.chat = chat
        # A fresh interpreter, never a fork (a trainer's threads, CUDA) nor multiprocessing's
        # spawn (which runs the trainer's script again in the child).
        self.conn, child = Pipe()
        self.process = start_python(
            serve_fresh, [child.fileno(), _spec(settings, chat)], [child.fileno()]
        )
        child.close()
        self.ready: dict[str, Any] | None = None
        self.failed: str | None = None

    @property
    def lost(self) -> bool:
        """Whether the process is gone (killed at a deadline, or died) and should be started
        again; a worker whose model failed to load is not: it would fail the same way."""
        return self.failed is None and self.process.poll() is not None

    def restarted(self) -> _Worker:
        self.kill()
        return _Worker(self.settings, self.chat)

    def _await_ready(self) -> None:
        if self.ready is not None:
            return
        if self.failed is None:
            if not self.conn.poll(self.settings.load_timeout):
                self.kill()
                self.failed = (
                    f"the model did not load within `load_timeout` ({self.settings.load_timeout:g}"
                    " s); raise it, or check the worker's device"
                )
            else:
                kind, value = self._recv()
                if kind == "ready":
                    self.ready = value
                    return
                self.failed = str(value)
        raise RemoteError(
            f"the reward model worker could not load {self.settings.model!r}: {self.failed}"
        )

    def score(self, texts: list[str]) -> list[tuple[str, Any]]:
        self._await_ready()
        self.conn.send(("score", texts))
        if not self.conn.poll(self.settings.deadline):
            raise RemoteTimeout(
                f"the reward model gave no scores for {len(texts)} input(s) within `deadline` "
                f"({self.settings.deadline:g} s); the worker is restarted"
            )
        kind, value = self._recv()
        if kind != "scores":
            raise RemoteError(f"the reward model failed on this batch: {value}")
        return list(value)

    def _recv(self) -> tuple[str, Any]:
        try:
            kind, value = self.conn.recv()
        except (EOFError, OSError):
            self.kill()
            code = self.process.returncode
            raise RemoteError(
                f"the reward model worker died (exit code {code}); it is restarted on the next call"
            ) from None
        return str(kind), value

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.conn.close()

    def stop(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.conn.send(("stop", None))
        with contextlib.suppress(Exception):
            self.process.wait(STOP_GRACE)
        self.kill()


def _spec(settings: RewardModelSettings, chat: bool) -> dict[str, Any]:
    return {
        "model": settings.model,
        "device": settings.device,
        "dtype": settings.dtype,
        "threads": settings.threads,
        "label_index": settings.label_index,
        "max_tokens": settings.max_tokens,
        "max_batch_tokens": settings.max_batch_tokens,
        "add_special_tokens": not chat,
    }


# -- the worker's side -----------------------------------------------------------------------


def serve_fresh(conn_fd: int, spec: dict[str, Any]) -> None:
    """The entry point of the worker's interpreter (see :func:`start_python`)."""
    die_with_parent()
    serve(Connection(conn_fd), spec)


def serve(conn: Connection, spec: dict[str, Any]) -> None:
    """The worker process: load the model, then answer ``("score", texts)`` until stopped."""
    try:
        model = _LoadedModel(spec)
    except BaseException as exc:  # everything a load can raise is reported, not a traceback
        conn.send(("failed", f"{type(exc).__name__}: {str(exc)[:500]}"))
        return
    conn.send(("ready", {"device": str(model.device), "max_tokens": model.max_tokens}))
    while True:
        try:
            kind, texts = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        if kind == "stop":
            return
        try:
            conn.send(("scores", model.score(texts)))
        except Exception as exc:  # out of memory, a kernel error: this batch fails, not the worker
            conn.send(("error", f"{type(exc).__name__}: {str(exc)[:500]}"))


class _LoadedModel:
    def __init__(self, spec: dict[str, Any]) -> None:
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        if spec["threads"]:
            torch.set_num_threads(spec["threads"])
        device = spec["device"]
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        dtype = spec["dtype"]
        if dtype == "auto":
            dtype = "bfloat16" if device == "cuda" else "float32"
        self.tokenizer = AutoTokenizer.from_pretrained(spec["model"], local_files_only=True)
        self.model = AutoModelForSequenceClassification.from_pretrained(
            spec["model"], local_files_only=True, dtype=getattr(torch, dtype)
        )
        self.model.to(device).eval()
        self.device = torch.device(device)
        config = self.model.config
        if spec["label_index"] >= config.num_labels:
            raise ValueError(
                f"`label_index` is {spec['label_index']} but the model has {config.num_labels} "
                "output(s)"
            )
        pad = self.tokenizer.pad_token_id
        if pad is None:  # batches need a pad token; the model finds its last real token by it
            pad = self.tokenizer.eos_token_id if self.tokenizer.eos_token_id is not None else 0
            self.tokenizer.pad_token_id = pad
        if config.pad_token_id is None:
            config.pad_token_id = pad
        self.tokenizer.padding_side = "right"
        self.label = spec["label_index"]
        self.max_tokens = spec["max_tokens"] or getattr(config, "max_position_embeddings", None)
        self.budget = spec["max_batch_tokens"]
        self.add_special = spec["add_special_tokens"]

    def score(self, texts: list[str]) -> list[tuple[str, Any]]:
        ids = self.tokenizer(texts, add_special_tokens=self.add_special)["input_ids"]
        out: list[tuple[str, Any]] = [("ok", 0.0)] * len(texts)
        todo: list[int] = []
        for i, tokens in enumerate(ids):
            if not tokens:
                out[i] = ("invalid", "the input has no tokens")
            elif self.max_tokens is not None and len(tokens) > self.max_tokens:
                out[i] = (
                    "invalid",
                    f"the input is {len(tokens):,} tokens, over the model's {self.max_tokens:,} "
                    "(`max_tokens`); it is not truncated: a truncated response would be scored "
                    "on what it did not say",
                )
            else:
                todo.append(i)
        todo.sort(key=lambda i: len(ids[i]))
        for batch in self._batches(todo, ids):
            for i, value in zip(batch, self._forward([ids[i] for i in batch]), strict=True):
                if math.isfinite(value):
                    out[i] = ("ok", value)
                else:
                    out[i] = ("invalid", f"the model's score is {value}; a score must be finite")
        return out

    def _batches(self, order: list[int], ids: list[list[int]]) -> list[list[int]]:
        """``order`` (sorted by length) cut into runs whose padded size fits the budget."""
        batches: list[list[int]] = []
        current: list[int] = []
        for i in order:
            longest = len(ids[i])  # sorted: the newest row is the longest
            if current and (len(current) + 1) * longest > self.budget:
                batches.append(current)
                current = []
            current.append(i)
        if current:
            batches.append(current)
        return batches

    def _forward(self, rows: list[list[int]]) -> list[float]:
        import torch

        padded = self.tokenizer.pad({"input_ids": rows}, return_tensors="pt")
        with torch.inference_mode():
            logits = self.model(
                input_ids=padded["input_ids"].to(self.device),
                attention_mask=padded["attention_mask"].to(self.device),
            ).logits
        return [float(x) for x in logits[:, self.label].float().cpu()]
