"""APPS rows (codeparrot/apps) as stdio problems.

A row has ``problem_id``, ``question``, ``solutions`` (a JSON string: a list of Python programs, or ``""``),
``input_output`` (a JSON string ``{"inputs": [...], "outputs": [...]}``, with ``"fn_name"`` for call-based
problems, or ``""``), ``difficulty`` ("introductory", "interview", "competition"), ``url`` and
``starter_code``. Only standard-input problems are kept: call-based ones (``fn_name`` present, LeetCode
style) and rows without tests are skipped, and the loader counts them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pettingllms.data.code.schema import CodeProblem, SkippedRow, tests_from_lists


def problem_from_apps_row(row: Mapping[str, Any]) -> CodeProblem:
    """Normalize one APPS row; SkippedRow for call-based problems and rows without tests."""
    io = json.loads(row["input_output"]) if row["input_output"] else {}
    if "fn_name" in io:
        raise SkippedRow("call-based (has fn_name)")
    tests = tests_from_lists(io.get("inputs", ()), io.get("outputs", ()))
    if not tests:
        raise SkippedRow("no tests")
    solutions = json.loads(row["solutions"]) if row["solutions"] else []
    return CodeProblem(
        id=f"apps/{row['problem_id']}",
        source="apps",
        kind="stdio",
        statement=row["question"],
        tests=tests,
        reference=solutions[0] if solutions else None,
        difficulty=row.get("difficulty") or "",
    )
