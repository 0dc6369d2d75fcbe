"""The checks of a batch that the command line and every trainer hook run, in one place.

A mistake in the data (the labels in another column, two files that each number their prompt
groups from 0, a batch that is not whole prompt groups) gives plausible rewards, so it has to be
looked for. Each check returns what it found; how loud it is depends on what the caller can do:
the command line holds the whole file before anything is scored, so it refuses the file; a hook
inside a trainer holds one batch of a run, so what may be deliberate there (a generate function
that rewrites prompts) is a counted warning, and only what cannot be processed at all raises.

==========================  ===============================================  =====================
check                       finds                                            command line; hooks
==========================  ===============================================  =====================
:func:`absent_column`       a label column the rows lack (``data.columns.``  error; error (TRL)
                            ``label``, TRL's ``label_column``)
:func:`unlabeled`           samples without a label whose graders did not    hint; counted
                            apply: the labels are probably elsewhere         ``label_missing``
:func:`mixed_prompt_groups` a prompt group holding answers to different      error; counted
                            prompts, labels or datasets (joined files that   ``mixed_prompt_group``
                            each number ``group_index`` from 0)
:func:`position_problem`    ``group_by: position`` over a batch that is not  error; error
                            whole groups of ``n_samples_per_prompt``
``batch_positions``         slime's rule without ``group_index``: a batch    (needs group_index);
                            that is not ``n_samples_per_prompt *             counted
                            rollout_batch_size`` is one group                ``one_prompt_group``
:func:`no_advantage_stage`  a hook that hands over advantages from a chain   (writes rewards);
                            that ends in no advantage stage                  error
==========================  ===============================================  =====================

The hooks' counted forms (``warn_unlabeled``, ``warn_mixed_prompt_groups``, and slime's
position rule ``batch_positions``, which only a hook needs) live in
``rewardrouter/integrations/_checks.py``: each trainer's metrics carry
``rewardrouter/warnings/<kind>`` (OpenRLHF's ``extra_logs`` carry ``rewardrouter/label_missing``
per row), and the first of each is emitted as a :class:`~rewardrouter.RewardRouterWarning`. Problems are ``(sample index, message)`` pairs, the
form of :meth:`Router.check <rewardrouter.Router.check>`, so that the command line lists them as
``file:line: message`` with the rest.

>>> from rewardrouter import Sample
>>> rows = [Sample(prompt="2+2?", group_index=0), Sample(prompt="3+3?", group_index=0)]
>>> [i for i, _ in mixed_prompt_groups(rows, [0, 0])]
[1]
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from typing import Any

from rewardrouter.config.models import RouterConfig
from rewardrouter.config.stages import ADVANTAGE_KINDS
from rewardrouter.errors import Problem, did_you_mean, short_repr
from rewardrouter.results import RewardResult

#: Characters of a prompt quoted in a message.
QUOTED = 60


def absent_column(
    field: str,
    column: str,
    columns: Collection[str],
    setting: str,
    fix: str,
    *,
    holder: str = "the rows do",
    taken: Collection[str] = (),
) -> Problem | None:
    """A :class:`Problem` at ``setting`` when rows with ``columns`` lack the ``column`` that
    ``field`` is read from; None when they have it. ``holder`` names the rows with their verb
    (``"this row does"``), ``fix`` says how to read another column; ``taken`` are columns that
    other fields read, never suggested.

    >>> print(absent_column("label", "solution", ["answer", "prompt"], "label_column",
    ...                     "pass label_column=<column>"))
    label_column: reads `label` from column 'solution', which the rows do not have (columns: answer, prompt)
        give every row a 'solution' column, or pass label_column=<column>
    """
    if column in columns:
        return None
    names = [str(c) for c in columns]
    close = did_you_mean(column, [c for c in names if c not in taken])
    return Problem(
        setting,
        f"reads `{field}` from column {column!r}, which {holder} not have "
        f"(columns: {', '.join(names) or 'none'})",
        f"{close + ' ' if close else ''}give every row a {column!r} column, or {fix}",
    )


def _not_applied(result: RewardResult) -> bool:
    """Whether a grader of the sample's route returned None (not applicable)."""
    if result.status == "skipped":
        return True
    return result.status == "ok" and any(v is None for v in result.terms.values())


def unlabeled(samples: Sequence[Any], results: Sequence[RewardResult]) -> list[int]:
    """Positions of samples that carry no label (``None``) and whose route's graders did not all
    apply: a grader that compares with a label returns None without one, so the reward comes
    from the other terms alone (a wrong answer in the expected format can then outscore a
    right one). A blank label (``""``) is a label: the data says there is none."""
    found = []
    for i, sample in enumerate(samples):
        if getattr(sample, "label", None) is None and _not_applied(results[i]):
            found.append(i)
    return found


def _quoted(prompt: Any) -> str:
    text = " ".join(str(prompt).split())
    return repr(text if len(text) <= QUOTED else text[: QUOTED - 1] + "…")


def _sample(i: int) -> str:
    return f"sample {i}"


def _same(a: Any, b: Any) -> bool:
    """Whether two values of one field read the same: equal (labels may be lists, dicts or NumPy
    arrays, whose ``==`` is elementwise), or written the same (``nan``)."""
    if a is b:
        return True
    try:
        if bool(a == b):
            return True
    except (TypeError, ValueError):  # an array of truth values
        pass
    return repr(a) == repr(b)


def _shared_fields(sample: Any, route_by: Sequence[str]) -> dict[str, tuple[Any, str]]:
    """What every answer of one prompt group shares, as ``{field: (value, shown)}``: the
    prompt, the label and the dataset (the ``route_by`` fields in ``metadata``); a field the
    sample lacks (a prompt or label None or ``""``, no route_by field) is left out."""
    found: dict[str, tuple[Any, str]] = {}
    prompt = getattr(sample, "prompt", None)
    if prompt is not None and prompt != "":
        found["prompt"] = (prompt, _quoted(prompt))
    label = getattr(sample, "label", None)
    if label is not None and not (isinstance(label, str) and label == ""):
        found["label"] = (label, short_repr(label, QUOTED))
    metadata = getattr(sample, "metadata", None)
    if isinstance(metadata, Mapping):
        named = tuple((f, metadata[f]) for f in route_by if metadata.get(f) is not None)
        if named:
            found["dataset"] = (named, ", ".join(f"{f}={short_repr(v, QUOTED)}" for f, v in named))
    return found


def mixed_prompt_groups(
    samples: Sequence[Any],
    groups: Sequence[Hashable | None],
    name: Callable[[int], str] = _sample,
    route_by: Sequence[str] = (),
    group_name: Callable[[Hashable], str] = repr,
) -> list[tuple[int, str]]:
    """Samples whose prompt, label or dataset differs from their prompt group's.

    GRPO compares the answers to *one* prompt, graded against its one label; a group that holds
    answers to two prompts (files joined after each numbered its groups from 0) ranks them
    against each other, and so does a group whose answers carry different labels or datasets
    (the ``route_by`` fields of their ``metadata``) under one prompt text (an image question,
    a prompt template). Labels that compare equal (lists, dicts, arrays) are one label. One
    sample per rollout is compared (siblings sharing a ``rollout_id`` may carry longer prompts:
    fan-out turns); a sample without a group is left out, and so is a field a sample lacks (a
    prompt or label ``None`` or ``""``). ``groups`` holds each sample's group key,
    ``group_name`` how a message names one, ``name`` says where a sample is (``"line 12"``
    for a file). One problem per group and distinct values found.

    >>> from rewardrouter import Sample
    >>> rows = [Sample(prompt="<image> Which animal?", label="cat", group_index=0),
    ...         Sample(prompt="<image> Which animal?", label="dog", group_index=0)]
    >>> print(mixed_prompt_groups(rows, [0, 0])[0][1])  # doctest: +ELLIPSIS
    prompt group 0 holds answers to another label: 'dog' here, 'cat' at sample 0; GRPO would ...
    """
    first: dict[Hashable, dict[str, tuple[int, Any, str]]] = {}
    rollouts: set[tuple[Hashable, Hashable]] = set()
    reported: set[tuple[Hashable, tuple[str, ...]]] = set()
    problems: list[tuple[int, str]] = []
    for i, (sample, group) in enumerate(zip(samples, groups, strict=True)):
        if group is None:
            continue
        fields = _shared_fields(sample, route_by)
        if not fields:
            continue
        rollout = getattr(sample, "rollout_id", None)
        if rollout is not None:
            if (group, rollout) in rollouts:
                continue
            rollouts.add((group, rollout))
        seen = first.setdefault(group, {})
        differ = []
        for field, (value, shown) in fields.items():
            if field not in seen:
                seen[field] = (i, value, shown)
            elif not _same(value, seen[field][1]):
                differ.append(field)
        key = (group, tuple(f"{f}={fields[f][1]!r}" for f in differ))
        if not differ or key in reported:
            continue
        reported.add(key)
        details = "; ".join(
            f"{field + ' ' if len(differ) > 1 else ''}{fields[field][1]} here, "
            f"{seen[field][2]} at {name(seen[field][0])}"
            for field in differ
        )
        problems.append(
            (
                i,
                f"prompt group {group_name(group)} holds answers to another {' and '.join(differ)}: "
                f"{details}; GRPO would compare answers to different questions. Give each "
                f"prompt its own group_index (files joined after each numbered its groups from "
                f"0: offset each file's group_index past the previous file's)",
            )
        )
    return problems


def position_problem(config: RouterConfig, n: int) -> tuple[int, str] | None:
    """A problem when the config's advantage stage groups by position and ``n`` samples are not
    whole groups; it names the first sample of the incomplete last group. None otherwise."""
    if not config.post_process:
        return None
    stage = config.post_process[-1]
    size = getattr(stage, "n_samples_per_prompt", None)
    if getattr(stage, "group_by", None) != "position" or not isinstance(size, int) or size < 1:
        return None
    left = n % size
    if not left:
        return None
    where = f"post_process[{len(config.post_process) - 1}] ({stage.kind})"
    return (
        n - left,
        f"{where} groups by position, {size} consecutive samples per prompt "
        f"(n_samples_per_prompt), but the batch holds {n} samples: the last {left} make no "
        f"whole group. Give every sample its prompt's group_index and drop `group_by: "
        f"position` (groups by group_index take any sizes), or pass whole groups",
    )


def no_advantage_stage(config: RouterConfig, hook: str, keep_own: str) -> Problem | None:
    """A :class:`Problem` at ``post_process`` when ``hook`` would hand the trainer advantages
    from a chain that ends in no advantage stage (raw rewards as advantages, unsaid); None when
    it ends in one (``{kind: none}`` says it on purpose). ``keep_own`` says how to keep the
    trainer's own normalization instead.

    >>> from rewardrouter.config.models import RouterConfig
    >>> problem = no_advantage_stage(RouterConfig(), "the hook", "drop the hook")
    >>> problem.message[-85:]
    'but the config has none: the trainer would take the raw rewards as advantages, unsaid'
    >>> problem.hint  # doctest: +ELLIPSIS
    'end post_process with an advantage stage, e.g. `- {kind: grpo}` (or `rloo`, ...; or drop the hook'
    """
    stages = config.post_process
    if stages and stages[-1].kind in ADVANTAGE_KINDS:
        return None
    found = f"its last stage is `{stages[-1].kind}`" if stages else "the config has none"
    return Problem(
        "post_process",
        f"{hook} computes advantages with the advantage stage that ends the router config's "
        f"post_process, but {found}: the trainer would take the raw rewards as advantages, "
        f"unsaid",
        "end post_process with an advantage stage, e.g. `- {kind: grpo}` (or `rloo`, "
        "`reinforce_pp_baseline`), or with `- {kind: none}` to train on the shaped rewards as "
        f"they are; or {keep_own}",
    )


def data_problems(
    config: RouterConfig, samples: Sequence[Any], name: Callable[[int], str] = _sample
) -> list[tuple[int, str]]:
    """The grouping checks of a whole input before anything is scored (the command line's):
    :func:`position_problem`, and :func:`mixed_prompt_groups` over the samples' ``group_index``.
    ``(sample index, message)`` pairs in sample order."""
    groups = [getattr(s, "group_index", None) for s in samples]
    problems = mixed_prompt_groups(samples, groups, name, config.route_by)
    uneven = position_problem(config, len(samples))
    if uneven is not None:
        problems.append(uneven)
    return sorted(problems, key=lambda p: p[0])
