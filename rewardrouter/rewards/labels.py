"""What the graders read besides the answer: label texts and the part of a response after thinking.

Labels arrive as whatever a dataset stored: a string, a number, a list of acceptable answers, or
nothing. :func:`label_texts` turns them into the list of non-blank strings a grader compares
against, and ``None`` when there is nothing to compare against (the grader then returns ``None``,
"not applicable", rather than a silent 0).
"""

from __future__ import annotations

from decimal import Decimal
from functools import lru_cache
from typing import Any

from rewardrouter.rewards.boxes import final_answer
from rewardrouter.rewards.statements import stated_answer

THINK_END = "</think>"


def _number_text(value: int | float) -> str:
    if isinstance(value, float):
        if value.is_integer():
            return str(int(value))
        # repr is the shortest round-trip form; Decimal spells out exponents (1e-05 → 0.00001)
        return format(Decimal(repr(value)), "f")
    return str(value)


# A label longer than this without a box is a worked solution when it states its final answer.
_SOLUTION_CHARS = 100


def _answer_of(text: str) -> str:
    """The answer a label holds: its final boxed answer, the final answer a worked solution
    states, or the label itself."""
    if "\\boxed" in text or "\\fbox" in text:
        return final_answer(text, loose=True) or text
    if len(text) > _SOLUTION_CHARS:
        stated = stated_answer(text)
        if stated is not None:
            return stated[0]
    return text


def label_texts(label: Any, *, unbox: bool = True) -> tuple[str, ...] | None:
    """The non-blank strings a response is compared against, or ``None`` when there are none.

    A list or tuple label accepts any of its entries; numbers are spelled plainly (``0.5``, never
    ``5e-01``); with ``unbox`` a label holding ``\\boxed{...}`` is replaced by its final boxed
    answer (:func:`~rewardrouter.rewards.boxes.final_answer`, a run of boxes included), and a
    worked solution without a box by the final answer it states. ``None``, blank strings and
    empty lists give ``None``. A string or number label is read once per process (every response
    of a GRPO group shares it).

    >>> label_texts(["\\\\boxed{1/2}", 0.5, " "])
    ('1/2', '0.5')
    """
    if type(label) in (str, int, float):
        return _texts_of(label, unbox)
    items = label if isinstance(label, list | tuple) else [label]
    texts = tuple(text for item in items if (text := _text_of(item, unbox)))
    return texts or None


@lru_cache(maxsize=1024, typed=True)
def _texts_of(label: str | int | float, unbox: bool) -> tuple[str, ...] | None:
    text = _text_of(label, unbox)
    return (text,) if text else None


def _text_of(item: Any, unbox: bool) -> str:
    """The text one label entry stands for; "" for none."""
    if item is None or isinstance(item, bool):
        return ""
    text = _number_text(item) if isinstance(item, int | float) else str(item)
    return (_answer_of(text) if unbox else text).strip()


def clear_label_cache() -> None:
    """Forget the labels read so far (benchmarks time a cold grader with this)."""
    _texts_of.cache_clear()


def after_thinking(response: str) -> str:
    """The text after the last ``</think>``; the whole response when it has none."""
    _, found, tail = response.rpartition(THINK_END)
    return tail if found else response
