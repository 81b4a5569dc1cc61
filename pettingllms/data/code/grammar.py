"""The grammar of generated code problems: small program steps, each with its words, its code and its meaning.

A generated program is a chain of `Step`s over one variable: `xs` (a list of ints), `s` (a str) or `n` (an int).
Each step says what it does (`spec`, a clause of the problem statement), does it in code (`code`: lines that read
and rebind the variable) and computes it on the host (`apply`, the trusted semantics the hidden tests' expected
values come from). A step also lists its `bugs`: the same step written with one realistic mistake (an off-by-one
bound or index, a wrong operator, a missed case), each with its own code and meaning; a program with one step
replaced by one of its bugs is a near miss (`pettingllms.data.code.generated`).

`STEPS` maps each (input type, output type) to the step templates that draw a `Step` from an rng. Types:
"list" (`xs`), "str" (`s`), "int" (`n`). tests/test_code_generated.py checks, for every template, that each
step's code and each bug's code compute what their `apply` says (run on many inputs).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

VARIABLES = {"list": "xs", "str": "s", "int": "n"}
"""The variable each type lives in."""


@dataclasses.dataclass(frozen=True)
class Bug:
    """One mistake in a step: its kind ("off-by-one", "wrong operator", "missed case"), code and meaning."""

    kind: str
    code: str
    apply: Callable[[Any], Any]


@dataclasses.dataclass(frozen=True)
class Step:
    """One step of a program (module docstring): from type `takes` to type `gives`."""

    takes: str
    gives: str
    spec: str
    code: str
    apply: Callable[[Any], Any]
    bugs: tuple[Bug, ...] = ()


Template = Callable[[np.random.Generator], Step]


def _pick(rng: np.random.Generator, low: int, high: int) -> int:
    """An int in [low, high], drawn with `rng`."""
    return int(rng.integers(low, high + 1))


# ----------------------------------------------------------------- lists to lists
def add(rng: np.random.Generator) -> Step:
    k = _pick(rng, 1, 9)
    return Step("list", "list", f"add {k} to every number", f"xs = [x + {k} for x in xs]",
                lambda xs: [x + k for x in xs], (
                    Bug("off-by-one", f"xs = [x + {k + 1} for x in xs]", lambda xs: [x + k + 1 for x in xs]),
                    Bug("wrong operator", f"xs = [x - {k} for x in xs]", lambda xs: [x - k for x in xs]),
                ))  # fmt: skip


def multiply(rng: np.random.Generator) -> Step:
    k = _pick(rng, 2, 6)
    return Step("list", "list", f"multiply every number by {k}", f"xs = [x * {k} for x in xs]",
                lambda xs: [x * k for x in xs], (
                    Bug("off-by-one", f"xs = [x * {k + 1} for x in xs]", lambda xs: [x * (k + 1) for x in xs]),
                    Bug("wrong operator", f"xs = [x + {k} for x in xs]", lambda xs: [x + k for x in xs]),
                ))  # fmt: skip


def keep_greater(rng: np.random.Generator) -> Step:
    t = _pick(rng, -2, 9)
    return Step("list", "list", f"keep only the numbers greater than {t}", f"xs = [x for x in xs if x > {t}]",
                lambda xs: [x for x in xs if x > t], (
                    Bug("missed case", f"xs = [x for x in xs if x >= {t}]", lambda xs: [x for x in xs if x >= t]),
                    Bug("wrong operator", f"xs = [x for x in xs if x < {t}]", lambda xs: [x for x in xs if x < t]),
                ))  # fmt: skip


def keep_parity(rng: np.random.Generator) -> Step:
    even = bool(rng.integers(2))
    word, rest, other = ("even", 0, 1) if even else ("odd", 1, 0)
    return Step("list", "list", f"keep only the {word} numbers", f"xs = [x for x in xs if x % 2 == {rest}]",
                lambda xs: [x for x in xs if x % 2 == rest], (
                    Bug("wrong operator", f"xs = [x for x in xs if x % 2 == {other}]",
                        lambda xs: [x for x in xs if x % 2 == other]),
                ))  # fmt: skip


def drop_first(rng: np.random.Generator) -> Step:
    k = _pick(rng, 1, 4)
    words = "the first number" if k == 1 else f"the first {k} numbers"
    return Step("list", "list", f"drop {words}", f"xs = xs[{k}:]", lambda xs: xs[k:], (
        Bug("off-by-one", f"xs = xs[{k + 1}:]", lambda xs: xs[k + 1:]),
        Bug("off-by-one", f"xs = xs[{k - 1}:]", lambda xs: xs[k - 1:]),
    ))  # fmt: skip


def take_first(rng: np.random.Generator) -> Step:
    k = _pick(rng, 2, 5)
    return Step("list", "list", f"keep only the first {k} numbers", f"xs = xs[:{k}]", lambda xs: xs[:k], (
        Bug("off-by-one", f"xs = xs[:{k + 1}]", lambda xs: xs[: k + 1]),
        Bug("off-by-one", f"xs = xs[:{k - 1}]", lambda xs: xs[: k - 1]),
    ))  # fmt: skip


def sort(rng: np.random.Generator) -> Step:
    down = bool(rng.integers(2))
    word = "from largest to smallest" if down else "from smallest to largest"
    return Step("list", "list", f"sort the numbers {word}", f"xs = sorted(xs, reverse={down})",
                lambda xs: sorted(xs, reverse=down), (
                    Bug("wrong operator", f"xs = sorted(xs, reverse={not down})",
                        lambda xs: sorted(xs, reverse=not down)),
                ))  # fmt: skip


def reverse(rng: np.random.Generator) -> Step:
    return Step("list", "list", "reverse the order of the numbers", "xs = xs[::-1]", lambda xs: xs[::-1], (
        Bug("wrong operator", "xs = sorted(xs, reverse=True)", lambda xs: sorted(xs, reverse=True)),
    ))  # fmt: skip


def running_total(rng: np.random.Generator) -> Step:
    code = "total, out = 0, []\nfor x in xs:\n    total += x\n    out.append(total)\nxs = out"
    late = "total, out = 0, []\nfor x in xs:\n    out.append(total)\n    total += x\nxs = out"
    return Step("list", "list", "replace each number by the running total up to and including it", code,
                _running_total, (Bug("off-by-one", late, _running_total_before),))  # fmt: skip


def _running_total(xs: list[int]) -> list[int]:
    return [sum(xs[: i + 1]) for i in range(len(xs))]


def _running_total_before(xs: list[int]) -> list[int]:
    return [sum(xs[:i]) for i in range(len(xs))]


def unique(rng: np.random.Generator) -> Step:
    code = ("seen, out = set(), []\nfor x in xs:\n    if x not in seen:\n        seen.add(x)\n"
            "        out.append(x)\nxs = out")  # fmt: skip
    return Step("list", "list", "remove repeated numbers, keeping the first of each in order", code, _unique, (
        Bug("missed case", "xs = sorted(set(xs))", lambda xs: sorted(set(xs))),
    ))  # fmt: skip


def _unique(xs: list[int]) -> list[int]:
    return list(dict.fromkeys(xs))


# ----------------------------------------------------------------- lists to ints
def total(rng: np.random.Generator) -> Step:
    return Step("list", "int", "add the numbers up (0 if there are none)", "n = sum(xs)", sum, (
        Bug("off-by-one", "n = sum(xs[1:])", lambda xs: sum(xs[1:])),
        Bug("wrong operator", "n = max(xs, default=0)", lambda xs: max(xs, default=0)),
    ))  # fmt: skip


def count(rng: np.random.Generator) -> Step:
    return Step("list", "int", "count the numbers", "n = len(xs)", len, (
        Bug("off-by-one", "n = len(xs) - 1", lambda xs: len(xs) - 1),
    ))  # fmt: skip


def largest(rng: np.random.Generator) -> Step:
    return Step("list", "int", "take the largest number (0 if there are none)", "n = max(xs, default=0)",
                lambda xs: max(xs, default=0), (
                    Bug("wrong operator", "n = min(xs, default=0)", lambda xs: min(xs, default=0)),
                    Bug("missed case", "n = max(xs + [0])", lambda xs: max([*xs, 0])),
                ))  # fmt: skip


def product(rng: np.random.Generator) -> Step:
    code = "n = 1\nfor x in xs:\n    n *= x"
    return Step("list", "int", "multiply the numbers together (1 if there are none)", code, _product, (
        Bug("off-by-one", "n = 1\nfor x in xs[1:]:\n    n *= x", lambda xs: _product(xs[1:])),
        Bug("wrong operator", "n = 1\nfor x in xs:\n    n += x", lambda xs: 1 + sum(xs)),
    ))  # fmt: skip


def _product(xs: list[int]) -> int:
    n = 1
    for x in xs:
        n *= x
    return n


def alternating(rng: np.random.Generator) -> Step:
    code = "n, sign = 0, 1\nfor x in xs:\n    n += sign * x\n    sign = -sign"
    flipped = "n, sign = 0, -1\nfor x in xs:\n    n += sign * x\n    sign = -sign"
    return Step("list", "int",
                "add the numbers with alternating signs: the first plus, the second minus, and so on", code,
                _alternating, (Bug("wrong operator", flipped, lambda xs: -_alternating(xs)),))  # fmt: skip


def _alternating(xs: list[int]) -> int:
    return sum(x if i % 2 == 0 else -x for i, x in enumerate(xs))


def rises(rng: np.random.Generator) -> Step:
    code = "n = sum(1 for a, b in zip(xs, xs[1:]) if b > a)"
    return Step("list", "int", "count the places where a number is larger than the one before it", code,
                lambda xs: sum(1 for a, b in zip(xs, xs[1:]) if b > a), (
                    Bug("missed case", "n = sum(1 for a, b in zip(xs, xs[1:]) if b >= a)",
                        lambda xs: sum(1 for a, b in zip(xs, xs[1:]) if b >= a)),
                ))  # fmt: skip


# ----------------------------------------------------------------- ints to ints
def threshold(rng: np.random.Generator) -> Step:
    t = _pick(rng, 2, 9)
    code = f"if n > {t}:\n    n = n - {t}\nelse:\n    n = n * 2"
    return Step("int", "int", f"if the result is greater than {t}, subtract {t} from it, otherwise double it",
                code, lambda n: n - t if n > t else n * 2, (
                    Bug("missed case", code.replace(f"n > {t}", f"n >= {t}"), lambda n: n - t if n >= t else n * 2),
                    Bug("wrong operator", code.replace(f"n - {t}", f"n + {t}"), lambda n: n + t if n > t else n * 2),
                ))  # fmt: skip


def modulo(rng: np.random.Generator) -> Step:
    k = _pick(rng, 3, 9)
    return Step("int", "int", f"take the remainder of the result divided by {k}", f"n = n % {k}",
                lambda n: n % k, (
                    Bug("wrong operator", f"n = n // {k}", lambda n: n // k),
                    Bug("off-by-one", f"n = n % {k + 1}", lambda n: n % (k + 1)),
                ))  # fmt: skip


# ----------------------------------------------------------------- strings
def case(rng: np.random.Generator) -> Step:
    upper = bool(rng.integers(2))
    method, other, word = ("upper", "lower", "upper") if upper else ("lower", "upper", "lower")
    return Step("str", "str", f"convert the text to {word} case", f"s = s.{method}()",
                (str.upper if upper else str.lower), (
                    Bug("wrong operator", f"s = s.{other}()", str.lower if upper else str.upper),
                    Bug("missed case", "s = s.capitalize()" if upper else "s = s.swapcase()",
                        str.capitalize if upper else str.swapcase),
                ))  # fmt: skip


def drop_vowels(rng: np.random.Generator) -> Step:
    return Step("str", "str", "remove every vowel (a, e, i, o, u, in either case)",
                's = "".join(c for c in s if c.lower() not in "aeiou")',
                lambda s: "".join(c for c in s if c.lower() not in "aeiou"), (
                    Bug("missed case", 's = "".join(c for c in s if c not in "aeiou")',
                        lambda s: "".join(c for c in s if c not in "aeiou")),
                ))  # fmt: skip


def replace_letter(rng: np.random.Generator) -> Step:
    old, new = (str(c) for c in rng.choice(list("aelnst"), size=2, replace=False))
    return Step("str", "str", f"replace every '{old}' with '{new}'", f's = s.replace("{old}", "{new}")',
                lambda s: s.replace(old, new), (
                    Bug("missed case", f's = s.replace("{old}", "{new}", 1)', lambda s: s.replace(old, new, 1)),
                ))  # fmt: skip


def keep_digits(rng: np.random.Generator) -> Step:
    return Step("str", "str", "keep only the digits", 's = "".join(c for c in s if c.isdigit())',
                lambda s: "".join(c for c in s if c.isdigit()), (
                    Bug("wrong operator", 's = "".join(c for c in s if c.isalpha())',
                        lambda s: "".join(c for c in s if c.isalpha())),
                ))  # fmt: skip


def reverse_text(rng: np.random.Generator) -> Step:
    return Step("str", "str", "reverse the text", "s = s[::-1]", lambda s: s[::-1], (
        Bug("wrong operator", 's = " ".join(s.split()[::-1])', lambda s: " ".join(s.split()[::-1])),
    ))  # fmt: skip


def count_vowels(rng: np.random.Generator) -> Step:
    return Step("str", "int", "count the vowels (a, e, i, o, u, in either case)",
                'n = sum(1 for c in s if c.lower() in "aeiou")',
                lambda s: sum(1 for c in s if c.lower() in "aeiou"), (
                    Bug("missed case", 'n = sum(1 for c in s if c in "aeiou")',
                        lambda s: sum(1 for c in s if c in "aeiou")),
                    Bug("off-by-one", 'n = sum(1 for c in s if c.lower() in "aeio")',
                        lambda s: sum(1 for c in s if c.lower() in "aeio")),
                ))  # fmt: skip


def count_words(rng: np.random.Generator) -> Step:
    return Step("str", "int", "count the words (runs of characters between spaces)", "n = len(s.split())",
                lambda s: len(s.split()), (
                    Bug("missed case", 'n = s.count(" ") + 1', lambda s: s.count(" ") + 1),
                ))  # fmt: skip


def length(rng: np.random.Generator) -> Step:
    return Step("str", "int", "count the characters", "n = len(s)", len, (
        Bug("missed case", 'n = len(s.replace(" ", ""))', lambda s: len(s.replace(" ", ""))),
    ))  # fmt: skip


STEPS: dict[tuple[str, str], tuple[Template, ...]] = {
    ("list", "list"): (add, multiply, keep_greater, keep_parity, drop_first, take_first, sort, reverse,
                       running_total, unique),
    ("list", "int"): (total, count, largest, product, alternating, rises),
    ("int", "int"): (threshold, modulo),
    ("str", "str"): (case, drop_vowels, replace_letter, keep_digits, reverse_text),
    ("str", "int"): (count_vowels, count_words, length),
}  # fmt: skip
"""(takes, gives) -> the step templates of that signature."""
