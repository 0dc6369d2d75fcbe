"""The ``reward_model`` kind: a sequence-classification reward model's scalar score.

``settings`` (which API, which model, how the score becomes the reward) → ``conversation``
(a sample as chat messages or text; the markers a response may not write) → ``tokenized``
(a tokenizer's chat template, applied here) → ``served`` (vLLM, SGLang over HTTP) or ``local``
(transformers in a worker process; ``checkpoint``: what its folder must hold) → ``scores`` (each distinct input once; normalization) →
``kind`` (how the compiler builds it).
"""

from rewardrouter.rewards.reward_model.conversation import Unusable
from rewardrouter.rewards.reward_model.settings import Affine, RewardModelSettings

__all__ = ["Affine", "RewardModelSettings", "Unusable"]
