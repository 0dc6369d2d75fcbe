"""Which option a response states as its answer, read from its prose as a careful person would.

A *statement* is a place where the response commits to one option:

- a lead and the letter: ``the answer is (C)``, ``Answer - C``, ``I'd go with option D``,
  ``答案是C``, ``正解はC``, ``정답: C``, ``La respuesta es C``, ``La réponse est C``,
  ``Die Antwort lautet C`` (the ``lead`` rows of :data:`LEADS`);
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

Every pass is linear in the text or bounded: one regex pass finds the lead words (from the
text's end first, in tails); at each, a small regex of that word's leads runs over at most
:data:`STATEMENT_CHARS` characters with possessive quantifiers; the checks before and after a
letter read a fixed window. A response is read up to :data:`MAX_CHARS` from its end.

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
_TAILS = (400, 2_000, 10_000)
#: Lines no longer than this (stripped) may hold an option on its own: ``(C).``, ``**C**``.
LONE_LINE_CHARS = 24
#: Leads without a letter after them whose clause is read for an option's text (the last ones).
TEXT_LEADS = 4
#: Lead words read per response, from its end: prose holds about one per 100 characters, so
#: only text written to be nothing but lead words ("so so so ...") reaches this.
MAX_LEADS = 4_000
#: Statements side by side that are compared for a hedge ("Answer: A. Answer: B."): the last.
RUN_STATEMENTS = 8

# Full-width forms (U+FF01..U+FF5E) as their ASCII twins, one character for one so that every
# position stays where it was: a full-width colon, parentheses and C read as ``:(C)``.
_FOLD = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)}
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


_FULL_WIDTH = re.compile("[\uff01-\uff5e]")


def fold(text: str) -> str:
    """``text`` with full-width letters and punctuation as ASCII, every position kept.

    >>> fold("答案\uff1a\uff08\uff23\uff09")
    '答案:(C)'
    """
    return text if _FULL_WIDTH.search(text) is None else text.translate(_FOLD)


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
#: A letter that stands alone: (C), [C], C, in its marks; not a word's letter nor a command's.
LETTER = (
    rf"(?:{_OPEN}\s*){{0,3}}"
    r"(?<![A-Za-z0-9_\\])"
    r"(?:\(\s*(?P<paren>[A-Za-z])\s*\)|\[\s*(?P<bracket>[A-Za-z])\s*\]|(?P<bare>[A-Za-z]))"
    r"(?![A-Za-z0-9'\u2019])"
)
# What may close around a letter on its line: ** $ } \) `
_CLOSE = r"(?:[^\S\n]*(?:\*|\$|\}|\\\)|\\\]|`))*"
_APOSTROPHE = "['\u2019]"

# -- the leads ---------------------------------------------------------------------------------


class Lead(NamedTuple):
    """Forms of a lead: its kind, the (lower-case) words it starts with, its regex (which ends
    on a word, not on spaces)."""

    kind: Literal["lead", "hedged", "opening", "so", "fix"]
    words: tuple[str, ...]
    pattern: str


_IS = r"(?:is|was|would\s+be|should\s+be|must\s+be|will\s+be|has\s+to\s+be)"
_DASH = "[-\u2013\u2014]"  # a hyphen, an en dash, an em dash
# After a correction: "no,", "so", then "it's", "the answer is", "I'll go with", "答案是"...
_FIX_TAIL = (
    rf"(?:\s*[,.:;!]|\s*{_DASH})*(?:\s*no(?:\s*[,.!]|\s*{_DASH})+)?(?:\s*(?:so|then|and|but)"
    rf"(?:\s*,)?)?(?:\s*(?:i\s+think|i{_APOSTROPHE}?d\s+say|i{_APOSTROPHE}?ll\s+go\s+with"
    rf"|i\s+(?:choose|pick)|i{_APOSTROPHE}?ll\s+pick|it{_APOSTROPHE}?s(?:\s+actually)?"
    r"|it\s+(?:is|should\s+be|must\s+be)|make\s+it"
    rf"|the\s+(?:correct\s+|right\s+|final\s+)?answer\s+is|the\s+answer{_APOSTROPHE}?s"
    r"|(?:答案)?(?:应该|應該|应|應)?(?:是|为|為|选|選)|答えは|정답은))?"
)
#: Every lead, by kind: ``lead`` states the answer (its letter may go on: "the answer is A
#: because"); ``hedged``, ``opening`` (at a sentence's start) and ``so`` (at a sentence's or a
#: comma's start) need their letter to end its clause; ``fix`` takes back an earlier choice,
#: a boxed one too, and needs its letter to end its clause.
LEADS: tuple[Lead, ...] = (
    # -- corrections: "actually D", "wait, it's B.", "no, D.", "其实是D", "いや、Cです"
    Lead("fix", ("actually", "wait", "correction", "instead", "oops"),
         r"(?:actually|wait|correction|instead|oops)" + _FIX_TAIL),
    Lead("fix", ("on second", "on reflection"),
         r"on\s+(?:second\s+thought|reflection)" + _FIX_TAIL),
    Lead("fix", ("scratch", "make that", "i mean"),
         r"(?:scratch\s+that|make\s+that|i\s+mean)" + _FIX_TAIL),
    Lead("fix", ("no",), rf"(?:no(?:\s*,)?\s*wait|no(?=\s*[,.!]|\s*{_DASH}))" + _FIX_TAIL),
    Lead("fix", ("en realidad", "de hecho", "corrijo", "en fait", "plutôt", "eigentlich",
                 "korrektur"),
         r"(?:en\s+realidad|de\s+hecho|corrijo|en\s+fait|plutôt|eigentlich|korrektur)"
         + _FIX_TAIL),
    Lead("fix", ("其实", "其實", "实际上", "實際上", "不对", "不對", "更正", "而是"),
         r"(?:其实|其實|实际上|實際上|不对|不對|更正|而是)" + _FIX_TAIL),
    Lead("fix", ("是",), "(?<=[,\uff0c])是"),  # 不是C, 是D
    Lead("fix", ("いや", "実は", "やっぱり", "訂正", "사실", "정정"),
         r"(?:いや|実は|やっぱり|訂正|사실은?|정정)" + _FIX_TAIL),
    # -- hedged: "I think B,", "I'd say C.", "which leaves C." ("we leave C for later" is not)
    Lead("hedged", ("i think", "i believe", "i guess", "i reckon", "i suspect"),
         r"i\s+(?:think|believe|guess|reckon|suspect)(?:\s+(?:that"
         rf"|it{_APOSTROPHE}?s|it\s+is|it\s+must\s+be|it\s+should\s+be|it\s+would\s+be"
         rf"|it{_APOSTROPHE}?d\s+be|the\s+answer\s+is))?"),
    Lead("hedged", ("i'd", "i\u2019d", "i would", "i'll", "i\u2019ll", "i will"),
         rf"i(?:{_APOSTROPHE}d|\s+would|{_APOSTROPHE}ll|\s+will)\s+(?:say|go\s+for)"),
    Lead("hedged", ("leav",), r"leav(?:es|ing|e)\b(?:\s+(?:us|me|only)(?:\s+with)?)?"),
    # -- at a sentence's start: "It's (C).", "Option C.", "So, C.", "Therefore I pick B."
    Lead("opening", ("it",),
         rf"it(?:{_APOSTROPHE}s|\s+is|\s+must\s+be|\s+has\s+to\s+be|{_APOSTROPHE}d\s+be"
         r"|\s+would\s+be)"),
    Lead("opening", ("option", "choice", "letter"), r"(?:option|choice|letter)"),
    Lead("so", ("so", "thus", "therefore", "hence", "consequently", "ergo"),
         r"(?:so|thus|therefore|hence|consequently|ergo)\b(?:\s*,)?"
         rf"(?:\s*(?:it{_APOSTROPHE}?s|it\s+is|it\s+must\s+be|we\s+(?:get|have|pick|choose)"
         r"|i\s+(?:pick|choose))\b)?"),
    # -- English: the answer is / Answer: / Answer - / my choice is / the correct option is
    Lead("lead", ("answer",), rf"answer\s*(?:{_IS}|=|:|->|=>|\u2192|{_DASH})"),
    Lead("lead", ("choice", "selection"),
         rf"(?:choice|selection)\s*(?:is|would\s+be|should\s+be|:|{_DASH})"),
    Lead("lead", ("option", "final"), rf"(?:option|final)\s*(?::|{_DASH})"),
    Lead("lead", ("correct", "right", "best", "final", "only"),
         r"(?:correct|right|best|final|only)\s+(?:option|letter|choice)\s*"
         rf"(?:is|would\s+be|:|{_DASH})"),
    # I'd go with / I pick / I choose / I'm selecting / opt for / settled on
    Lead("lead", ("go with", "going with"), r"go(?:ing)?\s+with"),
    Lead("lead", ("pick", "choos", "chose", "select"),
         r"(?:pick(?:s|ing|ed)?|choos(?:es|ing|e)|chose|select(?:s|ing|ed)?)\b"),
    Lead("lead", ("opt", "settl"),
         r"(?:opt(?:s|ing|ed)?\s+for|settl(?:es|ed|ing|e)\s+(?:on|for))"),
    # Chinese: 答案是C, 正确答案为C, 答案:C, 答:C, 选C, 故选C, 选择C, 选项C
    Lead("lead", ("答案",), r"答案(?:\s*(?:应该|應該|应|應))?(?:\s*(?:是|为|為|选|選))?(?:\s*:)?"),
    Lead("lead", ("答",), r"答\s*:"),
    Lead("lead", ("选", "選"), r"(?:选|選)(?:择|擇|項|项)?(?:\s*(?:是|为))?(?:\s*:)?"),
    # Japanese: 答えはC, 正解はC, 回答:C, 解答:C
    Lead("lead", ("答え", "正解", "回答", "解答"), r"(?:答え|正解|回答|解答)\s*(?:は|:)"),
    # Korean: 정답은 C, 정답: C, 답: C, 답변: C
    Lead("lead", ("정답", "답변", "답"), r"(?:정답|답변|답)\s*(?:은|는|:)"),
    # Spanish: la respuesta (correcta) es C, Respuesta: C, elijo C
    Lead("lead", ("respuesta",),
         rf"respuesta(?:\s+(?:correcta|final))?\s*(?:es|ser[íi]a|será|:|{_DASH})"),
    Lead("lead", ("elijo", "escojo", "selecciono"), r"(?:elijo|escojo|selecciono)\b"),
    # French: la (bonne) réponse est C, Réponse : C, je choisis C
    Lead("lead", ("réponse", "reponse"),
         rf"r[ée]ponse(?:\s+(?:correcte|finale|juste))?\s*(?:est|serait|:|{_DASH})"),
    Lead("lead", ("choisis",), r"choisis\b"),
    # German: die (richtige) Antwort ist / lautet C, Antwort: C, ich wähle C
    Lead("lead", ("antwort",), rf"antwort\s*(?:ist|lautet|w[äa]re|:|{_DASH})"),
    Lead("lead", ("wähle", "wahle"), r"w[äa]hle\b"),
    # Italian, Portuguese, Indonesian, Russian, Vietnamese: Risposta: C, Resposta: C,
    # Jawaban: C, Ответ: C, Đáp án: C
    Lead("lead", ("risposta",),
         rf"risposta(?:\s+(?:corretta|finale|giusta))?\s*(?:è|e'|:|{_DASH})"),
    Lead("lead", ("resposta",), rf"resposta(?:\s+(?:correta|final|certa))?\s*(?:é|:|{_DASH})"),
    Lead("lead", ("jawaban",),
         rf"jawaban(?:nya)?(?:\s+(?:yang\s+benar|akhir))?\s*(?:adalah|ialah|:|{_DASH})"),
    Lead("lead", ("ответ",), rf"ответ\s*(?::|{_DASH})"),
    Lead("lead", ("đáp án",), r"đáp\s+án\s*(?:là|:)"),
)  # fmt: skip
# Between a lead and its letter: an adverb, an article, the word "option", a colon.
_FILLER = (
    r"\s*(?:(?:definitely|clearly|probably|likely|surely|certainly|obviously|therefore|thus"
    r"|indeed|simply|just|actually|most\s+likely|for\s+sure|now|then)\b(?:\s*,)?\s*)?"
    rf"(?:(?:the|la|le|l{_APOSTROPHE}|el|die|der|das)\s*)?"
    r"(?:(?:option|choice|letter|answer|opci[óo]n|opção|opzione|选项|選項|项|項|選択肢|선택지"
    rf"|보기)\s*)?(?:(?::|{_DASH})\s*)?"
)
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
        (lead.kind, re.compile(rf"(?i:{lead.pattern}){_FILLER}{LETTER}"))
        for lead in _LEADS_BY_WORD.get(word, ())
    )


@cache
def _text_lead_pattern(word: str) -> re.Pattern[str]:
    """The leads of ``word`` (one of :data:`_TEXT_LEAD_WORDS`) without a letter after them."""
    leads = (lead.pattern for lead in _LEADS_BY_WORD[word] if lead.kind == "lead")
    return re.compile("(?i:" + "|".join(leads) + ")" + _FILLER)


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
TRIGGERS: tuple[str, ...] = tuple(sorted({*_LEADS_BY_WORD, *_VERDICT_TRIGGERS}))


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
_TRIGGER = re.compile(_trie(TRIGGERS))
# In ASCII text, only ASCII words, at a word's start: cheaper than checking every match after.
_TRIGGER_AT_WORD = re.compile(r"(?<![a-z0-9_])" + _trie([w for w in TRIGGERS if w.isascii()]))
_WORD_CHAR = re.compile(r"\w")

# -- around the letter -------------------------------------------------------------------------

# Words that take back what follows them: "not C", "I wouldn't pick A", "rather than B",
# "eliminate A", "不是C" (the last word before the statement, or one before an adverb)
_NEGATION = frozenset(
    {"not", "never", "nor", "neither", "without", "except", "unlike", "nicht", "kein", "keine",
     "pas", "jamais", "nunca", "ni", "cannot"}
)  # fmt: skip
_NEGATION_PAIRS = frozenset(
    {("rather", "than"), ("instead", "of"), ("other", "than"), ("except", "for"),
     ("rule", "out"), ("rules", "out"), ("ruled", "out"), ("ruling", "out")}
)  # fmt: skip
_NEGATION_STEMS = ("eliminat", "exclud", "discard")
_NEGATION_CJK = ("不", "没", "沒", "非", "别", "別", "勿", "未", "아닌")
# Words that may stand between a negation and what it takes back: "not really", "wouldn't ever"
_ADVERBS = frozenset(
    {"really", "even", "ever", "actually", "necessarily", "quite", "definitely", "simply",
     "just", "be", "going", "gonna", "want", "to", "i", "we", "would"}
)  # fmt: skip
_WORD_EDGES = "\"'()*_`"


def _negation(word: str) -> bool:
    return (
        word in _NEGATION or word.endswith(("n't", "n\u2019t")) or word.startswith(_NEGATION_STEMS)
    )


def _denied_before(text: str, at: int) -> bool:
    """Whether the words right before ``at`` take back what starts there."""
    window = text[max(0, at - 40) : at].rstrip()
    if window.endswith(_NEGATION_CJK):
        return True
    words = [w.strip(_WORD_EDGES) for w in _lower(window).split()[-4:]]
    for i in range(len(words) - 1, -1, -1):
        if _negation(words[i]) or (i and (words[i - 1], words[i]) in _NEGATION_PAIRS):
            return True
        if words[i] not in _ADVERBS:
            return False
    return False


# What after a letter takes it back: "C is wrong", "C不对", "Cではない", "C가 아니다"
_DENIED_AFTER = re.compile(
    _CLOSE + r"\s*(?:(?i:(?:is|was|seems|would\s+be|ist|est|es|è|é)\s+(?:(?:definitely|clearly"
    r"|also|obviously)\s+)?(?:wrong|incorrect\w*|false|not|out|eliminated|impossible|excluded"
    r"|ruled\s+out|falsch|faux|fausse|nicht|pas|no|errónea|erronea|sbagliat\w*|errad\w*)\b"
    rf"|isn{_APOSTROPHE}t|wasn{_APOSTROPHE}t|can{_APOSTROPHE}t|cannot|doesn{_APOSTROPHE}t"
    rf"|won{_APOSTROPHE}t)"
    r"|(?:(?:都|也|均)\s*)?(?:不(?!是\s*\(?[A-Za-z])|错|錯|非(?!\s*[A-Za-z]))"
    r"|(?:では|じゃ)な|(?:(?:가|이|는|은)\s*)?아(?:니|닙|님))"
)
# What after a letter makes it one of several: "A, B or C", "(A) (B)", "A and C", "A、B", and
# ranges: "A-D", "A to D", "A through D", "A|C"
_LIST_NEXT = re.compile(
    _CLOSE
    + "[^\\S\\n]*(?:(?:[,/&+;|~\u3001\uff0c\u2013\u2014-]|和|或|与|與|及|와|과|및|또는|や|と|か|または"
    r"|(?i:and|or|und|oder|et|ou|y|o|e|nor|vs\.?|to|through|thru)\b)[^\S\n]*)?"
    r"(?:(?i:option|choice)\s+|选项|選項|项|項)?(?:(?:\*|\$|\\text\{|\()[^\S\n]*)?"
    r"(?P<next>[A-Z])(?![A-Za-z0-9'])(?P<word>[^\S\n]+[a-z])?"
)
# The end of a clause after a hedged letter: a stop, a comma, a line break, "because ..."
_CLAUSE_END = re.compile(
    _CLOSE + "(?:\\s*(?:\\n|$)|[.,;!:)\\]\u3002\uff0c\uff1b\uff01\u3001]"
    r"|\s+(?i:because|since|as\b|given|due|which|this|that's|-\s)|\s+\u2014|\s+\u2013)"
)
# ... and of a sentence, after "Option C" standing alone ("Option C, helium, is a noble gas"
# talks about C)
_SENTENCE_END = re.compile(_CLOSE + "(?:\\s*(?:\\n|$)|[.!)\u3002\uff01](?!\\d))")
_QUESTION = re.compile(_CLOSE + r"\s*\?")
# Another letter offered in parentheses after the answer: "C (or possibly A)", "B (maybe D)"
_ALTERNATIVE_NEXT = re.compile(
    _CLOSE + r"[^\S\n]*[(\[][^\S\n]*(?i:or|maybe|possibly|perhaps|alternatively|otherwise)\b"
    r"[^()\[\]\n]{0,24}?(?<![A-Za-z])(?P<next>[A-Z])(?![A-Za-z])"
)
# "I" as the pronoun, not option I: "I don't know", "I'm not sure", "I think"
_PRONOUN_I = re.compile(
    rf"{_APOSTROPHE}(?:m|d|ll|ve)\b|[^\S\n]+(?i:am|do|don{_APOSTROPHE}?t|did|can|cannot|could"
    r"|would|will|think|believe|guess|have|had|was|really|just|feel|suppose|hope|need|want|know"
    r"|agree|not)\b"
)
_WINDOW = 48
_SENTENCE_MARKS = " \t*_#>-\u00a0"
_SENTENCE_STOPS = "\n.!?;:\u3002\uff01\uff1f\uff1b\uff1a"
_COMMAS = ",\uff0c"


def _sentence_starts(text: str, at: int, *, comma: bool) -> bool:
    """Whether ``at`` starts a sentence (or, with ``comma``, a clause after a comma)."""
    i = at
    while i > 0 and at - i < 16 and text[i - 1] in _SENTENCE_MARKS:
        i -= 1
    if i == 0:
        return True
    return text[i - 1] in _SENTENCE_STOPS or (comma and text[i - 1] in _COMMAS)


def _letter(match: re.Match[str]) -> str:
    return match.group("paren") or match.group("bracket") or match.group("bare") or ""


def _standing(text: str, end: int, letter: str, letters: str, *, clause: bool) -> bool:
    """Whether the letter that ends at ``end`` stands as a choice: not denied after it, not one
    of a list, and (``clause``, or a lower-case letter) ending its clause."""
    stop = min(len(text), end + _WINDOW)
    if _DENIED_AFTER.match(text, end, stop) is not None:
        return False
    if letter == "I" and text[end - 1 : end] == "I" and _PRONOUN_I.match(text, end, stop):
        return False  # "Answer: I don't know"
    other = _ALTERNATIVE_NEXT.match(text, end, stop)
    if other is not None and other.group("next") in letters and other.group("next") != letter:
        return False
    listed = _LIST_NEXT.match(text, end, stop)
    # another option letter next: a list ("A I think": a pronoun, not a list)
    if (
        listed is not None
        and listed.group("next") in letters
        and not (listed.group("next") == "I" and listed.group("word"))
    ):
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
        letter = _letter(match)
        if letter.upper() not in letters or _denied_before(text, at):
            return None
        if match.group("paren") or match.group("bracket"):
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
    letter = _letter(found)
    boxed = found.group("paren") or found.group("bracket")
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
_OPTION_LINE = re.compile(
    _LINE_START + r"(?:\(\s*(?P<paren>[A-Za-z])\s*\)|\[\s*(?P<bracket>[A-Za-z])\s*\]"
    r"|(?P<bare>[A-Za-z])(?=" + _MARKS + r"|[^\x00-\x7f]|[^\S\n]*$))" + _MARKS + "*"
)
_OTHER_OPTION_ON_LINE = re.compile(r"(?:^|[\s(])\(?(?P<letter>[A-Z])[.)](?=\s|$)")
_DENIED_LINE = re.compile(
    r"(?i:\b(?:wrong|incorrect|false|eliminated|ruled\s+out|excluded|impossible)\b"
    "|\\b(?:is|are)\\s+not\\b|[\u2717\u274c\u00d7]|错误|錯誤|不对|不對|不正确|不正確|誤り|間違い|틀)"
)


def _option_lines(text: str, start: int, letters: str) -> Iterator[tuple[re.Match[str], str, str]]:
    """Every line at or after ``start`` that starts with an option: its match, the letter (as
    written) and the rest of the line."""
    at = text.rfind("\n", 0, start) + 1 if start else 0
    while at <= len(text):
        end = text.find("\n", at)
        end = len(text) if end == -1 else end
        match = _OPTION_LINE.match(text, at, end)
        if match is not None and _letter(match).upper() in letters:
            yield match, _letter(match), text[match.end() : end]
        at = end + 1


def _is_lone(match: re.Match[str], rest: str) -> bool:
    return not rest.strip(" \t*$}") and match.end() - match.start() <= LONE_LINE_CHARS + 8


def _after_colon(text: str, at: int) -> bool:
    """Whether the line at ``at`` follows a line that ends with a colon ("the cause is:")."""
    i = at
    while i > 0 and at - i < 64 and text[i - 1].isspace():
        i -= 1
    return i > 0 and text[i - 1] in ":\uff1a"


def _lines(text: str, start: int, letters: str) -> Iterator[Statement]:
    """Lines holding only an option, and a first or last line, or one after a colon, that starts
    with one and goes on (``D. it can't be A or B``, ``(B) Nitrogen``), at or after ``start``."""
    first = text.rfind("\n", 0, len(text) - len(text.lstrip())) + 1
    last = text.rfind("\n", 0, len(text.rstrip())) + 1
    for match, letter, rest in _option_lines(text, start, letters):
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
        rf"|{letter}(?=" + _MARKS + r"|[^\x00-\x7f]|[^\S\n]*$))"
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
    ascii_only = text.isascii()
    lower = _lower(text) if lower is None else lower
    triggers = list((_TRIGGER_AT_WORD if ascii_only else _TRIGGER).finditer(lower, start))
    for trigger in triggers[-MAX_LEADS:]:
        at, word = trigger.start(), trigger.group()
        if not ascii_only and word.isascii() and at and _WORD_CHAR.match(lower, at - 1):
            continue  # inside a word: "also", "within", "incorrect"
        if word in _VERDICT_TRIGGERS:
            verdict = _verdict(text, at, word, letters)
            if verdict is not None:
                found.add(verdict)
        statement = _led(text, at, word, letters)
        if statement is not None:
            found.add(statement)
        elif texts and word in _TEXT_LEAD_WORDS:
            bare.append((at, word))
    found.update(_lines(text, start, letters))
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
_NEGATIVE_CJK = (*_NEGATION_CJK, "错", "錯", "誤", "틀")
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
