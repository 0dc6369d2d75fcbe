"""What the graders read besides the answer: label texts.

Labels arrive as whatever a dataset stored. :func:`label_texts` turns them into the list of
non-blank strings a grader compares against, and ``None`` when there is nothing to compare
against (the grader then returns ``None``, "not applicable", rather than a silent 0). It reads:

- a string or a number; a list or tuple of them (any entry is accepted), also as a NumPy array
  (how a Parquet column of lists arrives) or as a JSON list stored as a string
  (``'["Denver Broncos", "Broncos"]'``);
- Hugging Face SQuAD's ``answers`` (``{"text": [...], "answer_start": [...]}``) and verl's
  ``reward_model`` (``{"ground_truth": ..., "style": "rule"}``), as dicts or as JSON strings;
- for math graders, a label that holds its answer inside a solution: its final ``\\boxed{}``,
  GSM8K's closing ``#### N`` line, or the answer a sentence states (``The answer is 10000``,
  ``The final answer is $\\frac{1}{2}$.``, ``Answer: 10000``).

Any other shape (another dict, a nested list, a boolean, an object) raises :class:`LabelError`,
which the router reports as that sample's failure, with its index (the CLI gives its line): a
label read wrongly would give a plausible score.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from typing import Any

from rewardrouter.errors import short_repr
from rewardrouter.outcome import DataFault
from rewardrouter.rewards.boxes import final_answer
from rewardrouter.rewards.statements import answer_stated, last_statement

#: What a label may be, in words, for :class:`LabelError` messages.
LABEL_SHAPES = (
    "a string, a number, a list of them, SQuAD's answers ({\"text\": [...]}) or verl's "
    'reward_model ({"ground_truth": ...})'
)
_FIX = "map data.columns.label to the column that holds the answer, or convert the labels"


class LabelError(DataFault):
    """A label of a shape no grader reads as an answer; the message says what was found."""


def _number_text(value: int | float) -> str:
    if isinstance(value, float):
        if value.is_integer():
            return str(int(value))
        # repr is the shortest round-trip form; Decimal spells out exponents (1e-05 → 0.00001)
        return format(Decimal(repr(value)), "f")
    try:
        return str(value)
    except ValueError:  # past Python's limit on writing an int as text (4,300 digits)
        raise LabelError(
            f"label is an integer of {value.bit_length()} bits, too long to write as text; {_FIX}"
        ) from None


# GSM8K's solutions end with the answer on a line of its own: "#### 18".
_GSM8K = re.compile(r"^####[ \t]*(\S[^\n]*?)[ \t]*$", re.MULTILINE)


def _answer_of(text: str) -> str:
    """The answer a label holds: its final boxed answer, GSM8K's ``#### N``, the final answer a
    sentence of it states, or the label itself; :class:`LabelError` for a label that states
    an answer no reader can make out (``"The answer is"``)."""
    if "\\boxed" in text or "\\fbox" in text:
        return final_answer(text, loose=True) or text
    if "####" in text:
        found = _GSM8K.findall(text)
        if found:
            return str(found[-1])
    statement = last_statement(text)  # the statement a reader takes as the final one
    if statement is None:
        return text
    answer = answer_stated(text, statement)
    if answer is not None:
        return answer
    if not text[statement.end() :].strip():
        raise LabelError(
            f"label {short_repr(text)} states no answer after {statement.group(0).strip()!r}; "
            f"expected the answer itself or a sentence stating it"
        )
    return text


def label_texts(label: Any, *, unbox: bool = True) -> tuple[str, ...] | None:
    """The non-blank strings a response is compared against, or ``None`` when there are none.

    Reads the shapes the module docstring lists; numbers are spelled plainly (``0.5``, never
    ``5e-01``); with ``unbox`` (math graders) a label holding a solution is replaced by the
    answer it states. ``None``, blank strings and empty lists give ``None``; a label of another
    shape raises :class:`LabelError`. A string or number label is read once per process (every
    response of a GRPO group shares it).

    >>> label_texts(["\\\\boxed{1/2}", 0.5, " "])
    ('1/2', '0.5')
    >>> label_texts({"text": ["Denver Broncos", "Broncos"], "answer_start": [177, 249]}, unbox=False)
    ('Denver Broncos', 'Broncos')
    >>> label_texts("The final answer is 10000.")
    ('10000',)
    """
    if type(label) in (str, int, float):
        return _texts_of(label, unbox)
    texts = tuple(text for item in _entries(label) if (text := _text_of(item, unbox)))
    return texts or None


def unwrapped(value: Any) -> Any:
    """``value`` as plain Python: a NumPy array or scalar (how a Parquet column arrives) as the
    list or value it holds, anything else as it is.

    >>> import numpy as np
    >>> unwrapped(np.array(["C"])), unwrapped(np.int64(2)), unwrapped("C")
    (['C'], 2, 'C')
    """
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):
        return value.tolist()
    return value


def label_missing(label: Any) -> bool:
    """Whether ``label`` gives no label at all: ``None``, a blank string, an empty list or
    tuple, also as a NumPy array. Every kind reads such a label as "not applicable".

    >>> [label_missing(x) for x in (None, " ", [], "C", ["C"], 0)]
    [True, True, True, False, False, False]
    """
    label = unwrapped(label)
    if isinstance(label, str | bytes):
        return not label.strip()
    return label is None or (isinstance(label, list | tuple) and not label)


def _entries(label: Any) -> list[str | int | float | Fraction | Decimal | None]:
    """The answers a label of any accepted shape lists; :class:`LabelError` for other shapes."""
    label = unwrapped(label)
    if isinstance(label, Mapping):
        return _entries(_mapped_answers(label))
    listed = isinstance(label, list | tuple)
    entries: list[str | int | float | Fraction | Decimal | None] = []
    for item in label if listed else [label]:
        item = unwrapped(item)
        if item is None or (
            isinstance(item, str | int | float | Fraction | Decimal) and not isinstance(item, bool)
        ):
            entries.append(item)
            continue
        what = "a boolean" if isinstance(item, bool) else f"a value of type {type(item).__name__}"
        raise LabelError(
            f"label {short_repr(label)} {'holds' if listed else 'is'} {what}; expected "
            f"{LABEL_SHAPES}; {_FIX}"
        )
    return entries


def _mapped_answers(label: Mapping[Any, Any]) -> Any:
    """The answers of SQuAD's ``answers`` or verl's ``reward_model`` dict."""
    if "text" in label and set(label) <= {"text", "answer_start"}:
        return label["text"]
    if "ground_truth" in label:
        return label["ground_truth"]
    keys = ", ".join(repr(k) for k in list(label)[:8])
    raise LabelError(f"label is a dict with keys {keys}; expected {LABEL_SHAPES}; {_FIX}")


@lru_cache(maxsize=1024, typed=True)
def _texts_of(label: str | int | float, unbox: bool) -> tuple[str, ...] | None:
    if isinstance(label, str) and (parsed := _json_label(label)) is not None:
        return label_texts(parsed, unbox=unbox)
    text = _text_of(label, unbox)
    return (text,) if text else None


def _json_label(text: str) -> Any:
    """The value of a label stored as JSON text: a list holding a string (an interval such as
    ``[1, 2]`` stays text), or a dict; None for any other text."""
    text = text.strip()
    if not (text.startswith("[") and text.endswith("]") and '"' in text) and not (
        text.startswith("{") and text.endswith("}") and text[1:].lstrip().startswith('"')
    ):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if isinstance(value, dict):
        return value
    if isinstance(value, list) and any(isinstance(v, str) for v in value):
        return value
    return None


def _text_of(item: Any, unbox: bool) -> str:
    """The text one label entry stands for; "" for none."""
    if item is None:
        return ""
    if isinstance(item, bool):
        raise LabelError(f"label {item!r} is a boolean; expected {LABEL_SHAPES}; {_FIX}")
    text = _number_text(item) if isinstance(item, int | float) else str(item)
    return (_answer_of(text) if unbox else text).strip()


def clear_label_cache() -> None:
    """Forget the labels read so far (benchmarks time a cold grader with this)."""
    _texts_of.cache_clear()
