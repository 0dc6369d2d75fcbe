"""Samples built by slime's agent ``TrajectoryManager``, which reach the hooks already rewarded.

slime's agent adapters (``slime.agent.adapters``) turn a session into training samples with
``finish_session(sid, base_sample=..., reward=0.0, extra_metadata=None)``, which calls the
manager's ``get_trajectory``: each sample keeps the base sample's prompt, label, index and
group, gets the trained turns decoded as its ``response``, metadata made of ``extra_metadata``
plus ``truncated``, ``use_tool`` and ``ill_formed`` (not the base sample's metadata, not the
conversation's messages) and the given ``reward``, 0.0 unless the caller says otherwise. slime
never re-scores a sample whose reward is set, and neither does the router, so such samples
reach training with 0.0 and nothing scored: the silent case this module names.

:func:`warn_preset_agent_rewards` counts ``agent_reward_preset`` (one per sample) when every
such sample of a call or batch still carries 0.0 the router did not give, with what to do:
``finish_session(..., reward=None)`` so that slime calls the reward hook, and the route field
in ``extra_metadata``.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from rewardrouter.integrations._metrics import warn

#: The metadata keys the manager writes on every sample it builds (``get_trajectory``).
AGENT_KEYS = ("truncated", "use_tool", "ill_formed")

#: What a user does to have the router score an agent session's samples.
FIX = (
    "To score them with the router, call finish_session(..., reward=None) (or get_trajectory: "
    "reward=None) so that slime calls the reward hook on each sample, and give the route in "
    "extra_metadata, e.g. extra_metadata={'dataset': base_sample.metadata['dataset']}: these "
    "samples keep the base sample's prompt and label but not its metadata. The router scores "
    "each sample's response (the trained turns the adapter decodes); the conversation's "
    "messages are not carried, so a term that reads the conversation (trajectory: "
    "{messages_field: messages}) needs extra_metadata={'messages': [...]} as well. If 0.0 is "
    "the reward your own code computed, nothing is wrong"
)


def is_agent_sample(sample: Any) -> bool:
    """Whether ``sample`` was built by slime's agent ``TrajectoryManager``."""
    metadata = getattr(sample, "metadata", None)
    return isinstance(metadata, dict) and all(key in metadata for key in AGENT_KEYS)


def warn_preset_agent_rewards(
    samples: Sequence[Any], unscored: Sequence[bool], batch: Hashable | None = None
) -> None:
    """Count ``agent_reward_preset`` when the agent samples among ``samples`` that the router
    did not score (``unscored``) all carry reward 0.0: the manager's default, not a reward."""
    preset = [i for i, sample in enumerate(samples) if unscored[i] and is_agent_sample(sample)]
    if not preset or any(getattr(samples[i], "reward", None) != 0.0 for i in preset):
        return
    warn(
        "agent_reward_preset",
        f"{len(preset)} sample(s) built by slime's agent TrajectoryManager (their metadata "
        f"holds {', '.join(AGENT_KEYS)}) came with reward 0.0 already set, the default of "
        f"finish_session() and get_trajectory(), so the router scored none of them (a sample "
        f"whose reward is set is never re-scored) and they train on 0.0. {FIX}",
        count=len(preset),
        key="agent_reward_preset",
        batch=batch,
    )
