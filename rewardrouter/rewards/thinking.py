"""The part of a response after its thinking: what every grader reads as the answer.

A reasoning model writes ``<think>...</think>`` before its answer; what it wrote there is not
its answer (an answer boxed in the thinking and another one after it is a hedge). A response
without ``</think>`` is read whole.
"""

from __future__ import annotations

THINK_END = "</think>"


def after_thinking(response: str) -> str:
    """The text after the last ``</think>``; the whole response when it has none.

    >>> after_thinking("<think>maybe \\\\boxed{1}</think>It is \\\\boxed{2}.")
    'It is \\\\boxed{2}.'
    """
    _, found, tail = response.rpartition(THINK_END)
    return tail if found else response
