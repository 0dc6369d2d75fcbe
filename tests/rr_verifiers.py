"""Helpers of the ``verifiers`` kind's tests: functions a taskset's config plugs in as rewards
(verifiers' own ``config.task.rewards`` mechanism), a judge server, and verifiers' published
environments from a checkout of its repository."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from rr_checkouts import VERIFIERS, checkout

#: The variable the judges' API key is read from (a loopback server checks nothing).
JUDGE_KEY = "RR_TEST_JUDGE_KEY"


def environments(*names: str) -> Path:
    """The checkout's ``environments/`` folder, each of ``names`` put on ``sys.path`` (their
    packages import as an installed environment's would); skips without verifiers or a checkout."""
    pytest.importorskip("verifiers.v1", reason="pip install 'rewardrouter[verifiers]'")
    root = checkout(VERIFIERS) / "environments"
    for name in names:
        if not (root / name / name).is_dir():
            pytest.skip(f"this verifiers checkout has no environments/{name}")
    return root


async def brevity(trace: Any) -> float:
    """A reward plugged by config: 1.0 for a final reply of at most 40 characters."""
    return 1.0 if len(trace.last_reply) <= 40 else 0.0


async def fragile(trace: Any) -> float:
    """A reward plugged by config that raises on a reply holding ``boom``."""
    if "boom" in trace.last_reply:
        raise ValueError("cannot grade a reply that says boom")
    return 0.5


def _between(text: str, head: str) -> str:
    start = text.index(head) + len(head)
    return text[start : text.index("\n```", start)]


async def _judge(request: web.Request) -> web.Response:
    """verifiers' reference judge's model: ``yes`` when the response holds the reference."""
    body = await request.json()
    prompt = body["messages"][-1]["content"]
    answer = _between(prompt, "Reference answer:\n```\n")
    response = _between(prompt, "Response:\n```\n")
    verdict = "yes" if answer in response else "no"
    return web.json_response(
        {
            "id": "judged",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": verdict},
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
        }
    )


def judge_app() -> web.Application:
    app = web.Application()
    app.router.add_post("/v1/chat/completions", _judge)
    return app


def judge_config(base_url: str, weight: float) -> dict[str, Any]:
    """A plugged reference judge (verifiers' built-in) at ``base_url``."""
    os.environ.setdefault(JUDGE_KEY, "unused")
    return {
        "id": "reference",
        "base_url": base_url,
        "api_key_var": JUDGE_KEY,
        "model": "judge",
        "weight": weight,
    }


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
