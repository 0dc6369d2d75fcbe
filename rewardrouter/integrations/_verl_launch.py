"""verl launch lines of an older layout, found before verl silently ignores them.

verl 0.9 reads the reward function from ``reward.custom_reward_function.{path,name,reward_kwargs}``.
The top-level ``custom_reward_function.*`` of earlier releases is still a key of its config, so
Hydra accepts it, but ``main_ppo`` never reads it: verl then grades every row with its own
default (0.0 on ``openai/gsm8k`` rows without ``#### n``, an error elsewhere) and training goes on.
``reward_model.reward_manager=batch`` names a manager that 0.9 no longer has.

:func:`layout_problems` finds both in a command line. rewardrouter's verl plugin runs it when
verl is imported in the launching process, and stops the launch when a legacy key names
rewardrouter; ``python -m rewardrouter.integrations.verl`` runs it on any launch, then verl's
own ``main_ppo`` unchanged.

>>> [p.path for p in layout_problems(["custom_reward_function.path=pkg://rewardrouter.integrations.verl"])]
['custom_reward_function.path']
>>> layout_problems(["reward.custom_reward_function.path=pkg://rewardrouter.integrations.verl"])
[]
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence

from rewardrouter.errors import Problem

#: verl 0.9's reward managers (``reward.reward_manager.name``).
REWARD_MANAGERS = ("naive", "dapo", "gdpo", "limited", "remote")

_OVERRIDE = re.compile(r"^(\+{0,2})([\w.]+)=(.*)$")
_FUNCTION, _MANAGER = "reward.custom_reward_function", "reward.reward_manager.name"
#: Keys of the older layout that verl 0.9's main_ppo accepts and never reads, and their new names.
_MOVED = {"custom_reward_function": _FUNCTION, "reward_model.reward_manager": _MANAGER}
_IGNORED = {
    _FUNCTION: "without a reward function verl grades every row with its own default: 0.0 on "
    "openai/gsm8k rows, an error elsewhere",
    _MANAGER: "verl runs its default `naive` manager instead",
}


def layout_problems(argv: Sequence[str], *, only_rewardrouter: bool = False) -> list[Problem]:
    """The Hydra overrides in ``argv`` that verl 0.9 ignores or refuses, each with its fix.

    ``only_rewardrouter``: report nothing unless a moved reward-function key names rewardrouter
    (a launch that does not use it is left alone).
    """
    problems: list[Problem] = []
    ours = False
    for match in map(_OVERRIDE.match, argv):
        if match is None:
            continue
        plus, key, value = match.groups()
        old = next((o for o in _MOVED if key == o or key.startswith(o + ".")), None)
        new = key if old is None else _MOVED[old] + key[len(old) :]
        unknown = new == _MANAGER and value not in REWARD_MANAGERS
        what = f"verl >= 0.9 has no reward manager {value!r} ({', '.join(REWARD_MANAGERS)})"
        fix = "drop it: the default `naive` manager calls compute_score once per row"
        if old is not None:
            ours = ours or (new.startswith(_FUNCTION) and "rewardrouter" in value)
            problems.append(
                Problem(
                    key,
                    f"verl >= 0.9 reads `{_MOVED[old]}`; its main_ppo accepts this older key and "
                    f"never reads it ({_IGNORED[_MOVED[old]]})"
                    + (f"; and {what}" if unknown else ""),
                    fix if unknown else f"write `{plus}{new}={value}`",
                )
            )
        elif unknown:
            problems.append(Problem(key, what, fix))
    return problems if ours or not only_rewardrouter else []


def describe(problems: Sequence[Problem]) -> str:
    """The message a launch with ``problems`` stops with."""
    body = "\n".join(f"  - {p}" for p in problems)
    return f"error: verl launch line ({len(problems)} problem{'s' * (len(problems) != 1)}):\n{body}"


def _verl_version() -> tuple[int, ...]:
    from importlib.metadata import PackageNotFoundError, version

    try:
        text = version("verl")
    except PackageNotFoundError:
        return ()
    return tuple(int(part) for part in re.findall(r"\d+", text)[:2])


def stop_ignored_launch(argv: Sequence[str]) -> None:
    """Stop this process when ``argv`` launches verl >= 0.9 with rewardrouter under keys it
    ignores (run when rewardrouter's verl plugin loads; older verl reads those keys)."""
    if "verl" not in sys.modules or _verl_version() < (0, 9):
        return
    problems = layout_problems(argv, only_rewardrouter=True)
    if problems:
        raise SystemExit(describe(problems))


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m rewardrouter.integrations.verl <overrides>``: check, then run verl's main_ppo.

    The overrides are the ones ``python -m verl.trainer.main_ppo`` takes; a launch line of the
    older layout stops here with exit status 2 and the fix, before Ray starts.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    problems = layout_problems(args)
    if problems:
        print(describe(problems), file=sys.stderr)
        raise SystemExit(2)
    import runpy

    sys.argv = [sys.argv[0], *args]
    runpy.run_module("verl.trainer.main_ppo", run_name="__main__", alter_sys=True)
