"""Tool programs for `math-v0`'s generated problems: the program a tool agent would write for one problem, and
imperfect variants of it, for the warm start's demonstrations.

`math-v0`'s tool agent gets no input: its program must carry the problem's numbers. `write_program(text)` reads a
problem of `pettingllms.data.math.generator` (every kind and difficulty of `templates`) and returns a short
Python program that prints its exact answer: sympy for expressions and equations (`Rational` for fractions, so
that the printed value is exact, e.g. `-25/4`), `math` for gcd, lcm, permutations and combinations, a count over
`range` for inclusion-exclusion. What the tiny model has to learn is to copy the problem's numbers into the
template of its kind, a far smaller step than computing the answer token by token.

`VARIANTS` holds two imperfect versions, each a slip the tiny model plausibly makes:
- `"miscopied"`: one number of the problem copied off by one (the first number in the program);
- `"swapped"`: the operation that the question names replaced by its neighbour (sum and product, larger and
  smaller root, largest and smallest prime factor, the count of divisors and of prime factors, gcd and lcm,
  permutations and combinations, "at least one" and "none", `%` and `//`, `+` and `-`).
Either can still be right by chance (a swapped sum of two roots equals their product when both are 2, say): on 60
generated problems (every kind, difficulties 1-3, measured when written) the correct programs were right 60 times,
`"miscopied"` 4 times and `"swapped"` once; `tests/test_math_programs.py` pins every kind and difficulty.

`UnknownProblem` (a ValueError) is raised for a text no template writes, e.g. a dataset problem.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["UnknownProblem", "VARIANTS", "write_program"]


class UnknownProblem(ValueError):
    """The text is not a problem of `math-v0`'s generator."""


_LEAD = "from sympy import *\n"
_X = 'x = symbols("x")\n'
_QUADRATIC = {
    "the sum of its two roots": "print(sum(roots))",
    "the product of its two roots": "print(roots[0] * roots[1])",
    "its larger root": "print(max(roots))",
    "its smaller root": "print(min(roots))",
}


def python_expression(latex: str) -> str:
    """A generated problem's LaTeX arithmetic or polynomial as a Python (sympy) expression.

    >>> python_expression(r"\\left(\\frac{4}{15} + \\frac{14}{9}\\right) \\times \\frac{2}{5}")
    '(Rational(4, 15) + Rational(14, 9)) * Rational(2, 5)'
    >>> python_expression("-2x^2 - 2x + 264")
    '-2*x**2 - 2*x + 264'
    """
    text = re.sub(r"\\frac\{(-?\d+)\}\{(\d+)\}", r"Rational(\1, \2)", latex)
    text = text.replace(r"\left(", "(").replace(r"\right)", ")")
    text = text.replace(r"\times", "*").replace(r"\div", "/")
    text = re.sub(r"\^\{?(\d+)\}?", r"**\1", text)
    return re.sub(r"(\d)x", r"\1*x", text)


def _compute(match: re.Match) -> str:
    return f"{_LEAD}print({python_expression(match['expression'])})\n"


def _linear(match: re.Match) -> str:
    left, right = python_expression(match["left"]), python_expression(match["right"])
    return f"{_LEAD}{_X}print(solve(Eq({left}, {right}), x)[0])\n"


def _quadratic(match: re.Match) -> str:
    polynomial = python_expression(match["polynomial"])
    return f"{_LEAD}{_X}roots = solve({polynomial}, x)\n{_QUADRATIC[match['question']]}\n"


def _letters(match: re.Match) -> str:
    return (
        f'{_LEAD}word = "{match["word"]}"\ncount = factorial(len(word))\nfor letter in set(word):\n'
        "    count = count / factorial(word.count(letter))\nprint(count)\n"
    )


def _multiples(match: re.Match) -> str:
    divisors = re.findall(r"\$(\d+)\$", match["divisors"])
    joined = " or ".join(f"number % {d} == 0" for d in divisors)
    test = f"({joined})" if match["which"] == "at least one" else f"not ({joined})"
    return f"print(len([number for number in range(1, {match['n']} + 1) if {test}]))\n"


_FORMS: tuple[tuple[re.Pattern, Callable[[re.Match], str]], ...] = tuple(
    (re.compile(pattern), write)
    for pattern, write in (
        (r"^Compute \$(?P<expression>.+)\$\.( Give the result in lowest terms\.)?$", _compute),
        (r"^Solve for \$x\$: \$(?P<left>.+) = (?P<right>.+)\$\.$", _linear),
        (r"^The equation \$(?P<polynomial>.+) = 0\$ has two distinct real roots\. What is (?P<question>.+)\?$",
         _quadratic),
        (r"^What is the greatest common divisor of \$(?P<a>\d+)\$ and \$(?P<b>\d+)\$\?$",
         lambda m: f"from math import gcd\nprint(gcd({m['a']}, {m['b']}))\n"),
        (r"^What is the least common multiple of \$(?P<a>\d+)\$ and \$(?P<b>\d+)\$\?$",
         lambda m: f"from math import lcm\nprint(lcm({m['a']}, {m['b']}))\n"),
        (r"^How many positive divisors does \$(?P<n>\d+)\$ have\?$",
         lambda m: f"{_LEAD}print(divisor_count({m['n']}))\n"),
        (r"^What is the largest prime factor of \$(?P<n>\d+)\$\?$",
         lambda m: f"{_LEAD}print(max(primefactors({m['n']})))\n"),
        (r"^What is the remainder when \$(?P<n>\d+)\$ is divided by \$(?P<m>\d+)\$\?$",
         lambda m: f"print({m['n']} % {m['m']})\n"),
        (r"^What is the remainder when \$(?P<base>\d+)\^\{(?P<power>\d+)\}\$ is divided by \$(?P<m>\d+)\$\?$",
         lambda m: f"print(pow({m['base']}, {m['power']}, {m['m']}))\n"),
        (r"^In how many ways can \$(?P<k>\d+)\$ of \$(?P<n>\d+)\$ different books be placed in a row on a shelf\?$",
         lambda m: f"from math import perm\nprint(perm({m['n']}, {m['k']}))\n"),
        (r"^In how many ways can a committee of \$(?P<k>\d+)\$ be chosen from \$(?P<n>\d+)\$ people\?$",
         lambda m: f"from math import comb\nprint(comb({m['n']}, {m['k']}))\n"),
        (r"^How many distinct strings can be made by rearranging all the letters of (?P<word>[A-Z]+)\?$", _letters),
        (r"^How many integers from \$1\$ to \$(?P<n>\d+)\$ are divisible by (?P<which>at least one|none) of "
         r"(?P<divisors>.+)\?$", _multiples),
    )
)  # fmt: skip


def write_program(text: str) -> str:
    """The program that prints the exact answer of the generated problem `text` (module docstring);
    `UnknownProblem` when no template of the generator writes `text`."""
    for pattern, write in _FORMS:
        match = pattern.match(text.strip())
        if match:
            return write(match)
    raise UnknownProblem(f"not a generated math-v0 problem (no template writes it): {text[:120]!r}")


_SWAPS = (
    ("print(sum(roots))", "print(roots[0] * roots[1])"),
    ("print(max(roots))", "print(min(roots))"),
    ("max(primefactors", "min(primefactors"),
    ("divisor_count", "primenu"),
    ("gcd", "lcm"),
    ("perm", "comb"),
    ("if (", "if not ("),
    (" % ", " // "),
    (" + ", " - "),
)
"""Pairs of neighbouring operations, tried in order; the first pair with a member in the program is swapped."""


def _miscopied(program: str) -> str:
    """The first number of the problem copied off by one: the first digits on a line that is not an import or
    the symbol's definition; for a program without such a number (a word to rearrange), the word's first
    letter doubled."""
    lines = program.split("\n")
    for index, line in enumerate(lines):
        if line.startswith(("from ", "import ", "x = symbols")) or not re.search(r"\d", line):
            continue
        lines[index] = re.sub(r"\d+", lambda m: str(int(m.group()) + 1), line, count=1)
        return "\n".join(lines)
    return re.sub(r'word = "(\w)', r'word = "\1\1', program, count=1)


def _swapped(program: str) -> str:
    """The question's operation replaced by its neighbour (the first pair of `_SWAPS` that applies); a program
    with none of them (a power's remainder) is miscopied instead."""
    for one, other in _SWAPS:
        if one in program:
            return program.replace(one, other)
        if other in program:
            return program.replace(other, one)
    return _miscopied(program)


VARIANTS: dict[str, Callable[[str], str]] = {"miscopied": _miscopied, "swapped": _swapped}
"""Name -> the function that turns a correct program into that imperfect variant (module docstring)."""
