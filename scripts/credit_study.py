"""Does per-turn grouping beat trajectory grouping where the turns are independent? The pre-registered test of
issue 60 (docs/results/preregistration_credit.md: the arms, budget, seeds, measures, test and prediction).

    .venv/bin/python scripts/credit_study.py                      # everything; resumes finished and killed runs
    .venv/bin/python scripts/credit_study.py --parts warmstart    # only choose the warm start (validation split)
    .venv/bin/python scripts/credit_study.py --report             # rebuild the table and the report from the rows

The test bed is `plan-path-relay-v0`: T grids in a row, one per turn, the team paid 1/T for each grid solved in its
turn, so a turn's outcome depends on that turn's decisions only. Trajectory GRPO credits every turn with the
episode's return against its group's mean, in which the other T - 1 turns are noise; per-turn grouping compares
K candidates of one turn from one state. If the paper's mechanism is real, the gap grows with T and vanishes at
T = 1 (the control).

Parts (each row appended to the ledger `docs/results/ledger.jsonl` as it is measured, study `credit`; the table
`docs/results/credit.json` is rebuilt from the ledger by `RULE`):

1. `warmstart`: the team's warm starts of `CANDIDATES`, in order, each played greedily on `--select_grids`
   validation grids at T = 8: the chosen one is the first whose share of turns solved lies in `WINDOW` (5-8%);
   the others stay on the ledger. One warm start serves all four arms (built on T = 8 episodes: a turn's prompt
   differs from T = 1's by its header only); its share at T = 1 is recorded too. Without a candidate in the
   window the script stops and says so: a new candidate is a change of this file, committed before any run.
2. `runs`: every arm of `ARMS` x `--turns` x `--seeds`, one run each of `BUDGET` sampled completions from the
   chosen warm start, a checkpoint every `CURVE_EVERY` sampled completions (whole steps: every arm samples
   2 agents x K x T completions per instance, `INSTANCES_PER_STEP` instances a step) and at the end; each
   checkpoint and the warm start (completions 0) played greedily on the same `--val_grids` validation grids (the
   curve), the last one on `--eval_grids` evaluation grids.
3. `formats` (after `runs`, reading the evaluations it wrote, or evaluating again where `--runs` lost them): what
   the agents wrote on the evaluation suite after training, and the chosen warm start's on the validation split:
   per agent the share of completions that did not parse and that ran to the token limit, and the share of the
   tool agent's that held a program solving its grid (`FORMAT_MEASURES`). A collapse of format, not a lower
   success, is what these show.
4. The report (`--report`, and after each part): each run's area under its validation curve (the trapezoid rule
   over sampled completions, divided by the last checkpoint's completions: a mean share of turns solved), the
   per-seed table, the paired comparisons AT minus trajectory at each T with their intervals and p
   (`research.method_comparison`), the verdict on each prediction, the curves' figure; and the math precursor
   (`scripts/reproduce_miniature.py --env math-v0 --parts ablations`, rows of study `miniature`) beside it.

Success here is the share of grids solved, each episode's `progress / 100` from `pettingllms-eval` (at the end of
a relay episode its progression score is 100 x the share of its grids solved): per episode a number of grids
solved, kept on each row as a string of digits (`grids_solved`).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from research import cycle, ledger
from research.arguments import add_output_arguments, positive_int, refuse_mixed_settings, share
from research.markdown import replace_section, seed_cell
from research.method_comparison import COMPARISON_WORDS, compare_methods
from research.method_comparison import cell as comparison_cell

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "runs" / "credit"
OUT = ROOT / "docs" / "results" / "credit.json"
FIGURE = "credit_curves.png"
START, END = "<!-- credit:start -->", "<!-- credit:end -->"
ENV_ID = "plan-path-relay-v0"
GRID = {"size": 7}
"""The relay's grids: plan-path's 7x7 (shortest paths of 7 moves or more), the plan-path miniature's setting."""
TURNS = (8, 1)
"""T of the test and of the control."""
ARMS = {"at": ["--grouping", "agent_turn"], "trajectory": ["--grouping", "trajectory"]}
"""Arm -> its grouping: AT-GRPO's (instance, turn, agent) groups of K candidates from one state, the best one
executed; or K whole episodes per instance, every turn credited with its episode's return."""
K = 4
SEEDS = tuple(range(8))
"""The pre-registered seeds: seed s of every arm from the one warm start, trained with `--seed s`."""
INSTANCES_PER_STEP = 2
BUDGET = 2500
CURVE_EVERY = 256
"""Sampled completions between two points of a validation curve: 2 steps at T = 8 (128 completions a step) and 16
at T = 1 (16 a step)."""
MAX_COMPLETION_TOKENS = 112  # the search program is ~90 tokens; answers stop at </answer>
WINDOW = (0.05, 0.08)
"""The warm start's share of turns solved greedily on the validation split that the pre-registration asks for."""
COMMON = [
    "--policy_layout", "per_role", "--loss_type", "dr_grpo", "--scale_rewards", "none", "--learning_rate", "1e-4",
    "--num_generations", str(K), "--temperature", "1.0", "--max_completion_length", str(MAX_COMPLETION_TOKENS),
    "--per_device_train_batch_size", "32", "--resume", "true", "--eval_every", "0", "--eval_episodes", "1",
    "--workflow", "mas", "--instances_per_step", str(INSTANCES_PER_STEP),
]  # fmt: skip
"""The trainer flags every arm shares (the pre-registration's common settings)."""
WARM_START = {"workflow": "mas", "demos_per_role": 3200, "sft_steps": 400, "eval_episodes": 0}
"""The team's warm start as the plan-path miniature builds it (3200 demonstrations and 200 SFT steps per role)."""
CANDIDATES = {
    "programs 40%, imperfect 40%": {"tool_programs": 0.4, "program_bugs": 0.4},
    "programs 40%, imperfect 70%": {"tool_programs": 0.4, "program_bugs": 0.7},
    "programs 20%, imperfect 40%": {"tool_programs": 0.2, "program_bugs": 0.4},
    "programs 20%, imperfect 70%": {"tool_programs": 0.2, "program_bugs": 0.7},
}
"""Candidate warm starts, in the order `warmstart` tries them: the plan-path miniature's recipe first (its tool
agent's share of program demonstrations, and the share of those that are imperfect variants), then fewer good
programs."""
SMOKE_SETTINGS = ("budget", "max_steps", "select_grids", "val_grids", "eval_grids", "demos_per_role",
                  "warm_start_steps", "window")  # fmt: skip
"""The flags that change what a row measures: runs with other values go to folders and tables of their own."""
FORMAT_MEASURES = ("parse_error_rate", "truncated_rate", "solving_program_rate")
"""What a `formats` row keeps of an evaluation, per agent (`pettingllms-eval`'s keys)."""
RULE = ledger.Rule("credit", ("part", "candidate", "arm", "turns", "seed", "completions", "split"))
"""How the table (`OUT`) is built from the ledger beside it: one row per part, candidate, arm, T, seed, curve point
and split, the last recorded (`research.ledger`)."""


# ----------------------------------------------------------------- what a row measures
def grids_solved(result: Mapping[str, Any], turns: int) -> str:
    """Each episode's number of grids solved (its progress x T / 100, a whole number), as a string of digits."""
    progress = result["per_episode"].get("progress")
    if progress is None:
        raise ValueError(
            f"the {ENV_ID} evaluation reports no per-episode progress (pettingllms-eval too old?)"
        )
    counts = [round(value * turns / 100) for value in progress]
    if any(abs(value * turns / 100 - count) > 1e-6 for value, count in zip(progress, counts)):
        raise ValueError(f"a relay episode's progress {progress} is not a whole number of its {turns} grids")
    return "".join(str(count) for count in counts)


def turn_shares(row: Mapping[str, Any]) -> list[float]:
    """Each episode's share of grids solved, from a row's `grids_solved`."""
    return [int(count) / row["turns"] for count in row["grids_solved"]]


def curve_area(points: Sequence[tuple[int, float]]) -> float:
    """The area under a validation curve, `points` (sampled completions, share of turns solved) with the warm
    start's at 0, by the trapezoid rule over completions, divided by the last point's completions: the curve's
    mean share of turns solved. ValueError without a point at 0 and one beyond it.

    >>> curve_area([(0, 0.0), (100, 0.2), (200, 0.2)])
    0.15
    """
    points = sorted(points)
    if len(points) < 2 or points[0][0] != 0:
        raise ValueError(f"a curve needs the warm start's point at 0 and one after it, not {points}")
    x, y = np.array([p[0] for p in points], dtype=float), np.array([p[1] for p in points], dtype=float)
    return float(np.sum((x[1:] - x[:-1]) * (y[1:] + y[:-1]) / 2) / x[-1])


def chosen_candidate(rows: list[dict], window: Sequence[float] = WINDOW) -> str | None:
    """The warm start `warmstart` chose: the first of `CANDIDATES` whose T = 8 validation row lies in `window`."""
    measured = {
        r["candidate"]: r["success_rate"] for r in rows if r["part"] == "warmstart" and r["turns"] == 8
    }
    return next(
        (name for name in CANDIDATES if name in measured and window[0] <= measured[name] <= window[1]), None
    )


class Study:
    """Runs, evaluations and the rows of one invocation."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.rows = ledger.table_rows(args.out, RULE)

    # ----------------------------------------------------------------- building blocks
    def warm_start(self, candidate: str) -> Path:
        """The team's warm start `candidate` of `CANDIDATES` on T = 8 relays (`cycle.warm_start`);
        `--demos_per_role`/`--warm_start_steps` (smoke runs) build a variant under its own tag."""
        settings = {
            **WARM_START, **CANDIDATES[candidate], "env_kwargs": {**GRID, "grids": 8},
            "tag": "credit" + "".join(f"{int(100 * v)}" for v in CANDIDATES[candidate].values()),
        }  # fmt: skip
        variant = None
        if self.args.demos_per_role != WARM_START["demos_per_role"] or self.args.warm_start_steps is not None:
            variant = (self.args.demos_per_role, self.args.warm_start_steps or WARM_START["sft_steps"])
        return cycle.warm_start(ENV_ID, settings, variant, keep=self.args.out.parent)

    def evaluate(self, policy: str, name: str, turns: int, split: str, grids: int) -> dict:
        """`pettingllms-eval` of `policy` on `grids` grids of `split` played as relays of `turns` grids
        (`cycle.evaluate`, cached by name); its env result."""
        output = self.args.runs / "eval" / f"{name}.json"
        argv = [
            "--env", ENV_ID, "--policy", policy, "--workflow", "mas", "--episodes", str(grids // turns),
            "--seed", "0", "--split", split, "--env_kwargs", json.dumps({**GRID, "grids": turns}),
            "--max_new_tokens", str(MAX_COMPLETION_TOKENS), "--output", str(output), "--no_progress",
        ]  # fmt: skip
        return cycle.evaluate(argv, output, ENV_ID)

    def record(self, row: dict, warm_start: Path) -> None:
        """Append `row` (measured on a run that started from `warm_start`) to the ledger (`cycle.record`)."""
        self.rows = cycle.record(self.args.out, RULE, row, warm_start=warm_start)

    def train(self, arm: str, turns: int, seed: int, warm_start: Path) -> Path:
        """One run of `--budget` sampled completions (`cycle.train`: resumed, or skipped once finished), with a
        checkpoint every `CURVE_EVERY` completions."""
        per_step = 2 * K * turns * INSTANCES_PER_STEP
        argv = [
            "--output_dir", str(self.args.runs / f"{arm}-{turns}_s{seed}"), "--env_id", ENV_ID,
            "--env_kwargs", json.dumps({**GRID, "grids": turns}), "--max_turns", str(turns),
            "--model_name_or_path", str(warm_start), "--seed", str(seed), "--max_steps", str(self.args.max_steps),
            "--max_completions", str(self.args.budget), "--save_steps", str(max(1, CURVE_EVERY // per_step)),
            *COMMON, *ARMS[arm],
        ]  # fmt: skip
        return cycle.train(argv, final_evaluation=False, wall_time=True)

    # ----------------------------------------------------------------- parts
    def choose_warm_start(self) -> None:
        for candidate in CANDIDATES:
            model = self.warm_start(candidate)
            share = self.measure_warm_start(candidate, model, 8)
            if self.args.window[0] <= share <= self.args.window[1]:
                self.measure_warm_start(candidate, model, 1)
                return
        print(
            f"no candidate warm start solves {self.args.window} of the validation turns: add one to CANDIDATES"
        )

    def warm_start_report(self, candidate: str, model: Path, turns: int) -> str:
        """The name of the evaluation report of warm start `candidate` (`model`) on `--select_grids` validation
        grids played as relays of `turns` grids (`measure_warm_start` writes it, `formats` reads it)."""
        slug = candidate.replace(" ", "").replace(",", "_").replace("%", "")
        return f"warmstart_{slug}_{model.name}_T{turns}_g{self.args.select_grids}"

    def measure_warm_start(self, candidate: str, model: Path, turns: int) -> float:
        """Record `model`'s share of validation turns solved greedily on relays of `turns` grids; return it."""
        name = self.warm_start_report(candidate, model, turns)
        result = self.evaluate(str(model), name, turns, "val", self.args.select_grids)
        row = {"part": "warmstart", "candidate": candidate, "arm": None, "turns": turns, "seed": 0,
               "completions": 0, "split": "val", **CANDIDATES[candidate]}  # fmt: skip
        row = _measured(row, result, turns)
        self.record(row, model)
        return row["success_rate"]

    def runs(self) -> None:
        candidate = chosen_candidate(self.rows, self.args.window)
        if candidate is None:
            raise SystemExit("no warm start chosen yet: run --parts warmstart first (see its rule, WINDOW)")
        model = self.warm_start(candidate)
        for seed in self.args.seeds:  # seed by seed: an interrupted study has every arm for its first seeds
            for turns in self.args.turns:
                for arm in self.args.arms:
                    folder = self.train(arm, turns, seed, model)
                    self.run_rows(candidate, arm, turns, seed, folder, model)

    def formats(self) -> None:
        """A `formats` row for the chosen warm start at each T (its validation evaluation of `warmstart`) and for
        every run with a `final` row (its evaluation-suite evaluation), from the evaluations' reports; a report
        that `--runs` no longer holds is made again from the run's last checkpoint (greedy: the same figures).
        Refuses, before recording anything, a run whose report and checkpoint are both gone."""
        from pettingllms.runs.layout import RunLayout

        candidate = chosen_candidate(self.rows, self.args.window)
        if candidate is None:
            raise SystemExit("no warm start chosen yet: run --parts warmstart first (see its rule, WINDOW)")
        jobs = []
        for final in (r for r in self.rows if r["part"] == "final"):
            folder = self.args.runs / f"{final['arm']}-{final['turns']}_s{final['seed']}"
            name = f"{folder.name}_final_g{self.args.eval_grids}"
            checkpoint = RunLayout(folder).checkpoint(final["steps"]).folder
            if not (self.args.runs / "eval" / f"{name}.json").is_file() and not checkpoint.is_dir():
                raise SystemExit(
                    f"{name}: neither its evaluation report nor its checkpoint {checkpoint} is in --runs "
                    f"{self.args.runs}: point --runs at the study's runs folder"
                )
            row = {key: final[key] for key in RULE.key if key != "part"}
            jobs.append(({"part": "formats", **row}, str(checkpoint), name, "eval", self.args.eval_grids))
        model = self.warm_start(candidate)
        jobs[:0] = [
            ({"part": "formats", "candidate": candidate, "arm": None, "turns": turns, "seed": 0, "completions": 0,
              "split": "val"}, str(model), self.warm_start_report(candidate, model, turns), "val",
             self.args.select_grids)
            for turns in TURNS
        ]  # fmt: skip
        for row, policy, name, split, grids in jobs:
            result = self.evaluate(policy, name, row["turns"], split, grids)
            self.record({**row, **{key: result[key] for key in FORMAT_MEASURES}}, model)

    def run_rows(self, candidate: str, arm: str, turns: int, seed: int, folder: Path, model: Path) -> None:
        """The run's curve (the warm start at 0, then every checkpoint) and its last checkpoint's evaluation."""
        from pettingllms.runs.layout import RunLayout

        base = {
            "part": "curve",
            "candidate": candidate,
            "arm": arm,
            "turns": turns,
            "seed": seed,
            "split": "val",
        }
        name = f"warmstart_{model.name}_T{turns}_g{self.args.val_grids}"
        start = self.evaluate(str(model), name, turns, "val", self.args.val_grids)
        self.record(_measured({**base, "completions": 0, "steps": 0}, start, turns), model)
        layout = RunLayout(folder)
        steps = cycle.training_steps(folder / "metrics.jsonl")
        for step in sorted(steps):
            if layout.checkpoint(step).folder.is_dir():
                name = f"{folder.name}_step{step}_g{self.args.val_grids}"
                result = self.evaluate(
                    str(layout.checkpoint(step).folder), name, turns, "val", self.args.val_grids
                )
                row = {**base, "completions": steps[step]["train/completions_total"], "steps": step}
                self.record(_measured(row, result, turns), model)
        last = max(steps)
        name = f"{folder.name}_final_g{self.args.eval_grids}"
        result = self.evaluate(str(layout.checkpoint(last).folder), name, turns, "eval", self.args.eval_grids)
        probes = sum(row.get("train/probe_completions", 0) for row in steps.values())
        row = {**base, "part": "final", "split": "eval", "completions": steps[last]["train/completions_total"],
               "steps": last, "probe_completions": probes}  # fmt: skip
        self.record(_measured(row, result, turns), model)


def _measured(row: dict, result: Mapping[str, Any], turns: int) -> dict:
    """`row` with what the evaluation `result` measured: the share of turns solved and each episode's count."""
    counts = grids_solved(result, turns)
    share = sum(int(c) for c in counts) / (len(counts) * turns)
    return {**row, "success_rate": share, "episodes": len(counts), "grids_solved": counts}


# ----------------------------------------------------------------- the report
def areas(rows: list[dict], arm: str, turns: int) -> dict[int, float]:
    """seed -> the area under its run's validation curve (`curve_area`), for runs whose curve has a point after
    the warm start's."""
    curves: dict[int, list[tuple[int, float]]] = {}
    for row in rows:
        if (row["part"], row["arm"], row["turns"]) == ("curve", arm, turns):
            curves.setdefault(row["seed"], []).append((row["completions"], row["success_rate"]))
    return {seed: curve_area(points) for seed, points in curves.items() if len(points) > 1}


def finals(rows: list[dict], arm: str, turns: int) -> dict[int, list[float]]:
    """seed -> each evaluation episode's share of grids solved after the whole budget."""
    return {
        row["seed"]: turn_shares(row)
        for row in rows
        if (row["part"], row["arm"], row["turns"]) == ("final", arm, turns)
    }


def comparison(rows: list[dict], turns: int, measure: str) -> dict | None:
    """AT minus trajectory at `turns` on `measure` ("area" or "final"), paired by seed
    (`research.method_comparison.compare_methods`; an area is one number a seed)."""
    if measure == "area":
        ours, reference = ({s: [a] for s, a in areas(rows, arm, turns).items()} for arm in ARMS)
    else:
        ours, reference = (finals(rows, arm, turns) for arm in ARMS)
    part = "curve" if measure == "area" else "final"
    commits = [
        [r[ledger.PROVENANCE] for r in rows if (r["part"], r["arm"], r["turns"]) == (part, arm, turns)]
        for arm in ARMS
    ]
    return compare_methods(ours, reference, builds=(commits[0], commits[1]))


def incomplete(comparison: dict | None, seeds: int) -> str | None:
    """Why `comparison` cannot be judged yet: not every pre-registered seed of both arms, or not paired (the test
    the pre-registration names is the paired one); None when it can."""
    if comparison is None:
        return "not measured yet"
    if not comparison["paired"] or comparison["seeds"] != (seeds, seeds):
        done = min(comparison["seeds"])
        return f"incomplete ({done} of {seeds} paired seeds): no verdict before every seed of both arms"
    return None


def verdict(test: dict | None, control: dict | None, seeds: int = len(SEEDS)) -> list[str]:
    """The pre-registered predictions, each said as it came out once every seed of both arms is in (`incomplete`):
    at T = 8 AT minus trajectory on the area above 0 with p < 0.05; at T = 1 its 95% interval inside +-5 points."""
    lines = []
    if incomplete(test, seeds):
        lines.append(f"- T = 8: {incomplete(test, seeds)}.")
    else:
        holds = test["difference"] > 0 and test["test"]["p_value"] < 0.05
        lines.append(
            f"- T = 8, predicted: AT minus trajectory above 0 with p < 0.05. Measured: "
            f"{100 * test['difference']:+.1f} points, p = {test['test']['p_value']:.4f}: "
            + ("**as predicted**." if holds else "**not as predicted (the prediction is falsified)**.")
        )
    if incomplete(control, seeds):
        lines.append(f"- T = 1 (the control): {incomplete(control, seeds)}.")
    else:  # no interval: every seed's difference the same, the difference itself
        low, high = control["ci95"] or (control["difference"], control["difference"])
        inside = -0.05 <= low and high <= 0.05
        lines.append(
            f"- T = 1 (the control), predicted: the 95% interval of AT minus trajectory inside +-5 points. "
            f"Measured: [{100 * low:+.1f}, {100 * high:+.1f}]: "
            + ("**as predicted**." if inside else "**not as predicted (the control shows a difference)**.")
        )
    return lines


def warm_start_lines(rows: list[dict], window: Sequence[float]) -> list[str]:
    """The candidates measured by `warmstart`, and the one chosen."""
    lines = ["| warm start (tool agent's demonstrations) | T | share of validation turns solved, % | grids |",
             "|---|---|---|---|"]  # fmt: skip
    for row in (r for r in rows if r["part"] == "warmstart"):
        grids = row["episodes"] * row["turns"]
        lines.append(f"| {row['candidate']} | {row['turns']} | {100 * row['success_rate']:.1f} | {grids} |")
    chosen = chosen_candidate(rows, window)
    rule = f"the first in {100 * window[0]:g}-{100 * window[1]:g}% at T = 8"
    lines += ["", f"Chosen by the rule ({rule}): {chosen}." if chosen else f"None chosen yet ({rule})."]
    return lines


def per_seed_lines(rows: list[dict]) -> list[str]:
    """Each arm's area and final share per seed, and over seeds (`seed_cell`)."""
    lines = ["| arm | T | area under the validation curve, % | final share of evaluation turns, % | sampled "
             "completions + greedy probes per run | per seed: area / final |", "|---|---|---|---|---|---|"]  # fmt: skip
    for turns in TURNS:
        for arm in ARMS:
            area, final = areas(rows, arm, turns), finals(rows, arm, turns)
            if not area and not final:
                continue
            shares = {seed: float(np.mean(values)) for seed, values in final.items()}
            per_seed = ", ".join(
                f"s{s} {100 * area[s]:.1f} / {100 * shares[s]:.1f}" if s in shares else f"s{s} {100 * area[s]:.1f} / —"
                for s in sorted(area)
            )  # fmt: skip
            spent = [r for r in rows if (r["part"], r["arm"], r["turns"]) == ("final", arm, turns)]
            budget = (
                f"{np.mean([r['completions'] for r in spent]):.0f} + "
                f"{np.mean([r.get('probe_completions', 0) for r in spent]):.0f}"
                if spent
                else "—"
            )
            lines.append(
                f"| {arm} | {turns} | {seed_cell(list(area.values()))} | {seed_cell(list(shares.values()))} "
                f"| {budget} | {per_seed} |"
            )
    return lines


def format_lines(rows: list[dict]) -> list[str]:
    """The `formats` rows: per arm and T, the mean over seeds (the warm start's own row first) of each agent's
    share of completions that did not parse and that ran to the token limit, and of the tool agent's that held
    a program solving its grid, then each seed's (tool unparseable / plan unparseable / tool solving program)."""
    measured = [r for r in rows if r["part"] == "formats"]
    if not measured:
        return []

    def share(row: dict, measure: str, agent: str) -> float:
        return 100 * row[measure][agent]

    columns = [("parse_error_rate", "tool"), ("truncated_rate", "tool"), ("solving_program_rate", "tool"),
               ("parse_error_rate", "plan"), ("truncated_rate", "plan")]  # fmt: skip
    lines = [
        "### What the agents wrote (greedy: each run after training, on the evaluation suite; the warm start on validation)",
        "",
        "| arm | T | tool: unparseable, % | tool: ran to the token limit, % | tool: a program solving its grid, % "
        "| plan: unparseable, % | plan: ran to the token limit, % | per seed: tool unparseable / plan "
        "unparseable / tool solving program |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for turns in TURNS:
        for arm in (None, *ARMS):
            group = sorted(
                (r for r in measured if (r["arm"], r["turns"]) == (arm, turns)), key=lambda r: r["seed"]
            )
            if not group:
                continue
            means = " | ".join(f"{np.mean([share(r, m, a) for r in group]):.1f}" for m, a in columns)
            per_seed = ", ".join(
                f"s{r['seed']} {share(r, 'parse_error_rate', 'tool'):.0f} / {share(r, 'parse_error_rate', 'plan'):.0f}"
                f" / {share(r, 'solving_program_rate', 'tool'):.0f}"
                for r in group
            ) if arm else "—"  # fmt: skip
            lines.append(f"| {arm or 'warm start'} | {turns} | {means} | {per_seed} |")
    return [*lines, ""]


def math_precursor_lines(all_rows: list[dict]) -> list[str]:
    """Per-role AT-GRPO minus trajectory GRPO on `math-v0` under `dr_grpo` (the miniature's ablations rows)."""
    runs = {
        method: {
            r["seed"]: [int(c) for c in r["episode_success"]]
            for r in all_rows
            if r.get("env") == "math-v0" and r["part"] == "ablations" and r["method"] == method
        }
        for method in ("loss=dr_grpo", "loss=dr_grpo (trajectory)")
    }
    found = compare_methods(runs["loss=dr_grpo"], runs["loss=dr_grpo (trajectory)"])
    return [
        "The precursor on math (not part of the test): `math-v0` per-role AT-GRPO minus trajectory GRPO under "
        "`dr_grpo`, success on the miniature's evaluation suite (rows of study `miniature`, part `ablations`): "
        + comparison_cell(found)
        + "."
    ]


def plot_curves(rows: list[dict], path: Path) -> None:
    """Mean validation share of turns solved against sampled completions, per arm, one panel per T."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(TURNS), figsize=(5 * len(TURNS), 3.6), sharey=True)
    for axis, turns in zip(axes, TURNS):
        for arm in ARMS:
            by_point: dict[int, list[float]] = {}
            for r in rows:
                if (r["part"], r["arm"], r["turns"]) == ("curve", arm, turns):
                    by_point.setdefault(r["completions"], []).append(100 * r["success_rate"])
            if by_point:
                xs = sorted(by_point)
                axis.plot(xs, [np.mean(by_point[x]) for x in xs], marker="o", label=arm)
        axis.set_title(f"T = {turns}")
        axis.set_xlabel("sampled completions")
        axis.legend()
    axes[0].set_ylabel("validation turns solved, % (mean over seeds)")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def write_report(rows: list[dict], args: argparse.Namespace) -> None:
    """The credit section of `--results_md`, and its figure beside the table."""
    if any(r["part"] == "curve" for r in rows):
        plot_curves(rows, args.out.with_name(FIGURE))
    miniature = ledger.table_rows(args.out.with_name("miniature.json"), _miniature_rule())
    test, control = comparison(rows, 8, "area"), comparison(rows, 1, "area")
    lines = [
        START,
        "## Credit across turns: a pre-registered test of the paper's grouping claim (issue 60)",
        "",
        f"Test bed: `{ENV_ID}` with `{json.dumps(GRID)}`, T grids in a row, one per turn, the team paid 1/T for each "
        "grid solved in its turn. The pre-registration (docs/results/preregistration_credit.md, committed before "
        "the first row) fixes the arms, budget, seeds, measures, test and prediction. Every arm: per-role policies, "
        f"`dr_grpo`, `scale_rewards: none`, K = {K}, {INSTANCES_PER_STEP} instances a step, a budget of {BUDGET} "
        "sampled completions (the step that reaches it completes), one warm start. Success is the share of grids "
        f"(turns) solved greedily: the curve on {args.val_grids} validation grids every {CURVE_EVERY} sampled "
        f"completions, the final share on {args.eval_grids} evaluation grids.",
        "",
        "### The warm start, chosen on the validation split before any run",
        "",
        *warm_start_lines(rows, args.window),
        "",
        "### Per arm",
        "",
        "Each cell over seeds: mean ± sample std (ddof=1) [the seeds' 95% t-interval, clipped to [0, 100]] (n).",
        "",
        *per_seed_lines(rows),
        "",
        "What differs between the arms besides the grouping, the same at both T: AT-GRPO executes the best of "
        "the tool agent's K candidates (so every plan candidate starts from the best proposal), and credits each "
        "tool candidate with a greedy probe of the plan agent (one completion per candidate, not counted in the "
        "budget: the table's probes); trajectory GRPO rewards every sample of an episode with the episode's "
        "return summed over the agents (team and local parts). So the control at T = 1 holds the turns' number "
        "fixed, not everything else: a difference there would name these, not the credit across turns.",
        "",
        *format_lines(rows),
        "### AT minus trajectory, paired by seed",
        "",
        COMPARISON_WORDS + " Here a seed's outcome is its area under the curve (primary) or its final share.",
        "",
        "| T | area under the validation curve (primary) | final share of evaluation turns |",
        "|---|---|---|",
        *(
            f"| {turns} | {comparison_cell(comparison(rows, turns, 'area'))} "
            f"| {comparison_cell(comparison(rows, turns, 'final'))} |"
            for turns in TURNS
        ),
        "",
        "The predictions, as they came out:",
        "",
        *verdict(test, control),
        "",
        *math_precursor_lines(miniature),
        "",
        f"![credit curves](results/{FIGURE})" if any(r["part"] == "curve" for r in rows) else "No curve yet.",
        "",
        "Regenerate: `.venv/bin/python scripts/credit_study.py` (resumable; `--report` rebuilds this section).",
        END,
    ]
    replace_section(args.results_md, START, END, "\n".join(lines))


def _miniature_rule() -> ledger.Rule:
    """The miniature study's table rule (its rows hold the math precursor), read from its script."""
    from reproduce_miniature import RULE as MINIATURE_RULE

    return MINIATURE_RULE


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--parts",
        nargs="+",
        default=["warmstart", "runs", "formats"],
        choices=["warmstart", "runs", "formats"],
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    parser.add_argument("--turns", type=int, nargs="+", default=list(TURNS), choices=list(TURNS))
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    parser.add_argument("--budget", type=positive_int, default=BUDGET, help="sampled completions per run")
    parser.add_argument("--max_steps", type=positive_int, default=400, help="cap on optimizer steps per run")
    parser.add_argument("--select_grids", type=positive_int, default=400,
                        help="validation grids judging a warm start")  # fmt: skip
    parser.add_argument(
        "--val_grids", type=positive_int, default=128, help="validation grids per curve point"
    )
    parser.add_argument(
        "--eval_grids", type=positive_int, default=400, help="evaluation grids after the budget"
    )
    parser.add_argument("--demos_per_role", type=positive_int, default=WARM_START["demos_per_role"])
    parser.add_argument("--warm_start_steps", type=positive_int, default=None,
                        help="SFT steps (default: the study's)")  # fmt: skip
    parser.add_argument("--window", type=share, nargs=2, default=list(WINDOW), metavar=("LOW", "HIGH"),
                        help="the warm start's share of turns to choose it by (smoke runs widen it)")  # fmt: skip
    add_output_arguments(parser, out=OUT, runs=RUNS)
    args = parser.parse_args()
    if args.window[0] > args.window[1]:
        parser.error(f"--window {args.window[0]} {args.window[1]}: LOW must not exceed HIGH")
    refuse_mixed_settings(parser, args, SMOKE_SETTINGS, out=OUT, runs=RUNS)
    for name in ("select_grids", "val_grids", "eval_grids"):
        if getattr(args, name) % 8:
            parser.error(
                f"--{name} must be a multiple of 8 (whole relays of 8 grids), not {getattr(args, name)}"
            )
    study = Study(args)
    if args.report:
        study.rows = ledger.write_table(args.out, RULE)
    else:
        parts = {"warmstart": study.choose_warm_start, "runs": study.runs, "formats": study.formats}
        for part in args.parts:
            parts[part]()
            write_report(study.rows, args)
    write_report(study.rows, args)
    print(f"wrote {args.out} and the credit section of {args.results_md}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
