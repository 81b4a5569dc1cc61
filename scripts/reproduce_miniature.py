"""The paper's central comparison in miniature: MAS + AT-GRPO against single-agent and trajectory-GRPO baselines.

    .venv/bin/python scripts/reproduce_miniature.py              # everything; resumes finished and killed runs
    .venv/bin/python scripts/reproduce_miniature.py --parts main --seeds 0 --budget 200 --eval_episodes 20  # smoke
    .venv/bin/python scripts/reproduce_miniature.py --report     # rebuild the tables and plots from the JSON

Three parts, every run a `pettingllms-train` run under `runs/miniature/`, every number from `pettingllms-eval`
(greedy, the same fixed evaluation-split suite for every row):

1. `main` (`plan-path-v0`, 5x5): six rows x `--seeds` - `single` and `mas` (the warm start, no RL),
   `single+grpo` (the plan agent alone, trajectory-grouped GRPO), `mas+trajectory-grpo` (the tool + plan team,
   trajectory-grouped GRPO, one policy per role), `mas+at-grpo-shared` and `mas+at-grpo-per-role` (AT-GRPO with
   one shared policy or one per role). Every row starts from the same warm start (`tiny`, `workflow="mas+single"`:
   one model whose demonstrations cover both the team and the single agent) and trains on the same sample budget:
   `--budget` sampled completions (`max_completions`: a run stops after the step that reaches it), K=4
   candidates or episodes per step, 8 instances per step for the two-agent team and 16 for the single agent.
   Methods that sample more per step (trajectories run their K episodes to the end; the single agent has twice
   the instances) therefore take fewer optimizer steps.
2. `ablations` (plan-path, `mas+at-grpo-per-role` varied one knob at a time, `--ablation_seeds`): alpha in
   {0, 0.5, 1}; K in {2, 4, 8} at an equal budget (instances per step = 32 / K); greedy versus random commit;
   grouping by (agent, turn) versus agent only versus turn only.
3. `envs`: `sokoban-v0` (6x6, one box) and `sudoku-v0` (4x4), rows `mas`, `mas+trajectory-grpo`,
   `mas+at-grpo-per-role` (`--env_seeds`), each env with its own warm start.
4. `scale`: the trained rows of the main table again at `--scale_budget` completions (`--scale_seeds`), to see
   whether the gaps open with more samples.

Rows go to `docs/results/miniature.json` (`{"env", "method", "seed", "success_rate", ...}`) after every run, so an
interrupted study keeps what it finished; the tables, learning curves (`docs/results/miniature_curves.png`) and
the commands go to the miniature section of `docs/results.md`.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from pettingllms.eval.markdown import replace_section
from pettingllms.eval.stats import paired_comparison, seed_summary

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "runs" / "miniature"
OUT = ROOT / "docs" / "results" / "miniature.json"
START, END = "<!-- miniature:start -->", "<!-- miniature:end -->"
COMMON = [
    "--scale_rewards", "none", "--learning_rate", "1e-4", "--num_generations", "4", "--temperature", "1.0",
    "--max_completion_length", "24", "--per_device_train_batch_size", "32", "--save_steps", "5",
    "--resume", "true",
]  # fmt: skip
ENVS = {
    "plan-path-v0": {},
    "sokoban-v0": {"width": 6, "height": 6, "num_boxes": 1},
    "sudoku-v0": {"size": 4},
}
MAIN_ROWS = (
    "single",
    "single+grpo",
    "mas",
    "mas+trajectory-grpo",
    "mas+at-grpo-shared",
    "mas+at-grpo-per-role",
)
TEAM_INSTANCES = 8  # instances per step for the two-agent team; the single agent gets twice as many
WARM_START_MINUTES = "7 + 15 + 13"
"""Measured build times of the plan-path (mas+single), sokoban and sudoku warm starts (the latter two while other
jobs shared the cores); see each model's warmstart.json."""


def method_flags(method: str) -> tuple[str, list[str]]:
    """(workflow, trainer flags) of a trained row."""
    team = ["--workflow", "mas", "--instances_per_step", str(TEAM_INSTANCES)]
    return {
        "single+grpo": ("single", ["--workflow", "single", "--instances_per_step", str(2 * TEAM_INSTANCES),
                                   "--grouping", "trajectory", "--policy_layout", "shared"]),
        "mas+trajectory-grpo": ("mas", [*team, "--grouping", "trajectory", "--policy_layout", "per_role"]),
        "mas+at-grpo-shared": ("mas", [*team, "--grouping", "agent_turn", "--policy_layout", "shared"]),
        "mas+at-grpo-per-role": ("mas", [*team, "--grouping", "agent_turn", "--policy_layout", "per_role"]),
    }[method]  # fmt: skip


BASELINES = ("single", "single+grpo", "mas", "mas+trajectory-grpo")
"""The rows AT-GRPO is compared against, paired per episode."""
ABLATIONS = {  # name -> flags replacing the per-role AT-GRPO defaults (alpha 1, K 4, greedy, agent_turn)
    "alpha=0": ["--alpha", "0"],
    "alpha=0.5": ["--alpha", "0.5"],
    "alpha=1": [],
    "K=2": ["--num_generations", "2", "--instances_per_step", "16"],
    "K=4": [],
    "K=8": ["--num_generations", "8", "--instances_per_step", "4"],
    "commit=greedy": [],
    "commit=random": ["--commit", "random"],
    "grouping=agent_turn": [],
    "grouping=agent": ["--grouping", "agent"],
    "grouping=turn": ["--grouping", "turn"],
}


class Study:
    """Runs, evaluations and the rows file of one invocation."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.rows = json.loads(args.out.read_text()) if args.out.is_file() else []

    # ----------------------------------------------------------------- building blocks
    def warm_start(self, env_id: str) -> Path:
        from pettingllms.models.warmstart import ensure_tiny_model

        workflow = "mas+single" if env_id == "plan-path-v0" else "mas"
        return ensure_tiny_model(env_id, env_kwargs=ENVS[env_id], workflow=workflow, eval_episodes=0)

    def train(self, name: str, env_id: str, seed: int, flags: list[str]) -> Path:
        """One training run (resumed if it has a checkpoint, skipped if finished); returns its folder."""
        from pettingllms.trainers.at_grpo import ATGRPOTrainer
        from pettingllms.trainers.cli import parse

        folder = self.args.runs / name
        argv = [
            "--output_dir", str(folder), "--env_id", env_id, "--env_kwargs", json.dumps(ENVS[env_id]),
            "--model_name_or_path", str(self.warm_start(env_id)), "--seed", str(seed),
            "--max_steps", str(self.args.max_steps), "--max_completions", str(self.args.budget),
            "--eval_every", str(self.args.curve_every),
            "--eval_episodes", str(self.args.curve_episodes), *COMMON, *flags,
        ]  # fmt: skip
        args = parse(argv)
        if not _finished(folder / "metrics.jsonl", args.max_steps, args.max_completions):
            started = time.perf_counter()
            ATGRPOTrainer(args, log=print).train()
            (folder / "wall_time_s.txt").write_text(f"{time.perf_counter() - started:.1f}\n")
        return folder

    def evaluate(self, policy: Path, env_id: str, workflow: str, name: str) -> dict:
        """`pettingllms-eval` of `policy` (a run or model folder) on the fixed suite; returns its env result."""
        from pettingllms.eval.cli import main as eval_main

        output = self.args.runs / "eval" / f"{name}.json"
        if not output.is_file():
            output.parent.mkdir(parents=True, exist_ok=True)
            argv = [
                "--env", env_id, "--policy", str(policy), "--workflow", workflow, "--episodes",
                str(self.args.eval_episodes), "--seed", "0", "--env_kwargs", json.dumps(ENVS[env_id]),
                "--max_new_tokens", "24", "--output", str(output), "--no_progress",
            ]  # fmt: skip
            if eval_main(argv) != 0:
                raise RuntimeError(f"pettingllms-eval failed for {name}: {' '.join(argv)}")
        return json.loads(output.read_text())["results"][env_id]

    def record(self, row: dict) -> None:
        key = (row["part"], row["env"], row["method"], row["seed"])
        self.rows = [r for r in self.rows if (r["part"], r["env"], r["method"], r["seed"]) != key] + [row]
        self.args.out.parent.mkdir(parents=True, exist_ok=True)
        self.args.out.write_text(json.dumps(self.rows, indent=1) + "\n")

    def untrained_row(self, part: str, env_id: str, method: str, seed: int) -> None:
        workflow = method  # "single" or "mas": the warm start played by that team
        result = self.evaluate(self.warm_start(env_id), env_id, workflow, f"{env_id}_{method}_warmstart")
        self.record(_row(part, env_id, method, seed, result, None, self.args))

    def trained_row(
        self, part: str, env_id: str, method: str, seed: int, flags: list[str], workflow: str
    ) -> None:
        name = f"{env_id}_{part}_{method}_s{seed}".replace("=", "-")
        folder = self.train(name, env_id, seed, flags)
        result = self.evaluate(folder, env_id, workflow, name)
        self.record(_row(part, env_id, method, seed, result, folder, self.args))

    # ----------------------------------------------------------------- parts
    def main_table(self) -> None:
        for seed in self.args.seeds:  # seed by seed: an interrupted study has every row for its first seeds
            for method in MAIN_ROWS:
                if method in ("single", "mas"):
                    self.untrained_row("main", "plan-path-v0", method, seed)
                else:
                    workflow, flags = method_flags(method)
                    self.trained_row("main", "plan-path-v0", method, seed, flags, workflow)

    def ablations(self) -> None:
        _, base = method_flags("mas+at-grpo-per-role")
        for seed in self.args.ablation_seeds:
            for name, flags in ABLATIONS.items():
                if not flags:  # the default setting: the main table's per-role AT-GRPO run of this seed
                    self.trained_row("main", "plan-path-v0", "mas+at-grpo-per-role", seed, base, "mas")
                    reference = next(
                        r for r in self.rows
                        if r["part"] == "main" and r["method"] == "mas+at-grpo-per-role" and r["seed"] == seed
                    )  # fmt: skip
                    self.record({**reference, "part": "ablations", "method": name})
                else:
                    self.trained_row("ablations", "plan-path-v0", name, seed, [*base, *flags], "mas")

    def scale(self) -> None:
        for seed in self.args.scale_seeds:
            for method in MAIN_ROWS:
                if method not in ("single", "mas"):
                    workflow, flags = method_flags(method)
                    flags = [*flags, "--max_completions", str(self.args.scale_budget), "--max_steps", "200"]
                    self.trained_row("scale", "plan-path-v0", method, seed, flags, workflow)

    def other_envs(self) -> None:
        for env_id in ("sokoban-v0", "sudoku-v0"):
            for seed in self.args.env_seeds:
                self.untrained_row("envs", env_id, "mas", seed)
                for method in ("mas+trajectory-grpo", "mas+at-grpo-per-role"):
                    workflow, flags = method_flags(method)
                    self.trained_row("envs", env_id, method, seed, flags, workflow)


def _row(part: str, env_id: str, method: str, seed: int, result: dict, folder: Path | None, args) -> dict:
    row = {
        "part": part, "env": env_id, "method": method, "seed": seed, "success_rate": result["success_rate"],
        "episodes": result["episodes"], "interval_95": result.get("ci95"),
        "parse_error_rate": result.get("parse_error_rate"), "eval_wall_s": result.get("wall_time_s"),
    }  # fmt: skip
    if "per_episode" in result:  # one 0/1 per suite episode, in suite order: for paired comparisons
        row["episode_success"] = "".join(str(int(s)) for s in result["per_episode"]["success"])
    if folder is not None:
        metrics = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
        row["steps"] = metrics[-1]["step"]
        row["sampled_completions"] = metrics[-1]["train/completions_total"]
        row["curve"] = [  # [step, completions sampled so far, evaluation success]
            [m["step"], m.get("train/completions_total", 0), m["eval/success_rate"]]
            for m in metrics
            if "eval/success_rate" in m
        ]
        wall = folder / "wall_time_s.txt"
        row["train_wall_s"] = float(wall.read_text()) if wall.is_file() else None
        row["run"] = str(folder.relative_to(ROOT)) if folder.is_relative_to(ROOT) else str(folder)
    return row


def _finished(metrics_path: Path, max_steps: int, budget: int) -> bool:
    """Whether the run's log ends with its final evaluation (after max_steps, or at the sample budget)."""
    if not metrics_path.is_file():
        return False
    rows = [json.loads(line) for line in metrics_path.read_text().splitlines()]
    last = rows[-1] if rows else {}
    done = last.get("step", 0) >= max_steps or last.get("train/completions_total", 0) >= budget
    return done and last.get("step", 0) > 0 and "eval/success_rate" in last


# --------------------------------------------------------------------- report
def matching(rows: list[dict], **match) -> list[dict]:
    return [r for r in rows if all(r.get(k) == v for k, v in match.items())]


def cell(rows: list[dict], **match) -> str:
    """Mean success over seeds ± the sample standard deviation (ddof=1), with the number of seeds."""
    values = [r["success_rate"] for r in matching(rows, **match)]
    if not values:
        return "—"
    summary = seed_summary(values)
    spread = "" if summary["std"] is None else f" ± {100 * summary['std']:.1f}"
    return f"{100 * summary['mean']:.1f}{spread} (n={summary['n']})"


def per_episode(rows: list[dict], **match) -> np.ndarray | None:
    """Each suite episode's success averaged over the matching rows' seeds (None without per-episode results)."""
    found = [r["episode_success"] for r in matching(rows, **match) if "episode_success" in r]
    if not found or len({len(f) for f in found}) != 1:
        return None
    return np.array([[int(c) for c in f] for f in found], dtype=np.float64).mean(axis=0)


def paired_lines(rows: list[dict], methods: tuple[str, ...], baselines: tuple[str, ...]) -> list[str]:
    """Markdown rows: each of `methods` against the best of `baselines` (highest mean), paired per episode."""
    means = {m: np.mean([r["success_rate"] for r in matching(rows, method=m)] or [np.nan]) for m in baselines}
    best = max((m for m in baselines if not np.isnan(means[m])), key=lambda m: means[m], default=None)
    reference = per_episode(rows, method=best) if best else None
    lines = []
    for method in methods:
        ours = per_episode(rows, method=method)
        if ours is None or reference is None or ours.shape != reference.shape:
            continue
        result = paired_comparison(ours, reference)
        low, high = result["ci95"]
        lines.append(
            f"| {method} | {best} | {100 * result['difference']:+.1f} | [{100 * low:+.1f}, {100 * high:+.1f}] "
            f"| {result['p_value']:.2g} ({result['test']}) | {result['episodes']} |"
        )
    return lines


def budget(rows: list[dict], **match) -> str:
    values = [r["sampled_completions"] for r in rows if "sampled_completions" in r
              and all(r.get(k) == v for k, v in match.items())]  # fmt: skip
    return f"{np.mean(values):.0f}" if values else "0 (no RL)"


def steps(rows: list[dict], **match) -> str:
    values = [r["steps"] for r in rows if "steps" in r and all(r.get(k) == v for k, v in match.items())]
    return f"{np.mean(values):.1f}" if values else "0"


def plot_curves(rows: list[dict], path: Path, args: argparse.Namespace) -> None:
    """Learning curves (success against sampled completions) of the main table's and the 'scale' part's runs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    parts = [(p, t) for p, t in (("main", f"budget {args.budget}"), ("scale", f"budget {args.scale_budget}"))
             if any(r["part"] == p and "curve" in r for r in rows)]  # fmt: skip
    figure, axes = plt.subplots(1, len(parts), figsize=(7 * len(parts), 4.5), squeeze=False)
    for axis, (part, title) in zip(axes[0], parts):
        trained = [r for r in rows if r["part"] == part and "curve" in r]
        for method in [m for m in MAIN_ROWS if any(r["method"] == m for r in trained)]:
            curves = [
                {step: (done, ok) for step, done, ok in r["curve"]} for r in trained if r["method"] == method
            ]
            shared = sorted(set.intersection(*(set(c) for c in curves)))  # steps every seed evaluated
            done = np.array([[c[s][0] for s in shared] for c in curves]).mean(0)
            values = np.array([[c[s][1] for s in shared] for c in curves]) * 100
            axis.plot(done, values.mean(0), marker="o", label=f"{method} (n={len(curves)})")
            axis.fill_between(done, values.min(0), values.max(0), alpha=0.15)
        axis.set_xlabel("sampled completions")
        axis.set_ylabel(f"greedy success (%), {args.curve_episodes} eval-split episodes")
        axis.set_title(f"plan-path-v0, {title} (mean, min-max over seeds)")
        axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def write_report(rows: list[dict], args: argparse.Namespace, results_md: Path) -> None:
    curves = args.out.with_name("miniature_curves.png")
    if any("curve" in r for r in rows if r["part"] == "main"):
        plot_curves(rows, curves, args)
    main = [r for r in rows if r["part"] == "main"]
    ablations = [r for r in rows if r["part"] == "ablations"]
    envs = [r for r in rows if r["part"] == "envs"]
    runs = {r["run"]: r.get("train_wall_s") or 0.0 for r in rows if "run" in r}  # each run once
    evals = {r.get("run", (r["env"], r["method"])): r.get("eval_wall_s") or 0.0 for r in rows}  # each once
    lines = [
        START,
        "## Miniature reproduction: MAS + AT-GRPO against single-agent and trajectory-GRPO baselines",
        "",
        f"The built-in tiny model on CPU; every RL run stops at a budget of {args.budget} sampled completions "
        "(the step that reaches it completes), K=4, lr 1e-4, `scale_rewards: none`, temperature 1.0; every row "
        f"starts from the same warm start; success rate in % on {args.eval_episodes} evaluation-split episodes (greedy, "
        "`pettingllms-eval`, the same suite for every row), mean ± sample std (ddof=1) over seeds. Rows without RL are one "
        "deterministic model on one suite, so their seeds agree.",
        "",
        "Regenerate: `.venv/bin/python scripts/reproduce_miniature.py` (all parts with these defaults; resumable; "
        "rows in `docs/results/miniature.json`, runs in `runs/miniature/`; `--report` rebuilds this section). The "
        "learning curves use the trainer's own evaluation (50 episodes per point, another slice of the "
        "evaluation split), so they are noisier than the tables.",
        "",
        "### Main table (`plan-path-v0`, 5x5)",
        "",
        "| method | success % | sampled completions per run | optimizer steps | paper (Qwen3-1.7B) |",
        "|---|---|---|---|---|",
    ]
    paper = {"single": "5", "single+grpo": "11", "mas": "10", "mas+trajectory-grpo": "—",
             "mas+at-grpo-shared": "96", "mas+at-grpo-per-role": "97"}  # fmt: skip
    for method in MAIN_ROWS:
        lines.append(f"| {method} | {cell(main, method=method)} | {budget(main, method=method)} "
                     f"| {steps(main, method=method)} | {paper[method]} |")  # fmt: skip
    paired = paired_lines(main, ("mas+at-grpo-shared", "mas+at-grpo-per-role"), BASELINES)
    if paired:
        lines += ["", "Paired per episode against the best baseline (each episode's success averaged over seeds; "
                  "95% paired bootstrap interval; a p-value above 0.05 means the difference is within noise):", "",
                  "| method | best baseline | difference (points) | 95% interval | p-value | episodes |",
                  "|---|---|---|---|---|---|", *paired]  # fmt: skip
    scaled = [r for r in rows if r["part"] == "scale"]
    if scaled:
        lines += ["", f"### Three times the budget (`plan-path-v0`, {args.scale_budget} sampled completions)", "",
                  "| method | success % | sampled completions per run | optimizer steps |", "|---|---|---|---|"]  # fmt: skip
        for method in MAIN_ROWS:
            rows_for = main if method in ("single", "mas") else scaled
            lines.append(f"| {method} | {cell(rows_for, method=method)} | {budget(rows_for, method=method)} "
                         f"| {steps(rows_for, method=method)} |")  # fmt: skip
    if curves.is_file():
        lines += ["", "![learning curves](results/miniature_curves.png)"]
    lines += ["", "### Ablations (`plan-path-v0`, `mas+at-grpo-per-role`, one knob at a time)", "",
              "| knob | setting | success % | sampled completions per run |", "|---|---|---|---|"]  # fmt: skip
    for name in ABLATIONS:
        knob, value = name.split("=")
        lines.append(
            f"| {knob} | {value} | {cell(ablations, method=name)} | {budget(ablations, method=name)} |"
        )
    lines += [
        "",
        "### Other environments (two-agent team)",
        "",
        "| env | method | success % |",
        "|---|---|---|",
    ]
    for env_id in ("sokoban-v0", "sudoku-v0"):
        for method in ("mas", "mas+trajectory-grpo", "mas+at-grpo-per-role"):
            label = {"sokoban-v0": "sokoban-v0 (6x6, 1 box)", "sudoku-v0": "sudoku-v0 (4x4)"}[env_id]
            lines.append(f"| {label} | {method} | {cell(envs, env=env_id, method=method)} |")
    if runs:
        lines += ["", f"Wall time on this 2-core CPU: {sum(runs.values()) / 60:.1f} minutes of training over "
                  f"{len(runs)} runs ({np.mean(list(runs.values())):.0f} s per run) and "
                  f"{sum(evals.values()) / 60:.1f} minutes of `pettingllms-eval`, plus "
                  f"{WARM_START_MINUTES} minutes for the three warm starts (built once, cached); parts of it shared "
                  "the cores with other jobs, so these are upper bounds."]  # fmt: skip
    lines += ["", END]
    replace_section(results_md, START, END, "\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--parts", nargs="+", default=["main", "envs", "ablations", "scale"],
                        choices=["main", "ablations", "envs", "scale"], help="run in this order")  # fmt: skip
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--ablation_seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--env_seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--budget", type=int, default=1600, help="sampled completions per training run")
    parser.add_argument("--max_steps", type=int, default=40, help="cap on optimizer steps per run")
    parser.add_argument("--scale_budget", type=int, default=4800, help="the larger budget of part 'scale'")
    parser.add_argument("--scale_seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--curve_every", type=int, default=5, help="evaluate every N steps for the curves")
    parser.add_argument("--curve_episodes", type=int, default=50, help="episodes per learning-curve point")
    parser.add_argument("--eval_episodes", type=int, default=300, help="pettingllms-eval suite size")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--runs", type=Path, default=RUNS, help="folder of the runs and evaluations")
    parser.add_argument("--results_md", type=Path, default=ROOT / "docs" / "results.md")
    parser.add_argument("--report", action="store_true", help="only rebuild the report from --out")
    args = parser.parse_args()
    study = Study(args)
    if not args.report:
        started = time.perf_counter()
        parts = {
            "main": study.main_table,
            "ablations": study.ablations,
            "envs": study.other_envs,
            "scale": study.scale,
        }
        for part in args.parts:
            parts[part]()
            write_report(study.rows, args, args.results_md)
        print(f"study finished in {(time.perf_counter() - started) / 60:.1f} minutes")
    write_report(study.rows, args, args.results_md)
    print(f"wrote {args.out} and the miniature section of {args.results_md}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
