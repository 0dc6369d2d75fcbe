"""One compiled router per process and config, shared by every call of a framework hook.

Reward hooks are plain functions that a trainer calls thousands of times, from several threads
and event loops; compiling a router (imports, signature checks, worker pools) must happen once.
:func:`shared_router` compiles on first use, keyed by the config (path and overrides, or the
config's content) and the reward keys the trainer asks for, and returns the same
:class:`~rewardrouter.Router` afterwards. A config that fails to load or compile raises the same
:class:`~rewardrouter.ConfigError` at every call, so a trainer stops at its first reward call with
the full list of problems instead of retrying or hanging.

The cache is per process id: a forked worker compiles its own router instead of inheriting
thread pools that do not survive a fork. Routers are closed when the interpreter exits.

>>> config = RouterConfig.model_validate(
...     {"routes": {"qa": {"rewards": {"correct": {"kind": "exact_match"}}}}}
... )
>>> shared_router(config) is shared_router(config)
True
"""

from __future__ import annotations

import atexit
import os
import threading

from rewardrouter.config.load import load_config
from rewardrouter.config.models import RouterConfig
from rewardrouter.errors import ConfigError
from rewardrouter.integrations._source import ConfigSource, missing_file
from rewardrouter.router import Router, compile_router

_Key = tuple[int, str, tuple[str, ...], str | None, str | None]

_lock = threading.Lock()
_routers: dict[_Key, Router | ConfigError] = {}


def _load(source: ConfigSource | RouterConfig) -> RouterConfig:
    if isinstance(source, RouterConfig):
        return source
    error = missing_file(source)
    if error is not None:
        raise error
    return load_config(source.path, source.overrides)


def with_reward_keys(
    config: RouterConfig, reward_key: str | None, eval_reward_key: str | None
) -> RouterConfig:
    """``config`` with the trainer's reward keys filled in where the config sets none.

    A trainer's ``--reward-key`` names the training value of dict rewards; the router needs the
    same key for the functions that samples name (``rm_type``, ``custom_rm_path``).
    """
    update = {
        name: value
        for name, value in (("reward_key", reward_key), ("eval_reward_key", eval_reward_key))
        if value and getattr(config, name) is None
    }
    return config.model_copy(update=update) if update else config


def _located(error: ConfigError, source: ConfigSource | RouterConfig) -> ConfigError:
    """``error`` naming the config file (compile problems come without one)."""
    if error.source is not None or isinstance(source, RouterConfig):
        return error
    return ConfigError(error.problems, source.path)


def _key(
    source: ConfigSource | RouterConfig, reward_key: str | None, eval_reward_key: str | None
) -> _Key:
    if isinstance(source, RouterConfig):
        return (os.getpid(), source.model_dump_json(), (), reward_key, eval_reward_key)
    path = os.path.abspath(source.path)
    return (os.getpid(), path, source.overrides, reward_key, eval_reward_key)


def shared_router(
    source: ConfigSource | RouterConfig,
    *,
    reward_key: str | None = None,
    eval_reward_key: str | None = None,
) -> Router:
    """The router compiled from ``source`` in this process (compiled now if it is the first call).

    ``reward_key`` / ``eval_reward_key`` fill the config's keys of the same names when it sets
    none (see :func:`with_reward_keys`). Raises :class:`~rewardrouter.ConfigError` when the
    config cannot be found, loaded or compiled, at this and every later call.
    """
    key = _key(source, reward_key, eval_reward_key)
    found = _routers.get(key)
    if found is None:
        with _lock:
            found = _routers.get(key)
            if found is None:
                try:
                    config = with_reward_keys(_load(source), reward_key, eval_reward_key)
                    found = compile_router(config)
                except ConfigError as exc:
                    found = _located(exc, source)
                _routers[key] = found
    if isinstance(found, ConfigError):
        raise found.with_traceback(None)  # the same error each call, without piling up frames
    return found


def close_shared() -> None:
    """Close every router compiled by this process and forget them (at exit, and in tests)."""
    with _lock:
        routers = [r for k, r in _routers.items() if k[0] == os.getpid()]
        _routers.clear()
    for router in routers:
        if isinstance(router, Router):
            router.close()


atexit.register(close_shared)
