"""The tester's `assert` lines for function problems, read as data on the host, never executed.

A line is parsed with `ast` and its parts turned into values with `ast.literal_eval` (no `eval`), within
`MAX_LINE_CHARS`, `MAX_NODES` and `MAX_DEPTH`. A case must pin the function's value: the supported forms, with
`f` the problem's entry point and every ARG/VALUE a Python literal (numbers, strings, bytes, None, True/False and
lists/tuples/sets/dicts of them) that the judge's codec carries (`judge_candidate.encode`), are

    assert f(ARGS) == VALUE          assert VALUE == f(ARGS)          assert f(ARGS) is True|False|None
    assert abs(f(ARGS) - X) < TOL    (or <=, or abs(X - f(ARGS)))
    assert math.isclose(f(ARGS), X)  (optionally rel_tol=R, abs_tol=A)

where X is a finite int or float, `0 < TOL <= 1e-3 * max(1, |X|)`, and `0 <= R, A <= 1e-3` (finite). Forms that
hold for almost any answer are refused, with the reason: `!=`, `is not`, a bare call (`assert f(ARGS)`), a
negated one (`assert not f(ARGS)`) and loose or infinite tolerances (`abs(f(x) - 0) < 1e999` would be "right"
whatever f returns). An optional message after a comma is ignored. Anything else raises `ParseError` saying why
and what is supported; a case that parses is a `CaseCall` (see `pettingllms.data.code.judge`) whose args,
kwargs and expected value have already been encoded once (so a parsed case can always be sent to the judge).
Nothing here formats a part of the line back into text (a 4,000-digit hex literal cannot be `str`-ed): error
messages quote the raw line, truncated.
"""

from __future__ import annotations

import ast
import math
from typing import Any

from pettingllms.core.parsing import ParseError
from pettingllms.data.code.judge import CaseCall
from pettingllms.data.code.judge_candidate import Unsupported, encode

MAX_LINE_CHARS = 4_000
MAX_NODES = 2_000
MAX_DEPTH = 40
MAX_TOLERANCE = 1e-3
"""Largest `rel_tol`/`abs_tol` of `math.isclose`, and of `abs(f(x) - X) < TOL` relative to `max(1, |X|)`."""
SUPPORTED = (
    "supported: assert f(ARGS) == VALUE, assert f(ARGS) is True/False/None, "
    "assert abs(f(ARGS) - X) < TOL with 0 < TOL <= 1e-3 * max(1, |X|), "
    "assert math.isclose(f(ARGS), X) with rel_tol and abs_tol at most 1e-3, "
    "with f the function to write and every argument and value a Python literal"
)
_TOLERANCE = {ast.Lt: "abs<", ast.LtE: "abs<="}
_ISCLOSE_DEFAULTS = {"rel_tol": 1e-9, "abs_tol": 0.0}
_UNPINNED = "it holds for almost any answer: compare the result with the exact expected value (== VALUE)"


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
    call = _case(body[0].test, entry_point, line)
    try:  # what the judge will send: refuse here what it could not carry (e.g. `...`)
        encode(list(call.args)), encode(dict(call.kwargs)), encode(call.expected)
    except (Unsupported, RecursionError, MemoryError) as error:
        raise ParseError(f"a value the judge cannot carry ({str(error)[:120]}); {SUPPORTED}") from error
    return call


def _case(test: ast.expr, entry_point: str, line: str) -> CaseCall:
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if isinstance(op, ast.Eq):
            call, value = (right, left) if _is_call(right, entry_point) else (left, right)
            _require_call(call, entry_point)
            return _call(call, entry_point, line, "==", _literal(value, line))
        if isinstance(op, ast.NotEq):
            raise ParseError(f"`!=` is not supported: {_UNPINNED}")
        if isinstance(op, ast.IsNot):
            raise ParseError(f"`is not` is not supported: {_UNPINNED}")
        if isinstance(op, ast.Is):
            if not (isinstance(right, ast.Constant) and right.value in (True, False, None)):
                raise ParseError("`is` compares only with True, False or None")
            return _call(left, entry_point, line, "is", right.value)
        if type(op) in _TOLERANCE and _is_abs_difference(left):
            call, value = _abs_difference(left.args[0], entry_point)
            _require_call(call, entry_point)
            expected, tolerance = (
                _number(value, line, "the expected value"),
                _number(right, line, "the tolerance"),
            )
            if not 0 < tolerance <= MAX_TOLERANCE * max(1.0, abs(expected)):
                raise ParseError(
                    f"the tolerance must be above 0 and at most {MAX_TOLERANCE} * max(1, |expected|): {_UNPINNED}"
                )
            return _call(call, entry_point, line, _TOLERANCE[type(op)], (expected, tolerance))
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and _is_call(test.operand, entry_point):
        raise ParseError(
            f"`assert not f(...)` is not supported (write `is False` or `== VALUE`): {_UNPINNED}"
        )
    if _is_isclose(test):
        tolerances = {**_ISCLOSE_DEFAULTS}
        for keyword in test.keywords:
            if keyword.arg not in tolerances:
                raise ParseError("math.isclose takes only rel_tol= and abs_tol= here")
            tolerances[keyword.arg] = _number(keyword.value, line, keyword.arg)
            if not 0 <= tolerances[keyword.arg] <= MAX_TOLERANCE:
                raise ParseError(f"{keyword.arg} must be between 0 and {MAX_TOLERANCE}: {_UNPINNED}")
        expected = _number(test.args[1], line, "the expected value")
        return _call(
            test.args[0],
            entry_point,
            line,
            "isclose",
            (expected, tolerances["rel_tol"], tolerances["abs_tol"]),
        )
    if _is_call(test, entry_point):
        raise ParseError(
            f"a bare call (`assert f(...)`) is not supported (write `is True` or `== VALUE`): {_UNPINNED}"
        )
    raise ParseError(f"unsupported form; {SUPPORTED}")


def _call(node: ast.expr, entry_point: str, line: str, op: str, expected: Any = None) -> CaseCall:
    _require_call(node, entry_point)
    if any(isinstance(arg, ast.Starred) for arg in node.args) or any(k.arg is None for k in node.keywords):
        raise ParseError("*args and **kwargs are not supported: write the arguments out")
    if len({keyword.arg for keyword in node.keywords}) != len(node.keywords):
        raise ParseError("a keyword argument is repeated (Python refuses such a call)")
    args = tuple(_literal(arg, line) for arg in node.args)
    kwargs = {keyword.arg: _literal(keyword.value, line) for keyword in node.keywords}
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


def _literal(node: ast.expr, line: str):
    """The value of a literal node; `ParseError` for anything that is not one (names, calls, operators). The
    message quotes the raw line (never a formatting of the node: that can raise on hostile input)."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError) as error:
        raise ParseError(
            f"an argument or value of {line[:80]!r} is not a Python literal (a {type(node).__name__}); {SUPPORTED}"
        ) from error


def _number(node: ast.expr, line: str, what: str) -> int | float:
    """A finite int or float literal (`what` names it in the error)."""
    value = _literal(node, line)
    if type(value) not in (int, float):
        raise ParseError(f"{what} must be a number (int or float); {SUPPORTED}")
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an int too large for a float
        finite = False
    if not finite:
        raise ParseError(f"{what} must be finite; {SUPPORTED}")
    return value


def _check_size(node: ast.AST) -> None:
    """`ParseError` when the statement has more than `MAX_NODES` nodes or nests deeper than `MAX_DEPTH`."""
    count, stack = 0, [(node, 0)]
    while stack:
        current, depth = stack.pop()
        count += 1
        if count > MAX_NODES or depth > MAX_DEPTH:
            raise ParseError(f"the case is too large (more than {MAX_NODES} nodes or {MAX_DEPTH} levels)")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(current))
