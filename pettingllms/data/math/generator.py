"""Seeded generator of math problems with exact answers, and the ``generated`` dataset drawn from it.

``generate_problem(rng, kind=..., difficulty=...)`` draws one problem of a kind in ``KINDS`` (see
``templates`` for what each kind and difficulty produces). Its answer is computed exactly and written
canonically (an integer, or a reduced ``\\frac{p}{q}``); its id is ``generated/<kind>/<12 hex digits of the
BLAKE2b hash of the text>``, a function of the content only. ``pettingllms.core.splits.split_of(problem.id)``
therefore puts every problem in exactly one split, whatever seed drew it: ``generate_split`` draws problems
of one split only, so "train" and "eval" never share a problem.
"""

from __future__ import annotations

import numpy as np

from pettingllms.core.errors import ConfigError
from pettingllms.core.splits import check_split, draw_in_split
from pettingllms.data.math.render import latex_number
from pettingllms.data.math.schema import MathProblem, content_id
from pettingllms.data.math.templates import TEMPLATES

KINDS = tuple(TEMPLATES)
"""arithmetic, fractions, linear (equations), quadratic (equations), divisibility (and primes), counting."""
DIFFICULTIES = (1, 2, 3)
SOURCE = "generated"
DRAWS_PER_PROBLEM = 100
"""``generate_split`` gives up (RuntimeError) after this many draws per requested problem."""


def generate_problem(
    rng: np.random.Generator, *, kind: str | None = None, difficulty: int = 1
) -> MathProblem:
    """One problem drawn with ``rng`` (kind drawn uniformly when None); the same generator state gives the
    same problem. ConfigError for an unknown kind or a difficulty outside ``DIFFICULTIES``."""
    if kind is None:
        kind = KINDS[int(rng.integers(len(KINDS)))]
    if kind not in TEMPLATES:
        raise ConfigError(f"kind={kind!r} is not supported; allowed values: {list(KINDS)}")
    if difficulty not in DIFFICULTIES:
        raise ConfigError(f"difficulty={difficulty!r} is not supported; allowed values: {list(DIFFICULTIES)}")
    text, answer = TEMPLATES[kind](rng, difficulty)
    return MathProblem(
        id=f"{SOURCE}/{kind}/{content_id(text)}",
        source=SOURCE,
        problem=text,
        answer=latex_number(answer),
        difficulty=str(difficulty),
    )


def generate_split(split: str, limit: int, seed: int) -> list[MathProblem]:
    """``limit`` distinct problems of ``split`` ("train" or "eval"), in draw order, drawn with
    ``np.random.default_rng(seed)``: each with a kind and a difficulty drawn uniformly. The same arguments
    give the same list; a larger ``limit`` extends it. ValueError for another split or a negative limit."""
    check_split(split)
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    rng = np.random.default_rng(seed)
    problems: dict[str, MathProblem] = {}
    for _ in range(limit * DRAWS_PER_PROBLEM):
        if len(problems) == limit:
            break
        problem = draw_in_split(_random_problem, _problem_id, rng, split)
        problems.setdefault(problem.id, problem)
    if len(problems) < limit:
        raise RuntimeError(
            f"only {len(problems)} distinct {split} problems in {limit * DRAWS_PER_PROBLEM} draws"
        )
    return list(problems.values())


def _random_problem(rng: np.random.Generator) -> MathProblem:
    difficulty = DIFFICULTIES[int(rng.integers(len(DIFFICULTIES)))]
    return generate_problem(rng, difficulty=difficulty)


def _problem_id(problem: MathProblem) -> str:
    return problem.id
