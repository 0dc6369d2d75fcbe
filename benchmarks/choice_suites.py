"""Other projects' multiple-choice grader tests through ``gpqa`` and the peers' own graders.

Reads, at run time, the test cases of the projects' checkouts (their cases are never copied
into this project; see :func:`copied_responses`):

- slime ``tests/test_rm_gpqa.py``: the letter-extraction table and the asserts on
  ``_extract_letter_from_response`` and ``compute_gpqa_reward``;
- NeMo-RL ``tests/unit/environments/test_math_environment.py``: the multiple-choice fixture
  (English ``Answer:`` and Chinese ``答案:``) and what the test asserts of its rewards;
- lm-evaluation-harness ``tests/test_filters.py``: the ``MultiChoiceRegexFilter`` cases;
- lighteval ``tests/unit/metrics/test_extractive_match.py``: the letter-extraction tables (English,
  French, Chinese); rows whose gold is not a bare letter test lighteval's reading of a gold
  text, not of a response, and are counted as left out;
- rofa (victorlavrenko/rofa-dev) ``tests/test_parse.py`` and ``tests/test_parse_debug.py``:
  phrasings, and whole model outputs to medical questions (four options), each with the
  letter it must be read as, or none.

The asserts are read by a small interpreter of the test bodies (:func:`checked_calls`): literal
tables, ``for`` loops over them, ``pytest.mark.parametrize`` rows and names bound to calls.

Every case a suite expects to be read as letter X is also graded against another letter (a
*derived* case, expected 0): the letter the response names besides X when there is one, else the
first other option. A grader that says 1 where 0 is expected makes a false positive.

Graders, each on the same cases:

- ``gpqa``, with the case's letters as ``valid_letters`` and its option texts as ``choices``;
- slime ``compute_gpqa_reward`` with the same metadata;
- NeMo-RL's ``multilingual_multichoice`` and ``english_multichoice`` verifiers (their classes
  read from the checkout's source, without Ray);
- lm-eval's GPQA filters (``strict-match``, ``flexible-extract``; from
  ``tasks/gpqa/cot_zeroshot``) and MMLU-Pro's ``custom-extract``, built from the task YAML by
  lm-eval's own filter registry and scored by its ``exact_match`` with the task's options; the
  doc's ``choices`` are the case's option texts (placeholders that no response holds when the
  suite gives none);
- rofa's ``extract_choice_letter`` (``rofa/core/parse.py`` alone).

    python benchmarks/choice_suites.py --slime /tmp/slime --nemo-rl /tmp/RL \\
        --lm-eval /tmp/lm-evaluation-harness --lighteval /tmp/lighteval --rofa /tmp/rofa-dev

A checkout left out leaves out its cases and its graders. Each call runs under the same
10-second alarm as the math suites; a grader that raises gives no verdict (counted apart).
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import re
import string
import sys
import types
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import external_suites

LETTERS = string.ascii_uppercase


@dataclass(frozen=True)
class ChoiceCase:
    """One response of a suite, the label it is graded against and the verdict expected."""

    suite: str  # project file::test function
    response: str
    # a letter, or what the suite passes as the label (an index, an option's text); None: the
    # suite expects no option to be read (a grader is right when it credits no letter)
    label: Any
    letters: str  # the valid option letters
    expected: bool
    choices: tuple[str, ...] = ()
    metadata: tuple[tuple[str, Any], ...] = ()  # more metadata the suite passes (correct_letter)
    derived: bool = False  # another letter than the suite's, expected 0

    def meta(self) -> dict[str, Any]:
        found: dict[str, Any] = {"valid_letters": list(self.letters), **dict(self.metadata)}
        if self.choices:
            found["choices"] = list(self.choices)
        return found


@dataclass
class Loaded:
    """What one suite gave: its cases, and its rows left out with why."""

    cases: list[ChoiceCase] = field(default_factory=list)
    left_out: dict[str, int] = field(default_factory=lambda: defaultdict(int))


# -- reading the suites ------------------------------------------------------------------------


def _literal(node: ast.AST, names: dict[str, Any]) -> Any:
    """The value of ``node``: a literal, a name bound to one, a subscript of one, or a
    list/tuple/dict of those."""
    if isinstance(node, ast.Name):
        if node.id in names:
            return names[node.id]
        raise ValueError(node.id)
    if isinstance(node, ast.Subscript):
        return _literal(node.value, names)[_literal(node.slice, names)]
    if isinstance(node, ast.List):
        return [_literal(e, names) for e in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_literal(e, names) for e in node.elts)
    if isinstance(node, ast.Dict):
        return {
            _literal(k, names): _literal(v, names)
            for k, v in zip(node.keys, node.values, strict=True)
            if k is not None
        }
    return ast.literal_eval(node)


def _callee(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        function = node.func
        if isinstance(function, ast.Name):
            return function.id
        if isinstance(function, ast.Attribute):
            return function.attr
    return None


def _parametrized(function: ast.FunctionDef, names: dict[str, Any]) -> list[dict[str, Any]]:
    """The bindings of each ``pytest.mark.parametrize`` row of ``function`` (one empty binding
    when it has none)."""
    rows: list[dict[str, Any]] = [{}]
    for decorator in function.decorator_list:
        if _callee(decorator) != "parametrize":
            continue
        assert isinstance(decorator, ast.Call)
        argnames = _literal(decorator.args[0], names)
        if isinstance(argnames, str):
            argnames = [a.strip() for a in argnames.split(",")]
        table = decorator.args[1]
        assert isinstance(table, ast.List | ast.Tuple)
        bound = []
        for row in table.elts:
            values = row.elts if isinstance(row, ast.Tuple) and len(argnames) > 1 else [row]
            binding = {}
            for name, value in zip(argnames, values, strict=True):
                try:
                    binding[name] = _literal(value, names)
                except ValueError:
                    binding[name] = ast.unparse(value)  # Language.FRENCH: kept as its text
            bound.append(binding)
        rows = [{**r, **b} for r in rows for b in bound]
    return rows


def _functions(path: Path) -> Iterator[ast.FunctionDef]:
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.FunctionDef):
            yield node


@dataclass(frozen=True)
class Checked:
    """One assert of a suite: the checked function's name and arguments, and what it expects."""

    where: str
    function: str
    args: list[Any]
    kwargs: dict[str, Any]
    expected: Any


def checked_calls(
    path: Path, functions: set[str], names: dict[str, Any], where: str
) -> Iterator[Checked]:
    """Every ``assert f(...) == X`` of the test file ``path`` where ``f`` is one of
    ``functions``, its arguments and ``X`` evaluated: written directly, through a name bound to
    the call (``reward = f(...)``; ``assert reward == 1.0``, ``assert debug.letter == "B"``),
    inside ``for`` loops over literal tables, or over ``pytest.mark.parametrize`` rows. Asserts
    whose values are not literals are skipped (yielded with ``function`` ``""``)."""
    for test in _functions(path):
        for binding in _parametrized(test, names):
            yield from _run(test.body, {**names, **binding}, {}, functions, f"{where}::{test.name}")


def _run(
    body: list[ast.stmt],
    names: dict[str, Any],
    calls: dict[str, ast.Call],
    functions: set[str],
    where: str,
) -> Iterator[Checked]:
    names, calls = dict(names), dict(calls)
    for statement in body:
        if isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Name):
            target = statement.targets[0].id
            if _callee(statement.value) in functions:
                calls[target] = statement.value  # type: ignore[assignment]
                continue
            try:
                names[target] = _literal(statement.value, names)
            except (ValueError, SyntaxError, KeyError, TypeError):
                names.pop(target, None)
        elif isinstance(statement, ast.For):
            try:
                rows = _literal(statement.iter, names)
            except (ValueError, SyntaxError, KeyError, TypeError):
                continue
            for row in rows:
                bound = dict(names)
                if isinstance(statement.target, ast.Name):
                    bound[statement.target.id] = row
                elif isinstance(statement.target, ast.Tuple):
                    for element, value in zip(statement.target.elts, row, strict=True):
                        assert isinstance(element, ast.Name)
                        bound[element.id] = value
                yield from _run(statement.body, bound, calls, functions, where)
        elif isinstance(statement, ast.Assert) and isinstance(statement.test, ast.Compare):
            left = statement.test.left
            if isinstance(left, ast.Attribute):
                if left.attr != "letter" or not isinstance(left.value, ast.Name):
                    continue  # debug.method: not what was read
                left = left.value  # debug.letter: the call bound to `debug`
            call = calls.get(left.id) if isinstance(left, ast.Name) else left
            name = _callee(call) if call is not None else None
            if name not in functions:
                continue
            assert isinstance(call, ast.Call)
            try:
                yield Checked(
                    where,
                    name,
                    [_literal(a, names) for a in call.args],
                    {k.arg: _literal(k.value, names) for k in call.keywords if k.arg},
                    _literal(statement.test.comparators[0], names),
                )
            except (ValueError, SyntaxError, KeyError, TypeError):
                yield Checked(where, "", [], {}, None)


def _other_letter(response: str, right: str, letters: str) -> str:
    """The letter a derived case is graded against: one the response names besides ``right``,
    else the first other option."""
    named = [x for x in re.findall(r"\b([A-Z])\b", response) if x in letters and x != right]
    return named[-1] if named else next(x for x in letters if x != right)


def _with_derived(case: ChoiceCase) -> list[ChoiceCase]:
    if not case.expected or not isinstance(case.label, str) or case.label not in case.letters:
        return [case]
    other = _other_letter(case.response, case.label, case.letters)
    twin = ChoiceCase(
        case.suite, case.response, other, case.letters, False, case.choices, case.metadata, True
    )
    return [case, twin]


def _collect(found: Loaded, checks: Iterator[Checked], make: Callable[[Checked], Any]) -> Loaded:
    for check in checks:
        case = make(check) if check.function else "an argument is not a literal"
        if isinstance(case, ChoiceCase):
            found.cases.extend(_with_derived(case))
        elif isinstance(case, str):
            found.left_out[f"{check.where}: {case}"] += 1
    return found


def _texts(options: Any) -> tuple[str, ...]:
    if isinstance(options, dict):
        return tuple(map(str, options.values()))
    return tuple(map(str, options or ()))


def slime_cases(checkout: Path, default_letters: str) -> Loaded:
    """``tests/test_rm_gpqa.py``: what each assert expects of a response."""
    path = checkout / "tests" / "test_rm_gpqa.py"
    where = "slime tests/test_rm_gpqa.py"

    def make(check: Checked) -> ChoiceCase | str:
        args, kwargs = check.args, check.kwargs
        response = args[0] if args else kwargs.get("response")
        if not isinstance(response, str) or not response:
            return "no response text (a None or empty response is no phrasing)"
        if check.function == "_extract_letter_from_response":
            letters = "".join(args[1]) if len(args) > 1 else default_letters
            if check.expected is None:
                return ChoiceCase(check.where, response, None, letters, False)
            return ChoiceCase(check.where, response, check.expected, letters, True)
        label = args[1] if len(args) > 1 else kwargs.get("label")
        metadata = dict(args[2] if len(args) > 2 else kwargs.get("metadata") or {})
        texts = _texts(metadata.pop("choices", None))
        valid = metadata.pop("valid_letters", None)
        letters = "".join(valid) if valid else (LETTERS[: len(texts)] if texts else default_letters)
        extra = tuple(sorted((k, v) for k, v in metadata.items() if k == "correct_letter"))
        return ChoiceCase(
            check.where, response, label, letters, check.expected == 1.0, texts, extra
        )

    names = {"DEFAULT_VALID_LETTERS": list(default_letters)}
    functions = {"_extract_letter_from_response", "compute_gpqa_reward"}
    return _collect(Loaded(), checked_calls(path, functions, names, where), make)


def rofa_cases(checkout: Path) -> Loaded:
    """``tests/test_parse.py`` and ``tests/test_parse_debug.py``: phrasings and model outputs
    (medical questions, four options) and the letter each must be read as."""
    found = Loaded()
    for name in ("test_parse.py", "test_parse_debug.py"):
        where = f"rofa tests/{name}"

        def make(check: Checked) -> ChoiceCase | str:
            text = check.args[0] if check.args else check.kwargs.get("text")
            if not isinstance(text, str) or not text:
                return "no response text"
            options = check.kwargs.get("options") or (
                check.args[1] if len(check.args) > 1 else None
            )
            label = check.expected if check.expected is None else str(check.expected)
            return ChoiceCase(check.where, text, label, "ABCD", label is not None, _texts(options))

        functions = {"extract_choice_letter", "extract_choice_letter_debug"}
        _collect(found, checked_calls(checkout / "tests" / name, functions, {}, where), make)
    return found


def nemo_rl_cases(checkout: Path) -> Loaded:
    """The multiple-choice fixture of ``test_math_environment.py``, called with each answer key
    the test is parametrized with, and the rewards the test asserts."""
    path = checkout / "tests" / "unit" / "environments" / "test_math_environment.py"
    functions = {f.name: f for f in _functions(path)}
    fixture = functions["multichoice_test_data"]
    test = functions["test_multichoice_env_step_basic"]
    fixture.decorator_list = []
    namespace: dict[str, Any] = {}
    exec(compile(ast.Module([fixture], []), str(path), "exec"), namespace)  # the fixture alone
    expected: dict[int, bool] = {}
    for node in ast.walk(test):
        if not isinstance(node, ast.Compare) or not isinstance(node.left, ast.Subscript):
            continue
        value, index = node.left.value, node.left.slice
        if not (isinstance(value, ast.Attribute) and value.attr == "rewards"):
            continue
        verdict = ast.literal_eval(node.comparators[0]) == 1.0
        if isinstance(index, ast.Slice):
            upper = ast.literal_eval(index.upper) if index.upper is not None else 3
            expected.update(dict.fromkeys(range(upper), verdict))
        else:
            expected[ast.literal_eval(index)] = verdict
    found = Loaded()
    for binding in _parametrized(test, {}):
        key = binding["multichoice_test_data"]
        data = namespace["multichoice_test_data"](types.SimpleNamespace(param=key))
        where = f"NeMo-RL test_math_environment.py::{test.name}[{key}]"
        for i, (log, meta) in enumerate(
            zip(data["message_log_batch"], data["metadata"], strict=True)
        ):
            case = ChoiceCase(where, log[-1]["content"], meta["ground_truth"], "ABCD", expected[i])
            found.cases.extend(_with_derived(case))
    return found


def lm_eval_cases(checkout: Path) -> Loaded:
    """The ``MultiChoiceRegexFilter`` tests of ``tests/test_filters.py``: the response, the
    doc's choices, and the ``(X)`` the filter must give."""
    where = "lm-eval tests/test_filters.py"

    def make(check: Checked) -> ChoiceCase | str | None:
        resps, docs = check.args
        if "choices" not in docs[0]:
            return None  # another filter's test
        choices = _texts(docs[0]["choices"])
        letter = str(check.expected[0][0]).strip("()")
        return ChoiceCase(check.where, resps[0][0], letter, LETTERS[: len(choices)], True, choices)

    path = checkout / "tests" / "test_filters.py"
    return _collect(Loaded(), checked_calls(path, {"apply"}, {}, where), make)


def lighteval_cases(checkout: Path) -> Loaded:
    """The letter tables of ``test_extractive_match.py`` (four options, as its helper builds)."""
    path = checkout / "tests" / "unit" / "metrics" / "test_extractive_match.py"
    found = Loaded()
    for function in _functions(path):
        if function.name not in ("test_extraction_abc", "test_multilingual_extraction_abc"):
            continue
        where = f"lighteval test_extractive_match.py::{function.name}"
        for row in _parametrized(function, {}):
            gold, pred = str(row["gold"]), str(row["pred"])
            if not re.fullmatch(r"[A-Z]", gold):
                found.left_out[f"{where}: the gold is a text, not a letter"] += 1
                continue
            case = ChoiceCase(where, pred, gold, "ABCD", bool(row["expected"]))
            found.cases.extend(_with_derived(case))
    return found


def copied_responses(cases: list[ChoiceCase], tests: Path) -> list[tuple[str, int, str]]:
    """Where the project's ``tests`` hold one of the suites' responses as a string literal (the
    project writes cases of its own; a response of under 20 characters, ``Answer: C``, is
    everyone's)."""
    responses = {c.response.strip() for c in cases if len(c.response.strip()) >= 20}
    found = []
    for path in sorted(tests.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and node.value.strip() in responses
            ):
                found.append((str(path), node.lineno, node.value))
    return found


# -- the graders -------------------------------------------------------------------------------

ChoiceGrader = Callable[[ChoiceCase], bool]


def _gpqa(case: ChoiceCase) -> bool:
    from rewardrouter.rewards.choice.kind import gpqa

    return bool(gpqa(case.response, case.label, case.meta()) == 1.0)


def slime_grader(checkout: Path) -> tuple[ChoiceGrader, str]:
    """slime's ``compute_gpqa_reward`` and its default letters."""
    external_suites._slime(checkout)
    module = importlib.import_module("slime.rollout.rm_hub.gpqa")

    def grade(case: ChoiceCase) -> bool:
        return bool(module.compute_gpqa_reward(case.response, case.label, case.meta()) == 1.0)

    return grade, "".join(module.DEFAULT_VALID_LETTERS)


def rofa_grader(checkout: Path) -> ChoiceGrader:
    """rofa's ``extract_choice_letter`` (``rofa/core/parse.py`` alone, not the package)."""
    spec = importlib.util.spec_from_file_location("rofa_parse", checkout / "rofa/core/parse.py")
    assert spec is not None and spec.loader is not None
    parse = importlib.util.module_from_spec(spec)
    sys.modules["rofa_parse"] = parse  # its dataclasses look their module up
    spec.loader.exec_module(parse)

    def grade(case: ChoiceCase) -> bool:
        options = list(case.choices) if case.choices else None
        return bool(parse.extract_choice_letter(case.response, options=options) == case.label)

    return grade


def _classes_from_source(path: Path, names: set[str], namespace: dict[str, Any]) -> None:
    """Define the classes ``names`` of the file ``path`` in ``namespace``, their decorators
    (``@ray.remote``) dropped, nothing else of the file run."""
    tree = ast.parse(path.read_text(), str(path))
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name in names]
    for node in classes:
        node.decorator_list = []
    body: list[ast.stmt] = list(classes)
    exec(compile(ast.Module(body, []), str(path), "exec"), namespace)


def nemo_rl_graders(checkout: Path) -> dict[str, ChoiceGrader]:
    """NeMo-RL's two multiple-choice verifiers, the label the letter as its datasets give it."""
    spec = importlib.util.spec_from_file_location(
        "nemo_answer_parsing", checkout / "nemo_rl" / "evals" / "answer_parsing.py"
    )
    assert spec is not None and spec.loader is not None
    parsing = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(parsing)
    namespace: dict[str, Any] = {"re": re, "answer_parsing": parsing, "Union": Any}
    workers = {
        "NeMo-RL multilingual_multichoice": "MultilingualMultichoiceVerifyWorker",
        "NeMo-RL english_multichoice": "EnglishMultichoiceVerifyWorker",
    }
    _classes_from_source(
        checkout / "nemo_rl" / "environments" / "math_environment.py", set(workers.values()),
        namespace,
    )  # fmt: skip

    def grader(worker: Any) -> ChoiceGrader:
        def grade(case: ChoiceCase) -> bool:
            label = case.label if isinstance(case.label, str) else ""
            return bool(worker.verify([case.response], [label])[0] == 1.0)

        return grade

    return {name: grader(namespace[cls]()) for name, cls in workers.items()}


def lm_eval_graders(checkout: Path) -> dict[str, ChoiceGrader]:
    """lm-eval's GPQA (chain-of-thought, zero-shot) and MMLU-Pro filter pipelines and metric."""
    import yaml

    sys.path.insert(0, str(checkout))
    for name in [m for m in sys.modules if m == "lm_eval" or m.startswith("lm_eval.")]:
        del sys.modules[name]  # an installed lm-eval must not stand in for the checkout's
    filters = importlib.import_module("lm_eval.filters")
    metrics = importlib.import_module("lm_eval.api.metrics")

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    tasks = checkout / "lm_eval" / "tasks"
    configs = {
        "gpqa": yaml.load(
            (tasks / "gpqa/cot_zeroshot/_gpqa_cot_zeroshot_yaml").read_text(), Loader
        ),
        "mmlu_pro": yaml.load((tasks / "mmlu_pro/_default_template_yaml").read_text(), Loader),
    }
    graders: dict[str, ChoiceGrader] = {}
    for task, config in configs.items():
        options = {k: v for k, v in config["metric_list"][0].items() if k.startswith("ignore")}
        for entry in config["filter_list"]:
            ensemble = filters.build_filter_ensemble(
                entry["name"], [(f["function"], {k: v for k, v in f.items() if k != "function"})
                                for f in entry["filter"]]
            )  # fmt: skip
            graders[f"lm-eval {task} {entry['name']}"] = _lm_eval_grader(
                ensemble, metrics, options, parenthesized=task == "gpqa"
            )
    return graders


def _lm_eval_grader(
    ensemble: Any, metrics: Any, options: dict[str, Any], *, parenthesized: bool
) -> ChoiceGrader:
    def grade(case: ChoiceCase) -> bool:
        if not isinstance(case.label, str):
            return False  # lm-eval's targets are letters
        texts = case.choices or tuple(f"<no text given for option {x}>" for x in case.letters)
        docs = [{"choices": list(texts)}]
        resps: Any = [[case.response]]
        for make in ensemble.filters:
            resps = make().apply(resps, docs)
        prediction = next(iter(resps))[0]
        target = f"({case.label})" if parenthesized else case.label
        score = metrics.exact_match_hf_evaluate([prediction], [target], **options)
        return bool(score["exact_match"] == 1.0)

    return grade


# -- the report --------------------------------------------------------------------------------


def verdict(grader: ChoiceGrader, case: ChoiceCase) -> bool | None:
    """The grader's verdict (``None`` when it raises or overruns); for a case whose suite
    expects no option, whether it credits any letter."""
    labels = [case.label] if case.label is not None else list(case.letters)
    try:
        with external_suites._deadline(external_suites.CALL_SECONDS):
            return any(grader(replace(case, label=label)) for label in labels)
    except (Exception, external_suites._Overrun):
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slime", type=Path, help="a slime checkout (THUDM/slime)")
    parser.add_argument("--nemo-rl", type=Path, help="a NeMo-RL checkout (NVIDIA-NeMo/RL)")
    parser.add_argument("--lm-eval", type=Path, help="an lm-evaluation-harness checkout")
    parser.add_argument("--lighteval", type=Path, help="a lighteval checkout (huggingface)")
    parser.add_argument("--rofa", type=Path, help="a rofa checkout (victorlavrenko/rofa-dev)")
    parser.add_argument("--show", type=int, default=40, help="cases to list where gpqa is wrong")
    args = parser.parse_args(argv)

    graders: dict[str, ChoiceGrader] = {"gpqa": _gpqa}
    suites: dict[str, Loaded] = {}
    slime_letters = LETTERS[:10]
    if args.slime:
        graders["slime compute_gpqa_reward"], slime_letters = slime_grader(args.slime.resolve())
        suites["slime"] = slime_cases(args.slime.resolve(), slime_letters)
    if args.nemo_rl:
        graders.update(nemo_rl_graders(args.nemo_rl.resolve()))
        suites["NeMo-RL"] = nemo_rl_cases(args.nemo_rl.resolve())
    if args.lm_eval:
        graders.update(lm_eval_graders(args.lm_eval.resolve()))
        suites["lm-eval"] = lm_eval_cases(args.lm_eval.resolve())
    if args.lighteval:
        suites["lighteval"] = lighteval_cases(args.lighteval.resolve())
    if args.rofa:
        graders["rofa extract_choice_letter"] = rofa_grader(args.rofa.resolve())
        suites["rofa"] = rofa_cases(args.rofa.resolve())
    cases = [c for loaded in suites.values() for c in loaded.cases]
    if not cases:
        parser.error("give at least one checkout")

    verdicts = {name: [verdict(g, c) for c in cases] for name, g in graders.items()}
    names = list(graders)
    print(f"{len(cases)} cases ({sum(c.derived for c in cases)} derived: another letter, expected "
          f"0) from {len({c.suite for c in cases})} test functions")  # fmt: skip
    for project, loaded in suites.items():
        for why, count in sorted(loaded.left_out.items()):
            print(f"  left out of {project}: {count} x {why}")
    print("\nright verdicts / false positives (1 where 0 is expected) / no verdict (raised)")
    width = max(len(n) for n in names) + 2
    print(f"{'grader':<{width}}" + "".join(f"{p:>22}" for p in [*suites, "all"]))
    for name in names:
        cells = []
        for project in [*suites, "all"]:
            picked = [
                (c, v) for c, v in zip(cases, verdicts[name], strict=True)
                if project == "all" or c.suite.startswith(project)
            ]  # fmt: skip
            right = sum(v == c.expected for c, v in picked)
            false = sum(v is True and not c.expected for c, v in picked)
            raised = sum(v is None for _, v in picked)
            cells.append(f"{right}/{len(picked)} fp {false} err {raised}")
        print(f"{name:<{width}}" + "".join(f"{cell:>22}" for cell in cells))

    wrong = [i for i, c in enumerate(cases) if verdicts["gpqa"][i] != c.expected]
    print(f"\ngpqa disagrees with the suites on {len(wrong)} cases:")
    for i in wrong[: args.show]:
        case = cases[i]
        peers = [n for n in names[1:] if verdicts[n][i] == case.expected]
        print(f"  [{case.suite}] {case.response[-100:]!r} label {case.label!r} expected "
              f"{int(case.expected)}{' (derived)' if case.derived else ''}; gpqa "
              f"{verdicts['gpqa'][i]}; right: {', '.join(peers) or 'none'}")  # fmt: skip

    copies = copied_responses(cases, Path(__file__).resolve().parents[1] / "tests")
    print(f"\nresponses of these suites in the project's tests/: {len(copies)}")
    for where, line, text in copies:
        print(f"  {where}:{line}: {text[:80]!r}; write a case of the same class of our own")
    return 1 if copies else 0


if __name__ == "__main__":
    sys.exit(main())
