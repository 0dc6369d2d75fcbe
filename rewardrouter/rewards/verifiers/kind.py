"""The ``verifiers`` kind: a verifiers taskset's rewards and judges as a term.

When the router compiles, the taskset is resolved (an installed taskset by its id, or a Taskset
class by import path), its config validated, and its task's scoring read: each ``@vf.reward``
method and each config-plugged reward and judge, with its weight. The term returns a dict: each
named reward's score, and under ``score`` their weighted sum, which is verifiers' own
``trace.reward``. A term names the training value with ``key:`` (``score``, or one reward).

Each sample is scored as verifiers re-scores a saved rollout (``vf-replay``): its task is built
from the sample's row, its trace from the prompt and the response
(:mod:`~rewardrouter.rewards.verifiers.rollout`), and ``await task.score(trace)`` runs the
rewards and judges on the router's event loop, under the term's timeout. Rewards and judges
that need the rollout's runtime (a sandbox to run commands in) cannot run there: a taskset
with one is refused unless ``skip_runtime_rewards`` leaves them out.

Whose fault a failure is (docs/reliability.md): a taskset that does not import or build is a
compile error; a judge whose server cannot be reached is the infrastructure's
(:class:`JudgeUnavailable`); a row that does not make the task's data is the dataset's
(:class:`~rewardrouter.rewards.verifiers.rollout.TaskDataError`); a reward function or judge
that raises on the response is that sample's own status.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, cast

from pydantic import ValidationError

from rewardrouter.errors import Problem, did_you_mean
from rewardrouter.introspect import ResolveError, import_path
from rewardrouter.outcome import InfrastructureFault
from rewardrouter.rewards.model_input import ResponseGuard
from rewardrouter.rewards.registry import Bound, Resources, resource_kind
from rewardrouter.rewards.verifiers.rollout import rewards_of, rollout_trace, task_data
from rewardrouter.rewards.verifiers.settings import TOTAL, VerifiersSettings
from rewardrouter.trajectory import Conversation

#: What a failed call's cause chain holds when the judge's server, not the response, failed.
_UNREACHABLE = ("APIConnectionError", "APITimeoutError", "APIStatusError", "TransportError")


class JudgeUnavailable(InfrastructureFault):
    """A judge of the taskset could not reach its model server, or the server failed: not the
    response's doing, so the term's ``on_error`` decides, ``raise`` included."""


def _needs_runtime(fn: Callable[..., Any]) -> bool:
    """Whether a reward or judge takes the rollout's runtime (verifiers' own test)."""
    parameter = inspect.signature(fn).parameters.get("runtime")
    return parameter is not None and parameter.default is inspect.Parameter.empty


def _taskset_class(name: str) -> type[Any]:
    """The Taskset class ``name`` names: an import path (``pkg.module:Class``) or an id."""
    from verifiers.v1 import Taskset
    from verifiers.v1.utils.loaders import taskset_class

    if ":" in name or ("." in name and "/" not in name and "@" not in name):
        found: Any = import_path(name)
        if not (isinstance(found, type) and issubclass(found, Taskset)):
            raise ResolveError(
                f"kwargs.taskset: {name!r} is {type(found).__name__} {found!r}, not a verifiers "
                "Taskset class",
                "name the Taskset subclass (pkg.module:MyTaskset), or the taskset's id",
            )
        return found
    try:
        found = taskset_class(name)
    except ModuleNotFoundError as exc:
        raise ResolveError(
            f"kwargs.taskset: no verifiers taskset {name!r} is installed ({exc})",
            f"pip install the environment's package (its module is "
            f"{name.rsplit('/', 1)[-1].split('@', 1)[0].replace('-', '_')!r}), or give the "
            "import path of its Taskset class",
        ) from None
    except (AttributeError, TypeError, ValueError) as exc:
        raise ResolveError(
            f"kwargs.taskset: {name!r} is not a verifiers taskset: {exc}",
            "name a package that exports one Taskset subclass in `__all__`",
        ) from None
    return cast("type[Any]", found)


def _config(cls: type[Any], name: str, config: Mapping[str, Any]) -> Any:
    """The taskset's config: ``config`` validated as its TasksetConfig."""
    from verifiers.v1 import Taskset, TasksetConfig
    from verifiers.v1.utils.generic import concrete_type

    config_type = concrete_type(cls, TasksetConfig, origin=Taskset) or TasksetConfig
    given = dict(config)
    if ":" not in name and "." not in name:
        given.setdefault("id", name)
    try:
        return config_type.model_validate(given)
    except ValidationError as exc:
        problems = tuple(
            Problem(
                ".".join(["kwargs", "config", *map(str, error["loc"])]),
                f"{error['msg']} (the config of {cls.__name__}, a {config_type.__name__})",
                did_you_mean(str(error["loc"][-1]), config_type.model_fields)
                if error["type"] == "extra_forbidden" and error["loc"]
                else None,
            )
            for error in exc.errors(include_url=False, include_input=False)
        )
        raise ResolveError(f"invalid config for taskset {name!r}", problems=problems) from None


class VerifiersReward:
    """``await reward(args, sample)``: the dict of a verifiers taskset's rewards for
    ``sample`` (see the module's description). ``weights``: each reward's weight."""

    reads_conversation: ClassVar[bool] = True

    def __init__(self, settings: VerifiersSettings) -> None:
        self.settings = settings
        cls = _taskset_class(settings.taskset)
        config = _config(cls, settings.taskset, settings.config)
        try:
            self.taskset = cls(config)
            self.task_type: type[Any] = self.taskset.task_type()
            self.data_type: type[Any] = self.task_type.data_type()
            self.task_config = self.taskset.config.task
            # A task built without a row, to read its scoring (the rewards read no data here).
            probe = self.task_type(self.data_type.model_construct(), self.task_config)
            rewards = probe.hooks("reward")
            judges = probe.plugged_judges()
        except ResolveError:
            raise
        except Exception as exc:
            raise ResolveError(
                f"kwargs.taskset: {settings.taskset!r} does not build: {type(exc).__name__}: {exc}",
                "fix the taskset's config (kwargs.config), or its package",
            ) from None
        self.name = f"verifiers {settings.taskset} ({self.task_type.__name__})"
        self.weights = self._weights(rewards, judges)
        refuse = settings.refuse_special_tokens
        if refuse is None:  # judges show the response to a model: its markers would end a turn
            refuse = bool(judges)
        self._guard = ResponseGuard.of(settings.max_response_chars, refuse)
        self._check_label()

    def _weights(self, rewards: list[Any], judges: list[Any]) -> dict[str, float]:
        settings = self.settings
        signals = [(fn.__name__, fn, getattr(fn, "_vf_weight", 1.0)) for fn in rewards]
        signals += [(j.reward_name, j.score, j.config.weight) for j in judges]
        offline = [(name, weight) for name, fn, weight in signals if not _needs_runtime(fn)]
        runtime = [name for name, fn, _ in signals if _needs_runtime(fn)]
        where = f"{self.task_type.__name__} of taskset {settings.taskset!r}"
        if runtime and not settings.skip_runtime_rewards:
            raise ResolveError(
                f"kwargs.taskset: {', '.join(map(repr, runtime))} of {where} take the "
                "rollout's runtime (they run commands in its sandbox), which a router scoring "
                "responses does not have",
                "set `skip_runtime_rewards: true` to score with the others (as verifiers' own "
                "vf-replay does), or score these rollouts in verifiers' environment",
            )
        if not offline:
            raise ResolveError(
                f"kwargs.taskset: {where} has no reward or judge to score with",
                "give the task a @vf.reward method, or plug one under config.task.rewards",
            )
        if TOTAL in dict(offline):
            raise ResolveError(
                f"kwargs.taskset: {where} has a reward named {TOTAL!r}, the key of the rewards' "
                "weighted sum in what this kind returns",
                "rename that reward (plug it under another name in config.task.rewards)",
            )
        return dict(offline)

    def _check_label(self) -> None:
        field = self.settings.label_field
        fields = self.data_type.model_fields
        extra = self.data_type.model_config.get("extra") == "allow"
        if field is not None and field not in fields and not extra:
            raise ResolveError(
                f"kwargs.label_field: {self.data_type.__name__} has no field {field!r} "
                f"(fields: {', '.join(fields)})",
                did_you_mean(field, fields) or "name the field the label fills, or null",
            )

    @property
    def keys(self) -> tuple[str, ...]:
        """The entries of what a call returns: :data:`TOTAL` first, then each reward."""
        return (TOTAL, *self.weights)

    def __repr__(self) -> str:
        return f"VerifiersReward({self.name!r})"

    async def __call__(self, args: Any, sample: Any) -> dict[str, float] | None:
        if self.settings.label_field is not None and getattr(sample, "label", None) in (None, ""):
            return None  # as every kind that takes a label: not applicable without one
        conversation: Conversation = sample.response.trajectory()
        self._guard.check(
            [("response", message.text) for message in conversation.assistant_messages]
            or [("response", "")]
        )
        data = task_data(self.data_type, sample, self.settings.label_field)
        task = self.task_type(data, self.task_config)
        trace = rollout_trace(task, conversation)
        try:
            await task.score(trace)
        except Exception as exc:
            cause: BaseException | None = exc
            while cause is not None:
                if type(cause).__name__ in _UNREACHABLE:
                    raise JudgeUnavailable(
                        f"a judge of {self.task_type.__name__} failed to get a verdict from its "
                        f"server: {type(cause).__name__}: {cause}"
                    ) from None
                cause = cause.__cause__ or cause.__context__
            raise
        return {TOTAL: trace.reward, **rewards_of(trace)}


@resource_kind("verifiers", VerifiersSettings)
def build(settings: VerifiersSettings, resources: Resources) -> Bound:
    """A verifiers taskset's rewards and judges: a dict of each, `score` their weighted sum.

    Raises ``ResolveError`` when the taskset does not resolve, validate or build.
    """
    reward = resources.get(
        (VerifiersReward, settings.model_dump_json()), lambda: VerifiersReward(settings)
    )
    return Bound(reward, "single", reward.name, keys=reward.keys)
