"""# Code (`code-v0`)

A coder writes a solution, a tester writes test cases; each turn the code runs against the tester's cases in the
sandbox and both agents see the mismatches. Success: the code passes the problem's hidden ground-truth tests.

| | |
|---|---|
| agents (workflow "mas") | `coder`, `tester` (in that order each turn; the tester sees this turn's code) |
| agents (workflow "single") | `coder` |
| action, coder | any text; the last ```python block is the solution: for function problems (HumanEval's schema) the function with its imports, for stdio problems a complete program that reads stdin and prints the answer |
| action, tester | any text; stdio problems: cases `<input>STDIN</input><output>EXPECTED</output>`; function problems: one ```python block of `assert` lines (one case each), read as data, never run: the function called with literal arguments and its value pinned (`== VALUE`, `is True/False/None`, `abs(f(...) - x) < tol` with `0 < tol <= 1e-3 * max(1, abs(x))`, `math.isclose` with tolerances at most 1e-3); a line of another form (`!=`, `is not`, a bare or negated call, a loose tolerance: they hold for almost any answer) is a case that is never right, with the reason shown. At most 10 cases |
| observation | text: the problem, the current code, the tester's cases with the code's results on them (mismatches shown), and the answer format |
| instances | `dataset` (default `"bundled"`: 60 stdin/stdout problems, a train/eval hash split; `"generated"`: function problems drawn from a seeded grammar of small programs at `difficulty` 1-3, train/val/eval split by a hash of the program, see below; `"humaneval"`: 164 function problems, evaluation only; `"mbpp"`, `"apps"`, `"codecontests"`, `"livecodebench"` through `datasets`, with `dataset_path` for local files); `reset(options={"problem": DICT})` takes a problem in HumanEval's schema or the stdio schema as it is; `options={"split": "train"|"eval"}`; `options={"index": i}` takes the split's i-th problem (fixed evaluation suites) |

The episode terminates when the code passes the hidden tests (single workflow: at the coder's step; mas: after
the tester's step of that turn), or, in the mas workflow, after a tester step in which the code passes every
case the tester gave (at least one); it is truncated after `max_turns` turns.

## Rewards
Paid on change, as `pettingllms.core.env` states: each agent is paid the change of its potential, so its local
rewards over an episode sum to its final potential; team rewards sum to the final success.
- coder, potential: the score of its current code on the hidden tests: 1 when it passes them all, else the
  share it passes beyond what the best constant output passes, `max(0, (passed - c) / (n - c))` with `c` the
  largest number of hidden tests that expect one same output (function problems: 1 if `check` passes, else 0;
  the check runs outside the code's process, which must return plain data: numbers, str, bytes, None and
  containers of them; see `pettingllms.data.code.judge`). -0.1 when the answer holds no ```python block (the
  current code stays).
- tester, potential: the quality of its current cases, which needs code to test and a reference solution to
  verify them (without either it is 0: nothing it says can be checked). With `right` = the distinct cases the
  reference passes and n the number of distinct cases: `right / n` when the coder's code is correct;
  otherwise `0.5 * right / n + 0.5 * caught / n`, where `caught` counts right cases that the coder's code ran
  and failed (see Time limits; a case earns full credit when it passes a correct program and fails an
  incorrect one, as in CURE). -0.1 when no case can be parsed.
- team: +1 on the step where the code first passes the hidden tests (the episode ends with that turn), else 0:
  an episode's team rewards sum to its success.
So each agent's return is at most `1 + alpha`, reached by solving; repeating an answer earns nothing more.

## Time limits
A program gets `test_timeout` seconds per case and is judged as a contest judge judges: case by case in order,
stopping at its first timeout; the cases after that one fail without running (shown as "not run"), so a program
that loops costs a step about one timeout, not one per case. A program that never times out scores exactly as
if every case ran; one that times out can only lose by the rule (later cases fail instead of running). The
tester's `caught` counts only right cases that the code ran and failed (a case not run has shown nothing). The
reference is judged the same way: a tester case on which the reference times out is not right, and neither
are the cases after it.

A completion cut by its length budget (`Generation.truncated`; `train/truncated/*` and `truncated_rate` count
them) is scored as written, after any thinking block: a coder cut inside its thinking or its ```python block has
no program (-0.1 above); a tester cut mid-answer is scored on the complete cases before the cut (a cut case is
dropped).

## Progress
`env.unwrapped.progress()` (0 to 100): the share of the hidden tests that the current code passes, times 100
(0 before any code; 100 iff it passes them all).

## Tiers
`pettingllms.make("code-v0", tier=...)` with `easy`, `medium`, `hard` or `expert`: the generated problems at
difficulty 1, 2 and 3, and 3 with one turn (no revision after the tester's cases); the measured figures of each tier
are in [docs/tiers.md](../tiers.md) (`pettingllms.envs.tiers`), its baselines on the leaderboard.

## Arguments
`dataset`, `dataset_path`, `difficulty` (1-3, generated problems; default 1), `test_timeout` (seconds per program, default 2), `test_memory_mb` (default 512),
`sandbox`, plus `alpha` (default 1.0), `workflow`, `max_turns` (default 3), `render_mode` ("ansi", "human").

`reward="outcome"` zeroes every local reward (penalties included), keeping only the team's +1 on hidden-test
success. (No ensemble workflow: the coder/tester roles are not interchangeable proposers.)

## Generated problems
`dataset="generated"` draws `solve(xs)` over a list of ints or `solve(s)` over a string from a seeded grammar
(`pettingllms.data.code.grammar`): a chain of `difficulty` steps (list and string transformations, a filter with
a condition, a loop with an accumulator, a count or a sum, an arithmetic condition on it), said in words in the
docstring with two or three examples. Its hidden tests (6, at most 10) are chosen so that every near miss fails one:
the reference with one step written with a realistic bug (off-by-one, wrong operator, missed case; the near misses
are `pettingllms.data.code.generated.generate_problem(...).near_misses`). A program lies in exactly one split
(train, val, eval) by a hash of its code, whatever seed drew it; evaluation suites hold each program once. The
grammar holds at least 85, 1,030 and 2,938 programs at difficulty 1, 2 and 3 (distinct ones in 4,000 draws), of
which 14, 209 and 579 lie in the eval split: a difficulty-1 suite holds 14 problems or so.

## Version history
- v0: initial release; revised before release (2026-12) so that returns mean success: local rewards paid on
  change, the episode ends on success, no tester credit without code and a reference, partial credit only
  beyond a constant output's.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

import numpy as np

from pettingllms.core.env import StepOutcome, TextAECEnv
from pettingllms.core.errors import ConfigError, DependencyNotInstalled
from pettingllms.core.parsing import ParseError, extract_python_block
from pettingllms.core.problems import NATIVE_SPLITS, load_split, pick_problem, problem_option
from pettingllms.core.splits import SPLITS, draw_in_split
from pettingllms.core.text import truncate
from pettingllms.data.code.generated import DIFFICULTIES, GeneratedProblem, generate_problem
from pettingllms.data.code.loaders import DATASETS, EVALUATION_ONLY, load_code_dataset
from pettingllms.data.code.schema import CodeProblem, TestCase, problem_from_dict
from pettingllms.envs.code.cases import (
    MAX_CASES,
    AssertCase,
    CaseResult,
    Runs,
    assert_case,
    case_runs,
    constant_passes,
    hidden_runs,
    parse_cases,
    usable,
)
from pettingllms.envs.program_runs import new_owner, run_until_timeout

PARSE_ERROR_PENALTY = 0.1
GENERATED = "generated"
"""The dataset of problems drawn from a seeded grammar (`pettingllms.data.code.generated`)."""
CODE_SHOWN_CHARS = 6_000


class CodeEnv(TextAECEnv):
    """Coder and tester on one coding problem (see the module docstring)."""

    REQUIRES = "bubblewrap (every reward runs code; make() refuses without it)"
    metadata = {"name": "code-v0", "render_modes": ["ansi", "human"], "is_parallelizable": False}
    WORKFLOWS = {"mas": ("coder", "tester"), "single": ("coder",)}
    DEFAULT_MAX_TURNS = 3
    RESET_OPTIONS = frozenset({"split", "problem", "index"})

    def __init__(
        self,
        *,
        dataset: str = "bundled",
        dataset_path: str | None = None,
        difficulty: int = 1,
        test_timeout: float = 2.0,
        test_memory_mb: int = 512,
        sandbox=None,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        if not isinstance(dataset, str):
            raise ConfigError(f"dataset={dataset!r} must be a dataset name; pass a single problem to reset()")
        if dataset not in (*DATASETS, GENERATED):
            raise ConfigError(
                f"dataset={dataset!r} is not supported; allowed values: {[*DATASETS, GENERATED]}"
            )
        if difficulty not in DIFFICULTIES:
            raise ConfigError(
                f"difficulty={difficulty!r} is not supported; allowed values: {list(DIFFICULTIES)} (generated problems)"
            )
        self.dataset = dataset
        self.dataset_path = dataset_path
        self.difficulty = difficulty
        self.test_timeout = float(test_timeout)
        self.test_memory_mb = int(test_memory_mb)
        if sandbox is None:
            _start_shared_sandbox()
        self._sandbox = sandbox  # None: the shared one (a clone shares it, never copies it)
        self._owner = new_owner()  # this env's programs queue for sandbox workers under it (its clones' too)
        self.problem: CodeProblem | None = None
        self.generated: GeneratedProblem | None = None
        """A generated problem's near misses and tests (`dataset="generated"`; None for a dataset's problem)."""
        self.code: str | None = None
        self.cases: list[TestCase | AssertCase] = []
        self.case_results: list[CaseResult] = []
        self._code_correct = False
        self._hidden_pass_ratio = 0.0  # the share of hidden tests the current code passes
        self._tester_note: str | None = None
        self._constant_passes = 0

    # ----------------------------------------------------------------- instances
    def problems(self, split: str) -> tuple[CodeProblem, ...]:
        """The problems of `split` ("train" or "eval") of this env's dataset (loaded once per process); generated
        problems have no list (they are drawn from seeds)."""
        if self.dataset == GENERATED:
            raise ConfigError("generated problems have no fixed list: they are drawn from seeds")
        if split not in ("train", "eval"):
            raise ConfigError(f"split={split!r} is not supported; allowed values: ['train', 'eval']")
        if split == "train" and self.dataset in EVALUATION_ONLY:
            raise ConfigError(f"dataset {self.dataset!r} has only an evaluation split; use split='eval'")
        native = split if self.dataset == "bundled" else NATIVE_SPLITS[split]
        return load_split(load_code_dataset, self.dataset, self.dataset_path, split, native)

    def _reset_task(self, options: dict[str, Any]) -> None:
        self.problem = problem_option(options, problem_from_dict)
        self.generated = None
        if self.problem is None and self.dataset == GENERATED:
            if options.get("index") is not None:
                raise ConfigError("reset option 'index' needs a dataset; generated problems come from seeds")
            split = options.get("split", "train")
            if split not in SPLITS:
                raise ConfigError(f"split={split!r} is not supported; allowed values: {list(SPLITS)}")
            self.generated = draw_in_split(
                lambda rng: generate_problem(rng, self.difficulty),
                lambda g: g.problem.id,
                self.np_random,
                split,
            )
            self.problem = self.generated.problem
        elif self.problem is None:
            default = "eval" if self.dataset in EVALUATION_ONLY else "train"
            pool = self.problems(options.get("split", default))
            self.problem = pick_problem(pool, options, self.np_random)
        self.code = None
        self.cases, self.case_results = [], []
        self._code_correct = False
        self._hidden_pass_ratio = 0.0
        self._tester_note = None
        self._constant_passes = constant_passes(self.problem)

    # ----------------------------------------------------------------- steps
    def _act(self, agent: str, action: str) -> StepOutcome:
        return self._act_coder(action) if agent == "coder" else self._act_tester(action)

    def _act_coder(self, action: str) -> StepOutcome:
        code = extract_python_block(action)
        if code is None:
            return StepOutcome(
                reward_local=-PARSE_ERROR_PENALTY,
                parse_error=True,
                error="no ```python block found: put the whole solution in one",
            )
        self.code = code
        [hidden], queued = self._run([hidden_runs(self.problem, code, **self._limits())])
        passed = sum(r.passed for r in hidden)
        self._hidden_pass_ratio = passed / len(hidden)
        team = self._set_correct(passed == len(hidden))
        self.case_results = []
        terminal = self.workflow == "single" and self.success
        return StepOutcome(
            reward_team=team,
            potentials={"coder": hidden_score(passed, len(hidden), self._constant_passes)},
            terminal=terminal,
            info={"hidden_pass_ratio": self._hidden_pass_ratio, "queue_wait_s": queued},
        )

    def _act_tester(self, action: str) -> StepOutcome:
        try:
            cases = parse_cases(action, self.problem)
        except ParseError as error:
            self._tester_note = str(error)
            return StepOutcome(
                reward_local=-PARSE_ERROR_PENALTY, error=str(error), parse_error=True, terminal=self.success
            )
        self.cases = cases
        self._tester_note = None
        sources = {"code": self.code, "reference": self.problem.reference or None}
        runs = {
            name: case_runs(self.problem, source, cases, **self._limits())
            for name, source in sources.items()
            if source is not None
        }
        verdicts, queued = self._run(list(runs.values()))
        results = dict(zip(runs, verdicts, strict=True))
        self.case_results = results.get("code", [])
        right, caught, quality = case_credit(
            results.get("reference", []), self.case_results, self._code_correct
        )
        passes_cases = bool(self.case_results) and all(r.passed for r in self.case_results)
        return StepOutcome(
            potentials={"tester": quality},
            terminal=self.success or passes_cases,
            info={"cases": len(cases), "cases_right": right, "cases_caught": caught, "queue_wait_s": queued},
        )

    def progress(self) -> float:
        """The progression score: the share of hidden tests the current code passes, times 100 (0 before any)."""
        return 100.0 * self._hidden_pass_ratio

    def _set_correct(self, correct: bool) -> float:
        """Record whether the code passes the hidden tests; return the team reward of that change."""
        change = float(correct) - float(self._code_correct)
        self._code_correct = self.success = correct
        return change

    def _limits(self) -> dict[str, Any]:
        return {"timeout": self.test_timeout, "memory_mb": self.test_memory_mb}

    def _run(self, runs: Sequence[Runs]) -> tuple[list[list[CaseResult]], float]:
        """Run every program of `runs` in the sandbox, each `Runs` in order and stopping at its first timeout
        (`pettingllms.envs.program_runs.run_until_timeout`, queued under this env's owner); each `Runs`' verdicts,
        in order (every case failed, saying why, when the sandbox is unavailable), and the seconds the programs
        waited for sandbox workers."""
        done, queued = run_until_timeout(self._sandbox, [run.programs for run in runs], self._owner)
        if done and done[0] and done[0][0].result is None:  # the sandbox is unavailable: nothing ran
            return [[CaseResult(False, done[0][0].error)] * run.count for run in runs], queued
        verdicts = [
            run.decide([None if program is None else program.result for program in group])
            for run, group in zip(runs, done, strict=True)
        ]
        return verdicts, queued

    # ----------------------------------------------------------------- observations
    def _observation_text(self, agent: str) -> str:
        problem = self.problem
        parts = [
            f"# {self.metadata['name']} - turn {self.display_turn} of {self.max_turns}",
            self._role(agent),
        ]
        parts += ["## Problem", problem.statement.strip()]
        if self.code is not None:
            parts += ["## Current code", "```python", truncate(self.code.rstrip(), CODE_SHOWN_CHARS), "```"]
        if self.cases:
            parts += ["## The tester's cases and the current code's results", *self._describe_cases()]
        if self._tester_note:
            parts += ["## The tester's last answer could not be used", self._tester_note]
        if self.workflow == "single" and self.code is not None and not self._code_correct:
            parts += ["The current code does not pass the hidden tests yet."]
        parts += ["## Your answer", self._answer_format(agent)]
        return "\n".join(parts)

    def _role(self, agent: str) -> str:
        if agent == "tester":
            return (
                "You are the TESTER. Write test cases that a correct solution passes and that expose bugs in the "
                "current code. The code is run against your cases and both of you see the results."
            )
        if self.workflow == "single":
            return "You are the CODER: solve the problem. Your code is judged by hidden tests."
        return "You are the CODER: solve the problem. A tester writes cases; fix the code where they fail."

    def _answer_format(self, agent: str) -> str:
        if agent == "coder":
            if self.problem.kind == "function":
                return "Write the complete function (with its imports) in one ```python block."
            return "Write a complete program that reads standard input and prints the answer, in one ```python block."
        if self.problem.kind == "function":
            return (
                f"Write up to 10 cases as assert lines in one ```python block, e.g. assert "
                f"{self.problem.entry_point}(...) == ... Each line calls {self.problem.entry_point} with literal "
                "arguments and pins the result: == a literal, is True/False/None, abs(f(...) - x) < tol with "
                "0 < tol <= 1e-3 * max(1, abs(x)), or math.isclose(f(...), x) with rel_tol/abs_tol at most 1e-3. "
                "Other lines (!=, is not, a bare or negated call, a looser tolerance) are not run and never count."
            )
        return "Write up to 10 cases, each as <input>STDIN</input><output>EXPECTED STDOUT</output>."

    def _describe_cases(self) -> list[str]:
        lines = []
        for index, case in enumerate(self.cases, start=1):
            result = self.case_results[index - 1] if index <= len(self.case_results) else None
            verdict = (
                "not run on the current code" if result is None else ("passed" if result.passed else "FAILED")
            )
            if self.problem.kind == "stdio":
                lines.append(
                    f"Case {index}: {verdict}\n  input: {case.input[:300]!r}\n  expected: {case.output[:300]!r}"
                )
                if result is not None and not result.passed:
                    lines.append(f"  got: {result.detail!r}")
            else:
                lines.append(f"Case {index}: `{case.input[:300]}` {verdict}")
                if result is not None and not result.passed:
                    lines.append(f"  error: {result.detail}")
        return lines

    def _render_text(self) -> str:
        passed = sum(r.passed for r in self.case_results)
        return (
            f"{self.problem.id} ({self.problem.kind}), turn {self.display_turn} of {self.max_turns}; "
            f"code: {'none' if self.code is None else 'passes the hidden tests' if self._code_correct else 'fails the hidden tests'}; "
            f"tester's cases passed: {passed} of {len(self.cases)}"
        )

    # ----------------------------------------------------------------- oracle
    def solution(self, agent: str | None = None) -> str:
        """The oracle's answer for `agent` (default: the agent to act).

        coder: the reference solution (an empty block when the problem has none). tester: up to 10 of the
        problem's hidden tests as cases (stdio), or the single-line `assert`s of its `check` with `candidate`
        renamed to the entry point that are cases of a supported form, a bare `assert f(x)` / `assert not f(x)`
        written as `assert f(x) is True` / `is False` (function problems; `assert True` when it has none).
        """
        if (agent or self.agent_selection) == "coder":
            return f"```python\n{self.problem.reference or ''}\n```"
        if self.problem.kind == "stdio":
            return "".join(
                f"<input>{case.input}</input><output>{case.output}</output>\n"
                for case in self.problem.tests[:MAX_CASES]
            )
        entry_point = self.problem.entry_point
        lines = [
            _pinned(line.strip().replace("candidate(", f"{entry_point}("), entry_point)
            for line in (self.problem.check or "").splitlines()
            if line.strip().startswith("assert ") and "candidate(" in line
        ]
        asserts = [line for line in lines if usable(assert_case(line, entry_point))]
        return "```python\n" + ("\n".join(asserts[:MAX_CASES]) or "assert True") + "\n```"

    def random_answer(self, agent: str, rng: np.random.Generator) -> str:
        """A random answer in `agent`'s format (the random baseline): a program that prints a random integer,
        or cases whose expected output is a random integer (stdio) / one `assert` of a random value."""
        value = int(rng.integers(-10, 101))
        if agent == "coder":
            return f"```python\nprint({value})\n```"
        if self.problem.kind == "stdio":
            return f"<input>{int(rng.integers(0, 101))}</input><output>{value}</output>"
        return f"```python\nassert {self.problem.entry_point}({int(rng.integers(0, 101))}) == {value}\n```"


def hidden_score(passed: int, total: int, constant: int) -> float:
    """The coder's potential for code that passes `passed` of `total` hidden tests, when one constant output
    passes `constant` of them: 1.0 iff all pass, else the share passed beyond the constant's (never below 0).

    >>> hidden_score(8, 10, 8), hidden_score(9, 10, 5), hidden_score(10, 10, 10)
    (0.0, 0.8, 1.0)
    """
    if passed == total:
        return 1.0
    if total <= constant:
        return 0.0
    return max(0.0, (passed - constant) / (total - constant))


def case_credit(
    reference: Sequence[CaseResult], code: Sequence[CaseResult], code_correct: bool
) -> tuple[int, int, float]:
    """The tester's credit for its cases, from the reference's results on them and the current code's (each
    empty when there is none): (`right`: cases the reference passes, `caught`: right cases the code fails,
    `quality`: the tester's potential, module docstring); a case the code did not run (`CaseResult.ran`) is never
    caught. Without a reference or without code nothing is verified: quality 0.

    >>> ok, bad = CaseResult(True, ""), CaseResult(False, "")
    >>> case_credit([ok, ok, bad], [ok, bad, bad], code_correct=False)
    (2, 1, 0.5)
    >>> case_credit([ok, ok], [], code_correct=False), case_credit([], [bad, bad], code_correct=False)
    ((2, 0, 0.0), (0, 0, 0.0))
    """
    right = [result.passed for result in reference]
    caught = sum(ok and result.ran and not result.passed for ok, result in zip(right, code))
    if not reference or not code:
        return sum(right), 0, 0.0
    n = len(right)
    quality = sum(right) / n if code_correct else 0.5 * sum(right) / n + 0.5 * caught / n
    return sum(right), caught, quality


def _pinned(line: str, entry_point: str) -> str:
    """A dataset's `assert f(x)` / `assert not f(x)` (a truthiness case, refused from testers) as
    `assert f(x) is True` / `assert f(x) is False`; any other line as it is. Only for the oracle's trusted text."""
    try:
        [statement] = ast.parse(line).body
    except (SyntaxError, ValueError):
        return line
    if not isinstance(statement, ast.Assert):
        return line
    test, suffix = statement.test, " is True"
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, suffix = test.operand, " is False"
    if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == entry_point):
        return line
    text = line.encode()  # ast offsets count UTF-8 bytes
    call = text[test.col_offset : test.end_col_offset].decode()
    rest = text[statement.test.end_col_offset :].decode()
    return f"assert {call}{suffix}{rest}"


def _start_shared_sandbox() -> None:
    """Start the shared sandbox now: every reward of code-v0 runs code in it, so an unusable sandbox is an error
    at make() (naming the fix), not a silent zero reward at every step."""
    from pettingllms.sandbox import SandboxUnavailable, default_sandbox

    try:
        default_sandbox()
    except SandboxUnavailable as error:
        raise DependencyNotInstalled(
            f"code-v0 scores every answer by running code in bubblewrap, which is not usable here ({error}). "
            "Install it (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap) on Linux with "
            "unprivileged user namespaces, or pass sandbox=<a pettingllms.sandbox.Sandbox> to make()"
        ) from error
