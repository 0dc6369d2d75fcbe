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

OpenRLHF catches every ``Exception`` a reward function raises, logs it at INFO and goes on with
``reward=None``, which its experience maker cannot batch (``Experience.concat_experiences``
then fails on the ``None``, far from the cause). So nothing this function raises is an
``Exception``: a fault that must stop the run (no router config, one that does not compile, a
sample no route accepts, a reward call that failed under ``on_error: raise``) is logged at
ERROR on the ``rewardrouter.openrlhf`` logger (once per message, with the fix) and raised as
:class:`FatalRewardError`, a ``BaseException`` like ``KeyboardInterrupt``: it passes OpenRLHF's
handler, and Ray hands it to the trainer, which stops with the message. A label that is not a
JSON object names no route: without ``default_route`` or ``RewardFunc(..., route=...)`` that
is such an error, naming the three fixes.

A label that opens as a JSON object (``{"`` or ``{'``) but is not valid JSON (cut short, or a
Python dict's repr with single quotes) is never scored as a plain label, which would give a
right answer a plausible wrong reward: that sample gets ``missing_reward.value`` with status
``invalid``, is counted in ``extra_logs`` (``rewardrouter/label_unreadable``) and logged at
ERROR once with the fix. (A label that opens with ``{`` alone, as the set ``{1, 2}`` does,
stays a plain label.)

The response is the query after the prompt, without trailing end-of-sequence strings
(:data:`EOS_STRINGS`). A route's ``shaping`` stages apply to its reward; stages OpenRLHF cannot
feed (token counts, a batch) are refused when the router compiles. ``rewards`` and ``scores``
hold the shaped reward, or the config's ``missing_reward.value`` (default 0.0) when the sample
got none (no term applied, ``on_error: skip``): OpenRLHF batches every reward as a tensor, so
it never gets ``None`` from here. ``extra_logs`` (averaged by OpenRLHF over each step; the same
keys on every call, as OpenRLHF's batching needs) hold ``rewardrouter/scored`` (1.0 when the
route's terms produced the reward), ``rewardrouter/status/<s>`` for ``skipped``, ``error``,
``timeout``, ``invalid``, ``rewardrouter/route/<name>`` per configured route: the fraction of
rows with each; ``rewardrouter/label_missing``: the fraction of rows whose label object has
no ``label_field`` entry (or whose label is null) while a grader returned None for want of it,
the check the command line runs (:mod:`._checks`; warned about once, with the fix); and
``rewardrouter/label_unreadable``: the fraction of rows whose label is a JSON object that does
not parse.

``rewardrouter serve`` answers OpenRLHF's HTTP form of the same call (``--reward.remote_url
http://HOST:PORT/reward``, body ``{"query": [...], "prompts": [...], "labels": [...]}``) with the
same values as JSON lists.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from rewardrouter.checks import unlabeled
from rewardrouter.errors import ConfigError, Problem, RoutingError, short_repr
from rewardrouter.integrations._checks import warn_unlabeled
from rewardrouter.integrations._fatal import FatalRewardError
from rewardrouter.integrations._metrics import warn
from rewardrouter.integrations._router_cache import shared_router
from rewardrouter.integrations._source import (
    ENV_CONFIG,
    ENV_OVERRIDES,
    ConfigSource,
    parse_overrides,
)
from rewardrouter.integrations.route_shaping import OPENRLHF, check_route_shaping, shape_rewards
from rewardrouter.results import RewardResult
from rewardrouter.router import Router
from rewardrouter.sample import Sample

__all__ = [
    "EOS_STRINGS",
    "FatalRewardError",
    "RewardFunc",
    "openrlhf_reply",
    "openrlhf_samples",
    "reward_func",
    "with_unreadable",
]

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


#: How a label that is meant as a JSON object opens: ``{`` and a quoted key. ``{`` alone also
#: opens plain answers (the set ``{1, 2}``), which stay labels.
_OBJECT_OPENING = re.compile(r"\s*\{\s*[\"']")

#: What to do about a label that opens as a JSON object but does not parse.
LABEL_JSON_FIX = (
    'write each label as JSON, with double quotes (json.dumps of the object): {"label": "42", '
    '"dataset": "openai/gsm8k"} (a label column of objects works too)'
)


def _label(label: Any, label_field: str) -> tuple[Any, dict[str, Any], str | None]:
    """``(label, metadata, problem)``: a JSON object label is metadata holding the label;
    ``problem`` says why a label that opens as a JSON object cannot be read (else None)."""
    value = label
    if isinstance(label, str) and label.lstrip().startswith("{"):
        try:
            value = json.loads(label)
        except ValueError as exc:
            if _OBJECT_OPENING.match(label):
                return (
                    label,
                    {},
                    f"label {short_repr(label)} opens a JSON object but is not JSON ({exc})",
                )
            return label, {}, None
    if isinstance(value, Mapping):
        metadata = dict(value)
        return metadata.pop(label_field, None), metadata, None
    return label, {}, None


def _read(
    queries: Sequence[Any],
    prompts: Sequence[Any],
    labels: Sequence[Any] | None,
    label_field: str,
    eos: Sequence[str],
) -> tuple[list[Sample], dict[int, str]]:
    """The samples of one call, and why each unreadable label cannot be read, by position."""
    labels = [None] * len(queries) if labels is None else labels
    samples = []
    unreadable: dict[int, str] = {}
    for i, (query, prompt, label) in enumerate(zip(queries, prompts, labels, strict=True)):
        value, metadata, problem = _label(label, label_field)
        if problem is not None:
            unreadable[i] = problem
        response = _response(query, prompt, eos)
        samples.append(
            Sample(prompt=prompt, response=response, label=value, metadata=metadata, index=i)
        )
    return samples, unreadable


def openrlhf_samples(
    queries: Sequence[Any],
    prompts: Sequence[Any],
    labels: Sequence[Any] | None,
    *,
    label_field: str = "label",
    eos: Sequence[str] = EOS_STRINGS,
) -> tuple[list[Sample], dict[int, str]]:
    """The samples of one OpenRLHF reward call (file or HTTP form), and why each label that
    opens as a JSON object but does not parse cannot be read, by position: such a sample is
    not to be scored (:func:`with_unreadable`)."""
    return _read(queries, prompts, labels, label_field, eos)


def with_unreadable(
    router: Router, scored: Sequence[RewardResult], unreadable: Mapping[int, str]
) -> list[RewardResult]:
    """The results of every sample of a call: ``scored`` (those of the readable samples, in
    order) with a failed result at each unreadable label's position. Counts the unreadable
    labels and logs the first at ERROR, once per message, with the fix."""
    ran = iter(scored)
    count = len(scored) + len(unreadable)
    results = [
        RewardResult(None, "invalid", error_message=unreadable[i], fault="data")
        if i in unreadable
        else next(ran)
        for i in range(count)
    ]
    if unreadable:
        first = unreadable[min(unreadable)]
        message = (
            f"{first}: that sample gets missing_reward.value "
            f"({router.config.missing_reward.value:g}) with status invalid, counted in "
            f"extra_logs as rewardrouter/label_unreadable; {LABEL_JSON_FIX}"
        )
        warn("label_unreadable", message, count=len(unreadable), key="label_unreadable")
        _log_once(message)
    return results


_logged: set[str] = set()


def _log_once(message: str) -> None:
    """Log ``message`` at ERROR, once: OpenRLHF logs what reaches it at INFO only."""
    if message not in _logged:
        _logged.add(message)
        log.error(message)


def openrlhf_reply(
    router: Router,
    results: Sequence[RewardResult],
    samples: Sequence[Sample] | None = None,
    label_field: str = "label",
    unreadable: Mapping[int, str] | None = None,
) -> dict[str, Any]:
    """``{"rewards", "scores", "extra_logs"}`` as lists: what OpenRLHF reads back. With the
    ``samples`` that were scored (:func:`openrlhf_samples`), ``extra_logs`` also holds
    ``rewardrouter/label_missing`` and ``rewardrouter/label_unreadable`` (``unreadable``: the
    positions of labels that open as a JSON object but do not parse, whose results are
    failed)."""
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
        bad = unreadable or {}
        logs["rewardrouter/label_unreadable"] = [float(i in bad) for i in range(len(results))]
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
            reply = self._reply(queries, prompts, labels)
        except Exception as exc:
            message = (
                f"rewardrouter could not score OpenRLHF's samples and stops the run (OpenRLHF "
                f"would go on with no reward): {exc}"
            )
            _log_once(message)
            raise FatalRewardError(message) from exc
        import torch

        return {
            "rewards": torch.tensor(reply["rewards"], dtype=torch.float32),
            "scores": torch.tensor(reply["scores"], dtype=torch.float32),
            "extra_logs": {k: torch.tensor(v) for k, v in reply["extra_logs"].items()},
        }

    def _reply(
        self, queries: Sequence[Any], prompts: Sequence[Any], labels: Sequence[Any]
    ) -> dict[str, Any]:
        router = shared_router(self._source())
        check_route_shaping(router, OPENRLHF)
        samples, unreadable = _read(queries, prompts, labels, self.label_field, self.eos)
        if self.route is None and router.config.default_route is None:
            _refuse_plain_labels(router, samples, unreadable, self.label_field)
        readable = [s for i, s in enumerate(samples) if i not in unreadable]
        scored = router.score_sync(readable, route=self.route) if readable else []
        results = with_unreadable(router, list(scored), unreadable)
        return openrlhf_reply(router, results, samples, self.label_field, unreadable)


def _refuse_plain_labels(
    router: Router, samples: Sequence[Sample], unreadable: Mapping[int, str], label_field: str
) -> None:
    """Raise :class:`RoutingError` for the first sample whose label is no JSON object (so it
    names no route) when nothing else routes it, with the three ways to give it one."""
    for i, sample in enumerate(samples):
        if sample.metadata or i in unreadable:
            continue
        field = router.config.route_by[0] if router.config.route_by else "dataset"
        datasets = [d for route in router.routes.values() for d in (*route.match, route.name)]
        example = json.dumps({label_field: "42", field: datasets[0] if datasets else "<dataset>"})
        names = ", ".join(router.routes) or "none"
        raise RoutingError(
            f"sample {i}: OpenRLHF's label {short_repr(sample.label)} is not a JSON object, so "
            f"it names no route (OpenRLHF hands a reward function no dataset column), and the "
            f"router config has no default_route. Write each label as a JSON object holding the "
            f"answer and the {field!r} field, e.g. {example}; or set `default_route: <route>` "
            f"in the router config (REWARDROUTER_OVERRIDES=default_route=<route>); or write a "
            f"reward file with `reward_func = RewardFunc('/abs/path/router.yaml', "
            f"route='<route>')`. Routes: {names}"
        )


#: The function OpenRLHF calls when given this file (config from the environment).
reward_func = RewardFunc()
