"""Does the grouping matter? AT-GRPO against trajectory-grouped GRPO at equal sampled completions (issue 28).

    .venv/bin/python scripts/grouping_study.py                  # everything; resumes finished and killed runs
    .venv/bin/python scripts/grouping_study.py --parts task     # only choose the task on the validation split
    .venv/bin/python scripts/grouping_study.py --report         # rebuild the tables and plots from the rows
    .venv/bin/python scripts/grouping_study.py --parts curves --methods at-grpo-per-role trajectory-grpo --seeds 0

Why this task should separate the groupings. In the miniature (`scripts/reproduce_miniature.py`) every instance is
solved in one turn once the tool agent writes its search program, so a trajectory's return is one turn's outcome
and trajectory grouping loses nothing. Here a per-turn move cap (`max_moves_per_turn`, 3 on 7x7 grids whose paths
take 7 moves or more) makes every walk span three turns or more: a trajectory's return mixes the turns in which a
good program ran with those in which it did not, so the K episodes of one instance differ by the sum of several
turns' luck, while AT-GRPO compares K candidates from one state on what each turn itself earned. That is the
credit assignment the paper attributes its margin to. Whether it shows is what the rows say.

Parts (each row appended to the ledger `docs/results/ledger.jsonl` as it finishes; the table
`docs/results/grouping.json` is rebuilt from the ledger by `RULE`: one row per method, seed, budget and split):

1. `task`: the untrained team (the warm start) on the validation split for each candidate setting in `TASKS`: the
   chosen one is the first whose success is at most 0.3 (far from solved) with the oracle team still at 1.0.
2. `curves`: every method of `METHODS` x `--seeds`, one run each of `--budget` sampled completions with a checkpoint
   every step; the checkpoint that first reached each of `BUDGETS` is evaluated greedily on `--val_episodes`
   validation grids (the curves), and the last one on the `--eval_episodes` evaluation suite (the table).
3. `ablations`: the per-role AT-GRPO run with one knob changed (`ABLATIONS`: alpha 0, 0.5, 2; K 2, 8), seed 0 by
   default, each evaluated after the whole budget on the evaluation suite; and the trained per-role policies
   swapped between the roles at evaluation.
4. `pooling`: per-role AT-GRPO and turn-only grouping under each loss (`POOLING`: `grpo` and `dr_grpo`) x
   `--seeds`, from this machine's warm start, with `dump_rollouts` (what `scripts/turn_pool_probe.py` reads),
   evaluated at each budget on the validation split: whether turn-only's lead over per-role AT-GRPO needs `grpo`
   (its rows are their own part, so they set aside no `curves` row of another build).
5. `report`: the tables (paired differences against trajectory GRPO with 95% intervals and p-values from
   `research.stats`) and the curves into the grouping section of `docs/results.md`.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np

from research import cycle, ledger
from research.arguments import add_output_arguments
from research.markdown import replace_section
from research.method_comparison import COMPARISON_WORDS, compare_methods
from research.method_comparison import cell as comparison_cell
from research.stats import seed_summary

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "runs" / "grouping"
OUT = ROOT / "docs" / "results" / "grouping.json"
START, END = "<!-- grouping:start -->", "<!-- grouping:end -->"
ENV_ID = "plan-path-v0"
TASKS = {
    "7x7, 3 moves per turn": {"size": 7, "max_moves_per_turn": 3},
    "7x7, 2 moves per turn": {"size": 7, "max_moves_per_turn": 2},
}
MAX_TURNS = 6
BUDGETS = (250, 500, 1000, 2000, 4000)
MAX_COMPLETION_TOKENS = 112  # the search program is ~90 tokens; answers stop at </answer>
COMMON = [
    "--scale_rewards", "none", "--learning_rate", "1e-4", "--num_generations", "4", "--temperature", "1.0",
    "--max_completion_length", str(MAX_COMPLETION_TOKENS), "--per_device_train_batch_size", "32",
    "--save_steps", "1", "--resume", "true", "--eval_every", "0", "--workflow", "mas", "--instances_per_step", "4",
]  # fmt: skip
METHODS = {
    "at-grpo-per-role": ["--grouping", "agent_turn", "--policy_layout", "per_role"],
    "at-grpo-shared": ["--grouping", "agent_turn", "--policy_layout", "shared"],
    "trajectory-grpo": ["--grouping", "trajectory", "--policy_layout", "per_role"],
    "trajectory-grpo-equal-updates": [
        "--grouping", "trajectory", "--policy_layout", "per_role", "--instances_per_step", "2",
    ],
    "agent-only": ["--grouping", "agent", "--policy_layout", "per_role"],
    "turn-only": ["--grouping", "turn", "--policy_layout", "per_role"],
    "turn-only+dr-mas": ["--grouping", "turn", "--policy_layout", "per_role", "--per_agent_advantages", "true"],
    "anchor-state": ["--grouping", "anchor_state", "--policy_layout", "per_role"],
    "trajectory-turn": ["--grouping", "trajectory_turn", "--policy_layout", "per_role"],
    "trajectory-turn-summed": [
        "--grouping", "trajectory_turn", "--policy_layout", "per_role", "--turn_baseline", "summed",
    ],
}  # fmt: skip
"""Method -> trainer flags. The paper's comparison and ablations (at-grpo-per-role, at-grpo-shared, trajectory-grpo,
agent-only, turn-only); the control at equal optimizer steps (`trajectory-grpo-equal-updates`: trajectory GRPO on 2
instances per step instead of 4, so that at equal sampled completions it takes about as many optimizer steps as
AT-GRPO, which samples fewer completions per step: "learns faster" then separates the grouping from the number of
updates); and the newer credit-assignment options (pettingllms.trainers.advantages, pettingllms.rollout.grouping)."""
POOLING = {
    "at-grpo-per-role": METHODS["at-grpo-per-role"],
    "turn-only": METHODS["turn-only"],
    "at-grpo-per-role+dr_grpo": [*METHODS["at-grpo-per-role"], "--loss_type", "dr_grpo"],
    "turn-only+dr_grpo": [*METHODS["turn-only"], "--loss_type", "dr_grpo"],
}
"""Method -> trainer flags of the `pooling` part. With `scale_rewards: none`, turn-only grouping gives an agent's
candidates AT-GRPO's advantages plus one constant per turn group, c = m_agent - m_turn (scripts/turn_pool_probe.py
measures it). Under `grpo` a sequence's loss is divided by its own length L, so the constant adds c * grad E[1/L]
to the expected gradient (shorter completions when c > 0, longer when c < 0); under `dr_grpo` it adds c * grad E[1]
= 0. If turn-only's lead comes from that, it is gone under `dr_grpo`."""
REFERENCE = "trajectory-grpo"
ABLATIONS = {
    "alpha=0": ["--alpha", "0"],
    "alpha=0.5": ["--alpha", "0.5"],
    "alpha=2": ["--alpha", "2"],
    "K=2": ["--num_generations", "2"],
    "K=8": ["--num_generations", "8"],
}
"""Knobs changed from the per-role AT-GRPO run (alpha 1, K 4)."""
RULE = ledger.Rule("grouping", ("part", "method", "seed", "budget", "split"))
"""How the table (`OUT`) is built from the ledger beside it: one row per part, method, seed, budget and split, the
last recorded (`research.ledger`)."""
WARM_START = {"workflow": "mas", "demos_per_role": 3200, "sft_steps": 400, "tool_programs": 0.4,
              "program_bugs": 0.4, "eval_episodes": 0}  # fmt: skip


class Study:
    """Runs, evaluations and the rows file of one invocation."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.rows = ledger.table_rows(args.out, RULE)
        self.env_kwargs = TASKS[args.task]

    # ----------------------------------------------------------------- building blocks
    def warm_start(self, env_kwargs: dict) -> Path:
        """The team's warm start on the task `env_kwargs` (`cycle.warm_start`); `--warm_start_steps` (smoke
        runs) builds a variant under its own tag, beside the study's."""
        settings = {
            **WARM_START, "demos_per_role": self.args.demos_per_role,
            "env_kwargs": {**env_kwargs, "max_turns": MAX_TURNS},
            "tag": "group" + "_".join(str(v) for v in env_kwargs.values()),
        }  # fmt: skip
        steps = self.args.warm_start_steps
        variant = None if steps is None else (self.args.demos_per_role, steps)
        return cycle.warm_start(ENV_ID, settings, variant, keep=self.args.out.parent)

    def train(self, name: str, seed: int, flags: list[str]) -> Path:
        """One run of `--budget` completions with a checkpoint every step (`cycle.train`: resumed, or skipped
        once its last training step reached `--max_steps` or the budget; the trainer's own one-episode
        evaluation is not used, so the rule does not ask for it), its training seconds in
        `cycle.WALL_TIME`."""
        argv = [
            "--output_dir", str(self.args.runs / name), "--env_id", ENV_ID,
            "--env_kwargs", json.dumps(self.env_kwargs), "--max_turns", str(MAX_TURNS),
            "--model_name_or_path", str(self.warm_start(self.env_kwargs)), "--seed", str(seed),
            "--max_steps", str(self.args.max_steps), "--max_completions", str(self.args.budget),
            "--eval_episodes", "1", *COMMON, *flags,
        ]  # fmt: skip
        return cycle.train(argv, final_evaluation=False, wall_time=True)

    def evaluate(self, policy: str, name: str, split: str, env_kwargs: dict | None = None) -> dict:
        """`pettingllms-eval` of `policy` on the fixed suite of `split` (`cycle.evaluate`, cached by name);
        its env result."""
        output = self.args.runs / "eval" / f"{name}.json"
        episodes = self.args.eval_episodes if split == "eval" else self.args.val_episodes
        kwargs = {**(env_kwargs or self.env_kwargs), "max_turns": MAX_TURNS}
        argv = [
            "--env", ENV_ID, "--policy", policy, "--workflow", "mas", "--episodes", str(episodes),
            "--seed", "0", "--split", split, "--env_kwargs", json.dumps(kwargs),
            "--max_new_tokens", str(MAX_COMPLETION_TOKENS), "--output", str(output), "--no_progress",
        ]  # fmt: skip
        return cycle.evaluate(argv, output, ENV_ID)

    def record(self, row: dict, warm_start: Path | None) -> None:
        """Append `row` (measured on a run that started from `warm_start`, None for none) to the ledger; the
        table is rebuilt by `RULE` (`cycle.record`)."""
        self.rows = cycle.record(self.args.out, RULE, row, warm_start=warm_start)

    def budget_rows(self, part: str, method: str, seed: int, folder: Path) -> None:
        """Evaluate the run's checkpoints at every budget on the validation split, and its last on the suite."""
        from pettingllms.runs.layout import RunLayout

        layout = RunLayout(folder)
        reached = _steps_at_budgets(folder / "metrics.jsonl", [b for b in BUDGETS if b <= self.args.budget])
        for budget, (step, completions) in reached.items():
            checkpoint = layout.checkpoint(step).folder
            result = self.evaluate(str(checkpoint), f"{folder.name}_b{budget}_val", "val")
            row = _row(
                part, method, seed, result, budget=budget, completions=completions, split="val", steps=step
            )
            self.record(row, self.warm_start(self.env_kwargs))
        if self.args.final_eval:
            self.final_row(part, method, seed, folder)

    def final_row(self, part: str, method: str, seed: int, folder: Path) -> None:
        """Evaluate the run's last checkpoint on the evaluation suite."""
        from pettingllms.runs.layout import RunLayout

        last = RunLayout(folder).latest_intact(log=print)
        steps, completions = _last_step(folder / "metrics.jsonl")
        result = self.evaluate(str(last.folder), f"{folder.name}_final", "eval")
        row = _row(
            part,
            method,
            seed,
            result,
            budget=self.args.budget,
            completions=completions,
            split="eval",
            steps=steps,
        )
        self.record(row, self.warm_start(self.env_kwargs))

    # ----------------------------------------------------------------- parts
    def choose_task(self) -> None:
        for name, env_kwargs in TASKS.items():
            team = self.warm_start(env_kwargs)
            for policy, method in ((str(team), "untrained team"), ("oracle", "oracle team")):
                label = name.replace(" ", "_").replace(",", "")
                result = self.evaluate(policy, f"task_{label}_{method.split()[0]}", "val", env_kwargs)
                row = _row("task", f"{method} ({name})", 0, result, budget=0, completions=0, split="val")
                self.record(row, team if method == "untrained team" else None)

    def curves(self) -> None:
        for (
            seed
        ) in self.args.seeds:  # seed by seed: an interrupted study has every method for its first seeds
            for method in self.args.methods:
                folder = self.train(f"{method}_s{seed}", seed, METHODS[method])
                self.budget_rows("curves", method, seed, folder)

    def pooling_run(self, method: str, seed: int) -> Path:
        """The `pooling` part's run of `method` (of `POOLING`) and `seed`, with rollout dumps (trained first unless
        it is finished)."""
        return self.train(f"pooling_{method}_s{seed}", seed, [*POOLING[method], "--dump_rollouts", "true"])

    def pooling(self) -> None:
        for seed in self.args.seeds:
            for method in POOLING:
                self.budget_rows("pooling", method, seed, self.pooling_run(method, seed))

    def ablations(self) -> None:
        base = METHODS["at-grpo-per-role"]
        for seed in self.args.ablation_seeds:
            for name, flags in ABLATIONS.items():
                folder = self.train(f"ablation_{name.replace('=', '-')}_s{seed}", seed, [*base, *flags])
                self.final_row("ablations", name, seed, folder)
            self.swapped(seed)

    def swapped(self, seed: int) -> None:
        """The per-role run's trained policies swapped between the roles (the paper's "swap" ablation)."""
        from pettingllms.runs.layout import RunLayout

        folder = self.train(f"at-grpo-per-role_s{seed}", seed, METHODS["at-grpo-per-role"])
        last = RunLayout(folder).latest_intact(log=print)
        policy = f"tool={last.model('plan')},plan={last.model('tool')}"
        result = self.evaluate(policy, f"{folder.name}_swapped", "eval")
        steps, completions = _last_step(folder / "metrics.jsonl")
        row = _row("ablations", "roles swapped", seed, result, budget=self.args.budget, completions=completions,
                   split="eval", steps=steps)  # fmt: skip
        self.record(row, self.warm_start(self.env_kwargs))


def _row(
    part: str,
    method: str,
    seed: int,
    result: dict,
    *,
    budget: int,
    completions: int,
    split: str,
    steps: int | None = None,
) -> dict:
    """A table row; `steps`: the optimizer steps the evaluated checkpoint had taken (None for no run)."""
    return {
        "part": part, "env": ENV_ID, "method": method, "seed": seed, "budget": budget, "split": split,
        "sampled_completions": completions, "optimizer_steps": steps, "success_rate": result["success_rate"],
        "interval_95": result.get("ci95"), "episodes": result["episodes"],
        "episode_success": "".join(str(int(s)) for s in result["per_episode"]["success"]),
    }  # fmt: skip


def _steps_at_budgets(path: Path, budgets: list[int]) -> dict[int, tuple[int, int]]:
    """budget -> (the first step whose sampled completions reached it, those completions)."""
    reached = {}
    for row in cycle.read_metrics(path):
        total = row.get("train/completions_total")
        for budget in budgets:
            if total is not None and total >= budget and budget not in reached:
                reached[budget] = (row["step"], total)
    return reached


def _last_step(path: Path) -> tuple[int, int]:
    rows = [row for row in cycle.read_metrics(path) if "train/completions_total" in row]
    return rows[-1]["step"], rows[-1]["train/completions_total"]


# ----------------------------------------------------------------- the report
class Successes(NamedTuple):
    """Some rows' per-episode successes by seed, and the code commits those rows were recorded at."""

    by_seed: dict[int, np.ndarray]
    commits: list[str | None]


def _successes(rows: list[dict], **match) -> Successes:
    """The per-episode successes of the rows matching `match` (`Successes`)."""
    found = [row for row in rows if all(row.get(k) == v for k, v in match.items())]
    return Successes(
        {row["seed"]: np.array([int(c) for c in row["episode_success"]], dtype=float) for row in found},
        [row.get(ledger.PROVENANCE) for row in found],
    )


def final_table(
    rows: list[dict], methods: list[str], part: str = "curves", reference_method: str = REFERENCE
) -> list[str]:
    """Success on the evaluation suite per method, and its paired difference from `reference_method`'s main run
    over the same episodes of the seeds both have (`_paired_cell`)."""
    lines = [
        f"| method | success (eval suite), mean ± sd over seeds | seeds | minus {reference_method} in points [95% "
        "interval], seed-level p, seeds; per seed |",
        "|---|---|---|---|",
    ]
    reference = _successes(rows, part="curves", method=reference_method, split="eval")
    for method in methods:
        values = [
            r["success_rate"]
            for r in rows
            if r["part"] == part and r["method"] == method and r["split"] == "eval"
        ]
        if not values:
            continue
        summary = seed_summary(values)
        if (method, part) == (reference_method, "curves"):
            paired = "—"
        else:
            paired = _paired_cell(_successes(rows, part=part, method=method, split="eval"), reference)
        spread = "" if summary["std"] is None else f" ± {100 * summary['std']:.1f}"
        lines.append(f"| {method} | {100 * summary['mean']:.1f}{spread} | {len(values)} | {paired} |")
    return lines


def _paired_cell(ours: Successes, reference: Successes) -> str:
    """`ours` minus `reference` over seeds (`research.method_comparison`, marked when their commits differ)."""
    return comparison_cell(
        compare_methods(ours.by_seed, reference.by_seed, builds=(ours.commits, reference.commits))
    )


def budget_table(
    rows: list[dict], methods: list[str], reference_method: str = REFERENCE, part: str = "curves"
) -> list[str]:
    """At each budget on the validation split: every method of `part` minus `reference_method` of `part`, over the
    seeds (`_paired_cell`); methods without any cell left out."""
    lines = ["| method | " + " | ".join(str(b) for b in BUDGETS) + " |", "|---|" + "---|" * len(BUDGETS)]
    for method in methods:
        if method == reference_method:
            continue
        cells = [
            _paired_cell(_successes(rows, part=part, method=method, split="val", budget=budget),
                         _successes(rows, part=part, method=reference_method, split="val", budget=budget))
            for budget in BUDGETS
        ]  # fmt: skip
        if any(cell != "—" for cell in cells):
            lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return lines


def steps_table(rows: list[dict], methods: list[str]) -> list[str]:
    """The optimizer steps of the checkpoint each budget's validation row evaluated, mean over the seeds that
    recorded them (rows before 2026-12-04 did not)."""

    def cell(matched: list[dict]) -> str:
        steps = [r["optimizer_steps"] for r in matched if r.get("optimizer_steps") is not None]
        return f"{np.mean(steps):.1f} (n={len(steps)})" if steps else "—"

    return _per_budget_table(rows, methods, cell)


def curve_table(rows: list[dict], methods: list[str], part: str = "curves") -> list[str]:
    """Validation success at each budget, mean over seeds."""

    def cell(matched: list[dict]) -> str:
        values = [r["success_rate"] for r in matched]
        return f"{100 * np.mean(values):.1f} (n={len(values)})" if values else "—"

    return _per_budget_table(rows, methods, cell, part)


def _per_budget_table(
    rows: list[dict], methods: list[str], cell: Callable[[list[dict]], str], part: str = "curves"
) -> list[str]:
    """A method-by-budget table: `cell(the method's validation rows of `part` at that budget)` ("—" for none);
    methods without any cell left out."""
    validation = [r for r in rows if r["part"] == part and r["split"] == "val"]
    lines = ["| method | " + " | ".join(str(b) for b in BUDGETS) + " |", "|---|" + "---|" * len(BUDGETS)]
    for method in methods:
        cells = [
            cell([r for r in validation if r["method"] == method and r["budget"] == budget])
            for budget in BUDGETS
        ]
        if any(value != "—" for value in cells):
            lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return lines


def pooling_lines(rows: list[dict], out: Path) -> list[str]:
    """The `pooling` part's tables, when the rows hold any: validation success per method and budget, and
    turn-only minus per-role AT-GRPO under each loss, over the seeds."""
    if not any(r["part"] == "pooling" for r in rows):
        return []
    differences = budget_table(rows, ["turn-only"], reference_method="at-grpo-per-role", part="pooling")
    under_dr_grpo = budget_table(
        rows, ["turn-only+dr_grpo"], reference_method="at-grpo-per-role+dr_grpo", part="pooling"
    )

    def lead(method: str, reference: str, budget: int) -> Successes:
        """seed -> per-grid success of `method` minus `reference` (the same validation grids in every run)."""
        ours = _successes(rows, part="pooling", method=method, split="val", budget=budget)
        theirs = _successes(rows, part="pooling", method=reference, split="val", budget=budget)
        seeds = sorted(ours.by_seed.keys() & theirs.by_seed.keys())
        return Successes(
            {seed: ours.by_seed[seed] - theirs.by_seed[seed] for seed in seeds}, ours.commits + theirs.commits
        )

    interaction = [
        _paired_cell(lead("turn-only", "at-grpo-per-role", budget),
                     lead("turn-only+dr_grpo", "at-grpo-per-role+dr_grpo", budget))
        for budget in BUDGETS
    ]  # fmt: skip
    return [
        "",
        "Turn-only grouping against per-role AT-GRPO under each loss (part `pooling`: both methods under `grpo` and "
        "under `dr_grpo`, seeds run from one warm start, their own rows apart from the curves above). Validation "
        "success at each budget (mean over seeds):",
        "",
        *curve_table(rows, list(POOLING), part="pooling"),
        "",
        "Turn-only minus per-role AT-GRPO, under `grpo` (first row) and under `dr_grpo` (second row, "
        "`turn-only+dr_grpo` minus `at-grpo-per-role+dr_grpo`):",
        "",
        *differences,
        *under_dr_grpo[2:],
        "",
        "Turn-only's lead under `grpo` minus its lead under `dr_grpo` (the first row above minus the second, seed by "
        "seed):",
        "",
        "| difference | " + " | ".join(str(b) for b in BUDGETS) + " |",
        "|---|" + "---|" * len(BUDGETS),
        "| lead under grpo minus lead under dr_grpo | " + " | ".join(interaction) + " |",
        "",
        *version_lines(out, part="pooling"),
    ]


def plot_curves(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 4.5))
    for method in METHODS:
        points = [(b, [r["success_rate"] for r in rows if r["part"] == "curves" and r["method"] == method
                       and r["split"] == "val" and r["budget"] == b]) for b in BUDGETS]  # fmt: skip
        points = [(b, v) for b, v in points if v]
        if points:
            means = [np.mean(v) for _, v in points]
            axis.plot([b for b, _ in points], means, marker="o", label=method)
    axis.set_xscale("log")
    axis.set_xlabel("sampled completions")
    axis.set_ylabel("greedy success, validation split")
    axis.legend(fontsize=7)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)


def first_versions(rows: list[dict], selection: ledger.Selection) -> list[dict]:
    """`rows` with every row that superseded an earlier one replaced by the first recorded row of its identity
    (the table as it stood before any rerun)."""
    first: dict[str, dict] = {}
    for entry, reason in selection.set_aside:
        if reason.startswith("superseded"):
            first.setdefault(RULE.identity(entry.row), entry.row)
    return [first.get(RULE.identity(row), row) for row in rows]


def rerun_lines(rows: list[dict], out: Path) -> list[str]:
    """The headline comparison at each budget with the first recorded rows in place of their reruns, when the
    ledger beside `out` holds any (both versions on the record, docs/ledger.md)."""
    selection = ledger.select(ledger.read_ledger(out.with_name(ledger.LEDGER_NAME)), RULE)
    before = first_versions(rows, selection)
    if before == rows:
        return []
    rerun = sorted(
        {
            (e.row["method"], e.row["seed"])
            for e, reason in selection.set_aside
            if reason.startswith("superseded")
        }
    )
    named = "; ".join(f"{method} seed {seed}" for method, seed in rerun)
    return [
        "",
        f"Reruns on the record: the rows first recorded for {named} were set aside by reruns of the same runs "
        "(docs/ledger.md lists them, with the date). The comparisons with each row's first recorded version in "
        "place of its reruns (rows never rerun, such as seeds recorded only once, as they are):",
        "",
        *budget_table(before, list(METHODS)),
    ]


def version_lines(out: Path, part: str = "curves") -> list[str]:
    """Which code made the table's rows of `part`, per budget and split: each row's commit on the ledger beside
    `out` (or, for a row recovered from the git history, the commit that first recorded it), with its methods'
    seeds."""
    selection = ledger.select(ledger.read_ledger(out.with_name(ledger.LEDGER_NAME)), RULE)
    made: dict[tuple[str, int], dict[str, dict[str, set[int]]]] = {}
    for entry in selection.entries:
        row = entry.row
        if row["part"] != part:
            continue
        if entry.code_commit:
            code = f"commit {entry.code_commit[:7]}"
        else:  # recovered from the git history (scripts/ledger_history.py names the commit in the note)
            code = f"first recorded in {entry.note.rsplit(' ', 1)[-1][:7]}" if entry.note else "unknown"
        made.setdefault((row["split"], row["budget"]), {}).setdefault(code, {}).setdefault(
            row["method"], set()
        ).add(row["seed"])
    cells = []
    for (split, budget), codes in sorted(made.items(), key=lambda item: (item[0][0] != "val", item[0][1])):
        named = "; ".join(
            f"{code}: "
            + ", ".join(f"{method} {_seed_list(seeds)}" for method, seeds in sorted(methods.items()))
            for code, methods in sorted(codes.items())
        )
        cells.append(f"| {'suite' if split == 'eval' else 'validation'} | {budget} | {named} |")
    if not cells:
        return []
    return [
        "The code behind each budget's rows, per method and seeds (`docs/results/ledger.jsonl`); a comparison "
        "within one column is at one code version only where its two methods' seeds share one:",
        "",
        "| split | budget | code: method seeds |",
        "|---|---|---|",
        *cells,
    ]


def _seed_list(seeds: set[int]) -> str:
    return "s" + ",".join(str(seed) for seed in sorted(seeds))


def write_report(rows: list[dict], args: argparse.Namespace, results_md: Path) -> None:
    plot_curves(rows, args.out.with_name("grouping_curves.png"))
    task = [
        f"| {r['method']} | {100 * r['success_rate']:.1f} | {r['episodes']} |"
        for r in rows
        if r["part"] == "task"
    ]
    lines = [
        START,
        "## Grouping study: AT-GRPO against trajectory GRPO at equal samples",
        "",
        f"Task: `{ENV_ID}` with `{json.dumps(TASKS[args.task])}`, {MAX_TURNS} turns; the team starts from a warm "
        "start whose tool agent sometimes writes its search program (as in the miniature). Rows: "
        "`docs/results/grouping.json`. Budgets count the completions sampled for training; beside them every run "
        f"generated its greedy probes: at each budget its checkpoint played {args.val_episodes} validation grids "
        f"(the curves), the last checkpoint {args.eval_episodes} suite grids, and the trainer its own one-episode "
        "evaluation, one completion per agent and turn: evaluations that no training step "
        "reads.",
        "",
        "Why this task should separate the groupings (written before the runs): in the miniature every instance is "
        "solved in one turn once the tool agent writes its program, so a trajectory's return is one turn's outcome "
        "and grouping by trajectory loses nothing. Here at most 3 moves are made per turn on grids whose paths take "
        "7 or more, so every walk spans three turns or more: a trajectory's return sums turns in which a good "
        "program ran and turns in which it did not, and the K episodes of an instance differ by several turns' "
        "luck, while AT-GRPO compares K candidates from one state on what that turn itself earned.",
        "",
        "Task choice (validation split):",
        "",
        "| team | success % | episodes |",
        "|---|---|---|",
        *task,
        "",
        "Success on the evaluation suite after the whole budget, per method, and its difference from trajectory "
        "GRPO. " + COMPARISON_WORDS,
        "",
        *final_table(rows, list(METHODS)),
        "",
        "Validation success at each budget of sampled completions (mean over seeds):",
        "",
        *curve_table(rows, list(METHODS)),
        "",
        "Each method minus trajectory GRPO at each budget, validation split (100 grids, the same for every run). "
        + COMPARISON_WORDS,
        "",
        *budget_table(rows, list(METHODS)),
        "",
        "Per-role AT-GRPO minus the control at equal optimizer steps (trajectory GRPO on 2 instances per step, "
        "which takes as many updates as AT-GRPO or more at each budget): what is left of the gap once the number "
        "of updates is matched.",
        "",
        *budget_table(rows, ["at-grpo-per-role"], reference_method="trajectory-grpo-equal-updates"),
        "",
        "Per-role minus shared AT-GRPO (one policy per role against one for both roles), at each budget on the "
        "validation split and on the suite after the whole budget:",
        "",
        *budget_table(rows, ["at-grpo-per-role"], reference_method="at-grpo-shared"),
        "",
        *final_table(rows, ["at-grpo-per-role"], reference_method="at-grpo-shared"),
        "",
        "Optimizer steps taken by the checkpoint evaluated at each budget (mean over seeds):",
        "",
        *steps_table(rows, ["at-grpo-per-role", "trajectory-grpo", "trajectory-grpo-equal-updates"]),
        "",
        *version_lines(args.out),
        *rerun_lines(rows, args.out),
        *pooling_lines(rows, args.out),
        "",
        "![curves](results/grouping_curves.png)",
        "",
        "Ablations (per-role AT-GRPO with one knob changed; roles swapped at evaluation):",
        "",
        *final_table(
            rows, [*ABLATIONS, "roles swapped"], part="ablations", reference_method="at-grpo-per-role"
        ),
        "",
        "Regenerate: `.venv/bin/python scripts/grouping_study.py` (resumable; `--report` rebuilds this section).",
        END,
    ]
    replace_section(results_md, START, END, "\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--parts", nargs="+", default=["task", "curves", "pooling", "ablations"],
                        choices=["task", "curves", "pooling", "ablations"])  # fmt: skip
    parser.add_argument("--task", default=next(iter(TASKS)), choices=list(TASKS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--ablation_seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--budget", type=int, default=BUDGETS[-1], help="sampled completions per run")
    parser.add_argument("--final_eval", type=lambda text: {"true": True, "false": False}[text.lower()],
                        default=True, metavar="{true,false}",
                        help="evaluate each run's last checkpoint on the suite (false: a rerun of the first "
                        "budgets only, whose suite rows would not be the whole budget's)")  # fmt: skip
    parser.add_argument("--max_steps", type=int, default=200, help="cap on optimizer steps per run")
    parser.add_argument("--val_episodes", type=int, default=100, help="validation grids per curve point")
    parser.add_argument("--eval_episodes", type=int, default=300, help="pettingllms-eval suite size")
    parser.add_argument("--demos_per_role", type=int, default=WARM_START["demos_per_role"])
    parser.add_argument("--warm_start_steps", type=int, default=None, help="SFT steps (default: the study's)")
    add_output_arguments(parser, out=OUT, runs=RUNS)
    args = parser.parse_args()
    study = Study(args)
    if args.report:  # the table, rebuilt from the ledger by the rule
        study.rows = ledger.write_table(args.out, RULE)
    if not args.report:
        parts = {
            "task": study.choose_task, "curves": study.curves, "pooling": study.pooling,
            "ablations": study.ablations,
        }  # fmt: skip
        for part in args.parts:
            parts[part]()
            write_report(study.rows, args, args.results_md)
    write_report(study.rows, args, args.results_md)
    print(f"wrote {args.out} and the grouping section of {args.results_md}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
