"""A pretrained model under AT-GRPO (issue 56), second part: does RL move it, and does the team beat one agent?

    .venv/bin/python scripts/pretrained_rl_study.py                    # every method x seed; resumes what it had
    .venv/bin/python scripts/pretrained_rl_study.py --budget 48 --eval_episodes 4 --val_episodes 4 --eval_every 1 \
        --seeds 0 --runs /tmp/rl --out /tmp/rl/pretrained_rl.json --results_md /tmp/rl/results.md \
        --curve /tmp/rl/curve.png            # smoke (/tmp/rl/warm_starts: a link to runs/pretrained/warm_starts)
    .venv/bin/python scripts/pretrained_rl_study.py --report           # the section again, from the ledger

The task is the one the candidates' table chose before any RL (`scripts/pretrained_study.py`, section
"pretrained-candidates" of docs/results.md): `math-v0`'s generated problems at difficulty 1, SmolLM2-135M-Instruct
from its warm starts there (built by that script, under `--runs`/warm_starts). Methods (`METHODS`), each a run of
`--budget` sampled completions per seed, so that every method samples as many completions:

- `single GRPO`: the reasoner alone (workflow `single`) from the single agent's warm start, one LoRA adapter;
- `AT-GRPO per role`: the team (reasoner and tool agent) from the team's warm start, one LoRA adapter per role on
  the frozen base (`lora_per_role`);
- `AT-GRPO shared`: the same team and start, one LoRA adapter that serves both roles.

Each run logs, per step, the share of its sampled episodes that succeed and of each agent's completions that do
not parse or run to the token budget, and the trainer's own greedy evaluation on `--val_episodes` validation
problems every `--eval_every` steps (the learning curve). Its last checkpoint is evaluated greedily on
`--eval_episodes` problems of the evaluation split (the table); so is each warm start (`start` rows: the untrained
point each method is measured against). Every row goes on the ledger (study "pretrained_rl"); the section
"pretrained-rl" of docs/results.md, its table `docs/results/pretrained_rl.json` and the curve
`docs/results/pretrained_rl_curve.png` are rebuilt from the ledger.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pretrained_study

from research import cycle, ledger
from research.markdown import replace_section
from research.method_comparison import COMPARISON_WORDS, compare_methods
from research.method_comparison import cell as comparison_cell

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "results" / "pretrained_rl.json"
CURVE = ROOT / "docs" / "results" / "pretrained_rl_curve.png"
RULE = ledger.Rule("pretrained_rl", ("part", "method", "seed"))
"""The table: one row per part ("start" or "trained"), method (a start's: its workflow) and seed, the last recorded."""
START, END = "<!-- pretrained-rl:start -->", "<!-- pretrained-rl:end -->"
ENV_ID = "math-v0"
MAX_TOKENS = 128  # the candidates' table's budget
EXAMPLE_EPISODES = 8  # episodes whose conversations a row keeps (the transcripts shown come from them)
EXAMPLE_CHARS = 400


@dataclasses.dataclass(frozen=True)
class Method:
    """A trained method: the candidate task (its workflow and warm start) and the trainer's flags."""

    task: str
    flags: tuple[str, ...]

    @property
    def workflow(self) -> str:
        return pretrained_study.CANDIDATES[self.task].workflow


SINGLE, TEAM = "math-v0 difficulty 1, single", "math-v0 difficulty 1, team"
METHODS = {
    "single GRPO": Method(SINGLE, ("--policy_layout", "lora_per_role")),
    "AT-GRPO per role": Method(TEAM, ("--policy_layout", "lora_per_role")),
    "AT-GRPO shared": Method(
        TEAM, ("--policy_layout", "lora_per_role", "--agent_policies", '{"*": "shared"}')
    ),
}
STARTS = {"single": SINGLE, "mas": TEAM}
EVAL_EVERY = {"single": 12, "mas": 3}
"""Steps between the trainer's evaluations, per workflow: about every 200 sampled completions (a single-agent
step samples 16, a team's step 60-80)."""
"""A start row's method name (the workflow) -> its candidate task, whose warm start it evaluates."""
COMMON = (
    "--grouping", "agent_turn", "--num_generations", "4", "--instances_per_step", "4", "--temperature", "1.0",
    "--max_completion_length", str(MAX_TOKENS), "--learning_rate", "5e-4", "--lr_scheduler_type", "constant",
    "--loss_type", "dr_grpo", "--scale_rewards", "none", "--lora_r", "16", "--lora_alpha", "32",
    "--per_device_train_batch_size", "32", "--save_steps", "1", "--resume", "true", "--eval_split", "val",
    "--use_cpu", "true", "--report_to", "none",
)  # fmt: skip
COMPARISONS = (
    ("AT-GRPO per role", "single GRPO"),
    ("AT-GRPO shared", "single GRPO"),
    ("AT-GRPO per role", "AT-GRPO shared"),
)


class Study:
    """The runs, evaluations and rows of one invocation."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.rows = ledger.table_rows(args.out, RULE)

    def warm_start(self, task: str) -> Path:
        folder = self.args.runs / "warm_starts" / pretrained_study.slug(task)
        if not (folder / "warmstart.json").is_file():
            raise SystemExit(
                f"no warm start for {task!r} at {folder}: build it first with scripts/pretrained_study.py "
                f"--runs {self.args.runs}"
            )
        return folder

    def evaluate(self, policy: Path, workflow: str, name: str) -> dict[str, Any]:
        """Greedy `pettingllms-eval` of `policy` on the evaluation suite (cached by `name`), transcripts kept."""
        output = self.args.runs / "rl_eval" / f"{name}.json"
        argv = [
            "--env", ENV_ID, "--workflow", workflow, "--env_kwargs", json.dumps(pretrained_study.MATH_1),
            "--policy", str(policy), "--split", "eval", "--episodes", str(self.args.eval_episodes), "--seed", "0",
            "--max_new_tokens", str(MAX_TOKENS), "--output", str(output), "--no_progress",
        ]  # fmt: skip
        result = cycle.evaluate(argv, output, ENV_ID)
        return {**result, "examples": examples(output.with_name(output.name + ".transcripts.jsonl"))}

    def start_row(self, workflow: str) -> None:
        task = STARTS[workflow]
        policy = self.warm_start(task)
        result = self.evaluate(policy, workflow, f"start_{workflow}")
        self.record(evaluation_row("start", workflow, None, result), policy)

    def train(self, method_name: str, seed: int) -> Path:
        method = METHODS[method_name]
        argv = [
            "--output_dir", str(self.args.runs / "rl" / f"{pretrained_study.slug(method_name)}_s{seed}"),
            "--env_id", ENV_ID, "--env_kwargs", json.dumps(pretrained_study.MATH_1), "--workflow", method.workflow,
            "--model_name_or_path", str(self.warm_start(method.task)), "--seed", str(seed),
            "--max_completions", str(self.args.budget), "--max_steps", str(self.args.max_steps),
            "--eval_every", str(self.args.eval_every or EVAL_EVERY[method.workflow]),
            "--eval_episodes", str(self.args.val_episodes), *COMMON, *method.flags,
        ]  # fmt: skip
        return cycle.train(argv, wall_time=True)

    def trained_row(self, method_name: str, seed: int) -> None:
        from pettingllms.runs.layout import RunLayout

        method = METHODS[method_name]
        folder = self.train(method_name, seed)
        last = RunLayout(folder).latest_intact(log=print)
        result = self.evaluate(last.folder, method.workflow, f"{folder.name}_final")
        row = evaluation_row("trained", method_name, seed, result)
        metrics = cycle.read_metrics(folder / "metrics.jsonl")
        row.update(
            task=method.task, workflow=method.workflow, flags=[*COMMON, *method.flags], budget=self.args.budget,
            steps=[step_figures(m) for m in metrics if "train/completions_total" in m],
            curve=[[m["step"], m.get("train/completions_total", 0), m["eval/success_rate"]]
                   for m in metrics if "eval/success_rate" in m],
            val_episodes=self.args.val_episodes, training_seconds=cycle.training_seconds(folder),
        )  # fmt: skip
        self.record(row, self.warm_start(method.task))

    def record(self, row: dict, warm_start: Path) -> None:
        self.rows = cycle.record(self.args.out, RULE, row, warm_start=warm_start)


def evaluation_row(part: str, method: str, seed: int | None, result: dict[str, Any]) -> dict[str, Any]:
    """A row of the table from a greedy evaluation's result: success, per-episode successes, parse errors,
    truncation, the kept conversations."""
    return {
        "part": part, "method": method, "seed": seed, "env": ENV_ID, "env_kwargs": pretrained_study.MATH_1,
        "split": "eval", "episodes": result["episodes"], "success_rate": result["success_rate"],
        "episode_success": "".join(str(int(s)) for s in result["per_episode"]["success"]),
        "parse_error_rate": result.get("parse_error_rate"), "truncated_rate": result.get("truncated_rate"),
        "max_new_tokens": MAX_TOKENS, "examples": result["examples"],
    }  # fmt: skip


def examples(transcripts: Path) -> list[dict[str, Any]]:
    """The first `EXAMPLE_EPISODES` episodes of an evaluation's transcripts: key, success and each step's agent
    and completion (cut at `EXAMPLE_CHARS` characters)."""
    rows = [json.loads(line) for line in transcripts.read_text().splitlines() if line.strip()]
    return [
        {
            "key": row["key"],
            "success": row["success"],
            "steps": [[step["agent"], step["completion"][:EXAMPLE_CHARS]] for step in row["steps"]],
        }
        for row in rows[:EXAMPLE_EPISODES]
    ]


def step_figures(metrics: dict[str, Any]) -> dict[str, Any]:
    """What a training step's metrics row says of its sampled episodes: success, each agent's unparseable and
    truncated shares, completions so far, and its seconds."""
    keep = ("train/success_rate", "train/completions_total", "timing/rollout_s", "timing/update_s")
    shares = {k: v for k, v in metrics.items() if k.startswith(("train/parse_error/", "train/truncated/"))}
    return {"step": metrics["step"], **{k: metrics[k] for k in keep if k in metrics}, **shares}


# ----------------------------------------------------------------- the report
def outcomes(rows: list[dict], part: str, method: str) -> tuple[dict[int, list[int]], list[str | None]]:
    """Seed -> per-episode successes of the matching rows, and their code commits."""
    found = [row for row in rows if row["part"] == part and row["method"] == method]
    return (
        {row["seed"]: [int(c) for c in row["episode_success"]] for row in found},
        [row.get(ledger.PROVENANCE) for row in found],
    )


def start_of(rows: list[dict], method: str) -> dict | None:
    workflow = METHODS[method].workflow
    return next((row for row in rows if row["part"] == "start" and row["method"] == workflow), None)


def gain_comparison(rows: list[dict], method: str) -> dict | None:
    """The method's trained seeds against its warm start (the same outcomes for every seed: greedy is
    deterministic), paired by seed."""
    trained, commits = outcomes(rows, "trained", method)
    start = start_of(rows, method)
    if start is None or not trained:
        return None
    before = [int(c) for c in start["episode_success"]]
    builds = (commits, [start.get(ledger.PROVENANCE)])
    return compare_methods(trained, dict.fromkeys(trained, before), builds=builds)


def method_lines(rows: list[dict]) -> list[str]:
    lines = [
        "| method | start (warm start) % | trained, per seed % | mean % | trained minus start, points |",
        "|---|---|---|---|---|",
    ]
    for method in METHODS:
        trained = sorted((r for r in rows if r["part"] == "trained" and r["method"] == method), key=seed_key)
        start = start_of(rows, method)
        per_seed = ", ".join(f"{100 * r['success_rate']:.1f} (seed {r['seed']})" for r in trained) or "—"
        mean = f"{100 * np.mean([r['success_rate'] for r in trained]):.1f}" if trained else "—"
        begun = f"{100 * start['success_rate']:.1f}" if start else "—"
        lines.append(
            f"| {method} | {begun} | {per_seed} | {mean} | {comparison_cell(gain_comparison(rows, method))} |"
        )
    return lines


def seed_key(row: dict) -> int:
    return row["seed"]


def comparison_lines(rows: list[dict]) -> list[str]:
    lines = ["| comparison (trained) | difference, points |", "|---|---|"]
    for ours, reference in COMPARISONS:
        a, a_commits = outcomes(rows, "trained", ours)
        b, b_commits = outcomes(rows, "trained", reference)
        comparison = compare_methods(a, b, builds=(a_commits, b_commits)) if a and b else None
        lines.append(f"| {ours} minus {reference} | {comparison_cell(comparison)} |")
    return lines


STEP_BIN = 128
"""The per-step table's rows: steps grouped by the sampled completions they reached, `STEP_BIN` at a time."""


def step_lines(rows: list[dict]) -> list[str]:
    """Per method and bin of `STEP_BIN` sampled completions, the mean over its steps and seeds of the sampled
    episodes' success and of each agent's unparseable and truncated shares."""
    lines = [
        "| method | sampled completions | steps | sampled success % | unparseable % (per agent) | truncated % (per agent) |",
        "|---|---|---|---|---|---|",
    ]
    for method in METHODS:
        steps = [s for r in rows if r["part"] == "trained" and r["method"] == method for s in r["steps"]]
        bins: dict[int, list[dict]] = {}
        for step in steps:
            bins.setdefault(-(-step["train/completions_total"] // STEP_BIN), []).append(step)
        for index, found in sorted(bins.items()):
            agents = sorted(
                k.removeprefix("train/parse_error/") for k in found[0] if k.startswith("train/parse_error/")
            )
            shares = [
                ", ".join(f"{a} {100 * np.mean([s[f'train/{kind}/{a}'] for s in found]):.0f}" for a in agents)
                for kind in ("parse_error", "truncated")
            ]
            lines.append(
                f"| {method} | {(index - 1) * STEP_BIN + 1}-{index * STEP_BIN} | {len(found)} | "
                f"{100 * np.mean([s['train/success_rate'] for s in found]):.0f} | {shares[0]} | {shares[1]} |"
            )
    return lines


def transcript_lines(rows: list[dict], method: str = "AT-GRPO per role") -> list[str]:
    """Three episodes of the evaluation suite before (the warm start) and after (the method's lowest seed): those
    the trained policy solved and the start did not first, then the others in suite order."""
    start = start_of(rows, method)
    trained = sorted((r for r in rows if r["part"] == "trained" and r["method"] == method), key=seed_key)
    if start is None or not trained:
        return []
    after = {example["key"]: example for example in trained[0]["examples"]}
    before = {example["key"]: example for example in start["examples"]}
    keys = [key for key in before if key in after]
    keys.sort(key=lambda k: not (after[k]["success"] and not before[k]["success"]))
    lines = [f"Three problems of the evaluation suite, before RL (the warm start) and after ({method}, seed "
             f"{trained[0]['seed']}); completions cut at {EXAMPLE_CHARS} characters.", ""]  # fmt: skip
    for key in keys[:3]:
        for label, episode in (("before", before[key]), ("after", after[key])):
            lines.append(f"**{key}, {label}: {'solved' if episode['success'] else 'not solved'}**")
            lines.append("")
            lines.extend(f"    {agent}: {' '.join(text.split())}" for agent, text in episode["steps"])
            lines.append("")
    return lines


def plot_curve(rows: list[dict], path: Path) -> None:
    """Greedy validation success against sampled completions, one line per method (the mean over its seeds at
    each evaluation), each seed's points faint."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 4.5))
    for index, method in enumerate(METHODS):
        curves = [r["curve"] for r in rows if r["part"] == "trained" and r["method"] == method]
        if not curves:
            continue
        color = f"C{index}"
        for curve in curves:
            axis.plot([c[1] for c in curve], [c[2] for c in curve], color=color, alpha=0.25, marker=".")
        length = min(len(curve) for curve in curves)
        axis.plot(
            [np.mean([curve[i][1] for curve in curves]) for i in range(length)],
            [np.mean([curve[i][2] for curve in curves]) for i in range(length)],
            color=color, marker="o", label=f"{method} ({len(curves)} seeds)",
        )  # fmt: skip
    axis.set_xlabel("sampled completions")
    axis.set_ylabel("greedy success, validation split")
    axis.legend(fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)


def write_report(rows: list[dict], args: argparse.Namespace) -> None:
    trained = [r for r in rows if r["part"] == "trained"]
    budget = pretrained_study.shared_value(trained, "budget", args.budget)
    episodes = pretrained_study.shared_value(rows, "episodes", args.eval_episodes)
    val = pretrained_study.shared_value(trained, "val_episodes", args.val_episodes)
    if trained:
        plot_curve(rows, args.curve)
    lines = [
        START,
        "## A pretrained model under RL: SmolLM2-135M-Instruct on math-v0 difficulty 1 (issue 56)",
        "",
        f"Each method trains from its warm start (section above) for {budget} sampled completions per seed: K = 4 "
        "candidates per agent and turn, 4 problems per step, temperature 1.0, LoRA rank 16 (alpha 32), lr 5e-4, "
        "`dr_grpo`, rewards centred without scaling, 128-token answers. Success is greedy, on "
        f"{episodes} problems of the evaluation split (the same for every method and seed); `start` is the warm "
        "start each method begins from, evaluated the same way. Rows: `docs/results/pretrained_rl.json`, from the "
        "ledger; regenerate with `.venv/bin/python scripts/pretrained_rl_study.py` (`--report` rebuilds this "
        f"section). {COMPARISON_WORDS}",
        "",
        *method_lines(rows),
        "",
        *comparison_lines(rows),
        "",
        f"Learning curve (greedy success on {val} validation problems, the trainer's own evaluation): "
        f"![learning curve](results/{args.curve.name})",
        "",
        f"Per {STEP_BIN} sampled completions, the mean over the steps that reached them and the seeds: the sampled "
        "episodes' success (the committed candidates'), and each agent's completions that did not parse or ran to "
        "the token budget.",
        "",
        *step_lines(rows),
        "",
        *transcript_lines(rows),
        END,
    ]
    replace_section(args.results_md, START, END, "\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--budget", type=int, default=512, help="sampled completions per run")
    parser.add_argument("--max_steps", type=int, default=100, help="a cap the budget reaches first")
    parser.add_argument("--eval_every", type=int, help="steps between the trainer's evaluations (EVAL_EVERY)")
    parser.add_argument("--val_episodes", type=int, default=16, help="validation problems of the curve")
    parser.add_argument("--eval_episodes", type=int, default=48, help="evaluation problems of the table")
    parser.add_argument("--runs", type=Path, default=ROOT / "runs" / "pretrained")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--curve", type=Path, default=CURVE)
    parser.add_argument("--results_md", type=Path, default=ROOT / "docs" / "results.md")
    parser.add_argument("--report", action="store_true", help="only rebuild the section from the ledger")
    args = parser.parse_args()
    if min(args.budget, args.eval_episodes, args.val_episodes) < 1:
        parser.error("--budget, --eval_episodes and --val_episodes must be >= 1")
    if args.report:
        rows = ledger.write_table(args.out, RULE)
    else:
        study = Study(args)
        for workflow in sorted({METHODS[m].workflow for m in args.methods}):
            study.start_row(workflow)
        for seed in args.seeds:
            for method in args.methods:
                study.trained_row(method, seed)
                write_report(study.rows, args)
        rows = study.rows
    write_report(rows, args)
    print(f"wrote {args.out} and the pretrained-rl section of {args.results_md}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
