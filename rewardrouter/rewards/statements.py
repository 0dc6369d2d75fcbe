"""The final answer a response states in words: "The final answer is $X$", "Answer: X".

Used where a response may answer without a box (``math`` with ``extract: any``) and for labels
that are whole solutions. :func:`stated_answer` finds the last such statement
(:func:`last_statement`) and returns the answer it states (:func:`answer_stated`): the math it
holds (``$...$``, ``\\(...\\)``, ``\\[...\\]``, ``**...**``), or else the words up to the end of
the sentence.
"""

from __future__ import annotations

import re

#: Where a statement of the final answer starts: "The final answer is", "Answer:".
STATEMENT = re.compile(
    r"(?i:\b(?:final\s+answer|answer)(?:\s*(?:is|was|will\s+be|would\s+be)\s*:?|\s*[:=])"
    r"|\bfinal\s+answer\b[*:\s]*\n)[ \t]*"
)
_MATH = re.compile(
    r"\$\$(?P<a>.+?)\$\$|\$(?P<b>[^$]+?)\$|\\\((?P<c>.+?)\\\)|\\\[(?P<d>.+?)\\\]|\*\*(?P<e>[^*]+?)\*\*",
    re.DOTALL,
)
# words up to the end of the sentence: a period followed by a space or the end, or a new line
_WORDS = re.compile(r"(?P<w>[^\n$]+?)(?=\.\s|\.?$|\n|,\s+(?i:which|so|and\s+I)\b)", re.MULTILINE)
_MAX_ANSWER = 200


def last_statement(text: str) -> re.Match[str] | None:
    """The last statement of a final answer in ``text`` (a match of :data:`STATEMENT`); None
    when there is none.

    >>> last_statement("Answer: 5. The final answer is").group(0)
    'final answer is'
    """
    last = None
    for match in STATEMENT.finditer(text):
        last = match
    return last


def answer_stated(text: str, statement: re.Match[str]) -> str | None:
    """The answer that ``statement``, a match of :data:`STATEMENT` in ``text``, states; None
    when no answer can be made out after it (nothing, or words past :data:`_MAX_ANSWER`)."""
    rest = text[statement.end() : statement.end() + 2 * _MAX_ANSWER]
    math = _MATH.match(rest)
    if math is not None:
        answer = next(g for g in math.groups() if g is not None)
    else:
        words = _WORDS.match(rest)
        if words is None:
            return None
        answer = words.group("w")
    answer = answer.strip()
    if not answer or len(answer) > _MAX_ANSWER:
        return None
    return answer


def stated_answer(text: str) -> tuple[str, int] | None:
    """The answer stated last and where its statement starts; None when there is none.

    >>> stated_answer("So 2+2=4. The final answer is $4$. I hope it is correct.")
    ('4', 14)
    >>> stated_answer("Answer: 12 apples.")
    ('12 apples', 0)
    """
    statement = last_statement(text)
    if statement is None:
        return None
    answer = answer_stated(text, statement)
    return None if answer is None else (answer, statement.start())
