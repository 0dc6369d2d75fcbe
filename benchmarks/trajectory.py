"""The trajectory kinds against a hand-written loop doing the same checks, on tool-using rollouts.

Each sample is an OpenAI-style conversation: a system and a user message, ``--turns`` rounds of
an assistant message with two tool calls (``get_weather`` and ``get_time``) and their two tool
results, then the final answer. A fifth of the calls carry arguments their schema refuses (a
number for a string, a missing field), a fifth of the results are ``Error: ...``. Two ways grade
the same three things of each sample:

- **router**: one route with three terms, ``tool_call_format`` (``score: fraction``, the two
  tools' JSON Schemas in its ``tools``), ``tool_success`` and ``turns`` (``count: tool_calls``,
  a budget of 4), through ``Router.score`` on the whole batch: each conversation validated as a
  whole (roles, content, every tool result answering an earlier call, arguments parsed without
  repeated keys, the router's bounds), read once for the three terms; ``tool_call_format`` in
  worker processes (its default), and, in the second row, on ``executor: inline``;
- **hand loop**: what one writes without a router: walk the messages once, pair results with
  calls by id, ``json.loads`` each call's arguments, validate them with a compiled
  ``jsonschema`` validator, count the results that start with ``Error:``, count the calls.

Both must give every sample the same three values (checked). The table gives CPU seconds per
round (this process and every process below it: the router's worker processes included) and
per message, and the router's against the hand loop's, measured side by side in ``--rounds``
interleaved rounds (the clock of /proc counts in hundredths of a second: use enough samples).

    python benchmarks/trajectory.py [--samples 2048] [--turns 3] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
from typing import Any

from jsonschema.validators import validator_for

from rewardrouter import compile_router

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
                "required": ["city"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "parameters": {
                "type": "object",
                "properties": {"tz": {"type": "string"}},
                "required": ["tz"],
                "additionalProperties": False,
            },
        },
    },
]
BUDGET, PENALTY = 4, 0.1


def conversation(rng: random.Random, turns: int) -> list[dict[str, Any]]:
    """One rollout: system, user, ``turns`` rounds of two calls and their results, answer."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You can call tools."},
        {"role": "user", "content": "What is the weather and the time in Paris?"},
    ]
    for turn in range(turns):
        calls = []
        for k, (name, good, bad) in enumerate(
            [
                ("get_weather", {"city": "Paris", "unit": "c"}, {"city": 75}),
                ("get_time", {"tz": "Europe/Paris"}, {"zone": "CET"}),
            ]
        ):
            arguments = bad if rng.random() < 0.2 else good
            calls.append(
                {
                    "id": f"call_{turn}_{k}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                }
            )
        messages.append({"role": "assistant", "content": "", "tool_calls": calls})
        for call in calls:
            failed = rng.random() < 0.2
            content = "Error: upstream timeout" if failed else '{"value": "sunny, 18 C"}'
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
    messages.append({"role": "assistant", "content": "It is sunny and 18 C in Paris."})
    return messages


def hand_loop(rollouts: list[list[dict[str, Any]]]) -> list[tuple[float, float, float]]:
    """The three values of each rollout, computed the way one writes it without a router."""
    validators = {}
    for tool in TOOLS:
        schema = tool["function"]["parameters"]
        validators[tool["function"]["name"]] = validator_for(schema)(schema)
    out = []
    for messages in rollouts:
        calls: dict[str, bool] = {}  # id -> well formed
        answered: dict[str, bool] = {}  # id -> succeeded
        order: list[str] = []
        for message in messages:
            if message["role"] == "assistant":
                for call in message.get("tool_calls") or ():
                    function = call["function"]
                    try:
                        arguments = json.loads(function["arguments"])
                    except ValueError:
                        arguments = None
                    validator = validators.get(function["name"])
                    calls[call["id"]] = (
                        isinstance(arguments, dict)
                        and validator is not None
                        and validator.is_valid(arguments)
                    )
                    order.append(call["id"])
            elif message["role"] == "tool":
                answered[message["tool_call_id"]] = not message["content"].startswith("Error:")
        well_formed = sum(calls.values()) / len(calls)
        success = sum(answered.get(i, False) for i in order) / len(order)
        turns = -PENALTY * max(0, len(order) - BUDGET)
        out.append((well_formed, success, turns))
    return out


def tree_cpu() -> float:
    """CPU seconds of this process and every process below it, alive ones included (the
    router's worker processes are not waited for, so ``getrusage`` would not count them)."""
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        ticks[int(entry)] = int(fields[11]) + int(fields[12])  # utime, stime
    me = os.getpid()

    def below(pid: int) -> bool:
        while pid > 1:
            if pid == me:
                return True
            pid = parents.get(pid, 0)
        return False

    total = sum(t for pid, t in ticks.items() if below(pid))
    return total / os.sysconf("SC_CLK_TCK")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--samples", type=int, default=2048)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    opts = parser.parse_args(argv)
    rng = random.Random(0)
    rollouts = [conversation(rng, opts.turns) for _ in range(opts.samples)]
    messages = sum(map(len, rollouts))
    rows = [{"response": m, "label": None, "metadata": {"dataset": "tools"}} for m in rollouts]
    rewards = {
        "format": {
            "kind": "tool_call_format",
            "key": "score",
            "kwargs": {"tools": TOOLS, "score": "fraction"},
        },
        "success": {"kind": "tool_success"},
        "turns": {"kind": "turns", "kwargs": {"budget": BUDGET, "penalty": PENALTY}},
    }
    inline = {**rewards, "format": {**rewards["format"], "executor": "inline"}}
    routers = {
        "router": compile_router({"routes": {"tools": {"rewards": rewards}}}),
        "router, inline": compile_router({"routes": {"tools": {"rewards": inline}}}),
    }
    cpu: dict[str, list[float]] = {**{name: [] for name in routers}, "hand loop": []}
    try:
        for router in routers.values():
            router.score_sync(rows[:8])  # warm: the executors, the schemas compiled once
        for _ in range(opts.rounds):
            for name, router in routers.items():
                begun = tree_cpu()
                batch = router.score_sync(rows)
                cpu[name].append(tree_cpu() - begun)
                got = [(r.terms["format"], r.terms["success"], r.terms["turns"]) for r in batch]
                assert got == hand_loop(rollouts), f"{name} and the hand loop disagree"
            begun = tree_cpu()
            hand_loop(rollouts)
            cpu["hand loop"].append(tree_cpu() - begun)
    finally:
        for router in routers.values():
            router.close()
    print(
        f"{opts.samples} conversations x {messages // opts.samples} messages "
        f"({opts.turns} rounds of 2 calls), {opts.rounds} rounds; load {os.getloadavg()[0]:.2f}"
    )
    print(f"{'':<16}{'CPU s':>9}{'µs/message':>12}{'vs hand':>9}")
    hand = statistics.median(cpu["hand loop"])
    for name, values in cpu.items():
        median = statistics.median(values)
        print(f"{name:<16}{median:>9.3f}{1e6 * median / messages:>12.1f}{median / hand:>8.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
