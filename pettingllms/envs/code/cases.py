"""The tester agent's test cases: parsing its answer and running programs against cases in the sandbox.

Formats (explained in the tester's observation):
- stdio problems: each case is `<input>...</input>` followed by `<output>...</output>` (stdin text and expected
  stdout; whitespace-separated tokens are compared).
- function problems: a ```python block of `assert` statements, one case per `assert` line, e.g.
  `assert add(2, 3) == 5`.

At most `MAX_CASES` cases are read from one answer. Nothing here evaluates model text on the host: every
program is built as text and run by `pettingllms.sandbox`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from pettingllms.data.code.schema import CodeProblem, TestCase, check_program, outputs_match
from pettingllms.parsing import ParseError, extract_python_block

MAX_CASES = 10
_STDIO_CASE = re.compile(r"<input>\n?(.*?)</input>\s*<output>\n?(.*?)</output>", re.IGNORECASE | re.DOTALL)
_ASSERT = re.compile(r"^assert\b.*$", re.MULTILINE)


@dataclasses.dataclass(frozen=True)
class CaseResult:
    """How one program did on one case: `passed`, and what it printed or why it failed (for observations)."""

    passed: bool
    detail: str


def parse_cases(text: str, kind: str) -> list[TestCase]:
    """Parse the tester's answer into cases (function kind: `TestCase(input=assert_line, output="")`).

    Raises `ParseError` when no case is found.
    """
    if kind == "stdio":
        cases = [TestCase(inp, out) for inp, out in _STDIO_CASE.findall(text)]
        hint = "write cases as <input>STDIN</input><output>EXPECTED STDOUT</output>"
    else:
        code = extract_python_block(text)
        cases = [TestCase(line.strip(), "") for line in _ASSERT.findall(code or "")]
        hint = "write one ```python block of assert lines, e.g. assert f(2) == 4"
    if not cases:
        raise ParseError(f"no test case found: {hint}")
    return cases[:MAX_CASES]


def case_programs(problem: CodeProblem, code: str, cases: Sequence[TestCase]) -> list[tuple[str, str]]:
    """(program, stdin) pairs that run `code` on each case."""
    if problem.kind == "stdio":
        return [(code, case.input) for case in cases]
    return [(f"{code}\n\n{case.input}\n", "") for case in cases]


def hidden_programs(problem: CodeProblem, code: str) -> list[tuple[str, str]]:
    """(program, stdin) pairs that run `code` on the problem's hidden ground-truth tests."""
    if problem.kind == "stdio":
        return [(code, test.input) for test in problem.tests]
    return [(check_program(problem, code), "")]


def judge(problem: CodeProblem, cases: Sequence[TestCase], results: Sequence) -> list[CaseResult]:
    """Turn sandbox results of `case_programs`/`hidden_programs` into per-case verdicts."""
    verdicts = []
    for case, result in zip(cases, results, strict=True):
        if result.status != "ok":
            last = (result.stderr.strip().splitlines() or [""])[-1]
            verdicts.append(CaseResult(False, f"{result.status}: {last[:200]}"))
        elif problem.kind == "stdio":
            verdicts.append(CaseResult(outputs_match(case.output, result.stdout), result.stdout[:200]))
        else:
            verdicts.append(CaseResult(True, "passed"))
    return verdicts
