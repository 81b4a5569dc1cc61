"""Generated function-writing problems (`code-v0` with `dataset="generated"`), drawn from a seeded grammar.

`generate_problem(rng, difficulty)` chains `difficulty` steps of `pettingllms.data.code.grammar` (1: one step; 2:
two; 3: three, the last often an arithmetic condition on a count or a sum) into `solve(xs)` over a list of ints or
`solve(s)` over a string, and returns a `GeneratedProblem`:

- `problem`: a HumanEval-schema `CodeProblem` (source "generated", kind "function", entry point `solve`): the
  statement is the signature and a docstring that says each step in words with two or three visible examples;
  `check` holds the hidden tests; `reference` is the chained steps' code.
- `near_misses`: the programs that differ from the reference in one step by one of that step's realistic bugs
  (off-by-one, wrong operator, missed case), each with its code and bug kind; only those that some input tells
  apart from the reference (a bug that changes nothing for this chain is not a near miss).

The hidden tests are chosen to reject every near miss: from a pool of `POOL` random inputs (with the empty input
and short ones), a greedy cover picks inputs until each near miss fails one, then inputs are added in pool order up
to `HIDDEN_TESTS`. Expected values come from the steps' host semantics (`Step.apply`; trusted code, never model
text). A chain whose result takes fewer than `MIN_DISTINCT_OUTPUTS` values over the pool is drawn again (a
near-constant function is not a problem worth solving), and so is one without a near miss (its hidden tests
would check nothing in particular).

The problem's id is `generated/<difficulty>/<12 hex digits of the reference's hash>`, a function of the program
only, so `pettingllms.core.splits.split_of(id)` puts each program (whatever examples a draw gave it) in exactly one
split: "train", "val" and "eval" never share a program.
"""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pettingllms.core.errors import ConfigError
from pettingllms.data.code.grammar import STEPS, VARIABLES, Step
from pettingllms.data.code.schema import CodeProblem
from pettingllms.data.math.schema import content_id

DIFFICULTIES = (1, 2, 3)
ENTRY_POINT = "solve"
POOL = 120
HIDDEN_TESTS = 6
MAX_HIDDEN_TESTS = 10
MIN_DISTINCT_OUTPUTS = 3
DRAWS = 200
"""`generate_problem` gives up (RuntimeError) after this many chains without enough distinct outputs."""
WORDS = (
    "apple",
    "Sky",
    "tree",
    "b4",
    "OUT",
    "queue",
    "42",
    "hello",
    "IDEA",
    "nest",
    "a",
    "sun",
    "Eve",
    "x9y",
)
SIGNATURES = {"list": "xs: list[int]", "str": "s: str"}
ANNOTATIONS = {"list": "list[int]", "str": "str", "int": "int"}
SHAPES: dict[int, tuple[tuple[str, ...], ...]] = {
    1: (("list", "list"), ("list", "int"), ("str", "str"), ("str", "int")),
    2: (("list", "list", "list"), ("list", "list", "int"), ("str", "str", "str"), ("str", "str", "int"),
        ("list", "int", "int"), ("str", "int", "int")),
    3: (("list", "list", "list", "int"), ("list", "list", "int", "int"), ("str", "str", "int", "int"),
        ("str", "str", "str", "int"), ("list", "list", "list", "list")),
}  # fmt: skip
"""difficulty -> the type chains a program may take (input type first, result type last)."""


@dataclasses.dataclass(frozen=True)
class NearMiss:
    """The reference with step `step` (0-based) replaced by one of its bugs: the whole function's code."""

    step: int
    kind: str
    code: str


@dataclasses.dataclass(frozen=True)
class GeneratedProblem:
    """A generated problem (module docstring): the env's `CodeProblem`, its near misses, and its hidden tests'
    inputs with their expected values."""

    problem: CodeProblem
    near_misses: tuple[NearMiss, ...]
    hidden: tuple[tuple[Any, Any], ...]
    visible: tuple[tuple[Any, Any], ...]


def generate_problem(rng: np.random.Generator, difficulty: int = 1) -> GeneratedProblem:
    """One problem drawn with `rng` (the same generator state gives the same problem). ConfigError for a
    difficulty outside `DIFFICULTIES`."""
    if difficulty not in DIFFICULTIES:
        raise ConfigError(f"difficulty={difficulty!r} is not supported; allowed values: {list(DIFFICULTIES)}")
    for _ in range(DRAWS):
        shape = SHAPES[difficulty][int(rng.integers(len(SHAPES[difficulty])))]
        steps = _chain(rng, shape)
        pool = _pool(rng, shape[0])
        expected = [_run(steps, value) for value in pool]
        if len({repr(value) for value in expected}) >= MIN_DISTINCT_OUTPUTS:
            generated = _problem(rng, difficulty, shape, steps, pool, expected)
            if generated.near_misses:
                return generated
    raise RuntimeError(
        f"no problem with {MIN_DISTINCT_OUTPUTS} distinct outputs and a near miss in {DRAWS} draws"
    )


def _chain(rng: np.random.Generator, shape: Sequence[str]) -> list[Step]:
    """Steps along the type chain `shape`, no template twice."""
    steps, used = [], set()
    for takes, gives in zip(shape, shape[1:]):
        templates = [t for t in STEPS[(takes, gives)] if t not in used]
        template = templates[int(rng.integers(len(templates)))]
        used.add(template)
        steps.append(template(rng))
    return steps


def _pool(rng: np.random.Generator, kind: str) -> list[Any]:
    """`POOL` inputs of type `kind`: the empty one, then short and random ones."""
    if kind == "list":
        draws = [
            [int(v) for v in rng.integers(-5, 13, size=int(rng.integers(1, 8)))] for _ in range(POOL - 1)
        ]
        return [[], *draws]
    words = [
        (" " * int(rng.integers(1, 3))).join(str(w) for w in rng.choice(WORDS, size=int(rng.integers(1, 5))))
        for _ in range(POOL - 1)
    ]
    return ["", *words]


def _run(steps: Sequence[Step], value: Any, swap: tuple[int, Callable[[Any], Any]] | None = None) -> Any:
    """The chain's result on `value`, with step `swap[0]` computed by `swap[1]` instead when given."""
    for index, step in enumerate(steps):
        value = swap[1](value) if swap is not None and swap[0] == index else step.apply(value)
    return value


def _problem(
    rng: np.random.Generator,
    difficulty: int,
    shape: Sequence[str],
    steps: list[Step],
    pool: list[Any],
    expected: list[Any],
) -> GeneratedProblem:
    misses, outputs = [], []
    for index, step in enumerate(steps):
        for bug in step.bugs:
            values = [_run(steps, value, (index, bug.apply)) for value in pool]
            if values != expected:
                code = _function(shape, [bug.code if i == index else s.code for i, s in enumerate(steps)])
                misses.append(NearMiss(index, bug.kind, code))
                outputs.append(values)
    chosen = _cover(outputs, expected)
    for index in range(len(pool)):  # topped up in pool order (the empty input first), no input twice
        if len(chosen) < HIDDEN_TESTS and all(pool[index] != pool[c] for c in chosen):
            chosen.append(index)
    hidden = tuple((pool[i], expected[i]) for i in chosen[:MAX_HIDDEN_TESTS])
    visible = tuple(_first_distinct(pool, expected, start=1, count=int(rng.integers(2, 4))))
    reference = _function(shape, [step.code for step in steps])
    problem = CodeProblem(
        id=f"generated/{difficulty}/{content_id(reference)}",
        source="generated",
        kind="function",
        statement=_statement(shape, steps, visible),
        check="def check(candidate):\n"
        + "".join(f"    assert candidate({i!r}) == {o!r}\n" for i, o in hidden),
        entry_point=ENTRY_POINT,
        reference=reference,
        difficulty=str(difficulty),
    )
    return GeneratedProblem(problem, tuple(misses), hidden, visible)


def _first_distinct(pool: list[Any], expected: list[Any], start: int, count: int) -> list[tuple[Any, Any]]:
    """The first `count` (input, expected value) pairs of the pool from `start` on, no value twice on either side
    (examples that all give the same answer would say little)."""
    pairs: list[tuple[Any, Any]] = []
    for value, result in zip(pool[start:], expected[start:]):
        if len(pairs) < count and all(value != seen and result != out for seen, out in pairs):
            pairs.append((value, result))
    return pairs


def _cover(outputs: list[list[Any]], expected: list[Any]) -> list[int]:
    """Pool indices, chosen greedily (most near misses rejected first, the earliest input on ties), until every
    near miss (its outputs on the pool) differs from `expected` on one of them."""
    left = set(range(len(outputs)))
    chosen: list[int] = []
    while left:
        best = max(
            range(len(expected)),
            key=lambda i: (sum(outputs[m][i] != expected[i] for m in left), -i),
        )
        chosen.append(best)
        left = {m for m in left if outputs[m][best] == expected[best]}
    return chosen


def _function(shape: Sequence[str], bodies: Sequence[str]) -> str:
    """`def solve(...)` with the steps' code in order and the last variable returned."""
    lines = [f"def {ENTRY_POINT}({SIGNATURES[shape[0]]}) -> {ANNOTATIONS[shape[-1]]}:"]
    lines += [textwrap.indent(body, "    ") for body in bodies]
    lines.append(f"    return {VARIABLES[shape[-1]]}")
    return "\n".join(lines)


def _statement(shape: Sequence[str], steps: Sequence[Step], visible: Sequence[tuple[Any, Any]]) -> str:
    """The signature and docstring: the steps in words, then the visible examples as doctests."""
    start = "the list of integers xs" if shape[0] == "list" else "the string s"
    words = f"Start from {start}; " + "; then ".join(step.spec for step in steps) + "; return the result."
    doc = textwrap.fill(words, width=96, initial_indent="    ", subsequent_indent="    ")
    examples = "".join(f"    >>> {ENTRY_POINT}({i!r})\n    {o!r}\n" for i, o in visible)
    return (
        f"def {ENTRY_POINT}({SIGNATURES[shape[0]]}) -> {ANNOTATIONS[shape[-1]]}:\n"
        f'    """\n{doc}\n\n{examples}    """\n'
    )
