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
for that instruction, and ``None`` (not applicable) for rows that do not ask for it. ``loose``
mode is IFEval's: the instruction counts as followed when the response, or the response without
its first line, last line, or ``*`` markup, follows it.

``length_constraints:number_sentences`` and ``change_case:capital_word_frequency`` need NLTK's
``punkt_tab`` data (``python -m nltk.downloader punkt_tab``); without it those two instructions
fail with that command in the message instead of a reward.

Compiling a router checks that the extra is installed and that a ``score`` names a registered
instruction without importing lm-eval (with NLTK, seconds of imports); the first row scored
imports it, in the process that scores it.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import importlib.util
import io
import json
import logging
import threading
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rewardrouter.errors import did_you_mean
from rewardrouter.introspect import ResolveError
from rewardrouter.rewards.labels import after_thinking
from rewardrouter.rewards.registry import Bound, Resources, resource_kind
from rewardrouter.sample import metadata_of

log = logging.getLogger("rewardrouter.ifeval")

INSTALL = "pip install 'rewardrouter[ifeval]'"
PUNKT_INSTRUCTIONS = ("length_constraints:number_sentences", "change_case:capital_word_frequency")
#: The modules the checks import: lm-eval and what its ``ifeval`` extra brings.
EXTRA_MODULES = ("lm_eval", "nltk", "langdetect", "immutabledict")

_import_lock = threading.Lock()


class IfevalLabelError(ValueError):
    """A label that holds no IFEval instructions the registry knows."""


class IfevalDataMissing(LookupError):
    """An instruction whose check needs NLTK data that is not installed."""


def missing_modules() -> list[str]:
    """The modules of :data:`EXTRA_MODULES` that are not installed, found without importing any
    (importing lm-eval's checks takes seconds: NLTK brings scipy and scikit-learn)."""
    return [name for name in EXTRA_MODULES if importlib.util.find_spec(name) is None]


@cache
def checks() -> ModuleType:
    """lm-eval's ``lm_eval.tasks.ifeval.utils`` (strict and loose tests, the registry).

    Imported once, by the first sample that needs it, in the process that scores it. Its import
    would try to download NLTK's ``punkt_tab`` and print to stdout; a grader reaches no network
    and writes nothing to a trainer's stdout, so both are held off.
    """
    with _import_lock:  # scoring threads share the swapped-out downloader
        import nltk

        asked: list[Any] = []

        def refuse(*args: Any, **kwargs: Any) -> bool:
            asked.append(args)
            return False

        download = nltk.download
        nltk.download = refuse
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                from lm_eval.tasks.ifeval import utils
        finally:
            nltk.download = download
        # langdetect loads its language profiles on the first detect() and publishes the
        # factory before they are loaded: a second scoring thread then sees no profiles (or
        # some) and the language checks answer wrongly. Load them here, once, under the lock;
        # and fix its random seed, without which a short text's language varies run to run.
        from langdetect import DetectorFactory
        from langdetect.detector_factory import init_factory

        DetectorFactory.seed = 0
        init_factory()
    if asked:
        log.warning(
            "NLTK's punkt_tab data is not installed: %s fail until `python -m nltk.downloader "
            "punkt_tab` is run",
            " and ".join(PUNKT_INSTRUCTIONS),
        )
    module: ModuleType = utils
    return module


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


def _instructions(sample: Any) -> tuple[list[str], list[dict[str, Any]]]:
    label = getattr(sample, "label", None)
    data: Any = label if label not in (None, "") else metadata_of(sample)
    if isinstance(data, str | bytes):
        try:
            data = json.loads(data)
        except ValueError:
            raise IfevalLabelError(
                f"the label is a string that is not JSON: {data[:120]!r}"
            ) from None
    if not isinstance(data, Mapping) or "instruction_id_list" not in data:
        found = sorted(map(str, data)) if isinstance(data, Mapping) else type(data).__name__
        raise IfevalLabelError(
            f"no `instruction_id_list` in the label (found {found}); expected "
            '{"instruction_id_list": [...], "kwargs": [{...}, ...]}'
        )
    ids = list(data["instruction_id_list"])
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
    """``await reward(args, sample)``: the term's ``score`` of the response (module docstring)."""

    __slots__ = ("name", "settings")

    def __init__(self, settings: IfevalSettings) -> None:
        self.settings = settings
        self.name = f"ifeval {settings.mode} {settings.score}"

    def __repr__(self) -> str:
        return f"IfevalReward({self.name!r})"

    def followed(self, sample: Any) -> dict[str, bool]:
        """Instruction id → whether the response follows it, in the label's order."""
        ids, kwargs = _instructions(sample)
        utils = checks()
        response = getattr(sample, "response", "") or ""
        if self.settings.strip_thinking:
            response = after_thinking(response)
        prompt = getattr(sample, "prompt", "")
        example = utils.InputExample(
            key=0,
            instruction_id_list=ids,
            prompt=prompt if isinstance(prompt, str) else "",
            kwargs=kwargs,
        )
        test = (
            utils.test_instruction_following_strict
            if self.settings.mode == "strict"
            else utils.test_instruction_following_loose
        )
        try:
            result = test(example, response)
        except LookupError as exc:
            needs = [i for i in ids if i in PUNKT_INSTRUCTIONS]
            if not needs:
                raise
            raise IfevalDataMissing(
                f"{', '.join(needs)} needs NLTK's punkt_tab data: run `python -m nltk.downloader "
                f"punkt_tab` (or point NLTK_DATA at a copy) ({type(exc).__name__})"
            ) from None
        return dict(zip(ids, map(bool, result.follow_instruction_list), strict=True))

    def score(self, sample: Any) -> float | None:
        score = self.settings.score
        if score not in ("all", "fraction"):
            ids, _ = _instructions(sample)
            if score not in ids:
                return None
        followed = self.followed(sample)
        if score == "all":
            return float(all(followed.values()))
        if score == "fraction":
            return sum(followed.values()) / len(followed)
        return float(followed[score])

    async def __call__(self, args: Any, sample: Any) -> float | None:
        # Regexes and language detection: off the event loop.
        return await asyncio.to_thread(self.score, sample)


@resource_kind("ifeval", IfevalSettings)
def build(settings: IfevalSettings, resources: Resources) -> Bound:
    """IFEval instructions checked by lm-eval's registry, strict or loose.

    Raises :class:`ResolveError` with the install line when lm-eval is absent; imports nothing
    (the checks are imported by the first sample scored).
    """
    absent = missing_modules()
    if absent:
        raise ResolveError(
            f"kind 'ifeval' uses lm-eval's IFEval checks, which are not installed "
            f"(no module named {', '.join(map(repr, absent))})",
            INSTALL,
        )
    reward = resources.get(
        (IfevalReward, settings.model_dump_json()), lambda: IfevalReward(settings)
    )
    return Bound(reward, "single", reward.name)
