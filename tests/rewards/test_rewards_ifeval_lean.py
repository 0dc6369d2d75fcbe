"""``ifeval`` with lm-eval installed without its dependencies (``make run``'s install) gives
the verdicts of lm-eval imported as usual, instruction for instruction.

Two fresh interpreters score the same rows. One imports lm-eval as usual (``lm_eval.tasks``,
its task manager, datasets, the whole of NLTK) before the checks. The other sees only what the
lean install holds: every module of a distribution outside the closure of rewardrouter's
requirements, the ``ifeval-lean`` extra and lm-eval itself is refused, as an interpreter of
that install would refuse it, so that ``lm_eval.tasks`` cannot import and
:func:`rewardrouter.rewards.ifeval.kind.checks` loads the IFEval modules without it, on the part of
NLTK they use. Every instruction of lm-eval's registry is drawn with kwargs by lm-eval's own
builders (``build_description`` with seeded randomness) and checked on each response, by lm-eval's
strict and loose tests and by this kind, in both interpreters.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import rewardrouter

pytestmark = pytest.mark.slow  # a long file: `make test` starts it first

tomllib = pytest.importorskip("tomllib")  # Python 3.11+: the extras are read from pyproject.toml

PYPROJECT = Path(rewardrouter.__file__).resolve().parent.parent / "pyproject.toml"
#: Installed in every virtual environment (`python -m venv`), whatever the requirements.
VENV = ("pip", "setuptools")
#: What lm-eval's dependencies bring that the lean install must not hold.
HEAVY = ("datasets", "pandas", "pyarrow", "scipy", "sklearn", "evaluate")

# Scores the rows in this interpreter and prints the verdicts as JSON. argv[1]: "full" (lm-eval
# imported as usual) or "lean" (the modules of stdin's "refused" cannot be imported). Without
# stdin's "rows", the rows are drawn here first: every registered instruction, its kwargs from
# lm-eval's builders after random.seed(seed), on the fixed responses and on one made of the
# kwargs' own words (keywords, end phrase, markers), so that some rows follow them.
SCORE = r"""
import importlib.abc, json, random, sys, types
mode = sys.argv[1]
given = json.load(sys.stdin)
refused = frozenset(given["refused"])


class Refused(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in refused:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


if mode == "lean":
    assert not refused & set(sys.modules), sorted(refused & set(sys.modules))
    sys.meta_path.insert(0, Refused())
else:  # as lm-eval's own evaluation imports them: the checks then use these
    import lm_eval.tasks, nltk

from rewardrouter.rewards.ifeval import kind as ifeval

utils = ifeval.checks()
tasks = sys.modules.get("lm_eval.tasks")
rows = given["rows"]
if rows is None:
    registry = utils.instructions_registry.INSTRUCTION_DICT
    rows = []
    for seed in given["seeds"]:
        ids, kwargs = sorted(registry), []
        for name in ids:
            random.seed(seed)  # each instruction's draw, whatever the others in the registry
            instruction = registry[name](name)
            if name == "combination:repeat_prompt":
                instruction.build_description(prompt_to_repeat=given["prompt"])
            else:
                instruction.build_description()
            kwargs.append(instruction.get_instruction_args() or {})
        words = []
        for kw in kwargs:
            for value in kw.values():
                words.extend(value if isinstance(value, list) else [value])
        own = " ".join(str(word) for word in words)
        for response in [*given["responses"], own, given["prompt"] + "\n" + own]:
            rows.append({"ids": ids, "kwargs": kwargs, "response": response})


def lm_eval(test, row):
    example = utils.InputExample(
        key=0, instruction_id_list=row["ids"], prompt=given["prompt"], kwargs=row["kwargs"]
    )
    try:
        return test(example, row["response"]).follow_instruction_list
    except Exception as exc:
        return type(exc).__name__


def ours(reward, row):
    label = {"instruction_id_list": row["ids"], "kwargs": row["kwargs"]}
    sample = types.SimpleNamespace(prompt=given["prompt"], response=row["response"], label=label)
    try:
        return list(reward.followed(sample).values())
    except Exception as exc:
        return type(exc).__name__


strict, loose = (ifeval.IfevalReward(ifeval.IfevalSettings(mode=m)) for m in ("strict", "loose"))
verdicts = [
    {
        "lm_eval_strict": lm_eval(utils.test_instruction_following_strict, row),
        "lm_eval_loose": lm_eval(utils.test_instruction_following_loose, row),
        "ours_strict": ours(strict, row),
        "ours_loose": ours(loose, row),
    }
    for row in rows
]
names = [m for m in sys.modules if m.startswith("lm_eval.tasks.ifeval.")]
try:
    import lm_eval.tasks
    after = "imported"
except ImportError as exc:
    after = f"ImportError: {exc.name}"
print(json.dumps({
    "rows": rows,
    "verdicts": verdicts,
    "files": {name: sys.modules[name].__file__ for name in sorted(names)},
    "task_manager": hasattr(tasks, "TaskManager"),
    "whole_nltk": hasattr(utils.instructions_registry.instructions.instructions_util.nltk, "pos_tag"),
    "import_lm_eval_tasks_after": after,
    "heavy": sorted(set(given["heavy"]) & set(sys.modules)),
}))
"""

PROMPT = "Write a short note about the sea."
RESPONSES = [
    "",
    "the sea is wide and calm and blue and it never stops moving at all",
    "THE SEA IS WIDE AND CALM. IT NEVER STOPS MOVING. WE LOVE IT.",
    "The sea, wide and calm, never stops moving; we love it, always.",
    '"The sea is wide, and calm."',
    '{"note": "the sea", "moods": ["calm", "wild"]}',
    '```json\n{"note": "the sea"}\n```',
    "<<The Sea>>\nIt is wide. It is calm. It is blue.",
    "* waves\n* salt\n* wind\n* gulls",
    "- waves\n- salt\n* wind",
    "The *wide* sea is *calm*, *blue* and *old*.",
    "SECTION 1\nWaves.\nSECTION 2\nSalt.\nSECTION 3\nWind.\nSECTION 4\nGulls.",
    "Section 1\nWaves.\nSection 2\nSalt.",
    "Waves come in.\n***\nSalt stays.\n***\nWind blows.\n***\nGulls cry.",
    "pattern of waves.\n\npattern of salt.\n\npattern of wind.\n\npattern of gulls.",
    "Dear [name], meet me at [place] on [day] with [friend].",
    "The sea is calm.\nP.S. Bring a coat.\nP.P.S Bring tea.",
    "The sea is calm.\n******\nThe sea is wild.",
    "My answer is yes.",
    "My answer is no.",
    "My answer is yes. My answer is no.",
    "La mer est calme et bleue, et elle ne s'arrête jamais de bouger.",
    "समुद्र बहुत बड़ा और शांत है और यह कभी नहीं रुकता।",
    "The sea is calm. Is there anything else I can help with?",
    PROMPT + "\nThe sea is calm.",
    " ".join(["The sea is calm today and the waves are slow."] * 40),
    " ".join(f"Sentence {n} is SHORT." for n in range(30)),
    "yyyyyyy yyyy yy y",
    "1234567890 42",
]
SEEDS = [0, 1, 2]


def _closure(requirements: Iterable[str]) -> set[str]:
    """The installed distributions that ``requirements`` need, with theirs, by canonical name."""
    found: set[str] = set()
    seen: set[tuple[str, frozenset[str]]] = set()  # a distribution with each set of its extras
    todo = [Requirement(r) for r in requirements]
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        extras = frozenset({"", *requirement.extras})
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        try:
            needs = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue  # not installed here: nothing of it to refuse either
        found.add(name)
        for need in map(Requirement, needs):
            if need.marker is None or any(need.marker.evaluate({"extra": e}) for e in extras):
                todo.append(need)
    return found


def _refused() -> list[str]:
    """Top-level modules of the distributions installed here that the lean install lacks:
    outside the closure of rewardrouter's requirements and its ``ifeval-lean`` extra, plus
    lm-eval itself without its requirements."""
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    lean = project["dependencies"] + project["optional-dependencies"]["ifeval-lean"]
    kept = _closure(lean) | {canonicalize_name(n) for n in ("lm-eval", "rewardrouter", *VENV)}
    refused = {
        module
        for module, dists in importlib.metadata.packages_distributions().items()
        if not {canonicalize_name(d) for d in dists} & kept
    }
    return sorted(refused)


def _score(mode: str, given: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    """:data:`SCORE` in a fresh interpreter, whose NLTK data path holds nothing (the Punkt model
    comes from the extra's package in both)."""
    empty = tmp_path / "nltk_data"
    empty.mkdir(exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-c", SCORE, mode],
        input=json.dumps(given),
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NLTK_DATA": str(empty), "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


class Scored(NamedTuple):
    """What each interpreter printed, and the modules the lean one refused."""

    full: dict[str, Any]
    lean: dict[str, Any]
    refused: list[str]


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Scored:
    tmp_path = tmp_path_factory.mktemp("ifeval_lean")
    refused = _refused()
    given = {
        "prompt": PROMPT,
        "responses": RESPONSES,
        "seeds": SEEDS,
        "rows": None,
        "refused": refused,
        "heavy": HEAVY,
    }
    full = _score("full", given, tmp_path)
    lean = _score("lean", {**given, "rows": full["rows"]}, tmp_path)
    return Scored(full, lean, refused)


def test_the_lean_interpreter_lacks_what_lm_evals_dependencies_bring(scored: Scored) -> None:
    # the emulation refuses them, and nothing the checks need
    assert set(HEAVY) <= set(scored.refused)
    checks_need = {"lm_eval", "nltk", "langdetect", "immutabledict", "packaging", "punkt"}
    assert not checks_need & set(scored.refused)
    assert scored.lean["heavy"] == []
    assert scored.full["heavy"] != []  # lm-eval imported as usual brings them


def test_the_full_interpreter_uses_lm_evals_own_package(scored: Scored) -> None:
    assert scored.full["task_manager"] is True
    assert scored.full["import_lm_eval_tasks_after"] == "imported"
    assert scored.full["whole_nltk"] is True


def test_the_lean_checks_run_on_the_part_of_nltk_they_use(scored: Scored) -> None:
    # NLTK's tokenizers and data loader, not its __init__ (which imports all of NLTK)
    assert scored.lean["whole_nltk"] is False


def test_the_lean_load_leaves_no_stand_in_for_lm_eval_tasks(scored: Scored) -> None:
    # `lm_eval.tasks` was not imported, and importing it afterwards runs lm-eval's own package
    # (which fails on a missing dependency) rather than finding the stand-in of the load
    assert scored.lean["task_manager"] is False
    missing = scored.lean["import_lm_eval_tasks_after"].removeprefix("ImportError: ")
    assert missing.partition(".")[0] in scored.refused


def test_both_load_lm_evals_same_files(scored: Scored) -> None:
    files = scored.full["files"]
    assert {"instructions", "instructions_util", "instructions_registry", "utils"} <= {
        name.rpartition(".")[2] for name in files
    }
    assert scored.lean["files"] == files


@pytest.mark.parametrize(
    "verdict", ["lm_eval_strict", "lm_eval_loose", "ours_strict", "ours_loose"]
)
def test_every_instruction_gets_the_same_verdict_on_every_row(scored: Scored, verdict: str) -> None:
    rows = scored.full["rows"]
    full = [v[verdict] for v in scored.full["verdicts"]]
    lean = [v[verdict] for v in scored.lean["verdicts"]]
    assert len(full) == len(lean) == len(rows) == len(SEEDS) * (len(RESPONSES) + 2)
    differ = [
        (row["response"][:60], full_row, lean_row)
        for row, full_row, lean_row in zip(rows, full, lean, strict=True)
        if full_row != lean_row
    ]
    assert differ == []


def test_the_rows_exercise_every_instruction_both_ways(scored: Scored) -> None:
    # agreement means something only where rows follow an instruction and rows do not
    outcomes: dict[str, set[Any]] = {}
    for row, verdict in zip(scored.full["rows"], scored.full["verdicts"], strict=True):
        assert isinstance(verdict["lm_eval_strict"], list), verdict  # no check raised
        for name, followed in zip(row["ids"], verdict["lm_eval_strict"], strict=True):
            outcomes.setdefault(name, set()).add(followed)
    one_way = {name: seen for name, seen in outcomes.items() if seen != {True, False}}
    assert one_way == {}
