"""The tester's `assert` lines for function problems, read as data on the host, never executed.

A line is parsed with `ast` and its parts turned into values with `ast.literal_eval` (no `eval`), within
`MAX_LINE_CHARS`, `MAX_NODES` and `MAX_DEPTH`. The supported forms, with `f` the problem's entry point and every
ARG/VALUE/TOL a Python literal (numbers, strings, bytes, None, True/False and lists/tuples/sets/dicts of them):

    assert f(ARGS) == VALUE          assert VALUE == f(ARGS)          assert f(ARGS) != VALUE
    assert f(ARGS) is True|False|None                                 assert f(ARGS) is not None
    assert f(ARGS)                   assert not f(ARGS)
    assert abs(f(ARGS) - VALUE) < TOL   (or <=)                       assert math.isclose(f(ARGS), VALUE)

An optional message after a comma is ignored. Anything else raises `ParseError` saying why and what is
supported; a case that parses is a `CaseCall` (see `pettingllms.data.code.judge`).
"""

from __future__ import annotations

import ast
from typing import Any

from pettingllms.data.code.judge import CaseCall
from pettingllms.parsing import ParseError

MAX_LINE_CHARS = 4_000
MAX_NODES = 2_000
MAX_DEPTH = 40
SUPPORTED = (
    "supported: assert f(ARGS) == VALUE (or !=), assert f(ARGS) is True/False/None, assert f(ARGS), "
    "assert not f(ARGS), assert abs(f(ARGS) - VALUE) < TOL, assert math.isclose(f(ARGS), VALUE), "
    "with f the function to write and every argument and value a Python literal"
)
_IDENTITY = {ast.Is: "is", ast.IsNot: "is not"}
_TOLERANCE = {ast.Lt: "abs<", ast.LtE: "abs<="}
_ISCLOSE_DEFAULTS = {"rel_tol": 1e-9, "abs_tol": 0.0}


def parse_assert(line: str, entry_point: str) -> CaseCall:
    """The case that `line` (one `assert` statement) states about `entry_point`; `ParseError` if it is not of a
    supported form (see the module docstring)."""
    if len(line) > MAX_LINE_CHARS:
        raise ParseError(f"the line is longer than {MAX_LINE_CHARS} characters")
    try:
        body = ast.parse(line).body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        raise ParseError(f"not valid Python ({type(error).__name__})") from error
    if len(body) != 1 or not isinstance(body[0], ast.Assert):
        raise ParseError(f"not a single assert statement; {SUPPORTED}")
    _check_size(body[0])
    return _case(body[0].test, entry_point)


def _case(test: ast.expr, entry_point: str) -> CaseCall:
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if isinstance(op, ast.Eq | ast.NotEq):
            call, value = (right, left) if _is_call(right, entry_point) else (left, right)
            _require_call(call, entry_point)
            return _call(call, entry_point, "==" if isinstance(op, ast.Eq) else "!=", _literal(value))
        if type(op) in _IDENTITY:
            if not (isinstance(right, ast.Constant) and right.value in (True, False, None)):
                raise ParseError("`is` / `is not` compares only with True, False or None")
            return _call(left, entry_point, _IDENTITY[type(op)], right.value)
        if type(op) in _TOLERANCE and _is_abs_difference(left):
            call, value = _abs_difference(left.args[0], entry_point)
            _require_call(call, entry_point)
            return _call(call, entry_point, _TOLERANCE[type(op)], (_literal(value), _literal(right)))
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _call(test.operand, entry_point, "falsy")
    if _is_isclose(test):
        tolerances = {**_ISCLOSE_DEFAULTS}
        for keyword in test.keywords:
            if keyword.arg not in tolerances:
                raise ParseError("math.isclose takes only rel_tol= and abs_tol= here")
            tolerances[keyword.arg] = _literal(keyword.value)
        expected = (_literal(test.args[1]), tolerances["rel_tol"], tolerances["abs_tol"])
        return _call(test.args[0], entry_point, "isclose", expected)
    if isinstance(test, ast.Call):
        return _call(test, entry_point, "truthy")
    raise ParseError(f"unsupported form; {SUPPORTED}")


def _call(node: ast.expr, entry_point: str, op: str, expected: Any = None) -> CaseCall:
    _require_call(node, entry_point)
    if any(isinstance(arg, ast.Starred) for arg in node.args) or any(k.arg is None for k in node.keywords):
        raise ParseError("*args and **kwargs are not supported: write the arguments out")
    args = tuple(_literal(arg) for arg in node.args)
    kwargs = {keyword.arg: _literal(keyword.value) for keyword in node.keywords}
    return CaseCall(entry_point, args, kwargs, op, expected)


def _require_call(node: ast.expr, entry_point: str) -> None:
    if not _is_call(node, entry_point):
        raise ParseError(f"the case must call {entry_point}(...) directly; {SUPPORTED}")


def _is_call(node: ast.expr, entry_point: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == entry_point


def _is_abs_difference(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "abs"
        and len(node.args) == 1
        and not node.keywords
        and isinstance(node.args[0], ast.BinOp)
        and isinstance(node.args[0].op, ast.Sub)
    )


def _abs_difference(node: ast.BinOp, entry_point: str) -> tuple[ast.expr, ast.expr]:
    """(call, value) of `call - value` or `value - call`."""
    return (node.left, node.right) if _is_call(node.left, entry_point) else (node.right, node.left)


def _is_isclose(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and (node.func.value.id, node.func.attr) == ("math", "isclose")
        and len(node.args) == 2
    )


def _literal(node: ast.expr):
    """The value of a literal node; `ParseError` for anything that is not one (names, calls, operators)."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError) as error:
        shown = ast.unparse(node)
        raise ParseError(f"{shown[:80]!r} is not a Python literal; {SUPPORTED}") from error


def _check_size(node: ast.AST) -> None:
    """`ParseError` when the statement has more than `MAX_NODES` nodes or nests deeper than `MAX_DEPTH`."""
    count, stack = 0, [(node, 0)]
    while stack:
        current, depth = stack.pop()
        count += 1
        if count > MAX_NODES or depth > MAX_DEPTH:
            raise ParseError(f"the case is too large (more than {MAX_NODES} nodes or {MAX_DEPTH} levels)")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(current))
