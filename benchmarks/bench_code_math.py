"""code-v0 episodes per second with scripted agents, and math grading per second.

- code-v0: the coder answers with the reference solution, the tester with four of the hidden tests (stdio) or
  with the oracle tester's answer (`env.solution("tester")`: the single-line asserts of the problem's check, up
  to 10, parsed into data and judged out of the candidate's process); one turn ends the episode. Every program
  runs in the sandbox (2 workers).
- math: `math-verify` equivalence checks on generated problems, equal pairs (the gold answer in another form)
  and unequal pairs (the answer plus one).

    python benchmarks/bench_code_math.py [--episodes 60] [--gradings 300] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import pettingllms
from pettingllms.sandbox import Sandbox


def code_episodes_per_second(dataset: str, episodes: int, sandbox: Sandbox) -> dict[str, float]:
    env = pettingllms.make("code-v0", dataset=dataset, sandbox=sandbox)
    solved = 0
    start = time.perf_counter()
    for seed in range(episodes):
        env.reset(seed=seed)
        problem = env.unwrapped.problem
        env.step(env.unwrapped.solution())
        if problem.kind == "stdio":
            env.step(
                "".join(f"<input>{t.input}</input><output>{t.output}</output>" for t in problem.tests[:4])
            )
        else:
            env.step(env.unwrapped.solution("tester"))
        solved += env.unwrapped.success
    seconds = time.perf_counter() - start
    return {"episodes_per_s": episodes / seconds, "episodes": episodes, "solved": solved}


def gradings_per_second(count: int) -> dict[str, float]:
    from pettingllms.data.math.generator import generate_problem
    from pettingllms.data.math.grading import is_equivalent

    rng = np.random.default_rng(0)
    problems = [generate_problem(rng, difficulty=1 + i % 3) for i in range(count)]
    start = time.perf_counter()
    equal = sum(is_equivalent(f"\\boxed{{{p.answer}}}", p.answer) for p in problems)
    equal_s = time.perf_counter() - start
    start = time.perf_counter()
    unequal = sum(is_equivalent(f"{p.answer} + 1", p.answer) for p in problems)
    unequal_s = time.perf_counter() - start
    return {
        "equal_pairs_per_s": count / equal_s,
        "equal_judged_equal": equal,
        "unequal_pairs_per_s": count / unequal_s,
        "unequal_judged_equal": unequal,
        "pairs": count,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=60)
    parser.add_argument("--gradings", type=int, default=300)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    figures = {}
    with Sandbox(workers=2) as sandbox:
        sandbox.run_batch(["pass", "pass"])
        figures["code-v0 bundled (stdio)"] = code_episodes_per_second("bundled", args.episodes, sandbox)
        figures["code-v0 humaneval (function)"] = code_episodes_per_second(
            "humaneval", args.episodes, sandbox
        )
    figures["math grading"] = gradings_per_second(args.gradings)
    for name, row in figures.items():
        print(name, json.dumps({k: round(v, 1) if isinstance(v, float) else v for k, v in row.items()}))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
