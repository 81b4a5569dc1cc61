"""The one shape every coding problem takes, whatever dataset it came from.

A :class:`CodeProblem` is either of kind ``"function"`` (the agents write a function; a ``check(candidate)``
function written by the dataset decides, run by ``pettingllms.data.code.judge``) or of kind ``"stdio"`` (the agents write
a complete program that reads stdin; it passes a :class:`TestCase` iff :func:`outputs_match` says its stdout
matches). Nothing here runs code: programs are built as text, to be run in ``pettingllms.sandbox``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

SOURCES = ("humaneval", "mbpp", "apps", "codecontests", "livecodebench", "bundled", "generated", "custom")
KINDS = ("function", "stdio")

_HUMANEVAL_KEYS = ("task_id", "prompt", "canonical_solution", "test", "entry_point")
_STATEMENT_KEYS = ("statement", "question", "description")
_ACCEPTED = (
    "accepted schemas: HumanEval's {task_id, prompt, canonical_solution, test, entry_point}, or stdio's "
    "{statement|question|description, tests: [{input, output}, ...] (or inputs/outputs lists), "
    "optional id, solution|reference, difficulty}"
)


class SkippedRow(ValueError):
    """A dataset row that cannot become a :class:`CodeProblem` (e.g. a call-based APPS problem).

    Loaders skip such rows and count them by ``str(error)``, the reason."""


@dataclass(frozen=True)
class TestCase:
    """One hidden test of a stdio problem: the text fed to stdin and the expected stdout."""

    __test__ = False  # not a pytest test class

    input: str
    output: str

    def __deepcopy__(self, memo: dict) -> TestCase:
        return self  # immutable: environment copies share it


@dataclass(frozen=True)
class CodeProblem:
    """A coding problem, normalized.

    ``id`` is ``"<source>/<native id>"``. Kind ``"function"`` has ``check`` (source defining
    ``check(candidate)``) and ``entry_point`` and no ``tests``; kind ``"stdio"`` has at least one test in
    ``tests`` and neither ``check`` nor ``entry_point``. ``reference`` (a full function for the function
    kind, a complete program for stdio) is ``None`` when the dataset has none. ``difficulty`` is the
    dataset's own label, ``""`` when it has none. Invalid combinations raise ``ValueError``.
    """

    id: str
    source: str
    kind: str
    statement: str
    tests: tuple[TestCase, ...] = ()
    check: str | None = None
    entry_point: str | None = None
    reference: str | None = None
    difficulty: str = ""

    def __deepcopy__(self, memo: dict) -> CodeProblem:
        return self  # immutable: environment copies share it

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"source={self.source!r} is not one of {SOURCES}")
        if not self.id.startswith(self.source + "/"):
            raise ValueError(f"id={self.id!r} must start with {self.source + '/'!r}")
        if self.kind == "function":
            if not self.check or not self.entry_point or self.tests:
                raise ValueError(f"{self.id}: a function problem needs check and entry_point and no tests")
        elif self.kind == "stdio":
            if not self.tests or self.check is not None or self.entry_point is not None:
                raise ValueError(f"{self.id}: a stdio problem needs tests and no check/entry_point")
        else:
            raise ValueError(f"kind={self.kind!r} is not one of {KINDS}")


def text_of(value: Any) -> str:
    """Test-case text as a str: a str as is, a list of lines joined with newlines (APPS stores some
    inputs/outputs that way), any other scalar through ``str``."""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return "\n".join(text_of(item) for item in value)
    return str(value)


def tests_from_lists(inputs: Sequence[Any], outputs: Sequence[Any]) -> tuple[TestCase, ...]:
    """Pair parallel ``inputs``/``outputs`` lists into tests; ValueError if their lengths differ."""
    if len(inputs) != len(outputs):
        raise ValueError(f"{len(inputs)} test inputs but {len(outputs)} outputs")
    return tuple(TestCase(text_of(i), text_of(o)) for i, o in zip(inputs, outputs))


def outputs_match(expected: str, actual: str) -> bool:
    """True iff ``actual`` stdout passes a test whose expected stdout is ``expected``: both hold the same
    sequence of whitespace-separated tokens (so trailing spaces and newlines never matter)."""
    return expected.split() == actual.split()


def problem_from_dict(d: Mapping[str, Any], *, source: str = "custom") -> CodeProblem:
    """Build a problem from a plain mapping in one of two schemas.

    HumanEval's (``task_id``, ``prompt``, ``canonical_solution``, ``test``, ``entry_point``) gives a function
    problem with id ``"humaneval/<task_id>"``, statement the prompt and reference ``prompt +
    canonical_solution``. The stdio schema (a statement under ``statement``, ``question`` or
    ``description``; tests as ``tests: [{"input", "output"}, ...]``, as ``tests: {"inputs": [...],
    "outputs": [...]}`` or as top-level ``inputs``/``outputs`` lists; optional ``solution`` or
    ``reference``, ``difficulty`` and ``id``) gives a stdio problem with id ``"<source>/<id>"`` (without an
    ``id``, a hash of the statement). Anything else raises ValueError naming the missing keys.
    """
    if all(key in d for key in _HUMANEVAL_KEYS):
        return CodeProblem(
            id=f"humaneval/{d['task_id']}",
            source="humaneval",
            kind="function",
            statement=d["prompt"],
            check=d["test"],
            entry_point=d["entry_point"],
            reference=d["prompt"] + d["canonical_solution"],
        )
    statement_key = next((key for key in _STATEMENT_KEYS if key in d), None)
    tests = _stdio_tests(d)
    if statement_key is None or tests is None:
        missing_stdio = ([] if statement_key else ["statement|question|description"]) + (
            [] if tests is not None else ["tests|inputs+outputs"]
        )
        missing_humaneval = [key for key in _HUMANEVAL_KEYS if key not in d]
        raise ValueError(
            f"not a coding problem: missing {missing_humaneval} for HumanEval's schema, "
            f"or {missing_stdio} for the stdio schema; {_ACCEPTED}"
        )
    statement = d[statement_key]
    native_id = d.get("id") or hashlib.blake2b(statement.encode(), digest_size=6).hexdigest()
    return CodeProblem(
        id=f"{source}/{native_id}",
        source=source,
        kind="stdio",
        statement=statement,
        tests=tests,
        reference=d.get("solution", d.get("reference")),
        difficulty=str(d.get("difficulty", "")),
    )


def _stdio_tests(d: Mapping[str, Any]) -> tuple[TestCase, ...] | None:
    """The tests of a stdio-schema mapping, or None when it has none in any accepted form."""
    tests = d.get("tests")
    if isinstance(tests, Mapping) and "inputs" in tests and "outputs" in tests:
        return tests_from_lists(tests["inputs"], tests["outputs"])
    if isinstance(tests, Sequence) and not isinstance(tests, str) and tests:
        if not all(isinstance(t, Mapping) and "input" in t and "output" in t for t in tests):
            raise ValueError("every entry of tests needs an input and an output")
        return tuple(TestCase(text_of(t["input"]), text_of(t["output"])) for t in tests)
    if "inputs" in d and "outputs" in d and d["inputs"]:
        return tests_from_lists(d["inputs"], d["outputs"])
    return None
