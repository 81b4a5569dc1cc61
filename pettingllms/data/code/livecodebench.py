"""LiveCodeBench rows (livecodebench/code_generation_lite) as stdio problems.

A row has ``question_title``, ``question_content``, ``platform``, ``question_id``, ``contest_id``,
``contest_date``, ``starter_code``, ``difficulty`` ("easy", "medium", "hard"), ``public_test_cases`` (a JSON
string: a list of ``{"input", "output", "testtype"}``), ``private_test_cases`` (the same list, as a JSON
string that was pickled, zlib-compressed and base64-encoded; some mirrors store the plain JSON) and
``metadata``. Problems whose tests are ``"stdin"`` are kept; ``"functional"`` ones (LeetCode, a method of
``class Solution`` called with arguments) are skipped, and the loader counts them. Hidden tests are the
public plus the private tests. LiveCodeBench has no reference solutions.

The pickle is decoded with :class:`PlainUnpickler`, which refuses every global (class or function), so only
str, bytes, numbers, lists, tuples, dicts and sets can come out of it: loading a row never runs code.
"""

from __future__ import annotations

import base64
import io
import json
import pickle
import zlib
from collections.abc import Mapping
from typing import Any

from pettingllms.data.code.schema import CodeProblem, SkippedRow, TestCase


class PlainUnpickler(pickle.Unpickler):
    """An unpickler for plain data: ``find_class`` always raises ``pickle.UnpicklingError``, so a pickle
    that names any class or function (the only way a pickle can run code) fails to load."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refusing to load global {module}.{name}: only plain data is allowed")


def plain_unpickle(data: bytes) -> Any:
    """Unpickle ``data`` with :class:`PlainUnpickler`; ``pickle.UnpicklingError`` if it names a global."""
    return PlainUnpickler(io.BytesIO(data)).load()


def decode_test_cases(field: str) -> list[dict[str, Any]]:
    """The list of test dicts in a ``*_test_cases`` field: plain JSON if it parses, else base64 of zlib of
    a pickled JSON string (decoded without running code). ValueError if the result is not a list of dicts."""
    try:
        cases = json.loads(field)
    except json.JSONDecodeError:
        payload = plain_unpickle(zlib.decompress(base64.b64decode(field.encode("ascii"))))
        if not isinstance(payload, (str, bytes)):
            raise ValueError(
                f"encoded test cases hold a {type(payload).__name__}, not a JSON string"
            ) from None
        cases = json.loads(payload)
    if not isinstance(cases, list) or not all(isinstance(case, dict) for case in cases):
        raise ValueError("test cases are not a list of objects")
    return cases


def problem_from_livecodebench_row(row: Mapping[str, Any]) -> CodeProblem:
    """Normalize one LiveCodeBench row; SkippedRow for functional (LeetCode-style) problems."""
    cases = decode_test_cases(row["public_test_cases"]) + decode_test_cases(row["private_test_cases"] or "[]")
    if not cases:
        raise SkippedRow("no tests")
    if any(case.get("testtype") != "stdin" for case in cases):
        raise SkippedRow("functional (call-based) tests")
    title = row.get("question_title") or ""
    return CodeProblem(
        id=f"livecodebench/{row['question_id']}",
        source="livecodebench",
        kind="stdio",
        statement=f"{title}\n\n{row['question_content']}" if title else row["question_content"],
        tests=tuple(TestCase(case["input"], case["output"]) for case in cases),
        difficulty=row.get("difficulty") or "",
    )
