"""The paper's scaling study in miniature: team size and reward shaping, tiny model, CPU, 3 seeds.

    .venv/bin/python scripts/scaling_study.py                 # everything (resumes finished and killed runs)
    .venv/bin/python scripts/scaling_study.py --sizes 1 2 --seeds 0 --steps 4 --eval_episodes 20   # a short run
    .venv/bin/python scripts/scaling_study.py --sizes 1 --seeds 0 --steps 1 --budget 2 --eval_episodes 2 \
        --model_name_or_path MODEL --runs /tmp/scaling --out /tmp/scaling/rows.json --results_md /tmp/results.md  # smoke

Two parts, on `plan-path-v0`:

1. Team size: `workflow="ensemble"` with N = 1, 2, 3, 5, 7 agents (N - 1 tool proposers sharing one policy, and the
   aggregator with its own), the same warm-started tiny model for every N (its demonstrations cover every size),
   evaluated before AT-GRPO (the untrained team) and after `--steps` steps at an equal budget of sampled
   completions: `instances_per_step = round(budget / N)`, so instances x agents per step stays ~`budget`.
2. Reward: the two-agent team (`workflow="mas"`: tool + plan, per-role policies) with shaped rewards against
   `reward="outcome"` (local rewards zeroed, only the team's success reward).

Every run is a `pettingllms-train` run under `runs/scaling/` (checkpoints every 5 steps, resumed if killed); rows go
to `docs/results/scaling.json` as `{"env", "num_agents", "method", "reward", "seed", "success_rate", ...}`, the plot
to `docs/results/scaling.png`, and the tables to the scaling section of `docs/results.md`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from pettingllms.eval.markdown import replace_section
from pettingllms.eval.stats import seed_summary

ROOT = Path(__file__).resolve().parents[1]
ENV_ID = "plan-path-v0"
START, END = "<!-- scaling:start -->", "<!-- scaling:end -->"
EVAL_BUDGET = 128
"""Completion tokens of an evaluation step: the budget the committed rows were measured at (the evaluation budget of
the puzzles before evaluations followed the training budget)."""


def run_args(
    name: str,
    seed: int,
    steps: int,
    eval_episodes: int,
    extra: list[str],
    runs: Path = ROOT / "runs" / "scaling",
) -> list[str]:
    return [
        "--output_dir", str(runs / name), "--env_id", ENV_ID, "--seed", str(seed),
        "--max_steps", str(steps), "--eval_episodes", str(eval_episodes), "--save_steps", "5", "--resume", "true",
        "--eval_max_completion_length", str(EVAL_BUDGET), *extra,
    ]  # fmt: skip


def train(argv: list[str]) -> dict:
    """One run (resumed if it has a checkpoint); returns its step-0 and final evaluations and its budget."""
    from pettingllms.trainers.arguments import parse
    from pettingllms.trainers.at_grpo import ATGRPOTrainer

    args = parse(argv)
    metrics_path = Path(args.output_dir) / "metrics.jsonl"
    if not _finished(metrics_path, args.max_steps):
        ATGRPOTrainer(args, log=print).train()
    rows = [json.loads(line) for line in metrics_path.read_text().splitlines()]
    before = next(r["eval/success_rate"] for r in rows if r["step"] == 0)
    after = next(
        r["eval/success_rate"] for r in rows if r["step"] == args.max_steps and "eval/success_rate" in r
    )
    completions = sum(r.get("train/groups", 0) for r in rows) * args.num_generations
    return {"before": before, "after": after, "sampled_completions": completions, "steps": args.max_steps,
            "instances_per_step": args.instances_per_step, "run": _shown_path(Path(args.output_dir))}  # fmt: skip


def _shown_path(folder: Path) -> str:
    """`folder` relative to the repository when it is inside it (the committed rows), else as given."""
    folder = folder.resolve()
    return str(folder.relative_to(ROOT)) if folder.is_relative_to(ROOT) else str(folder)


def _finished(metrics_path: Path, max_steps: int) -> bool:
    if not metrics_path.is_file():
        return False
    rows = [json.loads(line) for line in metrics_path.read_text().splitlines()]
    return any(r["step"] == max_steps and "eval/success_rate" in r for r in rows)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 2, 3, 5, 7])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--budget", type=int, default=16, help="instances x agents per step")
    parser.add_argument("--eval_episodes", type=int, default=100)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "scaling.json")
    parser.add_argument("--runs", type=Path, default=ROOT / "runs" / "scaling", help="folder of the runs")
    parser.add_argument("--results_md", type=Path, default=ROOT / "docs" / "results.md")
    parser.add_argument("--model_name_or_path", default="tiny", help="the model every run starts from")
    args = parser.parse_args()
    common = ["--scale_rewards", "none", "--learning_rate", "1e-4", "--eval_every", "0"]
    common += ["--model_name_or_path", args.model_name_or_path]
    rows = []
    for (
        seed
    ) in args.seeds:  # seed by seed, so that an interrupted study has every team size for its first seeds
        for size in args.sizes:
            instances = max(1, round(args.budget / size))
            extra = [*common, "--workflow", "ensemble", "--env_kwargs", json.dumps({"num_agents": size})]
            extra += ["--agent_policies", json.dumps({"tool_*": "proposer", "aggregator_0": "aggregator"})]
            extra += ["--instances_per_step", str(instances)]
            result = train(
                run_args(f"ensemble_n{size}_s{seed}", seed, args.steps, args.eval_episodes, extra, args.runs)
            )
            rows += _rows(size, "shaped", seed, result)
        for reward in ("shaped", "outcome"):
            extra = [*common, "--workflow", "mas", "--env_kwargs", json.dumps({"reward": reward})]
            extra += ["--instances_per_step", str(max(1, round(args.budget / 2)))]
            result = train(
                run_args(f"mas_{reward}_s{seed}", seed, args.steps, args.eval_episodes, extra, args.runs)
            )
            rows += [dict(row, workflow="mas") for row in _rows(2, reward, seed, result)]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=1) + "\n")
    plot(rows, args.out.with_suffix(".png"))
    write_section(rows, args, args.results_md)
    print(f"wrote {args.out}, {args.out.with_suffix('.png')} and the scaling section of {args.results_md}")
    return 0


def _rows(size: int, reward: str, seed: int, result: dict) -> list[dict]:
    base = {"env": ENV_ID, "num_agents": size, "reward": reward, "seed": seed, "workflow": "ensemble"}
    budget = {k: result[k] for k in ("sampled_completions", "steps", "instances_per_step", "run")}
    return [
        {**base, "method": "untrained", "success_rate": result["before"]},
        {**base, "method": "at-grpo", "success_rate": result["after"], **budget},
    ]


def _stats(rows: list[dict], **match) -> tuple[float, float, int]:
    """Mean, sample std (ddof=1; 0 for one seed) and count of the matching rows' success rates."""
    values = [r["success_rate"] for r in rows if all(r.get(k) == v for k, v in match.items())]
    summary = seed_summary(values)
    return summary["mean"], summary["std"] or 0.0, summary["n"]


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ensemble = [r for r in rows if r["workflow"] == "ensemble"]
    sizes = sorted({r["num_agents"] for r in ensemble})
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for method, marker in (("untrained", "o"), ("at-grpo", "s")):
        stats = [_stats(ensemble, num_agents=n, method=method) for n in sizes]
        left.errorbar(sizes, [100 * m for m, _, _ in stats], yerr=[100 * s for _, s, _ in stats], marker=marker,
                      capsize=3, label="warm start (no RL)" if method == "untrained" else "AT-GRPO")  # fmt: skip
    left.set_xlabel("agents in the team (N - 1 proposers + aggregator)")
    left.set_ylabel("success rate (%), mean ± sample std over seeds")
    left.set_title(f"{ENV_ID}: team size")
    left.set_xticks(sizes)
    left.legend()
    mas = [r for r in rows if r["workflow"] == "mas"]
    labels, means, stds = [], [], []
    for reward in ("shaped", "outcome"):
        for method in ("untrained", "at-grpo"):
            mean, std, count = _stats(mas, reward=reward, method=method)
            if count:
                labels.append(f"{reward}\n{'no RL' if method == 'untrained' else 'AT-GRPO'}")
                means.append(100 * mean)
                stds.append(100 * std)
    right.bar(
        range(len(labels)),
        means,
        yerr=stds,
        capsize=3,
        color=["#999", "#4C72B0", "#999", "#DD8452"][: len(labels)],
    )
    right.set_xticks(range(len(labels)), labels)
    right.set_title("two-agent team: shaped vs outcome-only reward")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def write_section(rows: list[dict], args: argparse.Namespace, results_md: Path) -> None:
    ensemble = [r for r in rows if r["workflow"] == "ensemble"]
    mas = [r for r in rows if r["workflow"] == "mas"]
    lines = [
        START,
        "## Scaling study: team size and outcome-only rewards (issue: larger teams and sparse rewards)",
        "",
        f"`{ENV_ID}` (5x5), the built-in tiny model, CPU; {len(args.seeds)} seeds ({', '.join(map(str, args.seeds))}); "
        f"{args.steps} AT-GRPO steps, K=4, lr 1e-4, `scale_rewards: none`; an equal budget of ~{args.budget} "
        f"instance-agents per step (instances per step = round({args.budget} / N)); greedy evaluation on "
        f"{args.eval_episodes} evaluation-split grids. Success rate in %, mean ± sample std (ddof=1) over seeds.",
        "",
        "Regenerate: `.venv/bin/python scripts/scaling_study.py` (resumes; rows in `docs/results/scaling.json`).",
        "",
        "| agents N | warm start (no RL) | AT-GRPO | gain | sampled completions per run |",
        "|---|---|---|---|---|",
    ]
    for size in sorted({r["num_agents"] for r in ensemble}):
        before = _stats(ensemble, num_agents=size, method="untrained")
        after = _stats(ensemble, num_agents=size, method="at-grpo")
        budget = np.mean(
            [
                r["sampled_completions"]
                for r in ensemble
                if r["num_agents"] == size and r["method"] == "at-grpo"
            ]
        )
        lines.append(
            f"| {size} | {100 * before[0]:.1f} ± {100 * before[1]:.1f} | {100 * after[0]:.1f} ± {100 * after[1]:.1f} "
            f"| {100 * (after[0] - before[0]):+.1f} | {budget:.0f} |"
        )
    lines += ["", "Two-agent team (`workflow: mas`, tool + plan, per-role policies):", "",
              "| reward | warm start (no RL) | AT-GRPO | gain |", "|---|---|---|---|"]  # fmt: skip
    for reward in ("shaped", "outcome"):
        before = _stats(mas, reward=reward, method="untrained")
        after = _stats(mas, reward=reward, method="at-grpo")
        lines.append(
            f"| {reward} | {100 * before[0]:.1f} ± {100 * before[1]:.1f} | {100 * after[0]:.1f} ± {100 * after[1]:.1f} "
            f"| {100 * (after[0] - before[0]):+.1f} |"
        )
    lines += ["", "![scaling study](results/scaling.png)", "", END]
    replace_section(results_md, START, END, "\n".join(lines))


if __name__ == "__main__":
    raise SystemExit(main())
