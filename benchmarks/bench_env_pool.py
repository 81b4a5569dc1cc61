"""Env-pool throughput: candidate steps per second in-process (the anchor), with 1 worker and with 2 workers.

The jobs are what AT-GRPO steps most on the puzzles when the tool agent writes code: `plan-path-v0` tool steps
whose answer is a python block (a breadth-first search that prints the moves), so each step runs one program in
the sandbox. 64 jobs (16 instances x K=4), each on its own copy of its instance, all in one run:

- anchor: in-process, `env.clone(); copy.step(action)` one after the other (the engine without a pool);
- `EnvPool(1)` and `EnvPool(2)`: the same jobs through 1 and 2 worker processes (started and warmed up before
  timing); results are checked equal to the anchor's.

    python benchmarks/bench_env_pool.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import time

import pettingllms
from pettingllms.pools.env_pool import EnvPool

BFS = """```python
from collections import deque
grid = {grid!r}.splitlines()
start = next((r, c) for r, row in enumerate(grid) for c, ch in enumerate(row) if ch == "@")
goal = next((r, c) for r, row in enumerate(grid) for c, ch in enumerate(row) if ch == "G")
moves = {{"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}}
seen, queue = {{start: []}}, deque([start])
while queue:
    cell = queue.popleft()
    if cell == goal:
        break
    for name, (dr, dc) in moves.items():
        r, c = cell[0] + dr, cell[1] + dc
        if 0 <= r < len(grid) and 0 <= c < len(grid[0]) and grid[r][c] != "#" and (r, c) not in seen:
            seen[(r, c)] = seen[cell] + [name]
            queue.append((r, c))
print("<answer>" + " ".join(seen.get(goal, [])) + "</answer>")
```"""


def jobs(instances: int = 16, k: int = 4) -> list[tuple]:
    out = []
    for seed in range(instances):
        env = pettingllms.make("plan-path-v0")
        env.reset(seed=seed)
        grid = env.unwrapped.puzzle.render_text(env.unwrapped.state)
        out += [(env, BFS.format(grid=grid))] * k
    return out


def in_process(batch: list[tuple]) -> list:
    stepped = []
    for env, action in batch:
        copy = env.clone()
        copy.step(action)
        stepped.append(copy)
    return stepped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    batch = jobs()
    in_process(batch[:4])  # warm the sandbox
    start = time.perf_counter()
    reference = in_process(batch)
    anchor_s = time.perf_counter() - start
    results = {"jobs": len(batch), "in_process_steps_per_s": len(batch) / anchor_s}
    for workers in (1, 2):
        with EnvPool(workers) as pool:
            pool.step_all(batch[: 2 * workers])  # start and warm every worker
            start = time.perf_counter()
            stepped = pool.step_all(batch)
            elapsed = time.perf_counter() - start
        assert [e.rewards for e in stepped] == [e.rewards for e in reference], "the pool changed a result"
        results[f"pool_{workers}_steps_per_s"] = len(batch) / elapsed
        results[f"pool_{workers}_vs_in_process"] = anchor_s / elapsed
    solved = sum(e.unwrapped.proposal.summary.endswith("it would solve the puzzle") for e in reference)
    results["tool_proposals_that_solve"] = solved
    print(json.dumps(results, indent=2))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=2)


if __name__ == "__main__":
    main()
