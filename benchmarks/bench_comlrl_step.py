"""A training step of ours beside CoMLRL's `MAGRPOTrainer`, on the same model, env and sampling: completions per
second of wall time (generation, env and update) and peak memory, in one run.

    .venv/bin/python benchmarks/bench_comlrl_step.py [--repeats 3] [--json benchmarks/results/comlrl_step.json]

Both sides train the default run's model (the built-in tiny Qwen3 warm-started for plan-path-v0, 7x7 grids,
`configs/tiny/plan_path.yaml`), one full model per agent (ours: `policy_layout: per_role`; CoMLRL: `agent_model`
loaded once per agent), K = 4, temperature 1, up to 112 new tokens, learning rate 1e-4, on training instances of
plan-path-v0:

- ours: `pettingllms-train`'s step (8 instances, the tool and plan agents, K candidates per agent and turn from one
  shared state, the best executed, every candidate updated on); it also samples one greedy turn completion per
  group to credit the tool agent (`probe completions`), counted apart. Twice: with the config's micro-batch of 32
  sequences, and with micro-batches of 4 (`ours_mb4`), CoMLRL's K completions of a node per forward and backward:
  a micro-batch's attention scores over ~1,000-token prompts are most of a step's memory.
- CoMLRL: `MAGRPOTrainer` through `pettingllms.integrations.comlrl.MAGRPOBridge`, two turns (its tree has K joint
  actions per node, each expanded: 1 + K nodes of 2 x K completions per instance), updating every 2 nodes per agent
  (its default buffer), rows until it has sampled at least as many completions as our step did.

Each side runs in a process of its own (its peak resident memory is that process's `ru_maxrss`, the models and the
step included), the two in turn `--repeats` times; each process times one step (or instance) as a warm-up, then
the measured one(s). A ratio is ours over CoMLRL's sampled completions per second (ours' probes not counted), taken
round by round; the figure is the median of the rounds.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "tiny" / "plan_path.yaml"
K, MAX_NEW_TOKENS, LEARNING_RATE, COMLRL_TURNS = 4, 112, 1e-4, 2
OURS = ("ours", "ours_mb4")


def ours(folder: Path, micro_batch: int | None = None) -> dict:
    """One step of `pettingllms-train --config configs/tiny/plan_path.yaml` after a warm-up step (`micro_batch`:
    `per_device_train_batch_size`, None: the config's)."""
    from pettingllms.trainers.at_grpo import ATGRPOTrainer
    from pettingllms.trainers.policies.model_source import prepare_starting_models
    from pettingllms.trainers.settings.arguments import parse

    extra = [] if micro_batch is None else ["--per_device_train_batch_size", str(micro_batch)]
    args = parse(
        [
            "--config",
            str(CONFIG),
            "--output_dir",
            str(folder),
            "--eval_every",
            "0",
            "--save_steps",
            "1000",
            *extra,
        ]
    )
    prepare_starting_models(args)
    trainer = ATGRPOTrainer(args, log=lambda message: None)
    trainer.train_step()  # warm-up
    before = trainer.completions
    start = time.perf_counter()
    metrics = trainer.train_step()
    seconds = time.perf_counter() - start
    sampled = trainer.completions - before
    return {"sampled": sampled, "probes": int(metrics["train/probe_completions"]), "seconds": seconds}


def comlrl(folder: Path, target: int) -> dict:
    """`MAGRPOTrainer` instances (one tree each) until `target` completions were sampled, after one as a warm-up."""
    from comlrl.trainers.reinforce import MAGRPOTrainer
    from datasets import Dataset
    from transformers import AutoTokenizer

    from pettingllms.integrations.comlrl import MAGRPOBridge
    from pettingllms.trainers.policies.model_source import starting_model
    from pettingllms.trainers.settings.arguments import parse

    args = parse(["--config", str(CONFIG), "--output_dir", str(folder)])
    model = starting_model(args.model_name_or_path, args, lambda message: None)  # the folder ours trains from
    bridge = MAGRPOBridge(args.env_id, env_kwargs=args.env_kwargs)
    sampled = [0]

    def reward(*completions, **kwargs):
        sampled[0] += len(completions)  # one completion per agent: one joint action
        return bridge.reward(*completions, **kwargs)

    rows = bridge.dataset(range(1000))
    trainer = MAGRPOTrainer(
        agent_model=model, num_agents=len(bridge.agents), tokenizer=AutoTokenizer.from_pretrained(model),
        train_dataset=Dataset.from_list(rows), formatters=bridge.formatters, reward_func=reward,
        external_transition=bridge.transition,
        args=bridge.config(
            num_turns=COMLRL_TURNS, num_generations=K, max_new_tokens=MAX_NEW_TOKENS, temperature=1.0, top_p=1.0,
            top_k=None, agent_learning_rate=LEARNING_RATE, eval_interval=0, num_train_epochs=1,
        ),
    )  # fmt: skip
    for agent in trainer.agents:
        agent.train()
    trainer._train_step_returns(rows[0])  # warm-up
    sampled[0], start, index = 0, time.perf_counter(), 1
    while sampled[0] < target:
        trainer._train_step_returns(rows[index])
        index += 1
    return {"sampled": sampled[0], "instances": index - 1, "seconds": time.perf_counter() - start}


def child(side: str, target: int) -> None:
    import torch

    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as folder:
        if side == "comlrl":
            figures = comlrl(Path(folder), target)
        else:
            figures = ours(Path(folder), 4 if side == "ours_mb4" else None)
    figures["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(figures))


def run_side(side: str, target: int = 0) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--side", side, "--target", str(target)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{side}: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--side", choices=("ours", "ours_mb4", "comlrl"), help=argparse.SUPPRESS)
    parser.add_argument("--target", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        child(args.side, args.target)
        return
    rounds = []
    for repeat in range(args.repeats):  # the three in turn: drift on a shared machine falls on all of them
        runs = {"ours": run_side("ours")}
        runs["ours_mb4"] = run_side("ours_mb4")
        runs["comlrl"] = run_side("comlrl", runs["ours"]["sampled"])
        for figures in runs.values():
            figures["rate"] = figures["sampled"] / figures["seconds"]
        rounds.append({**runs, "ratio": {side: runs[side]["rate"] / runs["comlrl"]["rate"] for side in OURS}})
        print(f"repeat {repeat}: " + "; ".join(
            f"{side} {f['sampled']} sampled" + (f" (+{f['probes']} probes)" if "probes" in f else "")
            + f" in {f['seconds']:.1f} s = {f['rate']:.2f}/s, peak {f['peak_rss_mib']:.0f} MiB"
            for side, f in runs.items()
        ))  # fmt: skip
    summary = {
        side: {
            "rate_median": statistics.median(r[side]["rate"] for r in rounds),
            "peak_mib_median": statistics.median(r[side]["peak_rss_mib"] for r in rounds),
            **({"ratio_median": statistics.median(r["ratio"][side] for r in rounds)} if side in OURS else {}),
        }
        for side in (*OURS, "comlrl")
    }
    print(json.dumps(summary))
    if args.json:
        report = {"rounds": rounds, "summary": summary, "python": sys.version.split()[0]}
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
