"""``PostProcessor``: per-route shaping, global shaping, then the advantage estimator.

For every batch, in this order:

1. each route's ``shaping`` stages, in declared order, on that route's samples only;
2. the global ``post_process`` shaping stages, in declared order, on every sample;
3. the advantage stage, when ``post_process`` ends in one (else advantages = shaped rewards).

torch is imported when a batch first needs it: a batch of lists without shaping stages whose
estimator runs on the CPU is served by NumPy alone, with the same bits
(:mod:`rewardrouter.advantage.host`).

Samples whose reward is ``None`` (skipped, failed, not applicable) skip every stage, stay out of
the group statistics and get advantage 0.

Example::

    >>> from rewardrouter.config.stages import ClipStage, GRPOStage, ScaleStage
    >>> from rewardrouter.shape import PostProcessor
    >>> processor = PostProcessor.compile(
    ...     {"gsm8k": [ClipStage(min=0.0, max=1.0)]},
    ...     [ScaleStage(mul=2.0), GRPOStage(device="cpu")],
    ... )
    >>> result = processor([1.5, 0.0, None, 0.3, 0.3],
    ...                    routes=["gsm8k", "gsm8k", "gsm8k", "qa", "qa"],
    ...                    group_index=[0, 0, 0, 1, 1])
    >>> result.shaped, [round(a, 4) for a in result.advantages]
    ([2.0, 0.0, None, 0.6, 0.6], [0.7071, -0.7071, 0.0, 0.0, 0.0])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rewardrouter.advantage.checks import ConstantGroups
from rewardrouter.advantage.device import device_problem, runs_on_cpu
from rewardrouter.config.stages import (
    AdvantageStage,
    PostProcessStage,
    ShapingStage,
)
from rewardrouter.errors import ConfigError, Problem
from rewardrouter.shape.batch import Field, ShapeBatch
from rewardrouter.shape.builtin import STAGE_INPUTS
from rewardrouter.shape.chain import CompiledStage, compile_stage, run_stages

if TYPE_CHECKING:
    import torch
    from torch import Tensor


@dataclass(frozen=True)
class PostProcessResult:
    """Lists aligned with the samples: what slime's post-process hook returns, and more.

    ``raw`` are the rewards as scored (``None``: no reward), ``shaped`` after every shaping
    stage, ``advantages`` what the trainer uses (0.0 where the reward is ``None``).
    ``constant_groups`` is the check "groups with a single reward value got exactly 0", when an
    advantage stage ran.
    """

    raw: list[float | None]
    shaped: list[float | None]
    advantages: list[float]
    constant_groups: ConstantGroups | None = None


@dataclass(frozen=True)
class ProcessedTensors:
    """Tensor results, on the device of the input rewards.

    ``shaped`` (float64) holds NaN where a sample has no reward; ``advantages`` has the dtype of
    the advantage stage (float64 without one) and 0 where a sample has no reward.
    """

    shaped: Tensor
    advantages: Tensor
    constant_groups: ConstantGroups | None = None


@dataclass(frozen=True)
class PostProcessor:
    """A compiled post-processing chain; build it with :meth:`compile`.

    ``route_stages`` maps each route that has shaping stages to them; ``stages`` are the global
    shaping stages; ``estimator`` the final advantage stage, if any.
    """

    route_stages: Mapping[str, tuple[CompiledStage, ...]] = field(default_factory=dict)
    stages: tuple[CompiledStage, ...] = ()
    estimator: AdvantageStage | None = None

    @classmethod
    def compile(
        cls,
        route_shaping: Mapping[str, Sequence[ShapingStage]],
        post_process: Sequence[PostProcessStage],
        *,
        routes_path: str = "routes",
        post_process_path: str = "post_process",
    ) -> PostProcessor:
        """:func:`compile_post_process`, raising :class:`ConfigError` listing every problem."""
        processor, problems = compile_post_process(
            route_shaping,
            post_process,
            routes_path=routes_path,
            post_process_path=post_process_path,
        )
        if processor is None:
            raise ConfigError(problems)
        return processor

    def required_inputs(self) -> dict[Field, str]:
        """The per-sample fields this chain reads, each with the first stage that reads it.

        Every sample of a batch must carry each of them; :meth:`Router.check
        <rewardrouter.Router.check>` looks for them before anything is scored.
        """
        needs: dict[Field, str] = {}
        stages = [s for route in self.route_stages.values() for s in route] + list(self.stages)
        for stage in stages:
            for name in STAGE_INPUTS.get(stage.config.kind, ()):
                needs.setdefault(name, f"{stage.where} ({stage.config.kind})")
        if self.estimator is not None and self.estimator.group_by == "index":
            needs.setdefault("group_index", f"the advantage stage `{self.estimator.kind}`")
        return needs

    @property
    def route_names(self) -> tuple[str, ...]:
        """Routes with shaping stages; ``route_ids`` of :meth:`process` index this tuple."""
        return tuple(self.route_stages)

    def __call__(
        self,
        rewards: Sequence[float | None],
        *,
        routes: Sequence[str | None] | None = None,
        group_index: Sequence[int] | None = None,
        response_length: Sequence[float] | None = None,
        truncated: Sequence[bool] | None = None,
    ) -> PostProcessResult:
        """Process one batch given as lists aligned with ``rewards``.

        ``routes`` names each sample's route (``None`` or a route without shaping: no route
        stages). Tensors are built on the estimator's device (``device: auto`` picks CUDA when
        present), so the whole chain runs there; a chain of the advantage stage alone on the CPU
        runs without torch when :func:`~rewardrouter.advantage.host.host_advantages` can.
        """
        n = len(rewards)
        for name, values in (
            ("routes", routes),
            ("group_index", group_index),
            ("response_length", response_length),
            ("truncated", truncated),
        ):
            if values is not None and len(values) != n:
                raise ValueError(f"{name} has {len(values)} entries for {n} rewards")
        hosted = self._on_host(rewards, group_index)
        if hosted is not None:
            return hosted
        import torch

        from rewardrouter.advantage.device import resolve_device

        device = resolve_device(self.estimator.device if self.estimator else "cpu")
        valid = [r is not None for r in rewards]
        codes = {name: i for i, name in enumerate(self.route_names)}
        out = self.process(
            torch.tensor(
                [float("nan") if r is None else float(r) for r in rewards],
                dtype=torch.float64,
                device=device,
            ),
            valid=torch.tensor(valid, dtype=torch.bool, device=device),
            route_ids=None
            if routes is None or not codes
            else torch.tensor([codes.get(r, -1) if r else -1 for r in routes], device=device),
            group_index=_tensor(group_index, torch.int64, device),
            response_length=_tensor(response_length, torch.float64, device),
            truncated=_tensor(truncated, torch.bool, device),
            check=True,
        )
        shaped = out.shaped.tolist()
        return PostProcessResult(
            raw=[None if r is None else float(r) for r in rewards],
            shaped=[s if ok else None for s, ok in zip(shaped, valid, strict=True)],
            advantages=out.advantages.tolist(),
            constant_groups=out.constant_groups,
        )

    def _on_host(
        self, rewards: Sequence[float | None], group_index: Sequence[int] | None
    ) -> PostProcessResult | None:
        """The result computed without torch, or ``None`` when torch's path must run."""
        from rewardrouter.advantage import host  # NumPy: loaded by the first batch

        if self.route_stages or self.stages or not host.handles(self.estimator, len(rewards)):
            return None
        if self.estimator is not None and not runs_on_cpu(self.estimator.device):
            return None
        done = host.host_advantages(rewards, group_index, self.estimator)
        if done is None:
            return None
        raw = [None if r is None else float(r) for r in rewards]
        return PostProcessResult(raw, list(raw), *done)

    def process(
        self,
        rewards: Tensor,
        *,
        valid: Tensor | None = None,
        route_ids: Tensor | None = None,
        group_index: Tensor | None = None,
        response_length: Tensor | None = None,
        truncated: Tensor | None = None,
        check: bool = False,
    ) -> ProcessedTensors:
        """Process one batch given as 1-D tensors; shaping runs where ``rewards`` lives.

        ``valid`` (bool) marks samples that carry a reward; ``route_ids`` indexes
        :attr:`route_names` (any other value: no route stages). ``check`` also runs
        :func:`~rewardrouter.advantage.constant_groups` on the estimator's input.
        """
        import torch

        from rewardrouter.advantage import constant_groups, group_advantages

        device = rewards.device
        shaped = rewards.to(torch.float64, copy=True)
        mask = None if valid is None else valid.to(device=device, dtype=torch.bool)
        if mask is not None and bool(mask.all()):
            mask = None
        if mask is not None:
            shaped.masked_fill_(~mask, torch.nan)
        batch = ShapeBatch(
            response_length=None
            if response_length is None
            else response_length.to(device=device, dtype=torch.float64),
            truncated=None if truncated is None else truncated.to(device=device, dtype=torch.bool),
            group_index=None if group_index is None else group_index.to(device),
            index=torch.arange(shaped.numel(), device=device),
        )
        if route_ids is not None:
            route_ids = route_ids.to(device)
            for code, (route, stages) in enumerate(self.route_stages.items()):
                selected = route_ids == code
                run_stages(
                    stages, shaped, batch, selected if mask is None else selected & mask, route
                )
        run_stages(self.stages, shaped, batch, mask)
        if self.estimator is None:
            advantages = shaped if mask is None else shaped.masked_fill(~mask, 0.0)
            return ProcessedTensors(shaped, advantages.clone() if mask is None else advantages)
        by_index = self.estimator.group_by == "index"
        advantages = group_advantages(
            shaped, group_index if by_index else None, self.estimator, valid=mask
        )
        found = None
        if check:
            ids = group_index if by_index else self._positions(shaped.numel(), device)
            assert ids is not None  # group_advantages has raised otherwise
            found = constant_groups(shaped, ids, advantages, valid=mask)
        return ProcessedTensors(shaped, advantages, found)

    def _positions(self, n: int, device: torch.device) -> Tensor:
        import torch

        assert self.estimator is not None and self.estimator.n_samples_per_prompt is not None
        return torch.arange(n, device=device) // self.estimator.n_samples_per_prompt


def compile_post_process(
    route_shaping: Mapping[str, Sequence[ShapingStage]],
    post_process: Sequence[PostProcessStage],
    *,
    routes_path: str = "routes",
    post_process_path: str = "post_process",
) -> tuple[PostProcessor | None, list[Problem]]:
    """Compile route and global stages, collecting every problem instead of stopping at one.

    Problems carry YAML paths: ``{routes_path}.<route>.shaping[i]...`` and
    ``{post_process_path}[i]...``. Returns the processor and no problems, or ``None`` and all
    of them (for the caller to merge with its own before raising one :class:`ConfigError`).
    """
    problems: list[Problem] = []
    route_stages: dict[str, tuple[CompiledStage, ...]] = {}
    for route, stages in route_shaping.items():
        compiled = _compile_all(stages, f"{routes_path}.{route}.shaping", problems)
        if compiled:
            route_stages[route] = compiled
    shaping = list(post_process)
    estimator: AdvantageStage | None = None
    last = shaping[-1] if shaping else None
    if isinstance(last, AdvantageStage):
        estimator = last
        shaping.pop()
    compiled = _compile_all(shaping, post_process_path, problems)
    problem = None if estimator is None else device_problem(estimator.device)
    if problem is not None:
        problems.append(Problem(f"{post_process_path}[{len(shaping)}].device", problem))
    if problems:
        return None, problems
    return PostProcessor(route_stages, compiled, estimator), []


def _compile_all(
    stages: Sequence[PostProcessStage], prefix: str, problems: list[Problem]
) -> tuple[CompiledStage, ...]:
    compiled: list[CompiledStage] = []
    for i, stage in enumerate(stages):
        done, found = compile_stage(stage, f"{prefix}[{i}]")
        problems.extend(found)
        if done is not None:
            compiled.append(done)
    return tuple(compiled)


def _tensor(
    values: Sequence[float] | Sequence[int] | Sequence[bool] | None,
    dtype: torch.dtype,
    device: torch.device,
) -> Tensor | None:
    import torch

    return None if values is None else torch.tensor(list(values), dtype=dtype, device=device)
