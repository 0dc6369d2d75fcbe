"""A Hugging Face ``AutoModelForSequenceClassification`` run in a worker process of its own.

The trainer's process renders each sample (:class:`~.tokenized.ChatRenderer`) and sends the
texts of a route group, each distinct text once, to one worker process that holds the model:
on the GPU when torch sees one (``device: auto``), else on the CPU. The worker tokenizes, drops
an input longer than ``max_tokens`` (``invalid``, never truncated: a truncated response would be
scored on what it did not say), sorts the rest by length and packs them into forward passes of
at most ``max_batch_tokens`` padded tokens. The score is the head's output that the term names
(``label`` or ``label_index``, checked against the model's outputs when the router compiles, see
:mod:`~.checkpoint`), read where the model's own ``forward`` reads an input alone: the model
reads the last token that is not its pad id (``config.pad_token_id``), so each batch is padded
with that id, whatever the tokenizer pads with; a model whose config has none reads an input's
last token, so its batches are padded with an id that ends none of their rows. A padded row
then scores as it does alone.

The worker starts when the router is built, so the model loads while the trainer generates; a
:class:`~rewardrouter.supervise.supervisor.Supervisor` watches it. It is forked by a fork server
that imported torch and transformers once for the process (:data:`PRELOAD`). One call at a time reaches it;
a call that outlasts ``deadline`` seconds kills the worker (its inputs are ``timeout``), and the
next call starts a new one, as it does after a crash. A worker that fails to load
reports why, and every call then fails with that message until the router is rebuilt; one
whose weights lack a parameter of the classifier (its score head: a causal language model's
checkpoint) is such a failure, never a model with a random head.
"""

from __future__ import annotations

import asyncio
import math
from concurrent.futures import ThreadPoolExecutor
from itertools import chain
from typing import Any, ClassVar

from rewardrouter.remote.errors import RemoteError, RemoteTimeout
from rewardrouter.rewards.reward_model.checkpoint import missing_weights
from rewardrouter.rewards.reward_model.conversation import Unusable
from rewardrouter.rewards.reward_model.scores import ScoreCache, Scored, score_samples
from rewardrouter.rewards.reward_model.settings import RewardModelSettings
from rewardrouter.supervise.supervisor import (
    ChildDied,
    ChildRaised,
    ChildTimeout,
    ChildUnready,
    Supervisor,
)

#: Seconds a stopping worker has before it is killed.
STOP_GRACE = 5.0
#: What the worker imports before it loads a model: the fork server of these modules imports
#: them once per process, and each worker (a restart after a crash or a deadline, another
#: router's) is forked from it, a model load away from ready instead of seconds of imports.
PRELOAD = ("torch", "transformers")


class LocalRewardModel:
    """``await model(args, samples)``: one ``{"score", "raw"}`` (or failure) per sample."""

    #: The router hands it each response as a validated conversation (rewardrouter.trajectory);
    #: a plain-text response comes as one assistant message.
    reads_conversation: ClassVar[bool] = True

    __slots__ = ("_cache", "_supervisor", "_thread", "name", "renderer", "settings")

    def __init__(self, settings: RewardModelSettings, renderer: Any, label: int) -> None:
        self.settings = settings
        self.renderer = renderer
        self.name = f"reward model {settings.model!r} (local)"
        self._cache = ScoreCache(settings.cache_size)
        self._supervisor = Supervisor(
            "the reward model worker",
            load,
            _spec(settings, renderer.chat, label),
            ready_timeout=settings.load_timeout,
            late=(
                f"the model did not load within `load_timeout` ({settings.load_timeout:g} s); "
                "raise it, or check the worker's device"
            ),
            stop_grace=STOP_GRACE,
            preload=PRELOAD,
        )
        # One call at a time reaches the worker: this thread makes them.
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
        deadline = self.settings.deadline
        try:
            replies = self._supervisor.call(texts, deadline=deadline)
        except ChildTimeout:
            raise RemoteTimeout(
                f"the reward model gave no scores for {len(texts)} input(s) within `deadline` "
                f"({deadline:g} s); the worker is restarted"
            ) from None
        except ChildUnready as exc:
            if self._supervisor.failure is None:  # no process could start (no memory, no fds)
                raise RemoteError(f"{exc.cause}; the next call tries again") from None
            raise RemoteError(
                f"the reward model worker could not load {self.settings.model!r}: {exc.why}"
            ) from None
        except ChildDied as exc:
            if self._supervisor.stopped:
                raise RemoteError(f"{self.name} is closed") from None
            raise RemoteError(f"{exc.cause}; it is restarted on the next call") from None
        except ChildRaised as exc:  # out of memory, a kernel error: this batch fails
            raise RemoteError(f"the reward model failed on this batch: {exc.cause}") from None
        return [value if kind == "ok" else Unusable(str(value)) for kind, value in replies]

    def close(self) -> None:
        """Stop the worker (idempotent)."""
        self._supervisor.stop()
        self._thread.shutdown(wait=False)


def _spec(settings: RewardModelSettings, chat: bool, label: int) -> dict[str, Any]:
    return {
        "model": settings.model,
        "device": settings.device,
        "dtype": settings.dtype,
        "threads": settings.threads,
        "label": label,
        "max_tokens": settings.max_tokens,
        "max_batch_tokens": settings.max_batch_tokens,
        "add_special_tokens": not chat,
    }


# -- the worker's side -----------------------------------------------------------------------


def load(spec: dict[str, Any]) -> _LoadedModel:
    """The worker's setup (see :class:`~rewardrouter.supervise.supervisor.Supervisor`): the
    model loaded; it then scores each list of texts it is sent."""
    return _LoadedModel(spec)


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
        self.model, loading = AutoModelForSequenceClassification.from_pretrained(
            spec["model"],
            local_files_only=True,
            dtype=getattr(torch, dtype),
            output_loading_info=True,
        )
        if why := missing_weights(spec["model"], loading["missing_keys"]):
            raise ValueError(why)
        self.model.to(device).eval()
        self.device = torch.device(device)
        config = self.model.config
        if spec["label"] >= config.num_labels:  # the folder changed since the router compiled
            raise ValueError(
                f"the model has {config.num_labels} output(s) and the term reads output "
                f"{spec['label']}: the folder changed since the router compiled; compile it again"
            )
        self.label = spec["label"]
        # The model reads the last token that is not its own pad id (see the module doc).
        self.text_config = config.get_text_config()
        self.vocab = int(self.model.get_input_embeddings().num_embeddings)
        own = self.text_config.pad_token_id
        self.own_pad: int | None = own if isinstance(own, int) and 0 <= own < self.vocab else None
        if self.own_pad is None:  # an id the model never meets reads as none: the last token
            self.text_config.pad_token_id = None
        preferred = (self.tokenizer.pad_token_id, self.tokenizer.eos_token_id)
        self.spare = [i for i in preferred if isinstance(i, int) and 0 <= i < self.vocab]
        self.max_tokens = spec["max_tokens"] or getattr(config, "max_position_embeddings", None)
        self.budget = spec["max_batch_tokens"]
        self.add_special = spec["add_special_tokens"]
        self.info = {"device": str(self.device), "max_tokens": self.max_tokens}

    def __call__(self, texts: list[str]) -> list[tuple[str, Any]]:
        """One ``("ok", score)`` or ``(status, why)`` per text: the worker's answer to a call."""
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

    def _pad_id(self, rows: list[list[int]]) -> int | None:
        """The id to pad ``rows`` with: the model's own pad id; without one, an id that ends
        none of the rows (None when every id does: a batch larger than the vocabulary)."""
        if self.own_pad is not None:
            return self.own_pad
        ends = {row[-1] for row in rows}
        return next((i for i in chain(self.spare, range(self.vocab)) if i not in ends), None)

    def _forward(self, rows: list[list[int]]) -> list[float]:
        import torch

        pad = self._pad_id(rows)
        if pad is None:
            half = len(rows) // 2
            return self._forward(rows[:half]) + self._forward(rows[half:])
        if self.own_pad is None:  # read per batch: the rightmost token that is not `pad`
            self.text_config.pad_token_id = pad
        width = max(len(row) for row in rows)
        input_ids = torch.full((len(rows), width), pad, dtype=torch.long)
        attention_mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, row in enumerate(rows):
            input_ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
            attention_mask[i, : len(row)] = 1
        with torch.inference_mode():
            logits = self.model(
                input_ids=input_ids.to(self.device), attention_mask=attention_mask.to(self.device)
            ).logits
        return [float(x) for x in logits[:, self.label].float().cpu()]
