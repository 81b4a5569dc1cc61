"""Which answers may be handed to sympy: size limits checked before and after parsing.

math-verify can stall on small, legal-looking inputs: its LaTeX parser is exponential in bracket nesting,
sympy evaluates ``binomial``, ``gcd`` and ``lcm`` while parsing (``\\binom{10^{10^{9}}}{2}`` never returns),
and comparing ``10^{10^{10}}`` with anything computes all its digits. Its signal-based timeout interrupts
those only in the main thread, so ``grading`` screens every answer with these checks first, in any thread.
They evaluate nothing: ``parsable`` reads the text, ``tractable`` walks the parsed tree and bounds sizes
with float arithmetic on the numbers it finds, and ``exact_digits_bounded`` bounds the digits of the exact
numbers sympy would hold (``grading`` explains why far fewer than ``MAX_DIGITS``). They keep out the blowups found so far; they cannot bound
every slow simplification (see ``grading`` on threads).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

import sympy

MAX_ANSWER_CHARS = 500
"""Longer answers are not parsed."""
MAX_NESTING = 8
"""Answers with brackets (``{`` ``(`` ``[`` ``\\{``) nested deeper are not parsed."""
MAX_DIGITS = 100_000
"""Answers holding a power, exponential or factorial with more digits than this are not compared."""
MAX_SYMBOLIC_EXPONENT = 1_000
"""Answers raising an expression with variables to a larger constant power are not compared."""
MAX_EXACT_DIGITS = 1_000
"""Parsed answers whose exact numbers would need more digits than this together (``exact_digits``) are not
compared: sympy may test such a number for primality or factor it, in time that grows with the cube of its
digits (1,000 digits: ~0.2 s; 2,000: ~0.8 s; ``\\sqrt{10^{99990}+1}`` never returned in a worker thread)."""

_BRACKET_TOKEN = re.compile(r"\\[{}]|\\.|[{}()\[\]]", re.DOTALL)
_OPENERS = ("{", "(", "[", "\\{")
_CLOSERS = ("}", ")", "]", "\\}")
_EAGER_FUNCTION = re.compile(r"binom|choose|gcd|lcm", re.IGNORECASE)
_BIG_ARGUMENT = re.compile(r"[\^!]|\d{7}")
_UNEVALUATED = (sympy.Sum, sympy.Product, sympy.Integral, sympy.Limit, sympy.Derivative)
_GROWING = (
    sympy.Pow,
    sympy.exp,
    sympy.factorial,
    sympy.factorial2,
    sympy.subfactorial,
    sympy.binomial,
    sympy.gamma,
)


def parsable(text: str) -> bool:
    """Whether a normalized answer may be parsed: at most ``MAX_ANSWER_CHARS`` long, brackets nested at
    most ``MAX_NESTING`` deep, unescaped ``{}`` balanced, and no function that sympy evaluates while parsing
    (binomial, gcd, lcm) in an answer that also holds a power, a factorial or a number of 7 or more digits."""
    if len(text) > MAX_ANSWER_CHARS:
        return False
    depth = braces = 0
    for token in _BRACKET_TOKEN.findall(text):
        if token not in _OPENERS and token not in _CLOSERS:
            continue  # an escaped character other than a brace
        step = 1 if token in _OPENERS else -1
        depth += step
        if token in ("{", "}"):
            braces += step
        if braces < 0 or depth > MAX_NESTING:
            return False
    return braces == 0 and not (_EAGER_FUNCTION.search(text) and _BIG_ARGUMENT.search(text))


def tractable(parsed: object) -> bool:
    """Whether a parsed answer (a math-verify result: a sympy expression, a matrix or a string) may be
    compared; a matrix is tractable when all its entries are.

    False if it holds an unevaluated sum, product, integral, limit or derivative (a final answer is a closed
    form), a constant power, exponential or factorial whose exact value would have more than ``MAX_DIGITS``
    digits, or an expression with variables raised to a constant power above ``MAX_SYMBOLIC_EXPONENT``
    (``\\sin(y)^{99999}``: simplifying it exhausts memory)."""
    if isinstance(parsed, sympy.MatrixBase):
        return all(tractable(entry) for entry in parsed)
    if not isinstance(parsed, sympy.Basic):
        return True
    for node in _nodes(parsed):
        if isinstance(node, _UNEVALUATED):
            return False
        if isinstance(node, _GROWING) and not node.free_symbols:
            digits = _log10_bound(node)
            if digits is not None and digits > MAX_DIGITS:
                return False
        if isinstance(node, sympy.Pow) and node.free_symbols and not node.exp.free_symbols:
            exponent = _log10_bound(node.exp)
            if exponent is not None and exponent > math.log10(MAX_SYMBOLIC_EXPONENT):
                return False
    return True


def exact_digits_bounded(parsed: object) -> bool:
    """Whether a parsed answer (a math-verify result: a sympy expression, a matrix or a string) holds at most
    ``MAX_EXACT_DIGITS`` digits of exact numbers, counted by ``exact_digits``; a matrix counts its entries
    together. Evaluates nothing."""
    if isinstance(parsed, sympy.MatrixBase):
        return sum(exact_digits(entry) for entry in parsed) <= MAX_EXACT_DIGITS
    return not isinstance(parsed, sympy.Basic) or exact_digits(parsed) <= MAX_EXACT_DIGITS


def exact_digits(expr: sympy.Basic) -> float:
    """An upper bound on the digits of the exact numbers that evaluating ``expr`` may produce: for a rational
    value, of its numerator and its denominator; for any other, of every rational part (a radicand, the
    argument of ``sin``, an exponent). Infinite where a bound overflows a float; evaluates nothing.

    A rational counts its larger part, a float its integer digits; a sum counts the sum of its terms (a common
    denominator multiplies them) plus a carry, a product the sum of its factors, a constant power its base
    times the exponent's magnitude plus the exponent's own digits, the factorial family and ``gamma`` the size
    ``bounds`` gives them; a symbol or a constant such as ``pi`` nothing; any other node the sum of its
    arguments. Iterative, so deep expressions do not recurse.
    """
    nodes = list(_nodes(expr))  # parents before children; kept alive so that their ids stay unique
    digits: dict[int, float] = {}
    for node in reversed(nodes):
        parts = [digits[id(arg)] for arg in node.args if isinstance(arg, sympy.Basic)]
        digits[id(node)] = _node_digits(node, parts)
    return digits[id(expr)]


def _node_digits(node: sympy.Basic, parts: list[float]) -> float:
    """``exact_digits`` of one node, given those of its arguments (``parts``)."""
    if node.is_Rational:
        return max(_digits_of(node.p), _digits_of(node.q))
    if node.is_Float:
        return max(0.0, _log10_bound(node))
    if not parts:
        return 0.0
    if isinstance(node, sympy.Pow) and not node.exp.free_symbols:
        base, exponent = parts
        return (0.0 if base == 0.0 else base * _magnitude(node.exp)) + exponent
    if isinstance(node, _INTEGER_VALUED) and not node.free_symbols:
        bound = _log10_bound(node)
        return math.inf if bound is None else max(bound, 0.0)
    return sum(parts) + (math.log10(len(parts)) if isinstance(node, sympy.Add) else 0.0)


_INTEGER_VALUED = (sympy.factorial, sympy.factorial2, sympy.subfactorial, sympy.binomial, sympy.gamma)


def _magnitude(constant: sympy.Basic) -> float:
    """An upper bound on ``max(1, |constant|)``; infinite when none is known (``I``) or it overflows."""
    bound = _log10_bound(constant)
    return math.inf if bound is None or bound > 300 else max(1.0, 10.0**bound)


def _digits_of(number: int) -> float:
    """``log10(|number|)``, 0 for 0: the digits of an integer, to within one."""
    return 0.0 if number == 0 else math.log10(abs(number))


def _nodes(expr: sympy.Basic) -> Iterator[sympy.Basic]:
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(arg for arg in node.args if isinstance(arg, sympy.Basic))


def _log10_bound(expr: sympy.Basic) -> float | None:
    """An upper bound on ``log10(|expr|)`` for a constant (for a power, also on the digits of its
    denominator); None when a leaf is not a number (a symbol, ``I``, ``oo``).

    Numbers, sums, products, powers, ``exp`` and the factorial family are bounded from their arguments; any
    other node (``Abs``, ``floor``, ``Max``, ``sin``, ``log``, a tuple, an equation, ...) by its largest
    argument. That is a true bound for the functions that do not grow; for transcendental growth such as
    ``sinh`` it is not, but sympy keeps those symbolic. What has to be bounded is exact integer growth, and
    only the node types in ``_GROWING`` produce it.
    """
    if expr.is_Rational:
        return _log10(expr.p) - _log10(expr.q)
    if expr.is_Float or expr.is_NumberSymbol:
        return _log10(float(expr))
    parts = [_log10_bound(arg) for arg in expr.args]
    if not parts or any(part is None for part in parts):
        return None
    if isinstance(expr, sympy.Mul):
        return sum(parts)
    if isinstance(expr, sympy.Add):
        return max(parts) + math.log10(len(parts))
    if isinstance(expr, sympy.Pow):
        base, exponent = parts
        return 0.0 if base in (0.0, -math.inf) else _power_of_ten(exponent) * abs(base)
    if isinstance(expr, sympy.exp):
        return _power_of_ten(parts[0]) * math.log10(math.e)
    if isinstance(expr, _GROWING):
        n = _power_of_ten(parts[0])
        return n * math.log10(max(n, 2.0))
    return max(parts)


def _log10(x: int | float) -> float:
    return -math.inf if x == 0 else math.log10(abs(x))


def _power_of_ten(log10_value: float) -> float:
    """``10 ** log10_value``, +inf where that overflows a float."""
    return math.inf if log10_value > 300 else 10.0**log10_value
