"""The words that state a choice, in every language the multiple-choice graders read: tables.

- :data:`LEADS`: the leads of a statement (``the answer is``, ``Answer:``, ``答案是``,
  ``الإجابة هي``, ``उत्तर है``, ``Jibu ni``, ...), by kind;
- :data:`FILLER`: what may stand between a lead and its letter;
- :data:`NATIVE_LETTERS`: the letters Arabic and Bengali write options A to D with (``أ ب ج د``,
  ``অ ব ড ঢ``, as simple-evals' multilingual MMLU maps them);
- :data:`LIST_WORDS_LATIN`, :data:`LIST_WORDS_OTHER`, :data:`NEGATIONS`,
  :data:`NEGATIONS_JOINED` and :data:`NEGATIONS_AFTER`: the words that make a letter one of
  several ("or", "and"), or take it back ("not"), per language.

Languages: English, Chinese, Japanese, Korean, Spanish, French, German, Italian, Portuguese,
Indonesian, Russian, Vietnamese, and the other languages of MMLU-ProX (Afrikaans, Arabic,
Bengali, Czech, Hindi, Hungarian, Marathi, Nepali, Serbian, Swahili, Telugu, Thai, Ukrainian,
Urdu, Wolof, Yoruba, Zulu). Every pattern here ends on a word, never on spaces, and has no two
quantifiers side by side that can take the same characters (the statements module's rule).
"""

from __future__ import annotations

from typing import Literal, NamedTuple


class Lead(NamedTuple):
    """Forms of a lead: its kind, the (lower-case) words it starts with, its regex (which ends
    on a word, not on spaces)."""

    kind: Literal["lead", "hedged", "opening", "so", "fix"]
    words: tuple[str, ...]
    pattern: str


IS = r"(?:is|was|would\s+be|should\s+be|must\s+be|will\s+be|has\s+to\s+be)"
DASH = "[-\u2013\u2014]"  # a hyphen, an en dash, an em dash
APOSTROPHE = "['\u2019]"
# After a correction: "no,", "so", then "it's", "the answer is", "I'll go with", "答案是"...
_FIX_TAIL = (
    rf"(?:\s*[,.:;!]|\s*{DASH})*(?:\s*no(?:\s*[,.!]|\s*{DASH})+)?(?:\s*(?:so|then|and|but)"
    rf"(?:\s*,)?)?(?:\s*(?:i\s+think|i{APOSTROPHE}?d\s+say|i{APOSTROPHE}?ll\s+go\s+with"
    rf"|i\s+(?:choose|pick)|i{APOSTROPHE}?ll\s+pick|it{APOSTROPHE}?s(?:\s+actually)?"
    r"|it\s+(?:is|should\s+be|must\s+be)|make\s+it"
    rf"|the\s+(?:correct\s+|right\s+|final\s+)?answer\s+is|the\s+answer{APOSTROPHE}?s"
    r"|(?:答案)?(?:应该|應該|应|應)?(?:是|为|為|选|選)|答えは|정답은))?"
)
# Yoruba, whose accents may be written as one character or as combining marks after a letter
# (simple-evals writes "Àmọ̀nà" both ways): each vowel of a word, any accent.
_MARKS = "[\u0300\u0301\u0304\u0323]*"
_YORUBA_LETTERS = {"a": "[aàá]", "e": "[eèéẹ]", "i": "[iìí]", "o": "[oòóọ]", "u": "[uùú]",
                   "s": "[sṣ]"}  # fmt: skip


def _accented(word: str) -> str:
    """A regex of ``word`` (plain letters) with any Yoruba accent on its letters."""
    return "".join(_YORUBA_LETTERS.get(c, c) + _MARKS for c in word)


#: The answer's name in Yoruba, as MMLU-ProX and simple-evals write it (Ìdáhùn, Idahun,
#: Àmọ̀nà, Àdáhùn, Ànúgọ, Àṣàyàn), its accents as one character or combining marks.
YORUBA_PLAIN = ("idahun", "adahun", "amona", "anugo", "asayan")
YORUBA_ANSWER = "(?:" + "|".join(map(_accented, YORUBA_PLAIN)) + ")"
#: The word a Yoruba lead is filed under (its trigger is :data:`YORUBA_ANSWER`, not a word).
YORUBA_WORD = "ìdáhùn"

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
    Lead("fix", ("no",), rf"(?:no(?:\s*,)?\s*wait|no(?=\s*[,.!]|\s*{DASH}))" + _FIX_TAIL),
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
         rf"|it{APOSTROPHE}?s|it\s+is|it\s+must\s+be|it\s+should\s+be|it\s+would\s+be"
         rf"|it{APOSTROPHE}?d\s+be|the\s+answer\s+is))?"),
    Lead("hedged", ("i'd", "i\u2019d", "i would", "i'll", "i\u2019ll", "i will"),
         rf"i(?:{APOSTROPHE}d|\s+would|{APOSTROPHE}ll|\s+will)\s+(?:say|go\s+for)"),
    Lead("hedged", ("leav",), r"leav(?:es|ing|e)\b(?:\s+(?:us|me|only)(?:\s+with)?)?"),
    # -- at a sentence's start: "It's (C).", "Option C.", "So, C.", "Therefore I pick B."
    Lead("opening", ("it",),
         rf"it(?:{APOSTROPHE}s|\s+is|\s+must\s+be|\s+has\s+to\s+be|{APOSTROPHE}d\s+be"
         r"|\s+would\s+be)"),
    Lead("opening", ("option", "choice", "letter"), r"(?:option|choice|letter)"),
    Lead("so", ("so", "thus", "therefore", "hence", "consequently", "ergo"),
         r"(?:so|thus|therefore|hence|consequently|ergo)\b(?:\s*,)?"
         rf"(?:\s*(?:it{APOSTROPHE}?s|it\s+is|it\s+must\s+be|we\s+(?:get|have|pick|choose)"
         r"|i\s+(?:pick|choose))\b)?"),
    # -- English: the answer is / Answer: / Answer - / my choice is / the correct option is
    Lead("lead", ("answer",), rf"answer\s*(?:{IS}|=|:|->|=>|\u2192|{DASH})"),
    Lead("lead", ("choice", "selection"),
         rf"(?:choice|selection)\s*(?:is|would\s+be|should\s+be|:|{DASH})"),
    Lead("lead", ("option", "final"), rf"(?:option|final)\s*(?::|{DASH})"),
    Lead("lead", ("correct", "right", "best", "final", "only"),
         r"(?:correct|right|best|final|only)\s+(?:option|letter|choice)\s*"
         rf"(?:is|would\s+be|:|{DASH})"),
    # I'd go with / I pick / I choose / I'm selecting / opt for / settled on
    Lead("lead", ("go with", "going with"), r"go(?:ing)?\s+with"),
    Lead("lead", ("pick", "choos", "chose", "select"),
         r"(?:pick(?:s|ing|ed)?|choos(?:es|ing|e)|chose|select(?:s|ing|ed)?)\b"),
    Lead("lead", ("opt", "settl"),
         r"(?:opt(?:s|ing|ed)?\s+for|settl(?:es|ed|ing|e)\s+(?:on|for))"),
    # Chinese: 答案是C, 正确答案为C, 答案:C, 答:C, 答复:C, 答曰:C, 选C, 故选C, 选择C, 选项C
    Lead("lead", ("答案",), r"答案(?:\s*(?:应该|應該|应|應))?(?:\s*(?:是|为|為|选|選))?(?:\s*:)?"),
    Lead("lead", ("答",), r"答\s*:"),
    Lead("lead", ("答复", "答覆", "答曰"), r"答(?:复|覆|曰)(?:\s*(?:是|为|為))?(?:\s*:)?"),
    Lead("lead", ("选", "選"), r"(?:选|選)(?:择|擇|項|项)?(?:\s*(?:是|为))?(?:\s*:)?"),
    # Japanese: 答えはC, 正解はC, 回答:C, 解答:C
    Lead("lead", ("答え", "正解", "回答", "解答"), r"(?:答え|正解|回答|解答)\s*(?:は|:)"),
    # Korean: 정답은 C, 정답: C, 답: C, 답변: C, 답은 (C)입니다
    Lead("lead", ("정답", "답변", "답"), r"(?:정답|답변|답)\s*(?:은|는|:)"),
    # Spanish: la respuesta (correcta) es C, Respuesta: C, elijo C
    Lead("lead", ("respuesta",),
         rf"respuesta(?:\s+(?:correcta|final))?\s*(?:es|ser[íi]a|será|:|{DASH})"),
    Lead("lead", ("elijo", "escojo", "selecciono"), r"(?:elijo|escojo|selecciono)\b"),
    # French: la (bonne) réponse est C, Réponse : C, je choisis C
    Lead("lead", ("réponse", "reponse"),
         rf"r[ée]ponse(?:\s+(?:correcte|finale|juste))?\s*(?:est|serait|:|{DASH})"),
    Lead("lead", ("choisis",), r"choisis\b"),
    # German: die (richtige) Antwort ist / lautet C, Antwort: C, ich wähle C
    Lead("lead", ("antwort",), rf"antwort\s*(?:ist|lautet|w[äa]re|:|{DASH})"),
    Lead("lead", ("wähle", "wahle"), r"w[äa]hle\b"),
    # Italian, Portuguese, Indonesian, Russian, Vietnamese: Risposta: C, Resposta: C,
    # Jawaban: C, Ответ: C, Ответ - C, Đáp án: C, Câu trả lời là C, Trả lời: C
    Lead("lead", ("risposta",),
         rf"risposta(?:\s+(?:corretta|finale|giusta))?\s*(?:è|e'|:|{DASH})"),
    Lead("lead", ("resposta",), rf"resposta(?:\s+(?:correta|final|certa))?\s*(?:é|:|{DASH})"),
    Lead("lead", ("jawaban",),
         rf"jawaban(?:nya)?(?:\s+(?:yang\s+benar|akhir))?\s*(?:adalah|ialah|:|{DASH})"),
    Lead("lead", ("ответ",), rf"ответ\s*(?::|{DASH})"),
    Lead("lead", ("đáp án",), r"đáp\s+án\s*(?:là|:)"),
    Lead("lead", ("trả lời",), rf"trả\s+lời(?:\s+(?:đúng|cuối\s+cùng))?\s*(?:là|:|{DASH})"),
    # Afrikaans, Czech, Hungarian, Serbian, Ukrainian: Die antwoord is C, Odpověď je C,
    # A válasz (C), Odgovor je C, Відповідь: C
    Lead("lead", ("antwoord",), rf"antwoord\s*(?:is|:|{DASH})"),
    Lead("lead", ("odpověď", "odpoveď"), rf"odpov[eě]ď\s*(?:je|zní|:|{DASH})"),
    Lead("lead", ("válasz",), rf"válasz(?:\s*(?::|{DASH}))?(?:\s*az?(?=\s))?"),
    Lead("lead", ("odgovor", "одговор"), rf"(?:odgovor\s*(?:je|:|{DASH})|одговор\s*(?:је|:|{DASH}))"),  # noqa: RUF001
    Lead("lead", ("відповідь",), rf"відповідь\s*(?::|є|{DASH})"),
    # Swahili, Zulu, Wolof, Yoruba: Jibu ni C, Impendulo ithi C, Tontu bi mooy C, Ìdáhùn náà ni C
    Lead("lead", ("jibu",), rf"jibu(?:\s+sahihi)?\s*(?:ni|:|{DASH})"),
    Lead("lead", ("impendulo",), rf"impendulo(?:\s+efanele)?\s*(?:ithi|ngu|:|{DASH})"),
    Lead("lead", ("tontu",), rf"tontu(?:\s+bi)?\s*(?:mooy|moo|:|{DASH})"),
    Lead("lead", (YORUBA_WORD,),
         YORUBA_ANSWER + rf"(?:\s+{_accented('naa')})?\s*(?:{_accented('ni')}|:|{DASH})"),
    # Thai, Arabic, Urdu: คำตอบคือ C, الإجابة هي C, الإجابة الصحيحة: C, جواب (C) ہے
    Lead("lead", ("คำตอบ",), r"คำตอบ(?:ที่ถูกต้อง|สุดท้าย)?\s*(?:คือ|:)"),
    Lead("lead", ("الإجابة", "الاجابة", "إجابة", "اجابة", "الجواب", "جواب"),
         r"(?:ال)?(?:إجابة|اجابة|جواب)(?:\s+(?:ال)?(?:صحيحة|نهائية|صحيح|نهائي))?"
         rf"(?:\s*(?:هي|هو|ہے))?(?:\s*(?::|{DASH}))?"),
    # Hindi, Marathi, Nepali, Bengali, Telugu: उत्तर है C, उत्तर आहे C, उत्तर (C) हो।,
    # উত্তর হল C, উত্তরঃ C, సమాధానం (C)
    Lead("lead", ("उत्तर", "जवाब"), rf"(?:उत्तर|जवाब)(?:\s*(?:है|आहे|हो|:|{DASH}))?"),
    Lead("lead", ("উত্তর",), rf"উত্তর(?:\s*(?:হল|হলো|হচ্ছে|:|ঃ|{DASH}))?"),
    Lead("lead", ("సమాధానం",), rf"సమాధానం(?:\s*(?::|{DASH}))?"),
)  # fmt: skip

# Between a lead and its letter: an adverb, an article, the word "option", a colon.
FILLER = (
    r"\s*(?:(?:definitely|clearly|probably|likely|surely|certainly|obviously|therefore|thus"
    r"|indeed|simply|just|actually|most\s+likely|for\s+sure|now|then)\b(?:\s*,)?\s*)?"
    rf"(?:(?:the|la|le|l{APOSTROPHE}|el|die|der|das)\s*)?"
    r"(?:(?:option|choice|letter|answer|opci[óo]n|opção|opzione|选项|選項|项|項|選択肢|선택지"
    rf"|보기|الخيار|विकल्प)\s*)?(?:(?::|{DASH})\s*)?"
)

#: Letters that Arabic and Bengali write options A to D with, as simple-evals' multilingual
#: MMLU reads them: each as the option it stands for.
NATIVE_LETTERS = {
    "\u0623": "A", "\u0628": "B", "\u062c": "C", "\u062f": "D",  # أ ب ج د
    "\u0985": "A", "\u09ac": "B", "\u09a1": "C", "\u09a2": "D",  # অ ব ড ঢ
}  # fmt: skip
_NATIVE = "".join(NATIVE_LETTERS)
# Arabic's letters and marks (not its comma, semicolon, question mark, full stop) and Bengali's
_SCRIPTS = "\u0610-\u061a\u0620-\u065f\u066e-\u06d3\u06d5-\u06ff\u0980-\u09ff"
#: Latin letters with diacritics and combining marks: a letter next to one is a word's
#: ("Câu", "Ça"), never an option.
LATIN_MARKED = "\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u0300-\u036f\u1e00-\u1eff"
#: After one of :data:`NATIVE_LETTERS` that stands alone (the letter just read): no letter or
#: mark of its script before it, a space, a stop or the end after it.
NATIVE_ALONE = (
    rf"(?<![\w{_SCRIPTS}].)"
    r"(?=[\s.,;:!?)\]}*$`'\"\u060c\u061b\u061f\u06d4\u0964\u3002]|$)"
)
#: One of :data:`NATIVE_LETTERS` standing alone.
NATIVE_LETTER = f"[{_NATIVE}]{NATIVE_ALONE}"
#: What a statement of several options joins them with besides a comma: "or", "and", "vs", and
#: "to" and "through" of a range, per language ("A, B or C", "أ أو ب", "A या B", "A หรือ B").
LIST_WORDS_LATIN = (
    "and", "or", "und", "oder", "et", "ou", "y", "o", "e", "nor", "vs", "to", "through", "thru",
    "of", "en", "au", "na", "nebo", "vagy", "és", "ili", "i", "hoặc", "hay", "và", "atau", "dan",
    "tabi", "tàbí", "ati", "àti", "noma", "futhi", "walla", "ak",
)  # fmt: skip
LIST_WORDS_OTHER = (
    "和", "或", "与", "與", "及", "와", "과", "및", "또는", "や", "と", "か", "または",
    "أو", "او", "و", "یا", "اور", "या", "अथवा", "और", "किंवा", "आणि", "वा", "अनि", "বা", "অথবা",
    "এবং", "ও", "หรือ", "และ", "или", "и", "або", "чи", "і", "та", "లేదా", "మరియు",  # noqa: RUF001
)  # fmt: skip
#: Words that take back what follows them ("not C", "नहीं A", "ليس أ"), split on spaces.
NEGATIONS = frozenset(
    {"not", "never", "nor", "neither", "without", "except", "unlike", "nicht", "kein", "keine",
     "pas", "jamais", "nunca", "ni", "cannot", "nie", "není", "nem", "nije", "ne", "не", "ні",
     "нет", "không", "chẳng", "bukan", "tidak", "sio", "siyo", "hapana", "akuyona", "akusiyo",
     "kò", "kìí", "नहीं", "नाही", "होइन", "हैन", "না", "নয়", "نہیں", "ليس", "ليست", "لا",
     "غير", "కాదు"}
)  # fmt: skip
#: The same in scripts written without spaces between words: the text before a statement ends
#: with one ("不是C", "ไม่ใช่ C").
NEGATIONS_JOINED = ("不", "没", "沒", "非", "别", "別", "勿", "未", "아닌", "ไม่", "ไม่ใช่")
#: Words right after a letter that take it back where the verb comes last: "उत्तर (A) नहीं है",
#: "উত্তর ক নয়", "ఎ కాదు".
NEGATIONS_AFTER = ("नहीं", "नाही", "होइन", "हैन", "নয়", "না", "نہیں", "కాదు", "ไม่", "không")
