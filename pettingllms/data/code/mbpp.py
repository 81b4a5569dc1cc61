"""MBPP rows (google-research-datasets/mbpp, configs "full" and "sanitized") as function problems.

A row has ``task_id``, the task under ``text`` ("full") or ``prompt`` ("sanitized"), the reference ``code``,
``test_list`` (assert statements calling the function by name) and setup under ``test_setup_code`` ("full")
or ``test_imports`` ("sanitized"). ``challenge_test_list`` is not used: evaluation on MBPP conventionally
uses ``test_list`` only.

The entry point is the first function the asserts call among those the reference defines at top level.
``check`` is the setup code at module level (as MBPP's harness runs it, so its imports are globals the
candidate can use) followed by ``def check(candidate):``, which binds that name to ``candidate`` and runs
the asserts. The statement is a
HumanEval-style stub: the reference's signature with the task and the first assert as its docstring.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Mapping
from typing import Any

from pettingllms.data.code.schema import CodeProblem, SkippedRow


def problem_from_mbpp_row(row: Mapping[str, Any]) -> CodeProblem:
    """Normalize one MBPP row; SkippedRow if its reference does not parse or no assert calls a function
    the reference defines."""
    code, asserts = row["code"], list(row["test_list"])
    try:
        functions = {node.name: node for node in ast.parse(code).body if isinstance(node, ast.FunctionDef)}
        called = [name for test in asserts for name in _called_names(test)]
    except SyntaxError as error:
        raise SkippedRow("reference or tests do not parse") from error
    entry_point = next((name for name in called if name in functions), None)
    if entry_point is None:
        raise SkippedRow("no test calls a function the reference defines")
    setup = row.get("test_setup_code") or "\n".join(row.get("test_imports") or ())
    body = "\n".join([f"{entry_point} = candidate", *asserts])
    task = (row["text"] if "text" in row else row["prompt"]).strip().replace('"""', '\\"\\"\\"')
    signature = ast.unparse(functions[entry_point].args)
    statement = f'def {entry_point}({signature}):\n    """{task}\n\n    >>> {asserts[0].strip()}\n    """\n'
    return CodeProblem(
        id=f"mbpp/{row['task_id']}",
        source="mbpp",
        kind="function",
        statement=statement,
        check=f"{setup.strip()}\n\n\ndef check(candidate):\n" + textwrap.indent(body, "    ") + "\n",
        entry_point=entry_point,
        reference=code,
    )


def _called_names(test: str) -> list[str]:
    """Names called as plain functions in ``test``, in source order."""
    calls = [node for node in ast.walk(ast.parse(test)) if isinstance(node, ast.Call)]
    calls.sort(key=lambda node: (node.lineno, node.col_offset))
    return [node.func.id for node in calls if isinstance(node.func, ast.Name)]
