"""CodeContests rows (deepmind/code_contests) as stdio problems.

A row has ``name``, ``description``, ``public_tests``, ``private_tests`` and ``generated_tests`` (each
``{"input": [...], "output": [...]}``), ``solutions`` (``{"language": [ints], "solution": [programs]}``,
language 3 is Python 3), ``difficulty`` (a class label, stored as its index), ``cf_rating`` (0 when
unknown), ``input_file``/``output_file`` (non-empty for the few problems that read and write files), and
more columns that are not used.

Hidden tests are the private plus the generated tests, or the public ones when those are empty. The
difficulty is the Codeforces rating when there is one (``"1200"``), else the label's name in lower case
(``"easy"``, ``"a"``, ...; ``""`` for UNKNOWN_DIFFICULTY). Problems that use files instead of stdin/stdout
and problems without tests are skipped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pettingllms.data.code.schema import CodeProblem, SkippedRow, TestCase, tests_from_lists

PYTHON3 = 3
"""The ``solutions.language`` value of Python 3 programs."""
DIFFICULTY_NAMES = (
    "",  # UNKNOWN_DIFFICULTY
    "easy",
    "medium",
    "hard",
    "harder",
    "hardest",
    "external",
    *"abcdefghijklmnopqrstuv",
)
"""Names of the ``difficulty`` class label, by index (A to V are Codeforces problem letters)."""


def problem_from_codecontests_row(row: Mapping[str, Any]) -> CodeProblem:
    """Normalize one CodeContests row; SkippedRow for file-I/O problems and rows without tests."""
    if row.get("input_file") or row.get("output_file"):
        raise SkippedRow("reads or writes files instead of stdin/stdout")
    hidden = _tests(row.get("private_tests")) + _tests(row.get("generated_tests"))
    tests = hidden or _tests(row.get("public_tests"))
    if not tests:
        raise SkippedRow("no tests")
    return CodeProblem(
        id=f"codecontests/{row['name']}",
        source="codecontests",
        kind="stdio",
        statement=row["description"],
        tests=tests,
        reference=_first_python3(row.get("solutions")),
        difficulty=_difficulty(row.get("difficulty"), row.get("cf_rating")),
    )


def _tests(group: Mapping[str, Any] | None) -> tuple[TestCase, ...]:
    return tests_from_lists(group["input"], group["output"]) if group else ()


def _first_python3(solutions: Mapping[str, Any] | None) -> str | None:
    if not solutions:
        return None
    pairs = zip(solutions["language"], solutions["solution"])
    return next((code for language, code in pairs if language == PYTHON3), None)


def _difficulty(label: int | str | None, cf_rating: int | None) -> str:
    if cf_rating:
        return str(cf_rating)
    if isinstance(label, int):
        return DIFFICULTY_NAMES[label]
    return label or ""
