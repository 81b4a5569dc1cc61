"""The paper's central comparison in miniature: MAS + AT-GRPO against single-agent and trajectory-GRPO baselines.

    .venv/bin/python scripts/reproduce_miniature.py              # everything; resumes finished and killed runs
    .venv/bin/python scripts/reproduce_miniature.py --parts main --seeds 0 --budget 300 --eval_episodes 20  # short
    .venv/bin/python scripts/reproduce_miniature.py --parts main --seeds 0 --methods mas mas+at-grpo-per-role \
        --budget 16 --max_steps 1 --eval_episodes 4 --demos_per_role 40 --warm_start_steps 2 \
        --runs /tmp/mini --out /tmp/mini/rows.json --results_md /tmp/mini/results.md   # smoke (tests/test_study_smoke.py)
    .venv/bin/python scripts/reproduce_miniature.py --report     # rebuild the tables and plots from the JSON
    .venv/bin/python scripts/reproduce_miniature.py --parts main --methods mas+trajectory-grpo  # rerun some rows

The miniature is built so that the paper's mechanism can exist: the team's tool agent can *compute*. Its warm
start mixes programs (a compact BFS that reads the map on standard input, `pettingllms.models.tool_programs`,
and imperfect variants of it) with direct answers, and the team's plan agent learns to keep a proposal that
solves the grid and to answer from the map otherwise. The single agent cannot run code. Each workflow has its
own warm start with the same number of demonstrations per role (`TEAM_WARM_START`, `SINGLE_WARM_START`), and the
same SFT steps per role.

Every run is a `pettingllms-train` run under `runs/miniature/`; every reported number is `pettingllms-eval`
(greedy, the same fixed evaluation-split suite for every row). Recipes were chosen, and the learning curves are
drawn, on the validation split (`--eval_split val`), never on the reported suite. Parts:

1. `warmstart`: before any RL, on `--val_episodes` validation grids: the single agent, the team, the team with an
   oracle tool (the plan agent's ceiling: it must reach at least 90%), and what the tool agent writes (share of
   programs, of correct BFS programs; greedy and sampled at the training temperature).
2. `main` (`plan-path-v0`, 7x7: `ENV_KWARGS`): six rows x `--seeds` - `single` and `mas` (the warm starts, no RL),
   `single+grpo` (the plan agent alone, trajectory-grouped GRPO), `mas+trajectory-grpo` (the team,
   trajectory-grouped GRPO, one policy per role), `mas+at-grpo-shared` and `mas+at-grpo-per-role` (AT-GRPO with
   one shared policy or one per role). Every RL run samples `--budget` completions (`max_completions`: a run
   stops after the step that reaches it), K=4 candidates or episodes per step, 8 instances per step for the team
   and 16 for the single agent.
3. `mechanism`: what the per-role AT-GRPO runs' tool agents write after RL (as in `warmstart`).
4. `ablations` (`mas+at-grpo-per-role` with one knob changed, `--ablation_seeds`): the commit — greedy (the main
   run), random, random for the tool and greedy for the plan — and outcome-only rewards (`reward="outcome"`).

Rows go to `docs/results/miniature.json` (`{"part", "env", "method", "seed", "success_rate", ...}`) after every
run, so an interrupted study keeps what it finished; the tables, learning curves
(`docs/results/miniature_curves.png`) and the commands go to the miniature section of `docs/results.md`.
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
ENV_ID = "plan-path-v0"
ENV_KWARGS = {"size": 7}
"""7x7 grids (shortest paths of 7 moves or more): on 5x5 the single agent's greedy guesses already solved 56% of
the validation grids before RL (the paper's single agent: 5%), leaving little to learn but to copy."""
MAX_COMPLETION_TOKENS = 112  # the BFS tool call is ~90 tokens; answers stop at </answer>
COMMON = [
    "--scale_rewards", "none", "--learning_rate", "1e-4", "--num_generations", "4", "--temperature", "1.0",
    "--max_completion_length", str(MAX_COMPLETION_TOKENS), "--per_device_train_batch_size", "32",
    "--save_steps", "5", "--resume", "true", "--eval_split", "val",
]  # fmt: skip
DEMOS_PER_ROLE = 3200
TEAM_WARM_START = {"env_kwargs": ENV_KWARGS, "workflow": "mas", "tag": "mini7", "demos_per_role": DEMOS_PER_ROLE, "sft_steps": 400,
                   "tool_programs": 0.4, "program_bugs": 0.4, "eval_episodes": 0}  # fmt: skip
SINGLE_WARM_START = {"env_kwargs": ENV_KWARGS, "workflow": "single", "tag": "mini7", "demos_per_role": DEMOS_PER_ROLE, "sft_steps": 200,
                     "eval_episodes": 0}  # fmt: skip
"""Two roles, twice the examples and twice the SFT steps: 4 passes over each role's demonstrations either way."""
MAIN_ROWS = (
    "single",
    "single+grpo",
    "mas",
    "mas+trajectory-grpo",
    "mas+at-grpo-shared",
    "mas+at-grpo-per-role",
)
TEAM_INSTANCES = 8  # instances per step for the two-agent team; the single agent gets twice as many


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


BASELINES = ("single", "single+grpo", "mas")
"""The paper's baselines (its main table): the best of them is what AT-GRPO is compared against, paired per
episode. The team trained with trajectory-grouped GRPO (an ablation in the paper) is compared separately: it
isolates the grouping, not the team."""
ABLATIONS = {  # name -> (flags replacing the per-role AT-GRPO defaults, env kwargs)
    "commit=greedy": ([], {}),
    "commit=random": (["--commit", "random"], {}),
    "commit=tool-random,plan-greedy": (["--commit", "tool=random"], {}),
    "reward=outcome": ([], {"reward": "outcome"}),
}


class Study:
    """Runs, evaluations and the rows file of one invocation."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.rows = json.loads(args.out.read_text()) if args.out.is_file() else []

    # ----------------------------------------------------------------- building blocks
    def warm_start(self, workflow: str) -> Path:
        """The warm start of `workflow` ("mas" or "single"), built on first use (cached); `--demos_per_role` and
        `--warm_start_steps` (smoke runs) build a variant under its own tag, beside the study's."""
        from pettingllms.models.warmstart import ensure_tiny_model

        settings = dict(TEAM_WARM_START if workflow == "mas" else SINGLE_WARM_START)
        if self.args.demos_per_role != DEMOS_PER_ROLE or self.args.warm_start_steps is not None:
            steps = self.args.warm_start_steps or settings["sft_steps"]
            settings.update(demos_per_role=self.args.demos_per_role, sft_steps=steps)
            settings["tag"] = f"{settings['tag']}_{self.args.demos_per_role}d_{steps}s"
        return ensure_tiny_model(ENV_ID, **settings)

    def train(self, name: str, workflow: str, seed: int, flags: list[str], env_kwargs: dict) -> Path:
        """One training run (resumed if it has a checkpoint, skipped if finished); returns its folder."""
        from pettingllms.trainers.arguments import parse
        from pettingllms.trainers.at_grpo import ATGRPOTrainer

        folder = self.args.runs / name
        argv = [
            "--output_dir", str(folder), "--env_id", ENV_ID, "--env_kwargs", json.dumps({**ENV_KWARGS, **env_kwargs}),
            "--model_name_or_path", str(self.warm_start(workflow)), "--seed", str(seed),
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

    def evaluate(self, policy: str, workflow: str, name: str, *, split: str = "eval") -> dict:
        """`pettingllms-eval` of `policy` (a spec: run or model folder, or agent=spec pairs) on the fixed suite of
        `split`; returns its env result."""
        from pettingllms.eval.cli import main as eval_main

        output = self.args.runs / "eval" / f"{name}.json"
        episodes = self.args.eval_episodes if split == "eval" else self.args.val_episodes
        if not output.is_file():
            output.parent.mkdir(parents=True, exist_ok=True)
            argv = [
                "--env", ENV_ID, "--policy", policy, "--workflow", workflow, "--episodes", str(episodes),
                "--seed", "0", "--split", split, "--env_kwargs", json.dumps(ENV_KWARGS),
                "--max_new_tokens", str(MAX_COMPLETION_TOKENS),
                "--output", str(output), "--no_progress",
            ]  # fmt: skip
            if eval_main(argv) != 0:
                raise RuntimeError(f"pettingllms-eval failed for {name}: {' '.join(argv)}")
        return json.loads(output.read_text())["results"][ENV_ID]

    def record(self, row: dict) -> None:
        key = (row["part"], row["env"], row["method"], row["seed"])
        self.rows = [r for r in self.rows if (r["part"], r["env"], r["method"], r["seed"]) != key] + [row]
        self.args.out.parent.mkdir(parents=True, exist_ok=True)
        self.args.out.write_text(json.dumps(self.rows, indent=1) + "\n")

    def untrained_row(self, method: str, seed: int) -> None:
        workflow = method  # "single" or "mas": the warm start played by that team
        result = self.evaluate(str(self.warm_start(workflow)), workflow, f"{method}_warmstart")
        self.record(_row("main", method, seed, result, None))

    def trained_row(self, part: str, method: str, seed: int, flags: list[str], workflow: str,
                    env_kwargs: dict | None = None) -> None:  # fmt: skip
        name = f"{part}_{method}_s{seed}".replace("=", "-").replace(",", "_")
        folder = self.train(name, workflow, seed, flags, env_kwargs or {})
        result = self.evaluate(str(folder), workflow, name)
        self.record(_row(part, method, seed, result, folder))

    # ----------------------------------------------------------------- parts
    def warm_start_checks(self) -> None:
        """Part `warmstart` (module docstring), on the validation split."""
        team, single = self.warm_start("mas"), self.warm_start("single")
        checks = {
            "single": (str(single), "single"),
            "mas": (str(team), "mas"),
            "mas, oracle tool": (f"tool=oracle,plan={team}", "mas"),
        }
        for method, (policy, workflow) in checks.items():
            name = "val_" + method.replace(", ", "_").replace(" ", "_")
            result = self.evaluate(policy, workflow, name, split="val")
            self.record(_row("warmstart", method, 0, result, None))
        self.record({"part": "warmstart", "env": ENV_ID, "method": "tool completions", "seed": 0,
                     **tool_completion_shares(team, self.args.val_episodes)})  # fmt: skip

    def tool_after_rl(self) -> None:
        """Part `mechanism`: what the per-role AT-GRPO runs' tool agents write after RL (as in `warmstart`)."""
        from pettingllms.runs.layout import RunLayout

        for seed in self.args.seeds:
            folder = self.args.runs / f"main_mas+at-grpo-per-role_s{seed}"
            checkpoint = RunLayout(folder).latest_intact(log=lambda _: None) if folder.is_dir() else None
            if checkpoint is not None:
                shares = tool_completion_shares(checkpoint.model("tool"), self.args.val_episodes)
                self.record({"part": "mechanism", "env": ENV_ID, "method": "tool completions after AT-GRPO (per role)",
                             "seed": seed, **shares})  # fmt: skip

    def main_table(self) -> None:
        for seed in self.args.seeds:  # seed by seed: an interrupted study has every row for its first seeds
            for method in self.args.methods:
                if method in ("single", "mas"):
                    self.untrained_row(method, seed)
                else:
                    workflow, flags = method_flags(method)
                    self.trained_row("main", method, seed, flags, workflow)

    def ablations(self) -> None:
        _, base = method_flags("mas+at-grpo-per-role")
        for seed in self.args.ablation_seeds:
            for name, (flags, env_kwargs) in ABLATIONS.items():
                if not flags and not env_kwargs:  # the default setting: the main table's per-role run
                    self.trained_row("main", "mas+at-grpo-per-role", seed, base, "mas")
                    reference = next(
                        r for r in self.rows
                        if r["part"] == "main" and r["method"] == "mas+at-grpo-per-role" and r["seed"] == seed
                    )  # fmt: skip
                    self.record({**reference, "part": "ablations", "method": name})
                else:
                    self.trained_row("ablations", name, seed, [*base, *flags], "mas", env_kwargs)


def tool_completion_shares(model: Path, episodes: int) -> dict:
    """What the team warm start's tool agent writes on the first turn of `episodes` validation grids: the share
    of programs and of exact correct BFS programs, greedy and sampled (temperature 1, 4 samples per grid)."""
    import pettingllms
    from pettingllms.backends.base import SamplingConfig
    from pettingllms.backends.hf import HFPolicy
    from pettingllms.models.tool_programs import BFS, as_tool_call

    env = pettingllms.make(ENV_ID, workflow="mas", **ENV_KWARGS)
    prompts = []
    for seed in range(episodes):
        env.reset(seed=seed, options={"split": "val"})
        prompts.append(str(env.observe("tool")))
    env.close()
    policy = HFPolicy.from_pretrained(model, seed=0, max_batch_rows=64)
    shares = {}
    for label, temperature, n in (("greedy", 0.0, 1), ("sampled", 1.0, 4)):
        sampling = SamplingConfig(
            temperature=temperature, max_new_tokens=MAX_COMPLETION_TOKENS, stop=("</answer>",)
        )
        texts = [g.text for group in policy.generate(prompts, n, sampling) for g in group]
        shares[f"{label}_program_share"] = float(np.mean([t.lstrip().startswith("```") for t in texts]))
        shares[f"{label}_correct_bfs_share"] = float(
            np.mean([t.strip() == as_tool_call(BFS).strip() for t in texts])
        )
    return shares


def _row(part: str, method: str, seed: int, result: dict, folder: Path | None) -> dict:
    row = {
        "part": part, "env": ENV_ID, "method": method, "seed": seed, "success_rate": result["success_rate"],
        "episodes": result["episodes"], "interval_95": result.get("ci95"),
        "parse_error_rate": result.get("parse_error_rate"), "eval_wall_s": result.get("wall_time_s"),
    }  # fmt: skip
    if "per_episode" in result:  # one 0/1 per suite episode, in suite order: for paired comparisons
        row["episode_success"] = "".join(str(int(s)) for s in result["per_episode"]["success"])
    if folder is not None:
        metrics = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
        row["steps"] = metrics[-1]["step"]
        row["sampled_completions"] = metrics[-1]["train/completions_total"]
        row["curve"] = [  # [step, completions sampled so far, validation success]
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
    """Mean success over seeds ± the sample standard deviation (ddof=1), the seeds' 95% t-interval, and n."""
    values = [r["success_rate"] for r in matching(rows, **match)]
    if not values:
        return "—"
    summary = seed_summary(values)
    if summary["std"] is None:
        return f"{100 * summary['mean']:.1f} (n=1)"
    low, high = summary["ci95"]
    return (f"{100 * summary['mean']:.1f} ± {100 * summary['std']:.1f} [{100 * low:.1f}, {100 * high:.1f}] "
            f"(n={summary['n']})")  # fmt: skip


def per_episode(rows: list[dict], **match) -> np.ndarray | None:
    """Each suite episode's success averaged over the matching rows' seeds (None without per-episode results)."""
    found = [r["episode_success"] for r in matching(rows, **match) if "episode_success" in r]
    if not found or len({len(f) for f in found}) != 1:
        return None
    return np.array([[int(c) for c in f] for f in found], dtype=np.float64).mean(axis=0)


def best_baseline(rows: list[dict]) -> str | None:
    """The baseline row with the highest mean success."""
    means = {m: np.mean([r["success_rate"] for r in matching(rows, method=m)]) for m in BASELINES
             if matching(rows, method=m)}  # fmt: skip
    return max(means, key=means.get) if means else None


def paired_lines(rows: list[dict], methods: tuple[str, ...], reference_method: str | None) -> list[str]:
    """Markdown rows: each of `methods` against `reference_method`, paired per episode."""
    reference = per_episode(rows, method=reference_method) if reference_method else None
    lines = []
    for method in methods:
        ours = per_episode(rows, method=method)
        if ours is None or reference is None or ours.shape != reference.shape:
            continue
        result = paired_comparison(ours, reference)
        low, high = result["ci95"]
        lines.append(
            f"| {method} | {reference_method} | {100 * result['difference']:+.1f} | "
            f"[{100 * low:+.1f}, {100 * high:+.1f}] | {result['p_value']:.2g} ({result['test']}) | "
            f"{result['episodes']} |"
        )
    return lines


def span(values: list[float]) -> str:
    """ "a-b" for the range of `values` (rounded to integers), or "a" when they round alike."""
    low, high = f"{min(values):.0f}", f"{max(values):.0f}"
    return low if low == high else f"{low}-{high}"


def budget(rows: list[dict], **match) -> str:
    values = [r["sampled_completions"] for r in matching(rows, **match) if "sampled_completions" in r]
    return f"{np.mean(values):.0f}" if values else "0 (no RL)"


def steps(rows: list[dict], **match) -> str:
    values = [r["steps"] for r in matching(rows, **match) if "steps" in r]
    return f"{np.mean(values):.1f}" if values else "0"


def plot_curves(rows: list[dict], path: Path, args: argparse.Namespace) -> None:
    """Learning curves (validation success against sampled completions) of the main table's runs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 4.5))
    trained = [r for r in rows if r["part"] == "main" and "curve" in r]
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
    axis.set_ylabel(f"greedy success (%), {args.curve_episodes} validation grids")
    axis.set_title(f"{ENV_ID} {json.dumps(ENV_KWARGS)}, budget {args.budget} (mean, min-max over seeds)")
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def write_report(rows: list[dict], args: argparse.Namespace, results_md: Path) -> None:
    curves = args.out.with_name("miniature_curves.png")
    if any("curve" in r for r in rows if r["part"] == "main"):
        plot_curves(rows, curves, args)
    checks = [r for r in rows if r["part"] == "warmstart"]
    main = [r for r in rows if r["part"] == "main"]
    ablations = [r for r in rows if r["part"] == "ablations"]
    runs = {r["run"]: r.get("train_wall_s") or 0.0 for r in rows if "run" in r}  # each run once
    lines = [
        START,
        "## Miniature reproduction: MAS + AT-GRPO against single-agent and trajectory-GRPO baselines",
        "",
        f"The built-in tiny model on CPU, `{ENV_ID}` with `{json.dumps(ENV_KWARGS)}`. The team's tool agent can run code: its warm start "
        f"mixes a compact BFS program (reads the map on standard input) with imperfect variants and direct answers "
        f"(programs {TEAM_WARM_START['tool_programs']:.0%} of its demonstrations, {TEAM_WARM_START['program_bugs']:.0%} "
        "of them imperfect); the single agent cannot run code. Each workflow has its own warm start, "
        f"{DEMOS_PER_ROLE} demonstrations per role and {SINGLE_WARM_START['sft_steps']} SFT steps per role. Every RL "
        f"run stops at a budget of {args.budget} sampled completions (the step that reaches it completes), K=4, lr "
        "1e-4, `scale_rewards: none`, temperature 1.0. Success rate in % on "
        f"{args.eval_episodes} evaluation-split grids (greedy, `pettingllms-eval`, the same suite for every row): mean "
        "± sample std (ddof=1) over seeds, the seeds' 95% t-interval, n. Rows without RL are one deterministic model "
        "on one suite, so their seeds agree.",
        "",
        "Regenerate: `.venv/bin/python scripts/reproduce_miniature.py` (resumable; rows in "
        "`docs/results/miniature.json`, runs in `runs/miniature/`; `--report` rebuilds this section). Learning "
        f"curves and every choice of recipe use the validation split ({args.curve_episodes} grids per point), never "
        "the reported suite.",
    ]
    if checks:
        lines += ["", f"### Before RL (validation split, {args.val_episodes} grids, greedy)", "",
                  "| warm start | success % |", "|---|---|"]  # fmt: skip
        for method in ("single", "mas", "mas, oracle tool"):
            lines.append(f"| {method} | {cell(checks, method=method)} |")
        shares = next(iter(matching(checks, method="tool completions")), None)
        if shares:
            lines += ["", "What the team's tool agent writes on the first turn: "
                      f"greedy, {100 * shares['greedy_program_share']:.0f}% programs "
                      f"({100 * shares['greedy_correct_bfs_share']:.0f}% the correct BFS); sampled at temperature 1, "
                      f"{100 * shares['sampled_program_share']:.0f}% programs "
                      f"({100 * shares['sampled_correct_bfs_share']:.0f}% the correct BFS)."]  # fmt: skip
    lines += ["", "### Main table", "",
              "| method | success % | sampled completions per run | optimizer steps | paper (Qwen3-1.7B) |",
              "|---|---|---|---|---|"]  # fmt: skip
    paper = {"single": "5", "single+grpo": "11", "mas": "10", "mas+trajectory-grpo": "—",
             "mas+at-grpo-shared": "96", "mas+at-grpo-per-role": "97"}  # fmt: skip
    for method in MAIN_ROWS:
        lines.append(f"| {method} | {cell(main, method=method)} | {budget(main, method=method)} "
                     f"| {steps(main, method=method)} | {paper[method]} |")  # fmt: skip
    paired = paired_lines(main, ("mas+at-grpo-shared", "mas+at-grpo-per-role"), best_baseline(main))
    paired += paired_lines(main, ("mas+at-grpo-shared", "mas+at-grpo-per-role"), "mas+trajectory-grpo")
    if paired:
        lines += ["", "Paired per episode (each episode's success averaged over seeds; 95% paired bootstrap "
                  "interval; McNemar's exact test with one seed, a sign-flip test otherwise; a p-value above 0.05 "
                  "means the difference is within noise):", "",
                  "| method | against | difference (points) | 95% interval | p-value | episodes |",
                  "|---|---|---|---|---|---|", *paired]  # fmt: skip
    after = [r for r in rows if r["part"] == "mechanism"]
    if after:
        greedy = span([100 * r["greedy_correct_bfs_share"] for r in after])
        sampled = span([100 * r["sampled_correct_bfs_share"] for r in after])
        lines += ["", f"After per-role AT-GRPO ({len(after)} seeds), the tool agent writes the correct BFS on the first "
                  f"turn of {greedy}% of validation grids greedily and in {sampled}% of samples at temperature 1 "
                  "(the warm start: see above)."]  # fmt: skip
    if curves.is_file():
        lines += ["", "![learning curves](results/miniature_curves.png)"]
    if ablations:
        lines += ["", "### Ablations (`mas+at-grpo-per-role`, one knob at a time)", "",
                  "| knob | setting | success % | sampled completions per run |", "|---|---|---|---|"]  # fmt: skip
        for name in ABLATIONS:
            knob, value = name.split("=", 1)
            lines.append(
                f"| {knob} | {value} | {cell(ablations, method=name)} | {budget(ablations, method=name)} |"
            )
        paired = paired_lines(ablations, tuple(n for n in ABLATIONS if n != "commit=greedy"), "commit=greedy")
        if paired:
            lines += ["", "| setting | against | difference (points) | 95% interval | p-value | episodes |",
                      "|---|---|---|---|---|---|", *paired]  # fmt: skip
    if runs:
        lines += ["", f"Wall time on this 2-core CPU: {sum(runs.values()) / 60:.1f} minutes of training over "
                  f"{len(runs)} runs ({np.mean(list(runs.values())):.0f} s per run)."]  # fmt: skip
    lines += ["", END]
    replace_section(results_md, START, END, "\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--parts", nargs="+", default=["warmstart", "main", "mechanism", "ablations"],
                        choices=["warmstart", "main", "mechanism", "ablations"], help="run in this order")  # fmt: skip
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--methods", nargs="+", default=list(MAIN_ROWS), choices=MAIN_ROWS,
                        help="the main table's rows to run (the others keep their recorded rows)")  # fmt: skip
    parser.add_argument("--ablation_seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--budget", type=int, default=5000, help="sampled completions per training run")
    parser.add_argument("--max_steps", type=int, default=200, help="cap on optimizer steps per run")
    parser.add_argument("--curve_every", type=int, default=10, help="evaluate every N steps for the curves")
    parser.add_argument("--curve_episodes", type=int, default=50, help="validation grids per curve point")
    parser.add_argument(
        "--val_episodes", type=int, default=200, help="validation grids of the warm-start checks"
    )
    parser.add_argument("--eval_episodes", type=int, default=300, help="pettingllms-eval suite size")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--runs", type=Path, default=RUNS, help="folder of the runs and evaluations")
    parser.add_argument("--results_md", type=Path, default=ROOT / "docs" / "results.md")
    parser.add_argument("--report", action="store_true", help="only rebuild the report from --out")
    parser.add_argument(
        "--demos_per_role", type=int, default=DEMOS_PER_ROLE, help="warm-start demonstrations per role"
    )
    parser.add_argument(
        "--warm_start_steps",
        type=int,
        default=None,
        help="SFT steps of both warm starts (default: the study's)",
    )
    args = parser.parse_args()
    study = Study(args)
    if not args.report:
        started = time.perf_counter()
        parts = {
            "warmstart": study.warm_start_checks,
            "main": study.main_table,
            "mechanism": study.tool_after_rl,
            "ablations": study.ablations,
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
