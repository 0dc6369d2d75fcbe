"""Assert-style tests (MBPP, HumanEval, pytest-style files) as calls the sandbox makes and
checks the grader evaluates outside it.

Run inside the program's process, a test can be forged: the program patches ``builtins``,
returns an object whose ``__eq__`` is always true, replaces ``check``, or exits before the
assert runs. So a test never runs there. ``assert f([3, 1]) == [1, 3]`` becomes one call the
sandbox makes, ``f([3, 1])``, whose return value comes back in a plain encoding (lists, tuples,
dicts, sets, numbers, strings; never an object of the program's own), and the check
``RESULT == [1, 3]`` that the grader evaluates on the decoded value with an interpreter of its
own that knows a fixed set of pure builtins (``len``, ``sorted``, ``set``, ``abs``,
``math.isclose``, ...).

What a test may hold: ``assert`` statements whose expressions call the program's functions
with arguments the grader can compute (literals, names bound to literals, the builtins above),
imports, docstrings, and constant assignments; in HumanEval's ``check(candidate)`` the parameter
stands for ``entry_point``, and a pytest-style file gives one test per ``def test_*``. Anything
else (loops, helper functions, randomized tests, ``pytest.raises``) cannot be checked safely
outside the program and raises :class:`TestsError` naming the line.

>>> [group] = checks_of("assert add(1, 2) == 3", None)
>>> group[0].calls, group[0].holds([3]), group[0].holds([4])
(({'call': 'add', 'args': [1, 2], 'kwargs': {'$': 'dict', 'v': []}},), True, False)
"""

from __future__ import annotations

import ast
import builtins
import copy
import math
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rewardrouter.rewards.code.harness import encode

#: The pure functions a check may call, by the name a test uses.
SAFE_FUNCTIONS: dict[str, Callable[..., Any]] = {
    name: getattr(builtins, name)
    for name in [
        "abs",
        "all",
        "any",
        "bool",
        "bytes",
        "chr",
        "complex",
        "dict",
        "divmod",
        "enumerate",
        "float",
        "frozenset",
        "int",
        "isinstance",
        "len",
        "list",
        "map",
        "max",
        "min",
        "ord",
        "range",
        "repr",
        "reversed",
        "round",
        "set",
        "sorted",
        "str",
        "sum",
        "tuple",
        "type",
        "zip",
    ]
}
SAFE_FUNCTIONS.update(
    {
        f"math.{name}": getattr(math, name)
        for name in [
            "isclose",
            "fabs",
            "sqrt",
            "floor",
            "ceil",
            "isnan",
            "isinf",
            "isfinite",
            "trunc",
            "gcd",
        ]
    }
)
SAFE_CONSTANTS: dict[str, Any] = {
    "True": True,
    "False": False,
    "None": None,
    "math.pi": math.pi,
    "math.e": math.e,
    "math.inf": math.inf,
    "math.nan": math.nan,
}
#: Types whose public methods a check may call on a value (``result.count(1)``).
_METHOD_TYPES = (str, bytes, list, tuple, dict, set, frozenset, int, float)
#: Bounds that keep a check's arithmetic cheap whatever value the program returned.
_MAX_EXPONENT = 10_000
_MAX_LENGTH = 10_000_000

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.Not: operator.not_,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Invert: operator.invert,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


class TestsError(ValueError):
    """Test code that cannot be turned into calls and checks (the message names the line)."""


class _Unsafe(Exception):
    """An expression the grader's interpreter does not evaluate."""


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _bounded(op: type[ast.operator], left: Any, right: Any) -> None:
    huge = isinstance(right, int) and abs(right) > _MAX_EXPONENT
    if op is ast.Pow and huge and not (isinstance(left, int | float) and left in (0, 1, -1)):
        raise _Unsafe("an exponent too large to check")
    if op is ast.LShift and huge:
        raise _Unsafe("a shift too large to check")
    if op is ast.Mult:
        for seq, times in ((left, right), (right, left)):
            sequence = isinstance(seq, str | bytes | list | tuple) and isinstance(times, int)
            if sequence and len(seq) * times > _MAX_LENGTH:
                raise _Unsafe("a repetition too long to check")


Evaluate = Callable[[ast.expr], Any]


def _name(n: Any, ev: Evaluate, names: Mapping[str, Any]) -> Any:
    dotted = _dotted(n)
    if dotted is None:
        raise _Unsafe(f"{type(n).__name__} expressions")
    for known in (names, SAFE_CONSTANTS, SAFE_FUNCTIONS):
        if dotted in known:
            return known[dotted]
    raise _Unsafe(f"the name {dotted!r}")


def _dict(n: Any, ev: Evaluate, names: Mapping[str, Any]) -> Any:
    if any(k is None for k in n.keys):
        raise _Unsafe("** in a dict display")
    return {ev(k): ev(v) for k, v in zip(n.keys, n.values, strict=True)}


def _unary(n: Any, ev: Evaluate, names: Mapping[str, Any]) -> Any:
    if type(n.op) not in _UNARY:
        raise _Unsafe(f"the operator {type(n.op).__name__}")
    return _UNARY[type(n.op)](ev(n.operand))


def _binary(n: Any, ev: Evaluate, names: Mapping[str, Any]) -> Any:
    if type(n.op) not in _BINARY:
        raise _Unsafe(f"the operator {type(n.op).__name__}")
    left, right = ev(n.left), ev(n.right)
    _bounded(type(n.op), left, right)
    return _BINARY[type(n.op)](left, right)


def _bool(n: Any, ev: Evaluate, names: Mapping[str, Any]) -> Any:
    value: Any = None
    for part in n.values:
        value = ev(part)
        if isinstance(n.op, ast.And) != bool(value):
            return value
    return value


def _compare(n: Any, ev: Evaluate, names: Mapping[str, Any]) -> Any:
    left = ev(n.left)
    for op, comparator in zip(n.ops, n.comparators, strict=True):
        right = ev(comparator)
        if not _COMPARE[type(op)](left, right):
            return False
        left = right
    return True


def _call(n: Any, ev: Evaluate, names: Mapping[str, Any]) -> Any:
    if any(isinstance(a, ast.Starred) for a in n.args):
        raise _Unsafe("* in a call")
    function = _callee(n.func, ev)
    kwargs = {k.arg: ev(k.value) for k in n.keywords if k.arg is not None}
    if len(kwargs) != len(n.keywords):
        raise _Unsafe("** in a call")
    return function(*(ev(a) for a in n.args), **kwargs)


#: How :func:`evaluate` computes each kind of expression it allows.
_EVALUATE: dict[type[ast.expr], Callable[[Any, Evaluate, Mapping[str, Any]], Any]] = {
    ast.Constant: lambda n, ev, names: n.value,
    ast.Name: _name,
    ast.Attribute: _name,
    ast.List: lambda n, ev, names: [ev(x) for x in n.elts],
    ast.Tuple: lambda n, ev, names: tuple(ev(x) for x in n.elts),
    ast.Set: lambda n, ev, names: {ev(x) for x in n.elts},
    ast.Dict: _dict,
    ast.UnaryOp: _unary,
    ast.BinOp: _binary,
    ast.BoolOp: _bool,
    ast.Compare: _compare,
    ast.IfExp: lambda n, ev, names: ev(n.body) if ev(n.test) else ev(n.orelse),
    ast.Subscript: lambda n, ev, names: ev(n.value)[ev(n.slice)],
    ast.Slice: lambda n, ev, names: slice(
        *(ev(p) if p is not None else None for p in (n.lower, n.upper, n.step))
    ),
    ast.Call: _call,
}


def evaluate(node: ast.expr, names: Mapping[str, Any]) -> Any:
    """The value of ``node`` under ``names``, using only the operations this module allows;
    ``_Unsafe`` for anything else."""

    def ev(n: ast.expr) -> Any:
        how = _EVALUATE.get(type(n))
        if how is None:
            raise _Unsafe(f"{type(n).__name__} expressions")
        return how(n, ev, names)

    return ev(node)


def _callee(func: ast.expr, ev: Callable[[ast.expr], Any]) -> Callable[..., Any]:
    dotted = _dotted(func)
    if dotted in SAFE_FUNCTIONS:
        return SAFE_FUNCTIONS[dotted]
    if isinstance(func, ast.Name):  # a name `from math import` bound to one of them
        target = ev(func)
        if any(target is safe for safe in SAFE_FUNCTIONS.values()):
            return target  # type: ignore[no-any-return]
    if isinstance(func, ast.Attribute) and not func.attr.startswith("_"):
        owner = ev(func.value)
        if type(owner) in _METHOD_TYPES:
            return getattr(owner, func.attr)  # type: ignore[no-any-return]
    raise _Unsafe(f"the call of {ast.unparse(func)!r}")


_NODES = (
    ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.UnaryOp, ast.BinOp, ast.BoolOp,
    ast.Compare, ast.IfExp, ast.Subscript, ast.Slice, ast.Call, ast.keyword, ast.Load,
    ast.operator, ast.unaryop, ast.cmpop, ast.boolop,
)  # fmt: skip


def _unsafe_part(node: ast.AST, known: set[str]) -> str | None:
    """What in ``node`` :func:`evaluate` would refuse, found without evaluating it."""
    if isinstance(node, ast.Name | ast.Attribute):
        dotted = _dotted(node)
        if dotted in known or dotted in SAFE_FUNCTIONS or dotted in SAFE_CONSTANTS:
            return None
        if isinstance(node, ast.Attribute) and not node.attr.startswith("_"):
            return _unsafe_part(node.value, known)  # a method of a value: ``result.count``
        return f"the name {ast.unparse(node)!r}"
    if isinstance(node, ast.Starred) or (isinstance(node, ast.keyword) and node.arg is None):
        return "* or ** arguments"
    if not isinstance(node, _NODES):
        return f"a {type(node).__name__} expression"
    for child in ast.iter_child_nodes(node):
        found = _unsafe_part(child, known)
        if found is not None:
            return found
    return None


@dataclass(frozen=True)
class Check:
    """One assert: the calls of the program it needs, in order, and its test over their results
    (each call replaced by the name ``_rr_<i>``)."""

    calls: tuple[dict[str, Any], ...]
    test: ast.expr
    names: Mapping[str, Any]
    source: str

    def holds(self, values: Sequence[Any]) -> bool:
        """Whether the test is true of the decoded return values; false on any failure."""
        names = {**self.names, **{f"_rr_{i}": v for i, v in enumerate(values)}}
        try:
            return bool(evaluate(self.test, names))
        except Exception:  # a wrong type, a missing key: the assert would have failed
            return False


class _Converter:
    """Turns one group of statements (a test function's body, or a module's asserts) into
    :class:`Check` s, with what its ``parent`` (the module) bound."""

    def __init__(
        self,
        lines: list[str],
        parent: _Converter | None = None,
        aliases: Mapping[str, str] | None = None,
    ):
        self.lines = lines
        # names bound to constants or to the safe functions `from math import` gives
        self.names: dict[str, Any] = dict(parent.names) if parent else {}
        # a name for a program function: `candidate` or `from solution import f as g`
        self.aliases: dict[str, str] = {**(parent.aliases if parent else {}), **(aliases or {})}
        # names imported from elsewhere, which no check may call
        self.foreign: dict[str, str] = dict(parent.foreign) if parent else {}

    def fail(self, node: ast.AST, why: str) -> TestsError:
        line = getattr(node, "lineno", 0)
        text = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        return TestsError(
            f"test line {line} ({text[:80]!r}): {why}; the code kind checks tests outside the "
            "program, so a test may hold only asserts that call the program's functions with "
            "arguments computable from literals, constant assignments and imports"
        )

    def bind(self, node: ast.Assign) -> None:
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            raise self.fail(node, "an assignment to something other than one name")
        try:
            self.names[node.targets[0].id] = evaluate(node.value, self.names)
        except Exception as exc:
            raise self.fail(node, f"a value the grader cannot compute ({exc})") from None

    def imported(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            local = alias.asname or alias.name
            dotted = f"{node.module}.{alias.name}"
            if node.module == "solution":
                self.aliases[local] = alias.name
            elif dotted in SAFE_FUNCTIONS or dotted in SAFE_CONSTANTS:
                self.names[local] = SAFE_FUNCTIONS.get(dotted, SAFE_CONSTANTS.get(dotted))
            else:
                self.foreign[local] = dotted

    def program_call(self, node: ast.Call) -> str | None:
        """The program function ``node`` calls, or None when it calls something else."""
        func = node.func
        if isinstance(func, ast.Name):
            name = self.aliases.get(func.id, func.id)
            if func.id in self.names or func.id in SAFE_FUNCTIONS:
                return None
            return name
        if (  # Solution().method(...)
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Call)
            and _dotted(func.value.func) == "Solution"
            and not func.value.args
        ):
            return func.attr
        return None

    def check(self, node: ast.Assert) -> Check | None:
        calls: list[dict[str, Any]] = []
        converter = self

        class Replace(ast.NodeTransformer):
            def visit_Call(self, call: ast.Call) -> ast.AST:
                called = call.func.id if isinstance(call.func, ast.Name) else None
                if called in converter.foreign:
                    where = converter.foreign[called]
                    raise converter.fail(node, f"a call of {called!r}, imported from {where}")
                name = converter.program_call(call)
                if name is None:
                    return self.generic_visit(call)
                if None in (k.arg for k in call.keywords) or any(
                    isinstance(a, ast.Starred) for a in call.args
                ):
                    raise converter.fail(node, "a call with * or ** arguments")
                try:
                    args = encode([evaluate(a, converter.names) for a in call.args])
                    kwargs = encode(
                        {k.arg: evaluate(k.value, converter.names) for k in call.keywords}
                    )
                except _Unsafe as exc:
                    raise converter.fail(node, f"an argument uses {exc}") from None
                except Exception as exc:  # an argument that fails, or that cannot be sent
                    raise converter.fail(node, f"an argument fails ({exc!r})") from None
                calls.append({"call": name, "args": args, "kwargs": kwargs})
                return ast.copy_location(ast.Name(f"_rr_{len(calls) - 1}", ast.Load()), call)

        test = Replace().visit(copy.deepcopy(node.test))
        if not calls:
            return None  # `assert True, "..."`: nothing of the program's to check
        known = {*self.names, *(f"_rr_{i}" for i in range(len(calls)))}
        unsafe = _unsafe_part(test, known)
        if unsafe is not None:
            raise self.fail(node, f"the assert uses {unsafe}")
        return Check(tuple(calls), test, dict(self.names), ast.unparse(node)[:200])

    def body(self, statements: Sequence[ast.stmt]) -> list[Check]:
        checks = []
        for node in statements:
            if isinstance(node, ast.Assert):
                found = self.check(node)
                if found is not None:
                    checks.append(found)
            elif isinstance(node, ast.Assign):
                self.bind(node)
            elif isinstance(node, ast.ImportFrom):
                self.imported(node)
            elif isinstance(node, ast.Import | ast.Pass) or (
                isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            ):
                continue
            else:
                raise self.fail(node, f"a statement of kind {type(node).__name__}")
        return checks


def checks_of(code: str, entry: str | None) -> list[list[Check]]:
    """The groups of checks in test ``code``: one per ``def test_*``, the body of
    ``check(candidate)`` when ``entry`` names the program's function, else the module's
    asserts (each group passes when all its checks hold). :class:`TestsError` when a test
    cannot be checked outside the program."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise TestsError(f"the test code does not parse: {exc}") from None
    lines = code.splitlines()
    module = _Converter(lines)
    functions: list[ast.FunctionDef] = []
    top: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            functions.append(node)
        elif (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and (_dotted(node.value.func) == "check")
        ):
            continue  # HumanEval files that call check(entry) themselves
        else:
            top.append(node)
    groups: list[list[Check]] = []
    module_checks = module.body(top)  # constants and imports first: the functions read them
    check = next((f for f in functions if f.name == "check"), None)
    tests = [f for f in functions if f.name.startswith("test")]
    if entry and check is not None:
        parameter = check.args.args[0].arg if check.args.args else "candidate"
        groups.append(_Converter(lines, module, {parameter: entry}).body(check.body))
    elif tests:
        groups += [_Converter(lines, module).body(function.body) for function in tests]
    others = [f for f in functions if f is not check and f not in tests]
    if others and (groups or module_checks):
        raise module.fail(others[0], f"a helper function {others[0].name!r}")
    if module_checks:
        groups.append(module_checks)
    if not groups or not all(groups):
        raise TestsError(
            "the test code holds no assert that calls the program's functions; "
            "expected e.g. `assert f(1) == 2`"
        )
    return groups
