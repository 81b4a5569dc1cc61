"""What a bundled problem is made of, and the helpers its input generator draws with.

A :class:`BundledSpec` holds everything written by hand: the statement (task, input format, output format;
the builder appends the worked example), a reference program, the example's input and a generator of
hidden-test inputs. Expected outputs are never written by hand: ``build_bundled`` computes them by running
the reference in the sandbox.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

DIFFICULTIES = ("easy", "medium", "hard")
LOWER = "abcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True)
class BundledSpec:
    """A hand-written stdin/stdout problem.

    ``statement`` and ``reference`` are dedented and stripped on construction. ``example`` is the stdin of
    the worked example shown in the statement (never a hidden test). ``generate(rng)`` returns the
    stdin of one hidden test, satisfying the statement's constraints, drawing only from ``rng``.
    """

    slug: str
    difficulty: str
    statement: str
    reference: str
    example: str
    generate: Callable[[np.random.Generator], str]

    def __post_init__(self) -> None:
        if self.difficulty not in DIFFICULTIES:
            raise ValueError(f"{self.slug}: difficulty {self.difficulty!r} is not one of {DIFFICULTIES}")
        object.__setattr__(self, "statement", textwrap.dedent(self.statement).strip())
        object.__setattr__(self, "reference", textwrap.dedent(self.reference).strip() + "\n")
        object.__setattr__(self, "example", textwrap.dedent(self.example).lstrip("\n"))


def integer(rng: np.random.Generator, low: int, high: int) -> int:
    """A uniform integer in ``[low, high]``, both ends included."""
    return int(rng.integers(low, high, endpoint=True))


def integers(rng: np.random.Generator, count: int, low: int, high: int) -> list[int]:
    """``count`` uniform integers in ``[low, high]``."""
    return [int(x) for x in rng.integers(low, high, size=count, endpoint=True)]


def word(rng: np.random.Generator, min_len: int, max_len: int, alphabet: str = LOWER) -> str:
    """A word of ``min_len`` to ``max_len`` characters drawn uniformly from ``alphabet``."""
    return "".join(rng.choice(list(alphabet), size=integer(rng, min_len, max_len)))


def line(values: Sequence[object]) -> str:
    """``values`` joined by single spaces."""
    return " ".join(str(v) for v in values)


def lines(*rows: object) -> str:
    """Each row on its own line (a row that is a list or tuple is joined by spaces), newline-terminated."""
    return "".join((line(row) if isinstance(row, (list, tuple)) else str(row)) + "\n" for row in rows)
