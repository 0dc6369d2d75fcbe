"""The ``judge`` kind: an LLM judge (generative reward model) behind an OpenAI-compatible chat
endpoint. ``settings`` (the rubric template, the parser, the endpoint) → ``reward`` (render,
ask, cache) → ``parse`` (the score in the reply) → ``kind`` (how the compiler builds it).
"""

from rewardrouter.rewards.judge.parse import UnreadableScore, read_score
from rewardrouter.rewards.judge.reward import JudgeReward
from rewardrouter.rewards.judge.settings import JudgeSettings

__all__ = ["JudgeReward", "JudgeSettings", "UnreadableScore", "read_score"]
