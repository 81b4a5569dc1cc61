"""The six kinds of generated problems. Each template draws its numbers from a numpy Generator and returns
the problem text and its exact answer, a ``Fraction`` computed with integer arithmetic (never from text).

Difficulty 1, 2 or 3 grows the numbers and the number of steps; what it changes is listed per template.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from itertools import combinations
from typing import TypeVar

import numpy as np
import sympy

from pettingllms.data.math.render import latex_number, latex_operand, latex_polynomial

T = TypeVar("T")
Template = Callable[[np.random.Generator, int], tuple[str, Fraction]]


def _randint(rng: np.random.Generator, low: int, high: int) -> int:
    """An int drawn uniformly from ``low..high`` inclusive."""
    return int(rng.integers(low, high + 1))


def _pick(rng: np.random.Generator, items: Sequence[T]) -> T:
    return items[int(rng.integers(len(items)))]


# --- arithmetic ---------------------------------------------------------------------------------------

_ARITHMETIC_SIZES = {1: (2, 3, 1, 20), 2: (3, 4, 1, 50), 3: (4, 5, -30, 100)}
"""difficulty -> (fewest operands, most operands, smallest operand, largest operand)."""
_PRECEDENCE = {"+": 1, "-": 1, "\\times": 2}
_ATOM = 3


def arithmetic(rng: np.random.Generator, difficulty: int) -> tuple[str, Fraction]:
    """Evaluate an integer expression with ``+``, ``-``, ``\\times`` and parentheses: 2-3 operands up to 20,
    3-4 up to 50, or 4-5 from -30 to 100."""
    fewest, most, low, high = _ARITHMETIC_SIZES[difficulty]
    latex, value, _ = _expression(rng, _randint(rng, fewest, most), low, high)
    return f"Compute ${latex}$.", Fraction(value)


def _expression(rng: np.random.Generator, operands: int, low: int, high: int) -> tuple[str, int, int]:
    """A random expression tree with ``operands`` integer leaves: (LaTeX, value, precedence of its top)."""
    if operands == 1:
        leaf = _randint(rng, low, high)
        return latex_operand(leaf), leaf, _ATOM
    left_operands = _randint(rng, 1, operands - 1)
    operator = _pick(rng, tuple(_PRECEDENCE))
    left_text, left, left_precedence = _expression(rng, left_operands, low, high)
    right_text, right, right_precedence = _expression(rng, operands - left_operands, low, high)
    precedence = _PRECEDENCE[operator]
    if left_precedence < precedence:
        left_text = f"({left_text})"
    if right_precedence < precedence or (right_precedence == precedence and operator == "-"):
        right_text = f"({right_text})"
    value = left + right if operator == "+" else left - right if operator == "-" else left * right
    return f"{left_text} {operator} {right_text}", value, precedence


# --- fractions ----------------------------------------------------------------------------------------

_LARGEST_DENOMINATOR = {1: 9, 2: 12, 3: 15}


def fraction_arithmetic(rng: np.random.Generator, difficulty: int) -> tuple[str, Fraction]:
    """Combine reduced fractions: two with ``+``/``-`` (denominators up to 9), three with ``+``/``-`` (up
    to 12), or a parenthesized sum or difference times or divided by a third (up to 15)."""
    largest = _LARGEST_DENOMINATOR[difficulty]
    first, second = _reduced_fraction(rng, largest), _reduced_fraction(rng, largest)
    sign = _pick(rng, ("+", "-"))
    value = first + second if sign == "+" else first - second
    latex = f"{latex_number(first)} {sign} {latex_number(second)}"
    if difficulty == 2:
        third, sign = _reduced_fraction(rng, largest), _pick(rng, ("+", "-"))
        value = value + third if sign == "+" else value - third
        latex = f"{latex} {sign} {latex_number(third)}"
    elif difficulty == 3:
        third, operator = _reduced_fraction(rng, largest), _pick(rng, ("\\times", "\\div"))
        value = value * third if operator == "\\times" else value / third
        latex = f"\\left({latex}\\right) {operator} {latex_number(third)}"
    return f"Compute ${latex}$. Give the result in lowest terms.", value


def _reduced_fraction(rng: np.random.Generator, largest_denominator: int) -> Fraction:
    """A positive non-integer fraction p/q in lowest terms, 2 <= q <= largest_denominator, p < 2q."""
    denominator = _randint(rng, 2, largest_denominator)
    numerators = [p for p in range(1, 2 * denominator) if math.gcd(p, denominator) == 1]
    return Fraction(_pick(rng, numerators), denominator)


# --- linear equations -----------------------------------------------------------------------------------


def linear(rng: np.random.Generator, difficulty: int) -> tuple[str, Fraction]:
    """Solve ``a x + b = c x + d`` for x: ``c = 0`` and an integer root (difficulty 1), x on both sides
    with an integer root (2), or a rational root p/q with 2 <= q <= 9 (3)."""
    if difficulty == 1:
        a, c, x = _randint(rng, 2, 9), 0, Fraction(_randint(rng, -10, 10))
    elif difficulty == 2:
        a, c = (_pick(rng, [k for k in range(-9, 10) if k != 0]) for _ in range(2))
        c = c if c != a else -a
        x = Fraction(_randint(rng, -15, 15))
    else:
        denominator = _randint(rng, 2, 9)
        numerator = _pick(rng, [p for p in range(-30, 31) if p != 0 and math.gcd(p, denominator) == 1])
        x = Fraction(numerator, denominator)
        c = _randint(rng, -12, 12)
        a = c + denominator * _pick(rng, (-3, -2, -1, 1, 2, 3))
    b = _randint(rng, -30, 30)
    d = (a - c) * x + b
    left, right = latex_polynomial([a, b]), latex_polynomial([c, int(d)])
    return f"Solve for $x$: ${left} = {right}$.", x


# --- quadratic equations --------------------------------------------------------------------------------

_RATIONAL_ROOTS = sorted({Fraction(p, q) for q in range(1, 6) for p in range(-12, 13)})
_QUESTIONS = {
    "sum": "the sum of its two roots",
    "product": "the product of its two roots",
    "larger": "its larger root",
    "smaller": "its smaller root",
}


def quadratic(rng: np.random.Generator, difficulty: int) -> tuple[str, Fraction]:
    """A quadratic with two distinct rational roots, asking for their sum, their product, the larger or the
    smaller root: monic with integer roots in -9..9 (difficulty 1), a leading coefficient of +-2..5 and
    integer roots in -12..12 (2), or rational roots p/q with q <= 5 (3)."""
    if difficulty == 3:
        candidates: Sequence[Fraction] = _RATIONAL_ROOTS
    else:
        bound = 9 if difficulty == 1 else 12
        candidates = [Fraction(r) for r in range(-bound, bound + 1)]
    first = _pick(rng, candidates)
    second = _pick(rng, [r for r in candidates if r != first])
    lead = _pick(rng, (-5, -4, -3, -2, 2, 3, 4, 5)) if difficulty == 2 else 1
    # lead * (q1 x - p1)(q2 x - p2), integer coefficients for rational roots p1/q1, p2/q2
    q1, p1, q2, p2 = first.denominator, first.numerator, second.denominator, second.numerator
    coefficients = [lead * q1 * q2, -lead * (q1 * p2 + q2 * p1), lead * p1 * p2]
    question = _pick(rng, tuple(_QUESTIONS))
    answers = {
        "sum": first + second,
        "product": first * second,
        "larger": max(first, second),
        "smaller": min(first, second),
    }
    text = (
        f"The equation ${latex_polynomial(coefficients)} = 0$ has two distinct real roots. "
        f"What is {_QUESTIONS[question]}?"
    )
    return text, answers[question]


# --- divisibility and primes ----------------------------------------------------------------------------

_PRIMES = {1: (2, 3, 5, 7), 2: (2, 3, 5, 7, 11, 13), 3: (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31)}
_DIVISIBILITY_QUESTIONS = ("gcd", "lcm", "divisors", "largest prime", "remainder")


def divisibility(rng: np.random.Generator, difficulty: int) -> tuple[str, Fraction]:
    """A gcd, an lcm, a count of positive divisors, a largest prime factor or a remainder. Numbers are
    products of primes up to 7, 13 or 31 (by difficulty), with more factors at higher difficulty;
    remainders are of a three-digit number (difficulty 1) or of a power such as ``7^{83}`` (2, 3)."""
    question = _pick(rng, _DIVISIBILITY_QUESTIONS)
    if question in ("gcd", "lcm"):
        common = _composite(rng, difficulty, difficulty)
        a, b = common * _composite(rng, difficulty, 1), common * _composite(rng, difficulty, 1)
        if question == "gcd":
            return f"What is the greatest common divisor of ${a}$ and ${b}$?", Fraction(math.gcd(a, b))
        return f"What is the least common multiple of ${a}$ and ${b}$?", Fraction(math.lcm(a, b))
    if question == "divisors":
        n = _composite(rng, difficulty, difficulty + _randint(rng, 1, 2))
        return f"How many positive divisors does ${n}$ have?", Fraction(int(sympy.divisor_count(n)))
    if question == "largest prime":
        n = _composite(rng, difficulty, difficulty + _randint(rng, 1, 2))
        return f"What is the largest prime factor of ${n}$?", Fraction(max(sympy.primefactors(n)))
    modulus = _randint(rng, 3, 6 + 5 * difficulty)
    if difficulty == 1:
        n = _randint(rng, 100, 999)
        return f"What is the remainder when ${n}$ is divided by ${modulus}$?", Fraction(n % modulus)
    base, exponent = _randint(rng, 2, 9), _randint(rng, 10, 50 * difficulty)
    text = f"What is the remainder when ${base}^{{{exponent}}}$ is divided by ${modulus}$?"
    return text, Fraction(pow(base, exponent, modulus))


def _composite(rng: np.random.Generator, difficulty: int, factors: int) -> int:
    """The product of ``factors`` primes drawn (with repetition) from the difficulty's list."""
    return math.prod(_pick(rng, _PRIMES[difficulty]) for _ in range(factors))


# --- counting -------------------------------------------------------------------------------------------

_COUNTING_SIZES = {1: (4, 7), 2: (6, 10), 3: (8, 12)}
"""difficulty -> range of the number of objects."""
_MULTIPLES_RANGE = {1: (50, 100), 2: (100, 1000), 3: (1000, 10000)}
_COUNTING_QUESTIONS = ("arrange", "choose", "letters", "multiples")


def counting(rng: np.random.Generator, difficulty: int) -> tuple[str, Fraction]:
    """Permutations (k of n books in a row), combinations (a committee of k from n people), arrangements of
    a word with repeated letters, or inclusion-exclusion (how many integers up to N are divisible by at
    least one, or by none, of two numbers; three at difficulty 3). Sizes grow with difficulty."""
    low, high = _COUNTING_SIZES[difficulty]
    question = _pick(rng, _COUNTING_QUESTIONS)
    if question == "arrange":
        n = _randint(rng, low, high)
        k = _randint(rng, 2, n)
        text = f"In how many ways can ${k}$ of ${n}$ different books be placed in a row on a shelf?"
        return text, Fraction(math.perm(n, k))
    if question == "choose":
        n = _randint(rng, low + 2 * difficulty, high + 4 * difficulty)
        k = _randint(rng, 2, n - 2)
        text = f"In how many ways can a committee of ${k}$ be chosen from ${n}$ people?"
        return text, Fraction(math.comb(n, k))
    if question == "letters":
        return _letters(rng, _randint(rng, low, high))
    return _multiples(rng, difficulty)


def _letters(rng: np.random.Generator, length: int) -> tuple[str, Fraction]:
    """Distinct rearrangements of a word of ``length`` letters from A-E, some repeated: length! over the
    product of each letter's count factorial."""
    letters = [_pick(rng, "ABCDE") for _ in range(length)]
    word = "".join(letters[i] for i in rng.permutation(length))
    count = math.factorial(length)
    for letter in set(word):
        count //= math.factorial(word.count(letter))
    return f"How many distinct strings can be made by rearranging all the letters of {word}?", Fraction(count)


def _multiples(rng: np.random.Generator, difficulty: int) -> tuple[str, Fraction]:
    """How many of 1..N are divisible by at least one (or by none) of 2-3 distinct numbers in 2..12."""
    low, high = _MULTIPLES_RANGE[difficulty]
    n = _randint(rng, low, high)
    chosen = rng.choice(np.arange(2, 13), size=3 if difficulty == 3 else 2, replace=False)
    divisors = sorted(int(d) for d in chosen)
    at_least_one = sum(
        (-1) ** (len(subset) + 1) * (n // math.lcm(*subset))
        for size in range(1, len(divisors) + 1)
        for subset in combinations(divisors, size)
    )
    listed = ", ".join(f"${d}$" for d in divisors[:-1]) + f" and ${divisors[-1]}$"
    if _pick(rng, (True, False)):
        text = f"How many integers from $1$ to ${n}$ are divisible by at least one of {listed}?"
        return text, Fraction(at_least_one)
    text = f"How many integers from $1$ to ${n}$ are divisible by none of {listed}?"
    return text, Fraction(n - at_least_one)


TEMPLATES: dict[str, Template] = {
    "arithmetic": arithmetic,
    "fractions": fraction_arithmetic,
    "linear": linear,
    "quadratic": quadratic,
    "divisibility": divisibility,
    "counting": counting,
}
"""Every kind of generated problem, by name."""
