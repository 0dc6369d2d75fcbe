"""OpenRLHF: the Python reward file of ``--reward.remote_url``, routed by a JSON label.

OpenRLHF (0.11) loads a ``--reward.remote_url`` that ends in ``.py`` as a module and calls its
``reward_func(queries, prompts, labels)`` through ``asyncio.to_thread``, one sample per call:
``queries`` holds the decoded prompt + response (special tokens kept), ``prompts`` the prompt,
``labels`` the ``--data.label_key`` column as it is. It reads ``rewards``, ``scores`` and
``extra_logs`` from the returned dict. This module is such a file (OpenRLHF before 0.11 spelled
the flags ``--remote_rm_url`` and ``--label_key``; 0.11 refuses those)::

    --reward.remote_url $(python -c "import rewardrouter.integrations.openrlhf as m; print(m.__file__)")
    --data.input_key prompt --data.label_key label
    # and REWARDROUTER_CONFIG=/abs/path/router.yaml in the environment of OpenRLHF's vLLM actors

OpenRLHF hands a reward function no dataset column, so the route rides in the label: a label that
is a JSON object (or a mapping) becomes the sample's ``metadata``, and its ``label`` entry the
label: ``{"label": "72", "dataset": "openai/gsm8k"}`` routes by ``dataset`` as ``route_by``
says. A plain label goes to the config's ``default_route``. For another label entry, a fixed
route or other end-of-sequence strings, write a file of your own::

    from rewardrouter.integrations.openrlhf import RewardFunc

    reward_func = RewardFunc("/abs/path/router.yaml", label_field="answer", route="gsm8k")

OpenRLHF logs any exception a reward function raises at INFO and goes on without a reward, so a
config error would pass unseen: every failure is logged at ERROR on the ``rewardrouter.openrlhf``
logger first (once per message, with the fix), then raised.

The response is the query after the prompt, without trailing end-of-sequence strings
(:data:`EOS_STRINGS`). A route's ``shaping`` stages apply to its reward; stages OpenRLHF cannot
feed (token counts, a batch) are refused when the router compiles. ``rewards`` and ``scores``
hold the shaped reward, or the config's ``missing_reward.value`` (default 0.0) when the sample
got none (no term applied, ``on_error: skip``): OpenRLHF batches every reward as a tensor, so
it never gets ``None`` from here. ``extra_logs`` (averaged by OpenRLHF over each step; the same
keys on every call, as OpenRLHF's batching needs) hold ``rewardrouter/scored`` (1.0 when the
route's terms produced the reward), ``rewardrouter/status/<s>`` for ``skipped``, ``error``,
``timeout``, ``invalid``, ``rewardrouter/route/<name>`` per configured route: the fraction of
rows with each; and ``rewardrouter/label_missing``: the fraction of rows whose label object has
no ``label_field`` entry (or whose label is null) while a grader returned None for want of it,
the check the command line runs (:mod:`._checks`; warned about once, with the fix).

``rewardrouter serve`` answers OpenRLHF's HTTP form of the same call (``--reward.remote_url
http://HOST:PORT/reward``, body ``{"query": [...], "prompts": [...], "labels": [...]}``) with the
same values as JSON lists.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

from rewardrouter.errors import ConfigError, Problem
from rewardrouter.integrations._checks import unlabeled, warn_unlabeled
from rewardrouter.integrations._metrics import warn
from rewardrouter.integrations._route_shaping import OPENRLHF, check_route_shaping, shape_rewards
from rewardrouter.integrations._router_cache import shared_router
from rewardrouter.integrations._source import (
    ENV_CONFIG,
    ENV_OVERRIDES,
    ConfigSource,
    parse_overrides,
)
from rewardrouter.results import RewardResult
from rewardrouter.router import Router
from rewardrouter.sample import Sample

__all__ = ["EOS_STRINGS", "RewardFunc", "openrlhf_reply", "openrlhf_samples", "reward_func"]

#: End-of-sequence strings stripped from the end of a response (common chat templates).
EOS_STRINGS = (
    "</s>",
    "<|endoftext|>",
    "<|im_end|>",
    "<|eot_id|>",
    "<|end|>",
    "<\uff5cend\u2581of\u2581sentence\uff5c>",  # DeepSeek's, written in escapes
    "<eos>",
)

#: Statuses that get an ``extra_logs`` entry of their own.
STATUS_LOGS = ("skipped", "error", "timeout", "invalid")

log = logging.getLogger("rewardrouter.openrlhf")


def _response(query: str, prompt: Any, eos: Sequence[str]) -> str:
    text = str(query)
    prompt_text = prompt if isinstance(prompt, str) else ""
    at = text.find(prompt_text) if prompt_text else -1
    if at >= 0:
        text = text[at + len(prompt_text) :]
    elif prompt_text:
        warn(
            "response_not_split",
            "OpenRLHF's query does not contain the prompt as given; the whole query is scored as "
            "the response (check the prompt's chat template and tokenizer round trip)",
        )
    stripped = True
    while stripped:
        stripped = False
        text = text.rstrip()
        for end in eos:
            if end and text.endswith(end):
                text, stripped = text[: -len(end)], True
    return text


def _label(label: Any, label_field: str) -> tuple[Any, dict[str, Any]]:
    """``(label, metadata)``: a JSON object label is metadata holding the label."""
    value = label
    if isinstance(label, str) and label.lstrip().startswith("{"):
        try:
            value = json.loads(label)
        except ValueError:
            return label, {}
    if isinstance(value, Mapping):
        metadata = dict(value)
        return metadata.pop(label_field, None), metadata
    return label, {}


def openrlhf_samples(
    queries: Sequence[Any],
    prompts: Sequence[Any],
    labels: Sequence[Any] | None,
    *,
    label_field: str = "label",
    eos: Sequence[str] = EOS_STRINGS,
) -> list[Sample]:
    """The samples of one OpenRLHF reward call (file or HTTP form)."""
    labels = [None] * len(queries) if labels is None else labels
    samples = []
    for i, (query, prompt, label) in enumerate(zip(queries, prompts, labels, strict=True)):
        value, metadata = _label(label, label_field)
        response = _response(query, prompt, eos)
        samples.append(
            Sample(prompt=prompt, response=response, label=value, metadata=metadata, index=i)
        )
    return samples


def openrlhf_reply(
    router: Router,
    results: Sequence[RewardResult],
    samples: Sequence[Sample] | None = None,
    label_field: str = "label",
) -> dict[str, Any]:
    """``{"rewards", "scores", "extra_logs"}`` as lists: what OpenRLHF reads back. With the
    ``samples`` that were scored (:func:`openrlhf_samples`), ``extra_logs`` also holds
    ``rewardrouter/label_missing``."""
    shaped = shape_rewards(router, [r.reward for r in results], [r.route for r in results])
    fill = router.config.missing_reward.value
    rewards = [fill if r is None else r for r in shaped]
    logs: dict[str, list[float]] = {
        "rewardrouter/scored": [float(r.status == "ok") for r in results]
    }
    for status in STATUS_LOGS:
        logs[f"rewardrouter/status/{status}"] = [float(r.status == status) for r in results]
    for route in router.routes:
        logs[f"rewardrouter/route/{route}"] = [float(r.route == route) for r in results]
    if samples is not None:
        missing = set(_warn_unlabeled(samples, results, label_field))
        logs["rewardrouter/label_missing"] = [float(i in missing) for i in range(len(results))]
    return {"rewards": rewards, "scores": list(rewards), "extra_logs": logs}


def _warn_unlabeled(
    samples: Sequence[Sample], results: Sequence[RewardResult], label_field: str
) -> list[int]:
    """The command line's label check (:func:`._checks.warn_unlabeled`), worded for OpenRLHF."""
    found = unlabeled(samples, results)
    entries = sorted({str(k) for i in found for k in samples[i].metadata})
    held = f" (their label objects hold: {', '.join(entries)})" if entries else ""
    return warn_unlabeled(
        samples,
        results,
        f"the {label_field!r} entry of each JSON-object label{held}",
        "if another entry holds the reference answers, write a reward file with "
        "`reward_func = RewardFunc('/abs/path/router.yaml', label_field='<entry>')`, or give "
        f"every label object a {label_field!r} entry",
        found,
    )


class RewardFunc:
    """OpenRLHF's ``reward_func(queries, prompts, labels)`` backed by a router.

    ``config`` is a router YAML (``None``: the ``REWARDROUTER_CONFIG`` environment variable, with
    ``REWARDROUTER_OVERRIDES``); ``label_field`` the entry of a JSON-object label that holds the
    label; ``route`` sends every sample to that route; ``eos`` the strings stripped from the end
    of each response.
    """

    def __init__(
        self,
        config: str | os.PathLike[str] | None = None,
        *,
        overrides: Sequence[str] = (),
        label_field: str = "label",
        route: str | None = None,
        eos: Sequence[str] = EOS_STRINGS,
    ) -> None:
        self.config = None if config is None else os.fspath(config)
        self.overrides = tuple(overrides)
        self.label_field = label_field
        self.route = route
        self.eos = tuple(eos)
        self._reported: set[str] = set()

    def _source(self) -> ConfigSource:
        if self.config is not None:
            return ConfigSource(self.config, self.overrides, "RewardFunc(config)")
        path = os.environ.get(ENV_CONFIG)
        if not path:
            raise ConfigError(
                [
                    Problem(
                        ENV_CONFIG,
                        "OpenRLHF loaded rewardrouter's reward file, but no router config was given",
                        f"export {ENV_CONFIG}=/abs/path/router.yaml where OpenRLHF's vLLM "
                        f"actors run (e.g. in Ray's runtime_env), or write a reward file with "
                        f"`reward_func = RewardFunc('/abs/path/router.yaml')`",
                    )
                ]
            )
        return ConfigSource(path, parse_overrides(os.environ.get(ENV_OVERRIDES)), ENV_CONFIG)

    def __call__(
        self, queries: Sequence[Any], prompts: Sequence[Any], labels: Sequence[Any], **_: Any
    ) -> dict[str, Any]:
        try:
            router = shared_router(self._source())
            check_route_shaping(router, OPENRLHF)
            samples = openrlhf_samples(
                queries, prompts, labels, label_field=self.label_field, eos=self.eos
            )
            results = router.score_sync(samples, route=self.route)
            reply = openrlhf_reply(router, results, samples, self.label_field)
        except Exception as exc:
            message = f"rewardrouter could not score OpenRLHF's samples: {exc}"
            if message not in self._reported:  # OpenRLHF itself logs this at INFO only
                self._reported.add(message)
                log.error(message)
            raise
        import torch

        return {
            "rewards": torch.tensor(reply["rewards"], dtype=torch.float32),
            "scores": torch.tensor(reply["scores"], dtype=torch.float32),
            "extra_logs": {k: torch.tensor(v) for k, v in reply["extra_logs"].items()},
        }


#: The function OpenRLHF calls when given this file (config from the environment).
reward_func = RewardFunc()
