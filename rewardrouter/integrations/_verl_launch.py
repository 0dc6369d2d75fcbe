"""verl launch lines checked when verl starts, before Ray does: keys verl ignores, and router
configs rewardrouter's verl hooks cannot run.

verl 0.9 reads the reward function from ``reward.custom_reward_function.{path,name,reward_kwargs}``.
The top-level ``custom_reward_function.*`` of earlier releases is still a key of its config, so
Hydra accepts it, but ``main_ppo`` never reads it: verl then grades every row with its own
default (0.0 on ``openai/gsm8k`` rows without ``#### n``, an error elsewhere) and training goes on.
``reward_model.reward_manager=batch`` names a manager that 0.9 no longer has.
:func:`layout_problems` finds both in a command line.

verl's own config validation knows nothing of the router config a launch names, so a config the
hooks cannot use would pass it and fail later: in a reward worker at the first reward call, or in
the trainer at the first advantage step, after the model is loaded and a rollout is generated.
:func:`router_problems` loads and compiles each router config the launch line names (the reward
function's ``reward_kwargs.rewardrouter_config``, the estimator's ``algorithm.rewardrouter_config``,
else ``REWARDROUTER_CONFIG``) and lists what the hook it feeds cannot run: route stages verl cannot
feed, a ``route_by`` without ``data_source`` (:func:`reward_problems`, which the reward function
runs too), a ``post_process`` without an advantage stage, and the rest of
:func:`._verl_advantage.estimator_problems`.

rewardrouter's verl plugin runs both checks when verl is imported in the launching process
(:func:`check_launch`), and stops the launch with every problem and its fix; settings that come
from a ``--config-name`` file instead of the command line are checked by the hooks themselves,
at their first call. ``python -m rewardrouter.integrations.verl`` runs the same checks on any
launch, then verl's own ``main_ppo`` unchanged.

>>> [p.path for p in layout_problems(["custom_reward_function.path=pkg://rewardrouter.integrations.verl"])]
['custom_reward_function.path']
>>> layout_problems(["reward.custom_reward_function.path=pkg://rewardrouter.integrations.verl"])
[]
"""

from __future__ import annotations

import os
import re
import sys
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from rewardrouter.config.load import load_config
from rewardrouter.errors import ConfigError, Problem
from rewardrouter.integrations._source import (
    CONFIG_FIELD,
    OVERRIDES_FIELD,
    ConfigSource,
    config_source,
    missing_file,
)
from rewardrouter.integrations._verl_advantage import ESTIMATOR_NAME, estimator_problems
from rewardrouter.integrations.route_shaping import VERL, check_route_shaping
from rewardrouter.router import Router, compile_router

#: The metadata field that carries verl's ``data_source`` (listed in the default ``route_by``).
DATA_SOURCE_FIELD = "data_source"

#: :func:`reward_problems` of each router checked.
_reward_checked: weakref.WeakKeyDictionary[Router, tuple[Problem, ...]] = (
    weakref.WeakKeyDictionary()
)

#: verl 0.9's reward managers (``reward.reward_manager.name``).
REWARD_MANAGERS = ("naive", "dapo", "gdpo", "limited", "remote")

_OVERRIDE = re.compile(r"^(\+{0,2})([\w.]+)=(.*)$")
_FUNCTION, _MANAGER = "reward.custom_reward_function", "reward.reward_manager.name"
#: Keys of the older layout that verl 0.9's main_ppo accepts and never reads, and their new names.
_MOVED = {"custom_reward_function": _FUNCTION, "reward_model.reward_manager": _MANAGER}
_ESTIMATOR = "algorithm.adv_estimator"
#: Where each hook reads its router config from (the keys under it are CONFIG_FIELD and
#: OVERRIDES_FIELD).
_REWARD_HOLDER, _ESTIMATOR_HOLDER = f"{_FUNCTION}.reward_kwargs", "algorithm"
#: How verl's ``reward.custom_reward_function`` names rewardrouter's reward function: the module
#: (``pkg://``, dotted) or its file, and one of its two entry points.
_HOOK_MODULE = re.compile(
    r"^(pkg://)?rewardrouter\.integrations\.verl$|rewardrouter/integrations/verl\.py$"
)
_HOOK_FUNCTIONS = ("compute_score", "compute_score_async")
#: Hydra options that name a config file, whose settings the command line does not show.
_CONFIG_FILE_OPTIONS = ("--config-name", "-cn", "--config-path", "-cp", "--config-dir", "-cd")
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


def _overrides(argv: Sequence[str]) -> dict[str, Any]:
    """The values ``argv`` sets, by key, as Hydra's own override parser reads them."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import OverrideParseException

    parser = OverridesParser.create()
    values: dict[str, Any] = {}
    for arg in argv:
        if _OVERRIDE.match(arg) is None and not arg.startswith("~"):
            continue
        try:
            [override] = parser.parse_overrides([arg])
        except OverrideParseException:
            continue  # main_ppo reports it in Hydra's words
        if override.is_delete():
            values.pop(override.key_or_group, None)
        else:
            values[override.key_or_group] = override.value()
    return values


def _compiled(source: ConfigSource) -> Router:
    error = missing_file(source)
    if error is not None:
        raise error
    return compile_router(load_config(source.path, source.overrides))


def reward_problems(router: Router) -> list[Problem]:
    """What verl's ``compute_score`` cannot run in ``router``'s config: route stages verl cannot
    feed, and a ``route_by`` without :data:`DATA_SOURCE_FIELD` (verl hands each row's dataset
    there: without it every row is routed by its ``extra_info`` alone, else to
    ``default_route``, or nowhere). Checked once per router, for the launch check and for every
    reward call."""
    found = _reward_checked.get(router)
    if found is None:
        found = ()
        try:
            check_route_shaping(router, VERL)
        except ConfigError as exc:
            found = tuple(exc.problems)
        fields = list(router.config.route_by)
        if DATA_SOURCE_FIELD not in fields:
            found += (
                Problem(
                    "route_by",
                    f"verl's compute_score gives each row's dataset as {DATA_SOURCE_FIELD!r}, "
                    f"which route_by {fields} does not list, so no row would be routed by its "
                    f"dataset",
                    f"add it: route_by: {[*fields, DATA_SOURCE_FIELD]} (fields are tried in order)",
                ),
            )
        _reward_checked[router] = found
    return list(found)


def _within(source: ConfigSource, problems: Sequence[Problem]) -> list[Problem]:
    """``problems`` of the config ``source`` names, each path saying which setting and file."""
    where = f"{source.origin} -> {source.path}"
    return [
        p if p.path == source.origin else Problem(f"{where}, {p.path}", p.message, p.hint)
        for p in problems
    ]


def router_problems(argv: Sequence[str]) -> list[Problem]:
    """What the router configs that ``argv`` hands rewardrouter's hooks hold that they cannot run.

    Checked: the reward function's config when ``reward.custom_reward_function`` names
    rewardrouter's ``compute_score`` (or ``compute_score_async``), the estimator's when ``algorithm.adv_estimator=rewardrouter``; each is found
    as the hook finds it (its own keys, else ``REWARDROUTER_CONFIG``), loaded and compiled. A
    value that interpolates (``${...}``) is left to the hook.
    """
    values = _overrides(argv)
    checks: list[tuple[str, Callable[[Router], list[Problem]]]] = []
    path, name = (str(values.get(f"{_FUNCTION}.{k}") or "") for k in ("path", "name"))
    if _HOOK_MODULE.search(path) and name in _HOOK_FUNCTIONS:
        checks.append((_REWARD_HOLDER, reward_problems))
    if values.get(_ESTIMATOR) == ESTIMATOR_NAME:
        checks.append((_ESTIMATOR_HOLDER, estimator_problems))
    from_file = any(a.split("=")[0] in _CONFIG_FILE_OPTIONS for a in argv)
    problems: list[Problem] = []
    routers: dict[tuple[str, tuple[str, ...]], Router | None] = {}
    try:
        for holder, check in checks:
            fields = {
                name: values.get(f"{holder}.{name}") for name in (CONFIG_FIELD, OVERRIDES_FIELD)
            }
            if any("${" in str(v) for v in fields.values() if v is not None):
                continue
            try:
                source = config_source(fields, holder)
            except ConfigError as exc:
                if not from_file:
                    problems += [
                        Problem(f"+{holder}.{CONFIG_FIELD}", p.message, p.hint)
                        for p in exc.problems
                    ]
                continue
            key = (os.path.abspath(source.path), source.overrides)
            if key not in routers:
                try:
                    routers[key] = _compiled(source)
                except ConfigError as exc:
                    routers[key] = None
                    problems += _within(source, exc.problems)
            router = routers[key]
            if router is not None:
                problems += _within(source, check(router))
    finally:
        for router in routers.values():
            if router is not None:
                router.close()
    return problems


def launch_problems(argv: Sequence[str], *, only_rewardrouter: bool = False) -> list[Problem]:
    """:func:`layout_problems` and :func:`router_problems` of ``argv``."""
    return layout_problems(argv, only_rewardrouter=only_rewardrouter) + router_problems(argv)


#: The command line :func:`main` has checked (the plugin then need not check it again).
_checked: tuple[str, ...] | None = None


def check_launch(argv: Sequence[str]) -> None:
    """Stop this process with every problem of :func:`launch_problems` (rewardrouter's only)
    when it launches verl with rewardrouter's hooks (run when rewardrouter's verl plugin loads).

    Keys of the older layout are reported for verl >= 0.9 only: older verl reads them.
    """
    if "verl" not in sys.modules or tuple(argv) == _checked:
        return
    problems = router_problems(argv)
    if _verl_version() >= (0, 9):
        problems = layout_problems(argv, only_rewardrouter=True) + problems
    if problems:
        raise SystemExit(describe(problems))


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m rewardrouter.integrations.verl <overrides>``: check, then run verl's main_ppo.

    The overrides are the ones ``python -m verl.trainer.main_ppo`` takes; a launch line of the
    older layout, or one naming a router config the hooks cannot run, stops here with exit
    status 2 and the fix, before Ray starts.
    """
    global _checked
    args = list(sys.argv[1:] if argv is None else argv)
    problems = launch_problems(args)
    if problems:
        print(describe(problems), file=sys.stderr)
        raise SystemExit(2)
    _checked = tuple(args)
    import runpy

    sys.argv = [sys.argv[0], *args]
    runpy.run_module("verl.trainer.main_ppo", run_name="__main__", alter_sys=True)
