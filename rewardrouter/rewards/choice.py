"""``gpqa`` and ``multiple_choice``: which option letter did the response choose?"""

from __future__ import annotations

import re
import string
from collections.abc import Iterator, Mapping
from typing import Any

from rewardrouter.rewards.labels import after_thinking
from rewardrouter.rewards.registry import BoxedAnswer, builtin, last_boxed
from rewardrouter.rewards.squad import normalize_answer

# A letter as an answer: C, (c), [C], **C**, $C$, \text{C}, \textbf{(C)}. A bare lower-case letter
# counts only where it ends the statement ("answer: c", "I choose b."): "the answer is a bit
# subtle" and "I'd pick a different unit" hold articles, not options.
#
# Each run of whitespace has one quantifier that may take it (the whitespace before a letter is
# its pattern's, not the letter's): two quantifiers side by side would try every split of a long
# run of spaces before failing, and the time would grow with its square or cube.
_MARK = r"(?:\*\*|\$|\\text(?:bf)?\{|\\mathrm\{)"
_BARE_LETTER = (
    r"(?:\(\s*(?P<paren>[A-Za-z])\s*\)|\[\s*(?P<bracket>[A-Za-z])\s*\]|(?P<bare>[A-Za-z]))"
    r"(?![A-Za-z0-9'\u2019])"
)
_LETTER = rf"(?:{_MARK}\s*)?{_BARE_LETTER}"
# What leads into the chosen letter: "the answer is", "Answer:", "final choice:", "the correct
# option is", "I'd go with", "I pick / choose / select", "which leaves", "opt for".
_LEAD = (
    r"(?i:\b(?:final\s+)?(?:answer|choice|selection)\s*(?:is|:|=|would\s+be|should\s+be"
    r"|must\s+be|will\s+be)"
    r"|\b(?:correct|right|best)\s+(?:answer|option|choice|letter)\s+(?:is|would\s+be|should\s+be)"
    r"|\b(?:go(?:ing)?\s+with|pick(?:ing|ed)?|choos(?:e|ing)|chose|select(?:ing|ed)?"
    r"|opt(?:ing)?\s+for|leaves?(?:\s+(?:us|me)\s+with)?|leaving(?:\s+(?:us|me)\s+with)?))"
)
_FILLER = r"\s*(?i:(?:the\s+)?(?:(?:option|choice|letter|answer)\b\s*)?)(?:[:\-]\s*)?"
_STATED = re.compile(_LEAD + _FILLER + _LETTER)
# "(C) is correct", "C is the right answer": the letter, then the verdict
_VERDICT_WORDS = frozenset({"correct", "right", "best"})
_BEFORE_VERDICT = re.compile(_LETTER + r"(?:\s*[.)])?\s+(?i:is)\s+(?i:the\s+)?$")
# a line holding nothing but the option: "C", "(C).", "**C**" (without a mark, the letter may
# follow other whitespace than spaces and tabs)
_LONE = re.compile(
    rf"[ \t>*#-]*(?:{_MARK}\s*|[^\S \t]\s*)?{_BARE_LETTER}"
    r"[ \t]*(?:[.):][ \t]*)?(?:(?:\*\*|\$|\})[ \t]*)?"
)
# an answer that is nothing but the option: a label, a box's content
_ONLY_LETTER = re.compile(r"\s*" + _LETTER + r"\s*(?:[.)]\s*)?(?:(?:\}|\*\*|\$)\s*)?")
_LONE_LINE_CHARS = 24
# No statement is longer than this; the search starts with the end of a response, in tails of
# these lengths, and reads more only while a statement could end later than what it found.
_STATEMENT_CHARS = 160
_TAILS = (240, 600)
# Where a statement may start: the lead words, found before any statement regex runs (a
# statement regex tried at every position of a long response is what makes choice extraction
# slow). None of them occurs inside another one but at its start, so one pass of `_WORDS` over
# the lower-cased text finds every place where one of them starts.
_LEAD_WORDS = (
    "answer", "choice", "selection", "correct", "right", "best", "go with", "going with",
    "pick", "choos", "chose", "select", "opt for", "opting for", "leav",
)  # fmt: skip
_WORDS = re.compile(
    "|".join(
        re.escape(w) for w in sorted({*_LEAD_WORDS, *_VERDICT_WORDS}, key=lambda w: (-len(w), w))
    )
)
# The last line may restate the option with its text: "(B) Nitrogen", "**B.** 42 m/s".
_OPTION_LINE = re.compile(r"^[ \t>*#-]*(?:\*\*)?[(\[]?(?P<bare>[A-Z])(?:[)\].:]|\*\*)")
_ANSWER_PREFIX = re.compile(r"^.*?\b(?i:answer)\b[^:\n]{0,20}?(?:\b(?i:is)\b|:)\s*")
_DEFAULT_LETTERS = string.ascii_uppercase[:10]
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


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
        return "".join(str(x).strip().upper() for x in letters), texts
    return (string.ascii_uppercase[: len(texts)] if texts else default), texts


def _letter_of_text(text: str, letters: str, texts: list[str]) -> str | None:
    wanted = normalize_answer(text)
    hits = [
        letters[i] for i, t in enumerate(texts[: len(letters)]) if normalize_answer(t) == wanted
    ]
    return hits[0] if len(hits) == 1 and wanted else None


def _gold_letter(
    label: Any, metadata: Mapping[str, Any], letters: str, texts: list[str]
) -> str | None:
    correct = metadata.get("correct_letter")
    if isinstance(correct, str) and correct.strip():
        return correct.strip().upper()
    if label is None or isinstance(label, bool) or (isinstance(label, str) and not label.strip()):
        return None
    if isinstance(label, int):
        if 0 <= label < len(letters):
            return letters[label]
        raise ValueError(f"label index {label} is outside the {len(letters)} options {letters}")
    text = str(label).strip()
    letter = _spoken_letter(text, letters, anchored=True)
    if letter is None:
        letter = _letter_of_text(text, letters, texts)
    if letter is None:
        raise ValueError(
            f"label {text[:60]!r} is neither an option letter ({letters}), an index, nor the text "
            f"of one of metadata.choices"
        )
    return letter


def _letter_of(match: re.Match[str], text: str) -> str | None:
    """The letter a match holds, upper-cased; None for a bare lower-case letter that does not
    end its statement (an article, not an option)."""
    letter = match.group("paren") or match.group("bracket")
    if letter:
        return letter.upper()
    letter = match.group("bare")
    if letter.isupper():
        return letter
    after = text[match.end() : match.end() + 2]
    if not after or after[0] in ".,;:!?)]}*$\n" or (after[0] == " " and not after[1:].isalnum()):
        return letter.upper()
    return None


def _ascii_lower(text: str) -> str:
    """``text`` with A to Z lower-cased, every character where it was (``str.lower`` makes
    two characters of some, "İ" for one, and the positions of what follows would move)."""
    return text.lower() if text.isascii() else text.translate(_ASCII_LOWER)


def _stated_letters(text: str, start: int) -> Iterator[tuple[int, re.Match[str]]]:
    """Every choice statement of ``text`` that starts at or after ``start``: where it ends, and
    its match."""
    for word in _WORDS.finditer(_ascii_lower(text), start):
        at = word.start()
        match = _STATED.match(text, at)
        if match is not None:
            yield match.end(), match
        if word.group() in _VERDICT_WORDS:
            match = _BEFORE_VERDICT.search(text, max(start, at - 32), at)
            if match is not None:
                yield word.end(), match
    offset = text.rfind("\n", 0, start) + 1 if start else 0
    for line in text[offset:].splitlines(keepends=True):
        if len(line.strip()) <= _LONE_LINE_CHARS:
            match = _LONE.fullmatch(text, offset, offset + len(line.rstrip("\r\n")))
            if match is not None:
                yield match.end(), match
        offset += len(line)


def _last_stated(text: str, letters: str, start: int) -> tuple[int, str] | None:
    best: tuple[int, str] | None = None
    for end, match in _stated_letters(text, start):
        letter = _letter_of(match, text)
        if letter is not None and letter in letters and (best is None or end > best[0]):
            best = (end, letter)
    return best


def _spoken_letter(text: str, letters: str, *, anchored: bool = False) -> str | None:
    """The option letter ``text`` states last (or, ``anchored``, that ``text`` consists of)."""
    if anchored:
        match = _ONLY_LETTER.fullmatch(text)
        letter = _letter_of(match, text) if match else None
        return letter if letter is not None and letter in letters else None
    # a statement found in a tail, ending past where any earlier one could end, is the last
    for chars in (*_TAILS, len(text)):
        tail = max(0, len(text) - chars)
        best = _last_stated(text, letters, tail)
        if not tail or (best is not None and best[0] > tail + _STATEMENT_CHARS):
            break
    lines = text.rstrip().rsplit("\n", 1)
    last = _OPTION_LINE.match(lines[-1])
    if last is not None and last.group("bare") in letters:
        end = len(text.rstrip()) - len(lines[-1]) + last.end()
        if best is None or end > best[0]:
            best = (end, last.group("bare"))
    return best[1] if best else None


def _chosen_letter(response: str, letters: str, texts: list[str]) -> str | None:
    if isinstance(response, BoxedAnswer):
        answer = str(response)
        return _spoken_letter(answer, letters, anchored=True) or _letter_of_text(
            answer, letters, texts
        )
    text = after_thinking(response)
    boxed = last_boxed(text)
    if boxed is not None:
        return _spoken_letter(boxed, letters, anchored=True) or _letter_of_text(
            boxed, letters, texts
        )
    if "\\boxed" in text or "\\fbox" in text:
        return None  # the last box was cut off mid-answer: no earlier answer stands in
    letter = _spoken_letter(text, letters)
    if letter is None and texts:
        lines = [line for line in text.splitlines() if line.strip()]
        last = _ANSWER_PREFIX.sub("", lines[-1]) if lines else ""
        letter = _letter_of_text(last, letters, texts)
    return letter


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
