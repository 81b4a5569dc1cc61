"""The tester agent's test cases, and the sandbox runs that judge code on them and on the hidden tests.

Formats (explained in the tester's observation):
- stdio problems: each case is `<input>...</input>` followed by `<output>...</output>` (stdin text and expected
  stdout; whitespace-separated tokens are compared on the host, and only a clean exit counts).
- function problems: a ```python block of `assert` statements, one case per `assert` line, e.g.
  `assert add(2, 3) == 5`. Each line is read as data (`pettingllms.envs.code.asserts`), never run, and must pin
  the value (`==` a literal, `is True/False/None`, a tight tolerance); a line of another form, or one that cannot
  be read for any reason, is kept as a case that is never right, with the reason shown.

At most `MAX_CASES` cases are read from one answer, and a repeated case counts once. Function-kind code is judged by
`pettingllms.data.code.judge` (the verdict is decided outside the candidate's process); nothing here
evaluates model text on the host.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence

from pettingllms.core.parsing import ParseError, extract_python_block
from pettingllms.data.code import judge_harness
from pettingllms.data.code.judge import CaseCall, cases_judgement, check_judgement, read_verdicts
from pettingllms.data.code.schema import CodeProblem, TestCase, outputs_match
from pettingllms.envs.code.asserts import parse_assert
from pettingllms.sandbox import Program, SandboxResult

MAX_CASES = 10
_INPUT_OPEN = re.compile(r"<input>\n?", re.IGNORECASE)
_INPUT_CLOSE = re.compile(r"</input>", re.IGNORECASE)
_OUTPUT_OPEN = re.compile(r"\s*<output>\n?", re.IGNORECASE)
_OUTPUT_CLOSE = re.compile(r"</output>", re.IGNORECASE)
_ASSERT = re.compile(r"^assert\b.*$", re.MULTILINE)


@dataclasses.dataclass(frozen=True)
class CaseResult:
    """How one program did on one case: `passed`, what it printed or why it failed (for observations), and
    whether the case `ran` (False: not run, because the program timed out on an earlier case; never passed)."""

    passed: bool
    detail: str
    ran: bool = True


NOT_RUN = CaseResult(False, judge_harness.NOT_RUN_DETAIL, ran=False)
"""A case not run because the program timed out on an earlier one (a judge stops at the first time limit)."""


@dataclasses.dataclass(frozen=True)
class AssertCase:
    """One function-kind case: the tester's `assert` line as written (`input`, shown in observations) and either
    the case as data (`call`) or why the line was rejected (`error`)."""

    input: str
    call: CaseCall | None = None
    error: str | None = None


@dataclasses.dataclass(frozen=True)
class Runs:
    """Sandbox `programs` that judge code on `count` cases, in order, stopping at the first timeout
    (`pettingllms.envs.program_runs.run_until_timeout`); `decide` turns their results (in order, None for a
    program not run) into one `CaseResult` per case."""

    programs: list[Program]
    count: int
    decide: Callable[[Sequence[SandboxResult | None]], list[CaseResult]]


def stdio_cases(text: str) -> list[TestCase]:
    """The first `MAX_CASES` `<input>X</input> <output>Y</output>` cases of `text`, left to right, in linear time.

    X runs to the first `</input>` after its opener, Y to the first `</output>`; an input not followed (after
    whitespace) by `<output>` is skipped. A regex with lazy groups over the whole pattern took quadratic time in
    the number of unclosed `<input>` openers (56 KB of them: ~1.7 s).
    """
    cases: list[TestCase] = []
    pos = 0
    while len(cases) < MAX_CASES and (start := _INPUT_OPEN.search(text, pos)) is not None:
        end = _INPUT_CLOSE.search(text, start.end())
        if end is None:
            break
        output = _OUTPUT_OPEN.match(text, end.end())
        if output is None:
            pos = end.end()
            continue
        close = _OUTPUT_CLOSE.search(text, output.end())
        if close is None:
            break
        cases.append(TestCase(text[start.end() : end.start()], text[output.end() : close.start()]))
        pos = close.end()
    return cases


def parse_cases(text: str, problem: CodeProblem) -> list[TestCase | AssertCase]:
    """Parse the tester's answer into cases: `TestCase`s for stdio problems, `AssertCase`s for function ones.

    Repeated cases are kept once (`distinct`). Raises `ParseError` when no case is found, or when every `assert`
    line is rejected (naming why).
    """
    if problem.kind == "stdio":
        cases = distinct(stdio_cases(text))
        if not cases:
            raise ParseError(
                "no test case found: write cases as <input>STDIN</input><output>EXPECTED STDOUT</output>"
            )
        return cases
    lines = [line.strip() for line in _ASSERT.findall(extract_python_block(text) or "")][:MAX_CASES]
    if not lines:
        raise ParseError(
            f"no test case found: write one ```python block of assert lines, e.g. assert {problem.entry_point}(2) == 4"
        )
    cases = distinct([assert_case(line, problem.entry_point) for line in lines])
    if not any(usable(case) for case in cases):
        reasons = "; ".join(f"`{case.input[:80]}`: {case.error}" for case in cases[:3])
        raise ParseError(f"no usable test case: {reasons}")
    return cases


def distinct(cases: Sequence[TestCase | AssertCase]) -> list[TestCase | AssertCase]:
    """`cases` without repeats (the first of each kept, in order): a stdio case repeats another with the same
    input and the same expected tokens; an assert line, the same line up to whitespace. A case said ten times
    is one case."""
    seen, kept = set(), []
    for case in cases:
        key = (
            ("".join(case.input.split()),)
            if isinstance(case, AssertCase)
            else (case.input, tuple(case.output.split()))
        )
        if key not in seen:
            seen.add(key)
            kept.append(case)
    return kept


def constant_passes(problem: CodeProblem) -> int:
    """The most hidden tests one constant output can pass: the largest number of the problem's stdio tests that
    expect the same tokens (0 for function problems, judged by one `check`)."""
    if problem.kind != "stdio" or not problem.tests:
        return 0
    counts: dict[tuple[str, ...], int] = {}
    for test in problem.tests:
        key = tuple(test.output.split())
        counts[key] = counts.get(key, 0) + 1
    return max(counts.values())


def usable(case: TestCase | AssertCase) -> bool:
    """False for an assert line that was rejected (it is never run and never right)."""
    return not isinstance(case, AssertCase) or case.call is not None


def assert_case(line: str, entry_point: str) -> AssertCase:
    """The case of one assert line; any failure to read it (not only a `ParseError`: the line is model text)
    makes a rejected case, never an exception."""
    try:
        return AssertCase(line, call=parse_assert(line, entry_point))
    except ParseError as error:
        return AssertCase(line, error=str(error))
    except Exception as error:  # noqa: BLE001  (a parser bug on hostile text must not crash the host's step)
        return AssertCase(line, error=f"the line could not be read ({type(error).__name__})")


def hidden_runs(problem: CodeProblem, code: str, *, timeout: float, memory_mb: int) -> Runs:
    """The runs that judge `code` on the problem's hidden tests: one per test (stdio), or one judgement of the
    dataset's `check` (function problems: one case)."""
    if problem.kind == "stdio":
        return _stdio_runs(code, problem.tests, timeout, memory_mb)
    judgement = check_judgement(problem, code, timeout=timeout, memory_mb=memory_mb)
    return Runs(
        [judgement.program], 1, lambda results: [CaseResult(*v) for v in read_verdicts(judgement, results[0])]
    )


def case_runs(
    problem: CodeProblem, code: str, cases: Sequence[TestCase | AssertCase], *, timeout: float, memory_mb: int
) -> Runs:
    """The runs that judge `code` on the tester's `cases` (as `parse_cases` made them); a rejected assert line
    is not run and never passes."""
    if problem.kind == "stdio":
        return _stdio_runs(code, cases, timeout, memory_mb)
    calls = [case.call for case in cases if usable(case)]
    judgement = cases_judgement(problem, code, calls, timeout=timeout, memory_mb=memory_mb)

    def decide(results: Sequence[SandboxResult | None]) -> list[CaseResult]:
        verdicts = iter(read_verdicts(judgement, results[0]))
        return [
            CaseResult(*next(verdicts)) if usable(case) else CaseResult(False, f"not run: {case.error}")
            for case in cases
        ]

    return Runs([judgement.program], len(cases), decide)


def _stdio_runs(code: str, tests: Sequence[TestCase], timeout: float, memory_mb: int) -> Runs:
    def decide(results: Sequence[SandboxResult | None]) -> list[CaseResult]:
        return [
            NOT_RUN if result is None else _stdio_verdict(test, result)
            for test, result in zip(tests, results, strict=True)
        ]

    return Runs([Program(code, test.input, timeout, memory_mb) for test in tests], len(tests), decide)


def _stdio_verdict(test: TestCase, result: SandboxResult) -> CaseResult:
    """A stdio case passes when the program exited cleanly (status "ok") and printed the expected tokens."""
    if result.status != "ok":
        last = (result.stderr.strip().splitlines() or [""])[-1]
        return CaseResult(False, f"{result.status}: {last[:200]}")
    return CaseResult(outputs_match(test.output, result.stdout), result.stdout[:200])
