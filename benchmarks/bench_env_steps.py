"""Environment speed: observe + step per second for every registered env, beside TextArena's Sokoban-v0.

One "observe + step" is `env.last()` (which builds the acting agent's observation) followed by `env.step(text)`
with a one-move answer, through the wrappers that `pettingllms.make` applies. Resets are excluded from the
timing (level generation is measured by `bench_sokoban_generation.py`); episodes last `MAX_TURNS` turns. The anchor, TextArena's Sokoban-v0
(`get_observation()` + `step("[up]")`; a fresh env every `MAX_TURNS` steps, because a reused TextArena env
slows down with every step it has ever taken, resets included), runs in a subprocess with the interpreter given by `--anchor-python`
(a venv with `pip install textarena numpy`), in the same run.

Every env is measured `--repeats` times (default 5), both workflows right after an anchor run of their own; a figure
is the median of its runs, a ratio the median of each run's rate over its own anchor run's: on a shared machine the rate
of one env moved by half within a minute, so only rates measured side by side make a ratio worth keeping.

    python benchmarks/bench_env_steps.py [--steps 20000] [--repeats 5] [--anchor-python .bench-venv/bin/python]
        [--envs sokoban-v0 ...] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pettingllms

REPO = Path(__file__).resolve().parent.parent
ACTIONS = {
    "sudoku-v0": ["<answer>(1,1,1)</answer>", "<answer>(2,3,4)</answer>", "<answer>(4,4,2)</answer>"],
}
MAX_TURNS = 50
"""Episode length of every env measured (and of the anchor's episodes), unless solved earlier."""
MOVES = ["<answer>U</answer>", "<answer>R</answer>", "<answer>D</answer>", "<answer>L</answer>"]

ANCHOR = """
import json, sys, time
import textarena as ta
steps, EPISODE_STEPS = int(sys.argv[1]), int(sys.argv[2])
moves = ["[up]", "[right]", "[down]", "[left]"]
done, elapsed, seed = True, 0.0, -1
for i in range(steps):
    if done or i % EPISODE_STEPS == 0:
        # a fresh env per episode: a reused one slows down with every step it has ever taken
        seed += 1
        env = ta.make("Sokoban-v0")
        env.reset(num_players=1, seed=seed)
        done = False
    start = time.process_time()
    player_id, observation = env.get_observation()
    done, info = env.step(action=moves[i % 4])
    elapsed += time.process_time() - start
print(json.dumps({"steps_per_s": steps / elapsed}))
"""


def measure(env_id: str, workflow: str, steps: int) -> float:
    """Observe + step per second of `env_id` (resets excluded)."""
    env = pettingllms.make(env_id, workflow=workflow, max_turns=MAX_TURNS)
    actions = ACTIONS.get(env_id, MOVES)
    env.reset(seed=0)
    elapsed, seed = 0.0, 0
    for i in range(steps):
        if not env.agents or env.terminations[env.agent_selection] or env.truncations[env.agent_selection]:
            seed += 1
            env.reset(seed=seed)
        start = time.process_time()
        env.last()
        env.step(actions[i % len(actions)])
        elapsed += time.process_time() - start
    return steps / elapsed


def measure_anchor(python: Path, steps: int) -> float | None:
    if not python.exists():
        print(f"anchor skipped: {python} not found (create a venv with `pip install textarena numpy`)")
        return None
    out = subprocess.run(
        [str(python), "-c", ANCHOR, str(steps), str(MAX_TURNS)], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])["steps_per_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--anchor-python", type=Path, default=REPO / ".bench-venv" / "bin" / "python")
    parser.add_argument(
        "--envs",
        nargs="+",
        choices=sorted(pettingllms.registry),
        help="measure only these (default: every env)",
    )
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()

    env_ids = sorted(args.envs or pettingllms.registry)
    names = [f"{env_id}/{workflow}" for env_id in env_ids for workflow in ("single", "mas")]
    anchor_name = "textarena/Sokoban-v0"
    runs: dict[str, list[float]] = {anchor_name: [], **{name: [] for name in names}}
    ratios: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(args.repeats):
        for env_id in env_ids:  # both workflows beside an anchor run of their own: drift falls on both alike
            anchor_rate = measure_anchor(args.anchor_python, args.steps)
            if anchor_rate is not None:
                runs[anchor_name].append(anchor_rate)
            for workflow in ("single", "mas"):
                name = f"{env_id}/{workflow}"
                runs[name].append(measure(env_id, workflow, args.steps))
                if anchor_rate is not None:
                    ratios[name].append(runs[name][-1] / anchor_rate)
    figures = {name: statistics.median(rates) if rates else None for name, rates in runs.items()}
    paired = {name: statistics.median(values) if values else None for name, values in ratios.items()}
    print(
        f"{'environment':<28} {'observe+step/s':>15} {'vs TextArena Sokoban':>21}   "
        f"(medians of {args.repeats}; ratio: the median of each run against its own anchor run)"
    )
    for name, rate in figures.items():
        ratio = f"{paired[name]:.2f}x" if paired.get(name) else ("1.00x" if name == anchor_name else "-")
        print(f"{name:<28} {rate or float('nan'):>15,.0f} {ratio:>21}")
    if args.json:
        report = {"python": sys.version.split()[0], "steps": args.steps, "repeats": args.repeats}
        figures_and_runs = {"figures": figures, "ratios": paired, "runs": runs, "paired_ratios": ratios}
        args.json.write_text(json.dumps({**report, **figures_and_runs}, indent=2))


if __name__ == "__main__":
    main()
