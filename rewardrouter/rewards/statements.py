"""The final answer a response states in words: "The final answer is $X$", "Answer: X".

Used where a response may answer without a box (``math`` with ``extract: any``) and for labels
that are whole solutions. :func:`stated_answer` finds the last such statement
(:func:`last_statement`) and returns the answer it states (:func:`answer_stated`): the math it
holds (``$...$``, ``\\(...\\)``, ``\\[...\\]``, ``**...**``), or else the words up to the end of
the sentence.
"""

from __future__ import annotations

import re

from rewardrouter.rewards.leads import LIST_WORDS_LATIN, LIST_WORDS_OTHER

# The answer's name and what states it in the languages of MGSM and MMLU-ProX: "La réponse
# est", "Die Antwort lautet", "Ответ —", "Jibu ni", "答案是", "答えは", "উত্তর হল", ...
_NAMED = (
    r"r[ée]ponse(?:\s+finale)?|respuesta(?:\s+final)?|antwort|risposta|resposta|jawaban(?:nya)?"
    r"|ответ|відповідь|odgovor|odpověď|válasz|antwoord|jibu|impendulo|đáp\s+án|trả\s+lời"
    r"|คำตอบ|الإجابة|الجواب|उत्तर|উত্তর|సమాధానం"
)
_STATES = (
    r"est|es|ist|lautet|è|é|adalah|ialah|je|ni|ithi|là|is|คือ|هي|है|আহে|हो|হল|হলো"
    r"|[:=\u2014]|-(?=\s)"
)
#: Where a statement of the final answer starts: "The final answer is", "Answer:", "La réponse
#: est", "Antwort:", "答案是", "答えは".
STATEMENT = re.compile(
    r"(?i:\b(?:final\s+answer|answer)(?:\s*(?:is|was|will\s+be|would\s+be)\s*:?|\s*[:=])"
    r"|\bfinal\s+answer\b[*:\s]*\n"
    rf"|(?<!\w)(?:{_NAMED})\s*(?:{_STATES})(?!\w)\s*:?"
    r"|(?<!\w)(?:సమాధానం|उत्तर|válasz|جواب)(?=[ \t]*-?\d)"
    r"|答案\s*(?:是|为|為|:|\uff1a)|答え\s*(?:は|:|\uff1a)|정답\s*(?:은|:))[ \t]*"
)
_MATH = re.compile(
    r"\$\$(?P<a>.+?)\$\$|\$(?P<b>[^$]+?)\$|\\\((?P<c>.+?)\\\)|\\\[(?P<d>.+?)\\\]|\*\*(?P<e>[^*]+?)\*\*",
    re.DOTALL,
)
# words up to the end of the sentence: a period followed by a space or the end, a new line, a
# full stop of CJK or Devanagari, or a clause that gives a reason ("42, car 6 fois 7 font 42"); a dollar
# sign only as a currency's (followed by a space or the end), never math
_WORDS = re.compile(
    r"(?P<w>(?:[^\n$]|\$(?=\s|$))+?)(?=\.\s|\.?$|\n|[\u3002\u0964\uff01]"
    r"|,\s+(?i:which|so|and\s+I|because|since|car|parce|porque|weil|denn|perch[ée])\b)",
    re.MULTILINE,
)
# What makes a stated answer math rather than words: an operator, an equation, a command
_MATH_SIGN = re.compile(r"[=+*/\\^{}\u00d7\u00f7<>]|\d\s*-\s*\d")
_WORD = re.compile(r"[^\W\d_]{2,}")
# Two numbers offered side by side: joined by a separator or an "or" / "and" of any language
_SEVERAL = re.compile(
    r"\d\s*(?:[,;/|\u3001]\s*|(?:"
    + "|".join(sorted(LIST_WORDS_LATIN + LIST_WORDS_OTHER, key=len, reverse=True))
    + r")(?![^\W\d_])\s*)-?\d",
    re.IGNORECASE,
)
# A number in words (the first one of a stated answer is its value: "Réponse: Janeth aura
# encore 220 $ à payer d'ici 12 mois" states 220), also glued to text without spaces (共有99颗)
_NUMBER = re.compile(r"(?<![A-Za-z0-9_.,])-?\d+(?:[.,]\d+)*(?![\d])")
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


def first_number(words: str) -> str | None:
    """The value a stated answer in words gives: its first number, when they are words (a
    sentence, not a number alone) and hold no math (an operator, an equation, braces, a command:
    then None, and the math is read instead); "" when it offers numbers as alternatives or a
    list (``41 ou 42``, ``41或42``, ``41, 42``): a hedge, which states no value.

    >>> first_number("Janeth aura encore 220 $ à payer d'ici 12 mois")
    '220'
    >>> first_number("12 apples"), first_number("35 + 70 = 105"), first_number("14 {,}916")
    ('12', None, None)
    >>> first_number("41 ou 42"), first_number("41或42")
    ('', '')
    """
    if _SEVERAL.search(words) is not None:
        return ""  # "41 ou 42", "41或42": a hedge states no value
    if _MATH_SIGN.search(words) is not None or _WORD.search(words) is None:
        return None  # math, or a number alone: read as they are
    found = _NUMBER.search(words)
    return found.group() if found else None
