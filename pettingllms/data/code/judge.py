"""Judging function-kind code in the sandbox: the run that decides a verdict, and reading that verdict.

A :class:`Judgement` is one sandbox run of the generic judging program (``judge_harness``): the candidate's
code runs in its own process, and the dataset's check (:func:`check_judgement`) or the tester's parsed cases
(:func:`cases_judgement`) run in the harness's, which talks to the candidate in plain data only. The hidden
part (check, expected values) travels on stdin after the candidate's code and is read by the harness only after
the candidate's process exists. :func:`read_verdicts` accepts exactly one thing as a pass: a clean exit of the
harness whose last stdout line carries this run's random nonce and a well-formed verdict list (with the number
of cases that ran: the harness stops at the candidate's first timeout); anything else
(a crash, a timeout, a missing or malformed line) is a failure of every verdict. Nothing here runs code.

The candidate's process runs, before the candidate's code, the problem's public prelude (:func:`prelude`): the
check's import lines and, for HumanEval, the prompt itself, as HumanEval's harness runs prompt + completion (so
a right answer may call the prompt's helpers: ``decode_cyclic`` -> ``encode_cyclic``, ``find_zero`` -> ``poly``).
What the candidate returns must be plain data (or a finite iterator of it: a ``map``, generator... comes back
to the check as a fresh iterator over its items); an instance of a class the solution defines (MBPP 601's
``Pair``) cannot cross to the check's process, so a check that builds such objects fails for every answer (a
known limit: those few problems are out of reach).
"""

from __future__ import annotations

import ast
import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, NamedTuple

from pettingllms.data.code import judge_harness
from pettingllms.data.code.judge_candidate import encode
from pettingllms.data.code.schema import CodeProblem
from pettingllms.sandbox import Program, SandboxResult

HARNESS_SOURCE = resources.files(__package__).joinpath("judge_harness.py").read_text(encoding="utf-8")
"""The judging program's text (the same for every judgement)."""
CANDIDATE_SOURCE = resources.files(__package__).joinpath("judge_candidate.py").read_text(encoding="utf-8")
"""The program the harness starts for the candidate's code (the same for every judgement)."""
STARTUP_S = 1.0
"""Seconds a judgement's sandbox run gets beyond its candidate's time, for the two interpreters' start-up."""


@dataclass(frozen=True)
class CaseCall:
    """One tester case as data: ``name(*args, **kwargs)`` compared by ``op`` (a key of
    ``judge_harness.COMPARISONS``) with ``expected`` (for ``abs<``/``abs<=``: ``(value, tolerance)``; for
    ``isclose``: ``(value, rel_tol, abs_tol)``; for ``is``: True, False or None). Every value is plain data
    (what ``ast.literal_eval`` makes and ``encode`` accepts: ``asserts.parse_assert`` checks both)."""

    name: str
    args: tuple
    kwargs: dict[str, Any]
    op: str
    expected: Any = None


@dataclass(frozen=True)
class Judgement:
    """One sandbox run (``program``) that decides ``count`` verdicts; ``nonce`` marks its verdict line."""

    program: Program
    nonce: str
    count: int


def check_judgement(problem: CodeProblem, code: str, *, timeout: float, memory_mb: int) -> Judgement:
    """The run that decides whether ``code`` passes a function ``problem``'s ``check`` (one verdict), with
    ``timeout`` seconds for everything the candidate does. ValueError for a stdio problem."""
    if problem.kind != "function":
        raise ValueError(f"{problem.id} is a {problem.kind} problem; only function problems have a check")
    secret = {
        "mode": "check",
        "setup": _setup(problem),
        "check": problem.check,
        "entry_point": problem.entry_point,
    }
    return _judgement(problem, code, secret, 1, timeout, timeout + STARTUP_S, memory_mb)


def cases_judgement(
    problem: CodeProblem, code: str, calls: Sequence[CaseCall], *, timeout: float, memory_mb: int
) -> Judgement:
    """The run that decides each of ``calls`` on ``code`` (one verdict each), ``timeout`` seconds per case."""
    cases = [
        {
            "name": call.name,
            "args": encode(list(call.args)),
            "kwargs": encode(dict(call.kwargs)),
            "op": call.op,
            "expected": encode(call.expected),
        }
        for call in calls
    ]
    secret = {"mode": "cases", "cases": cases}
    total = timeout * max(1, len(calls)) + STARTUP_S
    return _judgement(problem, code, secret, len(calls), timeout, total, memory_mb)


class Verdict(NamedTuple):
    """One verdict: ``passed``, ``detail`` (why not, or what came back), and whether its case ``ran`` (False:
    not run, because the candidate timed out on an earlier case; see ``judge_harness.run_cases``)."""

    passed: bool
    detail: str
    ran: bool = True


def read_verdicts(judgement: Judgement, result: SandboxResult) -> list[Verdict]:
    """One ``Verdict`` per verdict of ``judgement`` from its sandbox ``result`` (see the module docstring); a
    failed run fails every verdict, and those ran."""
    if result.status != "ok":
        last = (result.stderr.strip().splitlines() or [""])[-1]
        return [Verdict(False, f"{result.status}: {last[:200]}")] * judgement.count
    lines = result.stdout.splitlines()
    prefix = judgement.nonce + " "
    if not lines or not lines[-1].startswith(prefix):
        return [Verdict(False, "error: the judge gave no verdict")] * judgement.count
    try:
        reply = json.loads(lines[-1][len(prefix) :])
        verdicts, ran = reply["verdicts"], reply["ran"]
    except (ValueError, TypeError, KeyError):
        verdicts, ran = None, None
    well_formed = (
        type(verdicts) is list
        and len(verdicts) == judgement.count
        and all(
            type(v) is list and len(v) == 2 and type(v[0]) is bool and type(v[1]) is str for v in verdicts
        )
        and type(ran) is int
        and 0 <= ran <= judgement.count
        and not any(passed for passed, _ in verdicts[ran:])
    )
    if not well_formed:
        return [Verdict(False, "error: the judge's verdict is malformed")] * judgement.count
    return [Verdict(passed, detail, index < ran) for index, (passed, detail) in enumerate(verdicts)]


def _judgement(problem, code, secret, count, timeout, total, memory_mb) -> Judgement:
    nonce = secrets.token_hex(16)
    public = {
        "source": CANDIDATE_SOURCE,
        "prelude": prelude(problem),
        "code": code,
        "timeout": timeout,
    }
    stdin = _frame(public) + _frame({**secret, "nonce": nonce})
    return Judgement(Program(HARNESS_SOURCE, stdin=stdin, timeout=total, memory_mb=memory_mb), nonce, count)


def _frame(obj: dict) -> str:
    """One stdin frame for the harness: the length in ``FRAME_DIGITS`` digits, then ASCII JSON."""
    payload = json.dumps(obj, ensure_ascii=True)
    return f"{len(payload):0{judge_harness.FRAME_DIGITS}d}{payload}"


def prelude(problem: CodeProblem) -> str:
    """What the candidate's process runs before the candidate's code: the check's import lines and the public
    ``_setup`` (HumanEval's prompt: its helpers, and a stub of the entry point that the candidate replaces)."""
    return "\n\n".join(part for part in (_imports(problem.check), _setup(problem)) if part)


def _setup(problem: CodeProblem) -> str:
    """The public code that the dataset's own harness runs with the check: HumanEval's prompt, else nothing."""
    return problem.statement if problem.source == "humaneval" else ""


def _imports(check: str | None) -> str:
    """The top-level import statements of a check (MBPP's setup): run before the candidate's code, as the
    datasets' own harnesses make them globals the candidate can use. Nothing else of the check is shown."""
    try:
        body = ast.parse(check or "").body
    except SyntaxError:
        return ""
    return "\n".join(ast.unparse(node) for node in body if isinstance(node, ast.Import | ast.ImportFrom))
