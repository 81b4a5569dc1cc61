"""Record what a short letters run and the default run's first steps log, without their wall-clock measures, so
that a change that must not change behaviour (a move of code) can be checked bit for bit against the commit
before it.

    python tests/step_identity.py OUT.json [--default_steps 3]

runs, in a temporary folder, the 2-step letters run of `letters.args_for` on an untrained tiny model, and
`pettingllms-train`'s default config for its first `--default_steps` steps (evaluations at steps 0 and the last
on 24 episodes, so that the comparison takes minutes), and writes every metrics row of both (wall-clock keys
dropped: `letters.without_wall_clock`) with the commit it ran at. Both run with one torch thread: with two, the
default run's logged gradient norm and entropy of one policy differ between two runs of the same code in the
seventh significant digit (a multithreaded reduction's order), while every other figure agrees. Run it at two commits and compare the files'
`runs` (`docs/results/step_identity.json` holds one such comparison).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from letters import args_for, build_tiny_model, metric_rows, register_letters

REPO = Path(__file__).resolve().parent.parent


def letters_rows(folder: Path) -> list[dict]:
    """The metrics rows of the 2-step letters run (seed 3) of an untrained tiny model built in `folder`."""
    import torch

    from pettingllms.trainers import ATGRPOTrainer

    torch.set_num_threads(1)
    unregister = register_letters()
    try:
        model = build_tiny_model(folder / "model")
        ATGRPOTrainer(args_for(model, folder / "run"), log=lambda _: None).train()
    finally:
        unregister()
    return metric_rows(folder / "run")


def default_rows(folder: Path, steps: int) -> list[dict]:
    """The metrics rows of `pettingllms-train`'s default config stopped after `steps` steps (24 evaluation
    episodes), run as a user runs it."""
    command = [
        str(Path(sys.executable).parent / "pettingllms-train"),
        "--output_dir",
        str(folder / "default"),
        "--max_steps",
        str(steps),
        "--eval_episodes",
        "24",
        "--disable_tqdm",
        "true",
    ]
    subprocess.run(command, check=True, cwd=REPO, env={**os.environ, "OMP_NUM_THREADS": "1"})
    return metric_rows(folder / "default")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--default_steps", type=int, default=3)
    options = parser.parse_args()
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=REPO, check=True, capture_output=True, text=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        runs = {"letters": letters_rows(folder), "default": default_rows(folder, options.default_steps)}
    options.out.write_text(json.dumps({"commit": commit, "runs": runs}, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
