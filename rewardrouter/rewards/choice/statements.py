"""Which option a response states as its answer, read from its prose as a careful person would.

A *statement* is a place where the response commits to one option:

- a lead and the letter: ``the answer is (C)``, ``Answer - C``, ``I'd go with option D``,
  ``答案是C``, ``正解はC``, ``정답: C``, ``La respuesta es C``, ``الإجابة هي (C)``, ``उत्तर है (C)``,
  ``Jibu ni C``, ``الإجابة: ج`` (the ``lead`` rows of
  :data:`~rewardrouter.rewards.leads.LEADS`, in 29 languages);
- a hedged lead whose letter ends its clause: ``I think B,``, ``which leaves C.``, and at a
  sentence's start ``So C.``, ``It's (C).``, ``Option C.``;
- a correction whose letter ends its clause: ``actually D``, ``no wait, B.``, ``其实是D``;
- the letter, then its verdict: ``(C) is correct``, ``A was right``, ``C正确``, ``Cが正解``;
- a line holding nothing but the option (``(C)``, ``**C**``), or a first or last line, or one
  after a colon, that starts with it (``D. it can't be A or B``, ``(B) Nitrogen``);
- a lead and an option's *text* (``the answer is nitrogen``), when the options' texts are known.

The last statement is the answer. What is not a statement: a negated one (``not C``,
``I wouldn't pick A``, ``答案不是C``, ``Cではない``), a letter in a list (``A, B or C``,
``(A) (B) (C) (D)``), a hedged one asked as a question (``So C?``), a line of a list of options
(lines that start with different letters name none of them), a run of statements with
nothing but punctuation between them that names different letters (``Answer: A. Answer: B.``),
a range (``A-D``, ``A through D``), a letter offered after the answer in parentheses
(``C (or possibly A)``), and the pronoun ``I`` (``Answer: I don't know``).

Every pass is linear in the text or bounded: one regex pass finds the letters a statement may
read (from the text's end first, in tails); a second finds the lead words only where they could
state one of those letters (:data:`STATEMENT_CHARS` before it, or a verdict's few characters
after); at each, a small regex of that word's leads runs over at most :data:`STATEMENT_CHARS`
characters; the checks before and after a letter read a fixed window. A response is read up to
:data:`MAX_CHARS` from its end.

>>> final_choice("I think B, but actually D.", "ABCD", ())
'D'
>>> final_choice("Answer: A, B, C or D", "ABCD", ()) is None
True
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from functools import cache, lru_cache
from typing import Literal, NamedTuple

from rewardrouter.rewards.leads import (
    APOSTROPHE,
    FILLER,
    LATIN_MARKED,
    LEADS,
    LIST_WORDS_LATIN,
    LIST_WORDS_OTHER,
    NATIVE_ALONE,
    NATIVE_LETTER,
    NATIVE_LETTERS,
    NEGATIONS,
    NEGATIONS_AFTER,
    NEGATIONS_JOINED,
    YORUBA_ANSWER,
    YORUBA_PLAIN,
    YORUBA_WORD,
    Lead,
)

Kind = Literal["lead", "hedged", "fix", "verdict", "lone", "line", "text"]


class Statement(NamedTuple):
    """One place where the text commits to an option: where it starts and ends, the letter."""

    start: int
    end: int
    letter: str
    kind: Kind


#: The longest statement: the search reads more of a long text only while a statement could
#: end later than what it found.
STATEMENT_CHARS = 160
#: What is read of a response, from its end: a choice stated only before the last 32,000
#: characters (about 8,000 tokens) is not read, and no response costs more than this does.
MAX_CHARS = 32_000
_TAILS = (240, 2_000, 10_000)
#: Lines no longer than this (stripped) may hold an option on its own: ``(C).``, ``**C**``.
LONE_LINE_CHARS = 24
#: Leads without a letter after them whose clause is read for an option's text (the last ones).
TEXT_LEADS = 4
#: Lead words read per response, from its end: prose holds about one per 100 characters, so
#: only text written to be nothing but lead words ("so so so ...") reaches this.
MAX_LEADS = 4_000
#: Statements side by side that are compared for a hedge ("Answer: A. Answer: B."): the last.
RUN_STATEMENTS = 8

# Full-width forms (U+FF01..U+FF5E) as their ASCII twins, and zero-width characters as spaces,
# one character for one so that every position stays where it was: a full-width colon,
# parentheses and C read as ``:(C)``; "Answer:\u200b\u200bC" as "Answer:  C".
_ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff"
_FOLD = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)} | dict.fromkeys(
    map(ord, _ZERO_WIDTH), " "
)
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_FOLDED = re.compile(f"[\uff01-\uff5e{_ZERO_WIDTH}]")


def fold(text: str) -> str:
    """``text`` with full-width letters and punctuation as ASCII and zero-width characters as
    spaces, every position kept.

    >>> fold("答案\uff1a\uff08\uff23\uff09")
    '答案:(C)'
    """
    if text.isascii() or _FOLDED.search(text) is None:
        return text
    return text.translate(_FOLD)


def _lower(text: str) -> str:
    """``text`` lower-cased, every character where it was (``str.lower`` makes two characters
    of a few, "İ" for one; then only A to Z are lower-cased)."""
    lowered = text.lower()
    return lowered if len(lowered) == len(text) else text.translate(_ASCII_LOWER)


# -- the letter --------------------------------------------------------------------------------
#
# No regex here may have two quantifiers side by side that can take the same characters (Python
# 3.10 has no possessive quantifiers): each token takes the spaces after it, none starts with
# one, so that the engine never tries every split of a run of spaces or marks.

# Marks a letter may be wrapped in, up to three deep: **C**, $C$, \text{(C)}, $\textbf{C}$, \(C\)
_OPEN = r"(?:\*|\$|`|\\\(|\\text(?:bf|it|rm|tt)?\{|\\math(?:rm|bf|it|tt)\{|\\bf\s)"
#: A letter that stands alone: (C), [C], C, in its marks; not a word's letter nor a command's;
#: or one of :data:`~rewardrouter.rewards.leads.NATIVE_LETTERS` (``ب``, ``(ب)``).
LETTER = (
    rf"(?:{_OPEN}\s*){{0,3}}"
    rf"(?<![A-Za-z0-9_\\{LATIN_MARKED}])"
    r"(?:\(\s*(?P<paren>[A-Za-z])\s*\)|\[\s*(?P<bracket>[A-Za-z])\s*\]|(?P<bare>[A-Za-z])"
    rf"|\(\s*(?P<native_paren>[{''.join(NATIVE_LETTERS)}])\s*\)|(?P<native>{NATIVE_LETTER}))"
    rf"(?![A-Za-z0-9'\u2019{LATIN_MARKED}])"
)


def letter_of(match: re.Match[str]) -> str:
    """The letter a match of :data:`LETTER` (or of ``_OPTION_LINE``, whose groups are its Latin
    ones) names, as written (a native letter as the Latin capital it stands for). The letter's group is the match's last: a regex that ends with
    :data:`LETTER` has no named group after it."""
    group = match.lastgroup
    if group is None:
        return ""
    letter = match.group(group)
    return NATIVE_LETTERS[letter] if group.startswith("native") else letter


def enclosed(match: re.Match[str]) -> bool:
    """Whether the letter of a match of :data:`LETTER` is written in parentheses or brackets, or
    in a script without case: never an article or a word."""
    return match.lastgroup != "bare"


# What may close around a letter on its line: ** $ } \) `
_CLOSE = r"(?:[^\S\n]*(?:\*|\$|\}|\\\)|\\\]|`))*"

# -- the leads ---------------------------------------------------------------------------------

_OPTION_WORDS = frozenset({"option", "choice", "letter"})
_KIND_ORDER = {"fix": 0, "hedged": 1, "opening": 2, "so": 3, "lead": 4}


def _leads_by_word() -> dict[str, tuple[Lead, ...]]:
    """Per lead word, the leads that start with it, corrections first."""
    by_word: dict[str, list[Lead]] = {}
    for lead in LEADS:
        for word in lead.words:
            by_word.setdefault(word, []).append(lead)
    return {
        word: tuple(sorted(leads, key=lambda lead: _KIND_ORDER[lead.kind]))
        for word, leads in by_word.items()
    }


_LEADS_BY_WORD = _leads_by_word()
# Words of leads that an option's text may follow ("the answer is nitrogen").
_TEXT_LEAD_WORDS = frozenset(w for lead in LEADS if lead.kind == "lead" for w in lead.words)


# The regexes of the leads are compiled per word on first use: all of them at once cost an
# import 0.1 to 0.5 s of CPU, and a response meets a few of the words.
@cache
def _lead_patterns(word: str) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """The regexes of the leads of ``word``, corrections first (none for a trigger word that
    starts no lead: a verdict's own words)."""
    return tuple(
        (lead.kind, re.compile(rf"(?i:{lead.pattern}){FILLER}{LETTER}"))
        for lead in _LEADS_BY_WORD.get(word, ())
    )


@cache
def _text_lead_pattern(word: str) -> re.Pattern[str]:
    """The leads of ``word`` (one of :data:`_TEXT_LEAD_WORDS`) without a letter after them."""
    leads = (lead.pattern for lead in _LEADS_BY_WORD[word] if lead.kind == "lead")
    return re.compile("(?i:" + "|".join(leads) + ")" + FILLER)


# The letter, then its verdict: "(C) is correct", "A was right", "C ist richtig", ...
_VERDICT_WORDS = (
    "correct", "right", "best", "answer", "richtig", "korrekt", "juste", "bonne", "corrett",
    "corret",
)  # fmt: skip
_BEFORE_VERDICT = re.compile(
    LETTER + r"(?:\s*[.):])?\s+(?i:is|was|seems|must\s+be|should\s+be|would\s+be"
    r"|appears\s+to\s+be|looks|ist|est|es|è|é)\s+(?i:(?:the|la|a|die|der|le)\s+)?"
    r"(?i:(?:most|only|definitely|clearly)\s+)?$"
)
_VERDICT_LEAD_WORDS = frozenset(
    {"is", "was", "be", "seems", "looks", "ist", "est", "es", "è", "é", "the", "la", "a", "die",
     "der", "le", "most", "only", "definitely", "clearly"}
)  # fmt: skip
# ... and without a verb where none is needed: "C正确", "C选项是正确的", "Cが正解", "C가 정답"
_CJK_VERDICT_WORDS = ("正确", "正確", "对", "對", "正解", "정답", "맞")
_CJK_PARTICLES = " 选選項项はが이가은는就才是为為"
_BEFORE_CJK_VERDICT = re.compile(
    LETTER + r"(?:\s*(?:选项|選項|项|項|は|が|이|가|은|는))?(?:\s*(?:就|才))?"
    r"(?:\s*(?:是|为|為))?\s*$"
)
_VERDICT_TRIGGERS = frozenset((*_VERDICT_WORDS, *_CJK_VERDICT_WORDS))
#: The words a statement's search starts at (Yoruba's answer, whose accents vary, is found by
#: :data:`~rewardrouter.rewards.leads.YORUBA_ANSWER` instead).
TRIGGERS: tuple[str, ...] = tuple(sorted({*_LEADS_BY_WORD, *_VERDICT_TRIGGERS} - {YORUBA_WORD}))


def _trie(words: Sequence[str]) -> str:
    """A regex matching the longest of ``words`` at a position, built as a trie: the engine
    tries the few first characters at each position, not every word."""
    groups: dict[str, list[str]] = {}
    for word in words:
        if word:
            groups.setdefault(word[0], []).append(word[1:])
    if not groups:
        return ""
    branches = [re.escape(first) + _trie(rest) for first, rest in sorted(groups.items())]
    body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    return f"(?:{body})?" if "" in words else body


# Matches do not overlap, so a lead word that starts inside another one is not seen; none does
# but at a word's start (a test checks it), where the other one's match starts anyway.
_TRIGGER = re.compile(_trie(TRIGGERS) + f"|(?P<yoruba>{YORUBA_ANSWER})")
# In ASCII text, only ASCII words, at a word's start: cheaper than checking every match after.
# (Yoruba's answer without its accents among them: "idahun")
_ASCII_TRIGGERS = (
    _trie([w for w in TRIGGERS if w.isascii()]) + f"|(?P<yoruba>{_trie(YORUBA_PLAIN)})"
)
_TRIGGER_AT_WORD = re.compile(f"(?<![a-z0-9_])(?:{_ASCII_TRIGGERS})")
# ... found by the character before the word, which the engine skips to (a third faster)
_TRIGGER_AFTER = re.compile(f"[^a-z0-9_](?P<word>{_ASCII_TRIGGERS})")
#: The longest text a trigger matches: a scan that stops at a window's end reads this further.
_LONGEST_TRIGGER = 24
_WORD_CHAR = re.compile(r"\w")

# -- around the letter -------------------------------------------------------------------------

# Words that take back what follows them: "not C", "I wouldn't pick A", "rather than B",
# "eliminate A", "不是C" (the last word before the statement, or one before an adverb)
_NEGATION_PAIRS = frozenset(
    {("rather", "than"), ("instead", "of"), ("other", "than"), ("except", "for"),
     ("rule", "out"), ("rules", "out"), ("ruled", "out"), ("ruling", "out")}
)  # fmt: skip
_PAIRED = frozenset(second for _, second in _NEGATION_PAIRS)
_NEGATION_STEMS = ("eliminat", "exclud", "discard")
# Words that may stand between a negation and what it takes back: "not really", "wouldn't ever"
_ADVERBS = frozenset(
    {"really", "even", "ever", "actually", "necessarily", "quite", "definitely", "simply",
     "just", "be", "going", "gonna", "want", "to", "i", "we", "would"}
)  # fmt: skip
_WORD_EDGES = "\"'()*_`"


def _negation(word: str) -> bool:
    return (
        word in NEGATIONS or word.endswith(("n't", "n\u2019t")) or word.startswith(_NEGATION_STEMS)
    )


def _denied_before(text: str, at: int) -> bool:
    """Whether the words right before ``at`` take back what starts there."""
    window = text[max(0, at - 40) : at].rstrip()
    if window.endswith(NEGATIONS_JOINED):
        return True
    last = _lower(window[window.rfind(" ") + 1 :].split()[-1].strip(_WORD_EDGES)) if window else ""
    if not (last in _ADVERBS or last in _PAIRED or _negation(last)):
        return False  # the last word neither takes back nor lets an earlier one: the usual case
    words = window.split()
    for i in range(len(words) - 1, max(-1, len(words) - 5), -1):
        word = _lower(words[i].strip(_WORD_EDGES))
        if _negation(word) or (
            word in _PAIRED
            and i > max(0, len(words) - 4)
            and (_lower(words[i - 1].strip(_WORD_EDGES)), word) in _NEGATION_PAIRS
        ):
            return True
        if word not in _ADVERBS:
            return False
    return False


# What _CLOSE and the spaces after it may take (and a few characters more)
_CLOSING = " \t\r\n\f\v*$}`\\)]"
# What after a letter takes it back: "C is wrong", "C不对", "Cではない", "C가 아니다"
_DENIED_AFTER = re.compile(
    _CLOSE + r"\s*(?:(?i:(?:is|was|seems|would\s+be|ist|est|es|è|é)\s+(?:(?:definitely|clearly"
    r"|also|obviously)\s+)?(?:wrong|incorrect\w*|false|not|out|eliminated|impossible|excluded"
    r"|ruled\s+out|falsch|faux|fausse|nicht|pas|no|errónea|erronea|sbagliat\w*|errad\w*)\b"
    rf"|isn{APOSTROPHE}t|wasn{APOSTROPHE}t|can{APOSTROPHE}t|cannot|doesn{APOSTROPHE}t"
    rf"|won{APOSTROPHE}t)"
    r"|(?:(?:都|也|均)\s*)?(?:不(?!是\s*\(?[A-Za-z])|错|錯|非(?!\s*[A-Za-z]))"
    r"|(?:では|じゃ)な|(?:(?:가|이|는|은)\s*)?아(?:니|닙|님)"
    "|" + _trie(NEGATIONS_AFTER) + ")"
)
# What after a letter makes it one of several: "A, B or C", "(A) (B)", "A and C", "A、B", and
# ranges: "A-D", "A to D", "A through D", "A|C"
_LIST_NEXT = re.compile(
    _CLOSE
    + "[^\\S\\n]*(?:(?:[,/&+;|~?\u3001\uff0c\u060c\u061b\u061f\u2013\u2014-]|"
    + _trie(LIST_WORDS_OTHER)
    + "|(?i:"
    + _trie(LIST_WORDS_LATIN)
    + r")\b)[^\S\n]*)?"
    r"(?:(?i:option|choice)\s+|选项|選項|项|項)?(?:(?:\*|\$|\\text\{|\()[^\S\n]*)?"
    rf"(?:(?P<next>[A-Z])(?![A-Za-z0-9'])|(?P<native>{NATIVE_LETTER}))"
    r"(?P<word>[^\S\n]+[a-z])?"
)
# The end of a clause after a hedged letter: a stop, a comma, a line break, "because ..."
_CLAUSE_END = re.compile(
    _CLOSE
    + "(?:\\s*(?:\\n|$)|[.,;!:)\\]\u3002\uff0c\uff1b\uff01\u3001\u060c\u061b\u06d4\u0964\u0965]"
    r"|\s+(?i:because|since|as\b|given|due|which|this|that's|-\s)|\s+\u2014|\s+\u2013)"
)
# ... and of a sentence, after "Option C" standing alone ("Option C, helium, is a noble gas"
# talks about C)
_SENTENCE_END = re.compile(_CLOSE + "(?:\\s*(?:\\n|$)|[.!)\u3002\uff01\u06d4\u0964](?!\\d))")
_QUESTION = re.compile(_CLOSE + "\\s*[?\u061f]")
# Another letter offered in parentheses after the answer: "C (or possibly A)", "B (maybe D)"
_ALTERNATIVE_NEXT = re.compile(
    _CLOSE + r"[^\S\n]*[(\[][^\S\n]*(?i:or|maybe|possibly|perhaps|alternatively|otherwise)\b"
    r"[^()\[\]\n]{0,24}?(?<![A-Za-z])(?P<next>[A-Z])(?![A-Za-z])"
)
# "I" as the pronoun, not option I: "I don't know", "I'm not sure", "I think"
_PRONOUN_I = re.compile(
    rf"{APOSTROPHE}(?:m|d|ll|ve)\b|[^\S\n]+(?i:am|do|don{APOSTROPHE}?t|did|can|cannot|could"
    r"|would|will|think|believe|guess|have|had|was|really|just|feel|suppose|hope|need|want|know"
    r"|agree|not)\b"
)
_WINDOW = 48
_SENTENCE_MARKS = " \t*_#>-\u00a0"
_SENTENCE_STOPS = "\n.!?;:\u3002\uff01\uff1f\uff1b\uff1a\u061f\u061b\u06d4\u0964"
_COMMAS = ",\uff0c\u060c"


def _sentence_starts(text: str, at: int, *, comma: bool) -> bool:
    """Whether ``at`` starts a sentence (or, with ``comma``, a clause after a comma)."""
    i = at
    while i > 0 and at - i < 16 and text[i - 1] in _SENTENCE_MARKS:
        i -= 1
    if i == 0:
        return True
    return text[i - 1] in _SENTENCE_STOPS or (comma and text[i - 1] in _COMMAS)


def _option_characters(letters: str) -> tuple[str, str]:
    """The capitals A to Z among ``letters`` (sorted, once each), and the native letters that
    stand for any of them."""
    capitals = "".join(sorted({x for x in letters if "A" <= x <= "Z"}))
    return capitals, "".join(k for k, v in NATIVE_LETTERS.items() if v in letters)


@lru_cache(maxsize=256)  # one per set of options, and few sets in a run
def _other_letter(letters: str) -> re.Pattern[str]:
    """Any capital or native letter of ``letters``: without one after a letter, it is neither
    one of a list nor offered an alternative (a cheap test before those regexes)."""
    capitals, native = _option_characters(letters)
    return re.compile(f"[{capitals}{native}]" if capitals or native else "(?!)")


def _standing(text: str, end: int, letter: str, letters: str, *, clause: bool) -> bool:
    """Whether the letter that ends at ``end`` stands as a choice: not denied after it, not one
    of a list, and (``clause``, or a lower-case letter) ending its clause."""
    stop = min(len(text), end + _WINDOW)
    after = text[end:stop].lstrip(_CLOSING)
    # every denial starts with a letter or a character beyond ASCII, after the closing marks
    if (
        after
        and (after[0].isalpha() or not after[0].isascii())
        and _DENIED_AFTER.match(text, end, stop) is not None
    ):
        return False
    if letter == "I" and text[end - 1 : end] == "I" and _PRONOUN_I.match(text, end, stop):
        return False  # "Answer: I don't know"
    if _other_letter(letters).search(text, end, stop) is not None:
        other = _ALTERNATIVE_NEXT.match(text, end, stop)
        if other is not None and other.group("next") in letters and other.group("next") != letter:
            return False
        listed = _LIST_NEXT.match(text, end, stop)
        # another option letter next: a list ("A I think": a pronoun, not a list)
        if listed is not None:
            following = listed.group("next") or NATIVE_LETTERS[listed.group("native")]
            if following in letters and not (following == "I" and listed.group("word")):
                return False
    if clause or letter.islower():
        return _CLAUSE_END.match(text, end, stop) is not None
    return True


# -- statements --------------------------------------------------------------------------------


def _led(text: str, at: int, word: str, letters: str) -> Statement | None:
    """The statement of a letter that starts with the lead ``word`` at ``at``, if any."""
    stop = min(len(text), at + STATEMENT_CHARS)
    for kind, pattern in _lead_patterns(word):
        if kind in ("opening", "so") and not _sentence_starts(text, at, comma=kind == "so"):
            continue
        match = pattern.match(text, at, stop)
        if match is None:
            continue
        letter = letter_of(match)
        if letter.upper() not in letters or _denied_before(text, at):
            return None
        if enclosed(match):
            letter = letter.upper()  # "(c)" is an option, never an article
        if not _standing(text, match.end(), letter, letters, clause=kind != "lead"):
            return None
        if (
            word in _OPTION_WORDS
            and kind == "opening"
            and _SENTENCE_END.match(text, match.end(), match.end() + _WINDOW) is None
        ):
            return None
        if kind != "lead" and _QUESTION.match(text, match.end(), match.end() + _WINDOW):
            return None  # "So C?" asks
        shown: Kind = "lead" if kind == "lead" else "fix" if kind == "fix" else "hedged"
        return Statement(at, match.end(), letter.upper(), shown)
    return None


def _verdict(text: str, at: int, word: str, letters: str) -> Statement | None:
    """The letter right before the verdict ``word`` at ``at``: "(C) is correct", "C正确"."""
    before = text[max(0, at - 16) : at]
    if word in _CJK_VERDICT_WORDS:
        pattern = _BEFORE_CJK_VERDICT
        if not before.rstrip(_CJK_PARTICLES).endswith((")", "]", *letters)):
            return None
    else:
        pattern = _BEFORE_VERDICT
        last = before.split()[-1:] if before[-1:].isspace() else []
        if not last or last[0].lower() not in _VERDICT_LEAD_WORDS:
            return None  # no "is", "the", ... right before the word: no verdict, cheaply
    found = pattern.search(text, max(0, at - _WINDOW), at)
    if found is None:
        return None
    letter = letter_of(found)
    boxed = enclosed(found)
    if letter.upper() not in letters or not (letter.isupper() or boxed):
        return None
    if _denied_before(text, found.start()) or not _opens_verdict(text, found.start()):
        return None
    return Statement(found.start(), at + len(word), letter.upper(), "verdict")


# Words after which a letter may start its verdict ("so (C) is correct", "option C is right");
# after another word it is that word's letter ("Vitamin C is correct", "Hepatitis B is best")
_BEFORE_VERDICT_LETTER = frozenset(
    {"option", "choice", "letter", "answer", "so", "thus", "therefore", "hence", "clearly",
     "obviously", "only", "that", "think", "believe", "actually", "and", "but", "then", "now",
     "here", "whereas", "while", "because", "since", "hmm", "well", "yes", "ok", "okay"}
)  # fmt: skip


def _opens_verdict(text: str, at: int) -> bool:
    """Whether the letter at ``at`` opens its clause, or follows a word that lets it."""
    if _sentence_starts(text, at, comma=True) or not text[max(0, at - 1) : at].isspace():
        return True  # a clause's start, or right after CJK text or a mark
    words = text[max(0, at - 24) : at].split()
    return bool(words) and words[-1].strip(_WORD_EDGES + ",").lower() in _BEFORE_VERDICT_LETTER


# An option on a line of its own, or at a line's start: "(C)", "**C.**", "C)", "D. it ...", "B。"
_LINE_START = r"[^\S\n]*(?:[>*#:\-]+[^\S\n]*)?\$?"
_MARKS = "[.):*$}\u3002]"
# After an option at a line's start: a mark, or text of a script other than Latin ("B。", "C正确")
_NOT_LATIN = f"|[^\\x00-\\x7f{LATIN_MARKED}]"
_OPTION_LINE = re.compile(
    _LINE_START + r"(?:\(\s*(?P<paren>[A-Za-z])\s*\)|\[\s*(?P<bracket>[A-Za-z])\s*\]"
    r"|(?P<bare>[A-Za-z])(?=" + _MARKS + _NOT_LATIN + r"|[^\S\n]*$))" + _MARKS + "*"
)
_OTHER_OPTION_ON_LINE = re.compile(r"(?:^|[\s(])\(?(?P<letter>[A-Z])[.)](?=\s|$)")
_DENIED_LINE = re.compile(
    r"(?i:\b(?:wrong|incorrect|false|eliminated|ruled\s+out|excluded|impossible)\b"
    "|\\b(?:is|are)\\s+not\\b|[\u2717\u274c\u00d7]|错误|錯誤|不对|不對|不正确|不正確|誤り|間違い|틀)"
)


def _option_lines(
    text: str, at_letters: Sequence[int], letters: str
) -> Iterator[tuple[re.Match[str], str, str]]:
    """Every line holding one of the letters at ``at_letters`` that starts with an option: its
    match, the letter (as written) and the rest of the line."""
    done = -1
    for position in at_letters:
        at = text.rfind("\n", 0, position) + 1
        if at == done:
            continue
        done = at
        end = text.find("\n", at)
        end = len(text) if end == -1 else end
        match = _OPTION_LINE.match(text, at, end)
        if match is not None and (letter := letter_of(match)).upper() in letters:
            yield match, letter, text[match.end() : end]


def _is_lone(match: re.Match[str], rest: str) -> bool:
    return not rest.strip(" \t*$}") and match.end() - match.start() <= LONE_LINE_CHARS + 8


def _after_colon(text: str, at: int) -> bool:
    """Whether the line at ``at`` follows a line that ends with a colon ("the cause is:")."""
    i = at
    while i > 0 and at - i < 64 and text[i - 1].isspace():
        i -= 1
    return i > 0 and text[i - 1] in ":\uff1a"


def _lines(text: str, at_letters: Sequence[int], letters: str) -> Iterator[Statement]:
    """Lines holding only an option, and a first or last line, or one after a colon, that starts
    with one and goes on (``D. it can't be A or B``, ``(B) Nitrogen``), among the lines of the
    letters at ``at_letters`` (:func:`letter_positions`)."""
    first = text.rfind("\n", 0, len(text) - len(text.lstrip())) + 1
    last = text.rfind("\n", 0, len(text.rstrip())) + 1
    for match, letter, rest in _option_lines(text, at_letters, letters):
        at = match.start()
        if _is_lone(match, rest):
            yield Statement(at, match.end(), letter.upper(), "lone")
        elif letter.isupper() and (at in (first, last) or _after_colon(text, at)):
            others = {m.group("letter") for m in _OTHER_OPTION_ON_LINE.finditer(rest)}
            if (
                not (others & set(letters)) - {letter}
                and _standing(text, match.end(), letter, letters, clause=False)
                and _DENIED_LINE.search(rest, 0, STATEMENT_CHARS) is None
            ):
                yield Statement(at, match.end(), letter, "line")


@lru_cache(maxsize=256)  # one per set of options, and few sets in a run
def _line_pattern(others: str, *, lone: bool) -> re.Pattern[str]:
    """A line that starts with one of the letters ``others`` (either case): holding nothing
    else (``lone``), or going on."""
    others = re.escape(others)
    letter = f"[{others}{others.lower()}]"
    start = (
        "(?m)^" + _LINE_START + rf"(?:\(\s*{letter}\s*\)|\[\s*{letter}\s*\]"
        rf"|{letter}(?=" + _MARKS + _NOT_LATIN + r"|[^\S\n]*$))"
    )
    if lone:
        return re.compile(start + r"(?:" + _MARKS + r"|[ \t])*$")
    return re.compile(start + _MARKS + r"*[ \t]*(?:[*$}][ \t]*)*[^\s.):*$}\u3002]")


def listed_on_lines(text: str, letter: str, letters: str, *, lone: bool) -> bool:
    """Whether another line than ``letter``'s starts with another option in the same way
    (holding nothing else, ``lone``, or going on): then such lines list the options."""
    others = "".join(x for x in letters if x != letter and x.isalpha())
    if not others:
        return False
    return _line_pattern(others, lone=lone).search(text) is not None


# -- where statements can be ------------------------------------------------------------------
#
# Every statement names its option by a letter (but a statement of an option's text): a capital
# that stands alone, one in parentheses or brackets, a lower-case one that ends its clause, a
# native letter. One pass finds them (its regex starts with their characters, which the engine
# skips to). A lead states a letter at most STATEMENT_CHARS after it and a verdict follows its
# letter within _WINDOW, so lead words are searched for around those letters alone, and a line
# is read for an option only where one of them starts it.


@lru_cache(maxsize=256)  # one per set of options, and few sets in a run
def _letters_pattern(letters: str) -> re.Pattern[str] | None:
    """Where a statement's letter may be, for the options ``letters`` (a superset of where
    :data:`LETTER` finds one that a statement reads); None when no letter can be read."""
    upper, native = _option_characters(letters)
    if not upper and not native:
        return None
    lower = upper.lower()
    every = upper + lower + native
    alone = r"(?<![A-Za-z0-9_\\].)"  # the character before the letter is no word's
    branches = [rf"(?<=[(\[])\s*[{every}]\s*[)\]]"]
    if upper:
        branches.append(rf"{alone}(?<=[{upper}])(?![A-Za-z0-9'\u2019])")
        branches.append(rf"{alone}(?<=[{lower}])(?![A-Za-z0-9'\u2019])(?={_CLAUSE_END.pattern})")
    if native:
        branches.append(rf"(?<=[{native}]){NATIVE_ALONE}")
    return re.compile(rf"[(\[{every}](?:" + "|".join(branches) + ")")


def letter_positions(text: str, start: int, letters: str) -> list[int]:
    """Where, at or after ``start``, a statement of ``text`` may read one of ``letters``."""
    pattern = _letters_pattern(letters)
    return [] if pattern is None else [m.start() for m in pattern.finditer(text, start)]


def _windows(at_letters: Sequence[int], start: int, end: int) -> list[tuple[int, int]]:
    """The spans of ``text[start:end]`` where a lead or a verdict of a letter at
    ``at_letters`` may start, merged."""
    windows: list[tuple[int, int]] = []
    for at in at_letters:
        first, last = max(start, at - STATEMENT_CHARS), min(end, at + _WINDOW + _LONGEST_TRIGGER)
        if windows and first <= windows[-1][1]:
            windows[-1] = (windows[-1][0], last)
        else:
            windows.append((first, last))
    return windows


def _triggers(lower: str, windows: Sequence[tuple[int, int]]) -> list[tuple[int, str]]:
    """The lead words that start in ``windows`` of ``lower`` (the text lower-cased), and where:
    at a word's start in ASCII text; in other text anywhere but inside an ASCII word."""
    if lower.isascii():
        return _ascii_triggers(lower, windows)
    found = []
    for first, last in windows:
        for trigger in _TRIGGER.finditer(lower, first, min(len(lower), last + _LONGEST_TRIGGER)):
            at, word = trigger.start(), trigger.group()
            if at >= last:
                break
            if trigger.lastgroup == "yoruba":
                word = YORUBA_WORD
            elif word.isascii() and at and _WORD_CHAR.match(lower, at - 1):
                continue  # inside a word: "also", "within", "incorrect"
            found.append((at, word))
    return found[-MAX_LEADS:]


def _ascii_triggers(lower: str, windows: Sequence[tuple[int, int]]) -> list[tuple[int, str]]:
    """:func:`_triggers` in ASCII text: the lead words that start a word in ``windows``."""
    found = []
    for first, last in windows:
        if first == 0 and (opening := _TRIGGER_AT_WORD.match(lower)) is not None:
            found.append((0, YORUBA_WORD if opening.group("yoruba") else opening.group()))
        end = min(len(lower), last + _LONGEST_TRIGGER)
        for trigger in _TRIGGER_AFTER.finditer(lower, max(0, first - 1), end):
            at = trigger.start("word")
            if at >= last:
                break
            found.append((at, YORUBA_WORD if trigger.group("yoruba") else trigger.group("word")))
    return found[-MAX_LEADS:]


def statements(
    text: str, start: int, letters: str, texts: Sequence[str], lower: str | None = None
) -> list[Statement]:
    """Every statement of ``text`` that starts at or after ``start``, in the order of their
    ends (``lower``: ``text`` with A to Z lower-cased, when the caller has it). A lead with an
    option's text after it (``the answer is nitrogen``) is read only where it could be the last
    statement, for the last :data:`TEXT_LEADS` such leads; of a text written to be nothing but
    lead words, the last :data:`MAX_LEADS` are read."""
    found: set[Statement] = set()
    bare: list[tuple[int, str]] = []  # leads without a letter after them
    lower = _lower(text) if lower is None else lower
    at_letters = letter_positions(text, start, letters)
    # an option's text may follow any lead: then every lead word is read
    windows = [(start, len(text))] if texts else _windows(at_letters, start, len(text))
    for at, word in _triggers(lower, windows):
        if word in _VERDICT_TRIGGERS:
            verdict = _verdict(text, at, word, letters)
            if verdict is not None:
                found.add(verdict)
        statement = _led(text, at, word, letters)
        if statement is not None:
            found.add(statement)
        elif texts and word in _TEXT_LEAD_WORDS:
            bare.append((at, word))
    found.update(_lines(text, at_letters, letters))
    last_end = max((s.end for s in found), default=-1)
    for at, word in [b for b in bare if b[0] >= last_end - STATEMENT_CHARS][-TEXT_LEADS:]:
        lead = _text_lead_pattern(word).match(text, at, min(len(text), at + STATEMENT_CHARS))
        chosen = _text_choice(text, lead.end(), letters, texts) if lead else None
        if chosen is not None and not _denied_before(text, at):
            found.add(Statement(at, chosen[1], chosen[0], "text"))
    return sorted(found, key=lambda s: (s.end, s.start))


def _final_run(found: list[Statement], text: str) -> list[Statement]:
    """The last statement and the statements right before it with nothing but punctuation and
    spaces between (``Answer: A. Answer: B.``); a correction starts a run of its own."""
    run = [found[-1]]
    for statement in reversed(found[:-1]):
        if len(run) == RUN_STATEMENTS:
            break
        first = run[-1]
        if statement.end > first.start:  # overlapping: one statement read twice, or nested
            if statement.start < first.start:
                run.append(statement)
            continue
        if first.kind == "fix" or text[statement.end : first.start].strip(" \t\n.,;:!*$)]}"):
            break
        run.append(statement)
    return run


def final_choice(text: str, letters: str, texts: Sequence[str]) -> str | None:
    """The letter of the final statement of ``text`` (see the module doc), else of a final
    sentence that names exactly one option's text; ``None`` when there is neither, or when the
    final statements name different letters."""
    text = text[-MAX_CHARS:]
    lower = _lower(text)
    found: list[Statement] = []
    run: list[Statement] = []
    for chars in (*_TAILS, len(text)):
        tail = max(0, len(text) - chars)
        found = statements(text, tail, letters, texts, lower)
        run = _final_run(found, text) if found else []
        if not tail or (run and run[-1].start > tail + STATEMENT_CHARS):
            break
    if not found:
        return _final_sentence_choice(text, letters, texts)
    last = found[-1]
    if len({s.letter for s in run}) > 1:
        return None  # "Answer: A. Answer: B.": two answers at once
    if last.kind in ("lone", "line") and listed_on_lines(
        text, last.letter, letters, lone=last.kind == "lone"
    ):
        return None  # a list of options, one per line
    return last.letter


# Words that announce a correction of what came before: "Wait, I made an error. The answer
# is D." takes back a box as "actually D" does
_CORRECTING = re.compile(
    r"(?i:\b(?:wait|actually|correction|mistake|error|oops|on\s+second\s+thought"
    r"|on\s+reflection|instead|rather|re-?check\w*|re-?consider\w*|revis\w*|scratch\s+that"
    r"|i\s+was\s+wrong)\b|其实|其實|不对|不對|更正|修正|いや|実は|訂正|정정)"
)


def last_fix(text: str, start: int, letters: str) -> str | None:
    """The letter of the last statement at or after ``start`` (after a box) that corrects it:
    a correction (``actually D``), or a statement after words that announce one (``Wait, I
    made an error. The answer is D.``)."""
    text = text[max(start, len(text) - MAX_CHARS) :]
    found = statements(text, 0, letters, ())
    if not found:
        return None
    last = found[-1]
    if last.kind == "fix" or _CORRECTING.search(text, 0, last.start) is not None:
        return last.letter
    fixes = [s for s in found if s.kind == "fix"]
    return fixes[-1].letter if fixes else None


# -- an option's text --------------------------------------------------------------------------

_CLAUSE_STOP = re.compile("[.;!?\u3002\uff1b\uff01\uff1f\n](?!\\d)")
# Words before an option's text that take it back ("not nitrogen", "rather than nitrogen";
# "n't" is left as "t" by the word split), and after it ("nitrogen is wrong")
_NEGATIVE_BEFORE = frozenset(
    {"not", "never", "no", "t", "neither", "nor", "except", "rather", "instead", "unlike",
     "nicht", "pas", "ni", "eliminate", "exclude"}
)  # fmt: skip
_NEGATIVE_AFTER = frozenset({"wrong", "incorrect", "false", "isn", "wasn"})
_NEGATIVE_AFTER_VERB = frozenset({"wrong", "incorrect", "false", "not", "out"})
_NEGATIVE_CJK = (*NEGATIONS_JOINED, "错", "錯", "誤", "틀")
_NON_WORD = re.compile(r"[^\w]+")


def _words(text: str) -> str:
    return " ".join(_NON_WORD.sub(" ", text.lower()).split())


def choice_in(clause: str, letters: str, texts: Sequence[str]) -> str | None:
    """The letter of the one option whose text ``clause`` names, not negated next to it.

    >>> choice_in("the gas must be nitrogen", "ABC", ["Carbon", "Nitrogen", "Oxygen"])
    'B'
    >>> choice_in("nitrogen, not oxygen", "ABC", ["Carbon", "Nitrogen", "Oxygen"])
    'B'
    >>> choice_in("carbon or oxygen", "ABC", ["Carbon", "Nitrogen", "Oxygen"]) is None
    True
    """
    words = f" {_words(clause)} "
    hits: list[tuple[int, int, str]] = []
    for letter, option in zip(letters, texts, strict=False):
        wanted = _words(option)
        if not wanted:
            continue
        at = words.find(f" {wanted} ")
        if at != -1:
            at += 1
        elif not wanted.isascii():  # no spaces between words: 答案是氧气
            at = words.find(wanted)
        if at != -1:
            hits.append((at, at + len(wanted), letter))
    # an option named inside another one's text ("carbon" in "carbon dioxide") is not named
    hits = [h for h in hits if not any(o != h and o[0] <= h[0] and h[1] <= o[1] for o in hits)]
    kept = {letter for at, end, letter in hits if not _negated_text(words, at, end)}
    return kept.pop() if len(kept) == 1 and len(hits) <= 2 else None


def _negated_text(words: str, at: int, end: int) -> bool:
    before = words[:at].split()[-2:]
    after = words[end:].split()[:2]
    denied = (
        after[1:] and after[0] in ("is", "was", "are") and after[1] in _NEGATIVE_AFTER_VERB
    ) or (after[:1] and after[0] in _NEGATIVE_AFTER)
    around = words[max(0, at - 3) : at] + words[end : end + 3]
    return (
        bool(_NEGATIVE_BEFORE.intersection(before))
        or bool(denied)
        or any(w in around for w in _NEGATIVE_CJK)
    )


def _text_choice(
    text: str, start: int, letters: str, texts: Sequence[str]
) -> tuple[str, int] | None:
    """The option whose text the clause after a lead at ``start`` names, and where it ends."""
    window = text[start : start + 2 * STATEMENT_CHARS]
    stop = _CLAUSE_STOP.search(window)
    clause = window[: stop.start()] if stop else window
    letter = choice_in(clause, letters, texts)
    return (letter, start + len(clause)) if letter is not None else None


# A last sentence that names an option by its letter talks about that option ("Option D,
# helium, is a noble gas"); its letter, if chosen, is read as a statement.
_NAMES_A_LETTER = re.compile(r"(?i:option|choice|letter)\s+[A-Z]\b|\([A-Z]\)|\b[A-Z]\)")


_SENTENCE_SPLIT = re.compile("(?<=[.!?\u3002\uff01\uff1f])\\s+")


def _final_sentence_choice(text: str, letters: str, texts: Sequence[str]) -> str | None:
    """The option that the last sentence of the last line names (``Definitely nitrogen.``,
    ``Printing uses black ink.``), unless it names an option by its letter or rules one out."""
    if not texts:
        return None
    line = text.rstrip()[-2 * STATEMENT_CHARS :].rsplit("\n", 1)[-1]
    sentences = [s for s in _SENTENCE_SPLIT.split(line.strip()) if s.strip()]
    if not sentences or _NAMES_A_LETTER.search(sentences[-1]) is not None:
        return None
    if _ELIMINATES.search(sentences[-1]) is not None:
        return None
    return choice_in(sentences[-1], letters, texts)


_ELIMINATES = re.compile(r"(?i:\b(?:eliminat|exclud|rul(?:e|ed|ing)\s+out|wrong|incorrect))")
