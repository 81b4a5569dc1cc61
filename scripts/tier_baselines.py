"""The solver and random baselines of every difficulty tier, on the leaderboard.

    .venv/bin/python scripts/tier_baselines.py                  # evaluate, write leaderboard/results/tier_*.json,
                                                                # rebuild leaderboard/
    .venv/bin/python scripts/tier_baselines.py --episodes 2 --results /tmp/r --board /tmp/b --envs sudoku-v0

For every env with tiers (`pettingllms.envs.tiers`) and every tier, `pettingllms-eval --tier TIER` plays the
env's evaluation suite with the oracle (the env's solver: the upper bound, 100 on the progression score) and with
uniformly random answers, `EPISODES` episodes each, and writes one result file per policy and tier,
`tier_<tier>_<policy>.json`, labelled as the board's existing baseline rows (`LABELS`), so each baseline stays
one row and its tiers fill the board's "Difficulty tiers" tables. The files are then rebuilt into the board
(`pettingllms leaderboard`). Evaluations are deterministic: a rerun at the same code writes the same results.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pettingllms.envs import tiers
from pettingllms.eval.cli import main as eval_main
from pettingllms.presentation.leaderboard import build_leaderboard

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "leaderboard" / "results"
BOARD = ROOT / "leaderboard"
TABLES = {
    "sokoban-v0": "SOKOBAN",
    "sudoku-v0": "SUDOKU",
    "plan-path-v0": "PLAN_PATH",
    "math-v0": "MATH",
    "code-v0": "CODE",
}
"""The envs with tiers, and the name of each one's table in `pettingllms.envs.tiers`."""
ENVS = tuple(TABLES)
LABELS = {"oracle": "oracle (solver / reference)", "random": "random"}
"""The baselines, with the labels of their rows on the board."""
EPISODES = 200
"""Episodes per env, tier and baseline: as many as the board's baselines on the default suites."""


def result_file(results: Path, tier: str, policy: str) -> Path:
    """Where the baseline `policy`'s results at `tier` are written."""
    return results / f"tier_{tier}_{policy}.json"


def evaluate(envs: list[str], tier: str, policy: str, episodes: int, results: Path) -> Path:
    """`pettingllms-eval` of `policy` on `envs` at `tier`; the result file written (an error stops the script)."""
    output = result_file(results, tier, policy)
    argv = ["--env", ",".join(envs), "--policy", policy, "--tier", tier, "--episodes", str(episodes)]
    argv += ["--label", LABELS[policy], "--output", str(output), "--no_progress", "--no_transcripts"]
    if eval_main(argv) != 0:
        raise SystemExit(f"pettingllms-eval {' '.join(argv)} failed")
    output.with_name(output.name + ".episodes.jsonl").unlink()  # the episode cache: not part of the board
    return output


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=EPISODES, help="episodes per env, tier and baseline")
    parser.add_argument("--envs", default=",".join(ENVS), help="comma-separated env ids (default: every one)")
    parser.add_argument("--results", type=Path, default=RESULTS, help="the folder of result files")
    parser.add_argument("--board", type=Path, default=BOARD, help="the leaderboard folder rebuilt")
    args = parser.parse_args(argv)
    envs = [env.strip() for env in args.envs.split(",") if env.strip()]
    unknown = sorted(set(envs) - set(ENVS))
    if unknown:
        parser.error(f"--envs: {unknown} have no tiers; choose among {list(ENVS)}")
    args.results.mkdir(parents=True, exist_ok=True)
    for tier in tiers.TIER_NAMES:
        for policy in LABELS:
            evaluate(envs, tier, policy, args.episodes, args.results)
    table = build_leaderboard(args.results, args.board)
    for note in table.notes:
        print(f"note: {note}")
    print(f"wrote {len(tiers.TIER_NAMES) * len(LABELS)} result files to {args.results}; board: {args.board}")


if __name__ == "__main__":
    main()
