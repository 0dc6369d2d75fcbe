"""``gpqa`` and ``multiple_choice``: which option letter did the response choose?

The chosen letter is read after the last ``</think>``, in this order:

1. the last complete ``\\boxed{}`` (a letter, or one option's text), unless an explicit
   correction follows it (``\\boxed{B} ... actually, D.``); boxes that hedge give no answer: a
   run of boxes with nothing but separators between them naming different letters, or boxes
   naming three letters or more (``\\boxed{A} \\boxed{B} \\boxed{C} \\boxed{D}``);
2. else the final statement of a choice (:mod:`~rewardrouter.rewards.choice.statements`: leads in
   the 29 languages of MMLU-ProX and simple-evals' localized prefixes
   (:mod:`~rewardrouter.rewards.leads`), hedged leads, corrections, verdicts, lines
   holding the option, a lead and an option's text), not negated, not one of a list;
3. else a final sentence that names exactly one option's text.

Full-width letters and punctuation read as their ASCII forms, zero-width characters as spaces,
and the Arabic and Bengali letters of options A to D (``أ ب ج د``, ``অ ব ড ঢ``) as those
options. Every pass is linear in the
response or bounded (see the statements module).
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from rewardrouter.errors import short_repr
from rewardrouter.rewards.choice.statements import LETTER, final_choice, fold, last_fix, letter_of
from rewardrouter.rewards.labels import LabelError, label_missing, unwrapped
from rewardrouter.rewards.registry import BoxedAnswer, boxed_at, builtin, last_box_start
from rewardrouter.rewards.squad import normalize_answer
from rewardrouter.rewards.thinking import after_thinking

# an answer that is nothing but the option: a label, a box's content (each run of spaces is
# taken by one quantifier: no split of it is ever tried twice)
_ONLY_LETTER = re.compile(r"\s*" + LETTER + r"\s*(?:[.)]\s*)?(?:(?:\}|\*\*|\$)\s*)?")
# a box that holds a letter: \boxed{C}, \boxed{(C)}, \boxed{\text{C}}
_BOXED_LETTER = re.compile(
    r"\\(?:boxed|fbox)\s*\{\s*(?:\\text(?:bf)?\{\s*)?(?:[(\[]\s*)?(?P<letter>[A-Za-z])\s*"
    r"(?:[)\]]\s*)?(?::[^{}]*)?(?:\}\s*)?\}"
)
# a box whose content starts with an option and a colon: \boxed{E: option text}
_LABELLED = re.compile(r"\s*(?:\\text(?:bf)?\{\s*)?(?:\(\s*)?(?P<letter>[A-Z])(?:\s*\))?\s*:")
# another option named in the rest of such a box: "A: x, B: y" names two
_ANOTHER = re.compile(r"(?<![A-Za-z0-9_\\])\(?[A-Z]\)?(?![A-Za-z0-9'])")
# what may stand between two boxes of one hedged answer: "\\boxed{A}, \\boxed{B}",
# "$\\boxed{A}$ or $\\boxed{B}$"
_GAP = r"[\s$.,;:&/|()\\\[\]]*"
_SIDE_BY_SIDE = re.compile(
    _GAP + "(?:(?:(?i:and|or|und|oder|et|ou|y|o)\\b|\u6216|\u548c|\u3001)" + _GAP + ")?"
)
#: Boxes naming this many letters or more hedge: no answer.
HEDGING_BOXES = 3
_DEFAULT_LETTERS = string.ascii_uppercase[:10]


def _options(metadata: Mapping[str, Any], default: str) -> tuple[str, list[str]]:
    """The valid letters and the choice texts (possibly none) that ``metadata`` declares."""
    choices = metadata.get("choices")
    letters = metadata.get("valid_letters")
    texts: list[str] = []
    if isinstance(choices, Mapping):
        letters = letters or [str(k) for k in choices]
        texts = [str(v) for v in choices.values()]
    elif isinstance(choices, list | tuple):
        texts = [str(c) for c in choices]
    if letters:
        return "".join(str(x).strip().upper() for x in letters), [fold(t) for t in texts]
    return (string.ascii_uppercase[: len(texts)] if texts else default), [fold(t) for t in texts]


def _letter_of_text(text: str, letters: str, texts: Sequence[str]) -> str | None:
    wanted = normalize_answer(text)
    hits = [
        letters[i] for i, t in enumerate(texts[: len(letters)]) if normalize_answer(t) == wanted
    ]
    return hits[0] if len(hits) == 1 and wanted else None


@lru_cache(maxsize=4096)  # a label is read once per GRPO group, not once per response
def _only_letter(text: str, letters: str) -> str | None:
    """The option letter that ``text`` consists of (``C``, ``(c)``, ``**C**``), if any."""
    match = _ONLY_LETTER.fullmatch(fold(text))
    if match is None:
        return None
    letter = letter_of(match).upper()
    return letter if letter in letters else None


def _missing(label: Any) -> bool:
    """No label (:func:`~rewardrouter.rewards.labels.label_missing`), or a boolean, which names
    no option."""
    return isinstance(unwrapped(label), bool) or label_missing(label)


def _gold_letter(
    label: Any, metadata: Mapping[str, Any], letters: str, texts: list[str]
) -> str | None:
    correct = metadata.get("correct_letter")
    if isinstance(correct, str) and correct.strip():
        return correct.strip().upper()
    label = unwrapped(label)  # a NumPy array or scalar: what it holds
    if isinstance(label, list | tuple):
        given = [unwrapped(item) for item in label if not _missing(item)]
        if len(given) > 1:
            raise LabelError(
                f"label is a list of {len(given)} answers ({short_repr(given[:2], 60)}); gpqa and "
                "multiple_choice grade one correct option: give its letter, index or text"
            )
        label = given[0] if given else None
    if _missing(label):
        return None
    if isinstance(label, int):
        if 0 <= label < len(letters):
            return letters[label]
        shown = label if label.bit_length() <= 64 else f"of {label.bit_length()} bits"
        raise LabelError(f"label index {shown} is outside the {len(letters)} options {letters}")
    text = fold(str(label).strip())
    letter = _only_letter(text, letters) or _letter_of_text(text, letters, texts)
    if letter is None:
        raise LabelError(
            f"label {text[:60]!r} is neither an option letter ({letters}), an index, nor the text "
            f"of one of metadata.choices"
        )
    return letter


# \text{Nitrogen} in a box: the words inside
_TEXT_COMMAND = re.compile(r"\\(?:text|textbf|textit|mathrm|mathbf|operatorname)\s*\{([^{}]*)\}")


def _boxed_choice(content: str, letters: str, texts: Sequence[str]) -> str | None:
    """The option a box (or a ``boxed_`` kind's answer) holds: its letter, its text, or a letter
    and a colon before its text (``E: option text``) when no other option is named after."""
    words = _TEXT_COMMAND.sub(r"\1", fold(content))
    return (
        _only_letter(content, letters)
        or _letter_of_text(words, letters, texts)
        or _labelled_choice(words, letters)
    )


def _labelled_choice(content: str, letters: str) -> str | None:
    """The option ``content`` starts with before a colon (``E: option text``), unless the rest
    names another option too (``A: x, B: y``)."""
    labelled = _LABELLED.match(content)
    if labelled is None or labelled.group("letter") not in letters:
        return None
    letter = labelled.group("letter")
    rest = content[labelled.end() :]
    others = {m.group().strip("()") for m in _ANOTHER.finditer(rest)} & set(letters)
    return None if others - {letter} else letter


def _box_hedges(text: str, letters: str) -> bool:
    """Whether the boxes name several answers: the last two boxes holding a letter stand side by
    side (nothing but separators between) and differ, or boxes anywhere name
    :data:`HEDGING_BOXES` letters."""
    boxes = [
        (m.start(), m.end(), m.group("letter").upper())
        for m in _BOXED_LETTER.finditer(text)
        if m.group("letter").upper() in letters
    ]
    if len({letter for _, _, letter in boxes}) >= HEDGING_BOXES:
        return True
    if len(boxes) < 2:
        return False
    (_, end, first), (start, _, last) = boxes[-2:]
    return first != last and _SIDE_BY_SIDE.fullmatch(text, end, start) is not None


def _chosen_letter(response: str, letters: str, texts: list[str]) -> str | None:
    if isinstance(response, BoxedAnswer):
        return _boxed_choice(str(response), letters, texts)
    text = fold(after_thinking(response))
    box = boxed_at(text, last_box_start(text, len(text)))
    if box is not None:
        if _box_hedges(text, letters):
            return None
        boxed = _boxed_choice(box[0], letters, texts)
        if boxed is None:  # a box that names no option (a value) hides no answer stated after it
            return final_choice(text[box[1] :], letters, texts)
        return last_fix(text, box[1], letters) or boxed
    if "\\boxed" in text or "\\fbox" in text:
        return None  # the last box was cut off mid-answer: no earlier answer stands in
    return final_choice(text, letters, texts)


def _grade(response: str, label: Any, metadata: Mapping[str, Any], default: str) -> float | None:
    letters, texts = _options(metadata, default)
    gold = _gold_letter(label, metadata, letters, texts)
    if gold is None:
        return None
    return float(_chosen_letter(response, letters, texts) == gold)


@builtin("multiple_choice")
def multiple_choice(response: str, label: Any, metadata: Mapping[str, Any]) -> float | None:
    """1.0 when the option the response chose is the correct one, else 0.0.

    Contract: options come from ``metadata``: ``valid_letters``, else as many letters as
    ``choices`` (a list, or a mapping from letter to text), else A to J. The correct letter is
    ``metadata.correct_letter``, else the label: a letter (``C``, ``(C)``), a 0-based index
    (``2`` → C), or the text of one of the choices; any other label is an error naming it. The
    chosen letter is read after the last ``</think>``: the last ``\\boxed{}`` if there is one (a
    letter or a choice's text), else the *final* stated choice, in either case (``Answer: c``,
    ``the answer is (C)``, ``I'd go with option (D)``, ``so I pick C``, ``which leaves C``,
    ``C is correct``, a line holding only ``(C)``, a last line starting with ``(C)``), else a last
    line equal to one choice's text. A lower-case letter counts only where it ends its statement,
    so the article in "the answer is a bit subtle" is never option A. An empty or unmarked
    response, or one cut off inside its last box, scores 0.0.
    ``None`` when there is neither a label nor ``correct_letter``.
    """
    return _grade(response, label, metadata, _DEFAULT_LETTERS)


@builtin("gpqa")
def gpqa(response: str, label: Any, metadata: Mapping[str, Any]) -> float | None:
    """``multiple_choice`` with GPQA's four options (A to D) when the metadata names none.

    Contract: exactly that of ``multiple_choice`` (letters from ``metadata.valid_letters`` or
    ``choices``; the label a letter, an index or a choice's text; the chosen letter from the last
    box, the last stated answer, or a last line equal to a choice's text), except that the
    default letters are A to D. 1.0 or 0.0; ``None`` without a label or ``correct_letter``.
    """
    return _grade(response, label, metadata, "ABCD")
