"""What a local reward model's folder holds: checked before its scores can be trusted.

``api: local`` loads the folder with ``AutoModelForSequenceClassification``, which loads
almost anything and fills in what the weights lack with random numbers. Two mistakes would then
give plausible scores that are not the model's, so they are refused when the router compiles,
from the folder's ``config.json``, before a weight is read:

- the config's ``architectures`` names no sequence classifier: a policy's causal language model
  passed by mistake (``LlamaForCausalLM``), or a custom reward-model class. Loaded as a
  classifier, its score head is not in the weights but random, and the scores change at each
  start of the worker. The worker checks the weights it loaded too (:func:`missing_weights`),
  for a folder whose config names no architecture;
- a head with several outputs, and neither ``label`` nor ``label_index`` to say which one is
  the reward (reading the first would be a guess).

Example: a folder saved from ``LlamaForCausalLM`` is refused with ``kwargs.model: '/ckpt/policy'
holds a causal language model (config.json architectures: LlamaForCausalLM), not a
sequence-classification reward model: ...``.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from rewardrouter.errors import Problem, did_you_mean
from rewardrouter.introspect import ResolveError
from rewardrouter.rewards.reward_model.settings import RewardModelSettings

#: How the class names of transformers' sequence classifiers end.
CLASSIFIER = "ForSequenceClassification"

#: How the class names of causal language models (what a policy checkpoint holds) end.
CAUSAL_LM = ("ForCausalLM", "LMHeadModel")

#: What to do about a folder that holds no sequence classifier.
POINT_AT_A_CLASSIFIER = (
    "point `model:` at a sequence-classification reward model's folder, one whose "
    f"config.json `architectures` ends in {CLASSIFIER} (e.g. Qwen3{CLASSIFIER}) and whose "
    "weights hold its score head"
)


def output_index(settings: RewardModelSettings) -> int:
    """The index of the head's output that is the reward, read from the config of the model
    in ``settings.model``; :class:`ResolveError` listing every problem found (paths relative to
    the term: ``kwargs.model``, ``kwargs.label``, ``kwargs.label_index``)."""
    from transformers import AutoConfig

    folder = settings.model
    try:
        config = AutoConfig.from_pretrained(folder, local_files_only=True)
    except (OSError, ValueError, KeyError) as exc:
        raise ResolveError(
            f"kwargs.model: the config.json of {folder!r} cannot be read: {str(exc)[:300]}",
            "give the folder a model was saved to with save_pretrained, of a model type this "
            "transformers version knows",
        ) from None
    architectures = [str(a) for a in getattr(config, "architectures", None) or ()]
    if architectures and not any(a.endswith(CLASSIFIER) for a in architectures):
        listed = ", ".join(architectures)
        found = (
            f"a causal language model (config.json architectures: {listed})"
            if any(a.endswith(CAUSAL_LM) for a in architectures)
            else f"{listed} (config.json architectures)"
        )
        raise refused(
            Problem(
                "kwargs.model",
                f"{folder!r} holds {found}, not a sequence-classification reward model: loaded "
                "as one, its score head would not be in the weights but random, and its scores "
                "would change at each start of the worker",
                POINT_AT_A_CLASSIFIER,
            )
        )
    index = _chosen(settings, _names(config))
    if isinstance(index, Problem):
        raise refused(index)
    return index


def refused(*problems: Problem) -> ResolveError:
    """A :class:`ResolveError` holding ``problems`` (paths relative to the term)."""
    return ResolveError(problems[0].message, problems[0].hint, problems)


def _names(config: Any) -> list[str]:
    """The head's outputs by name, in order (``id2label``; ``LABEL_<i>`` where it has none)."""
    id2label = getattr(config, "id2label", None) or {}
    count = int(getattr(config, "num_labels", len(id2label)) or 1)
    return [str(id2label.get(i, f"LABEL_{i}")) for i in range(count)]


def _listed(names: list[str], shown: int = 10) -> str:
    """``0 'bad', 1 'good'``: the first ``shown`` outputs with their positions."""
    text = ", ".join(f"{i} {name!r}" for i, name in enumerate(names[:shown]))
    return text + (f", ... ({len(names)} in all)" if len(names) > shown else "")


def _chosen(settings: RewardModelSettings, names: list[str]) -> int | Problem:
    """The output ``label`` or ``label_index`` names, the only one when neither is set, else
    the problem (the outputs listed by name)."""
    folder, count = settings.model, len(names)
    outputs = f"{count} output{'s' if count != 1 else ''} (config.json id2label: {_listed(names)})"
    if settings.label is not None:
        if settings.label in names:
            return names.index(settings.label)
        return Problem(
            "kwargs.label",
            f"{settings.label!r} is not an output of the model in {folder!r}, which has {outputs}",
            did_you_mean(settings.label, names) or "set `label` to one of those names",
        )
    if settings.label_index is not None:
        if settings.label_index < count:
            return settings.label_index
        return Problem(
            "kwargs.label_index",
            f"{settings.label_index} is past the last output of the model in {folder!r}, which "
            f"has {outputs}",
            f"set `label_index` to 0..{count - 1}, or `label` to an output's name",
        )
    if count == 1:
        return 0
    return Problem(
        "kwargs.label",
        f"the model in {folder!r} has {outputs}, and the term does not say which one is the reward",
        f"set `label` to the name of the output that scores a good response (e.g. label: "
        f"{names[-1]}), or `label_index` to its position; the model card tells which it is",
    )


def missing_weights(folder: str, missing: Collection[str]) -> str:
    """Why the model the worker loaded from ``folder`` cannot score (``missing``: the weights
    its checkpoint lacks, which the loader made up at random), or ``""``."""
    if not missing:
        return ""
    found = sorted(missing)
    more = f" and {len(found) - 4} more" if len(found) > 4 else ""
    return (
        f"the weights in {folder!r} hold no {', '.join(found[:4])}{more}: loaded as a "
        "sequence classifier, the model's score head would be random, and its scores would "
        f"change at each start of the worker; {POINT_AT_A_CLASSIFIER}"
    )
