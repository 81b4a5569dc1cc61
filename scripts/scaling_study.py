"""The paper's scaling study in miniature: team size and reward shaping, tiny model, CPU, 6 seeds under `dr_grpo`.

    .venv/bin/python scripts/scaling_study.py                 # everything (resumes finished and killed runs)
    .venv/bin/python scripts/scaling_study.py --sizes 1 2 --seeds 0 --budget 600 --eval_episodes 20  # a short run
    .venv/bin/python scripts/scaling_study.py --sizes 1 --seeds 0 --budget 2 --eval_episodes 2 \
        --model_name_or_path MODEL --runs /tmp/scaling --out /tmp/scaling/rows.json --results_md /tmp/results.md  # smoke
    .venv/bin/python scripts/scaling_study.py --report --formats  # the report, with what each trained team wrote

On the miniature's task (`plan-path-v0`, 7x7 grids: `SETTING`), where the two-agent team is known to learn (from
14% to 98% of the validation grids within ~1,000 sampled completions, `docs/results.md`, "Miniature
reproduction"), two parts:

1. Team size: `workflow="ensemble"` with N = 1, 2, 3, 5, 7 agents (N - 1 tool proposers sharing one policy, and the
   aggregator with its own), all starting from one warm start whose demonstrations cover every size and mix
   solver programs into the tool agents' answers as the miniature's do (`WARM_START`), evaluated before AT-GRPO
   (the untrained team) and after an equal budget of `--budget` sampled completions (`max_completions`; the step
   that reaches it completes), with ~`--agent_instances` instance-agents per step (`instances_per_step =
   round(agent_instances / N)`).
2. Reward: the two-agent team (N = 2) with `reward="outcome"` (local rewards zeroed, only the team's success
   reward) beside its shaped row of part 1.

Every run trains under `LOSS` (`dr_grpo`, the loss the other studies settled on: under `grpo` the first, 3-seed study
of 2026-12-03 saw seeds of N = 5 and 7 collapse). Its rows are set aside by `RULE`, kept on the ledger, and shown
in the report as superseded.

Every run is a `pettingllms-train` run under `runs/scaling/` (checkpoints every 5 steps, resumed if killed); its
evaluations are the trainer's own on the evaluation split (the same suite as `pettingllms-eval`). Rows
(`{"env", "env_kwargs", "num_agents", "method", "reward", "seed", "success_rate", ...}`) are appended to the ledger
`docs/results/ledger.jsonl` after every run, and the table `docs/results/scaling.json` is rebuilt from it by `RULE`
(rows of other settings, from before the rerun, are set aside there, not deleted), the plot goes to
`docs/results/scaling.png`, and the tables to the scaling section of `docs/results.md`. `--formats` reads each
trained run's last evaluation in its folder (what the aggregator and the proposers wrote on the suite) into
`docs/results/scaling_formats.json`, which the report tables beside the figure.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from research import cycle, ledger
from research.markdown import replace_section, seed_cell
from research.method_comparison import clipped, found, p_words
from research.stats import seed_comparison, seed_summary

ROOT = Path(__file__).resolve().parents[1]
ENV_ID = "plan-path-v0"
SETTING = {"size": 7}
START, END = "<!-- scaling:start -->", "<!-- scaling:end -->"
WARM_START = {"workflow": "ensemble", "demos_per_role": 3200, "sft_steps": 400, "tool_programs": 0.4,
              "program_bugs": 0.4, "eval_episodes": 0, "tag": "scale7"}  # fmt: skip
"""The team warm start of the miniature (`scripts/reproduce_miniature.py`, `TEAM_WARM_START`), for ensembles."""
MAX_COMPLETION_TOKENS = 112
"""The miniature's plan-path budget: the solver program's tool call fits, with room."""
LOSS = "dr_grpo"
"""Every run's `loss_type`, named on its rows and in its run folder's name."""


def run_args(name: str, seed: int, args: argparse.Namespace, extra: list[str]) -> list[str]:
    return [
        "--output_dir", str(args.runs / name), "--env_id", ENV_ID, "--seed", str(seed),
        "--max_steps", str(args.max_steps), "--max_completions", str(args.budget),
        "--eval_episodes", str(args.eval_episodes), "--save_steps", "5", "--resume", "true",
        "--max_completion_length", str(MAX_COMPLETION_TOKENS), "--scale_rewards", "none",
        "--learning_rate", "1e-4", "--temperature", "1.0", "--per_device_train_batch_size", "32",
        "--eval_every", "0", "--loss_type", LOSS, *extra,
    ]  # fmt: skip


def run_result(folder: Path, instances_per_step: int) -> dict:
    """A trained run's step-0 and final evaluations and its budget, from its metrics.jsonl."""
    rows = cycle.read_metrics(folder / "metrics.jsonl")
    evaluations = [r for r in rows if "eval/success_rate" in r]
    return {"before": evaluations[0]["eval/success_rate"], "after": evaluations[-1]["eval/success_rate"],
            "sampled_completions": rows[-1].get("train/completions_total", 0), "steps": rows[-1]["step"],
            "instances_per_step": instances_per_step, "run": _shown_path(folder)}  # fmt: skip


def run_team(args: argparse.Namespace, model: str, size: int, reward: str, seed: int) -> list[dict]:
    """The rows of the team of `size` agents under `reward` and `seed`, from `model`: its run (`cycle.train`,
    resumed if it has a checkpoint; a run that ended with its final evaluation is not trained again, whatever
    budget it ran to) evaluated before and after."""
    kwargs = {**SETTING, "num_agents": size, **({"reward": reward} if reward != "shaped" else {})}
    instances = max(1, round(args.agent_instances / size))
    extra = ["--model_name_or_path", model, "--workflow", "ensemble", "--env_kwargs", json.dumps(kwargs),
             "--agent_policies", json.dumps({"tool_*": "proposer", "aggregator_0": "aggregator"}),
             "--instances_per_step", str(instances)]  # fmt: skip
    folder = cycle.train(run_args(f"ensemble_n{size}_{reward}_{LOSS}_s{seed}", seed, args, extra), caps=False)
    return _rows(size, reward, seed, run_result(folder, instances))


def _shown_path(folder: Path) -> str:
    """`folder` relative to the repository when it is inside it (the committed rows), else as given."""
    folder = folder.resolve()
    return str(folder.relative_to(ROOT)) if folder.is_relative_to(ROOT) else str(folder)


RULE = ledger.Rule(
    "scaling",
    ("num_agents", "reward", "seed", "method"),
    keep=lambda row: row.get("env_kwargs") == SETTING and row.get("loss") == LOSS,
    refusal=f"recorded before the study's rerun under {LOSS} at 6 seeds (issue 59): a row of the first study "
    f"under grpo at {SETTING} (2026-12-03, 3 seeds, no code commit), or of a setting before it",
)
"""How the table is built from the ledger beside it: the rows of today's setting and loss, one per team size,
reward, seed and method, the last recorded (`research.ledger`)."""


def superseded(out: Path) -> list[dict]:
    """The rows `RULE` sets aside that the first study measured at `SETTING` (under grpo), for the report."""
    entries = ledger.read_ledger(out.with_name(ledger.LEDGER_NAME))
    return [
        entry.row
        for entry, _ in ledger.select(entries, RULE).set_aside
        if entry.row.get("env_kwargs") == SETTING
    ]


FORMATS = "scaling_formats.json"
"""Beside the table: what each trained team wrote on the evaluation suite, from its run folder (`--formats`)."""


def eval_formats(folder: Path) -> dict[str, float | None]:
    """From the last evaluation of the run in `folder` (its metrics.jsonl, `training_evaluation_metrics`):
    `aggregator_truncated`, the share of the aggregator's steps on the evaluation suite that the token budget cut;
    `proposer_truncated`, the same share, the mean over the proposers; `solving_program`, the mean over the
    proposers of the share of episodes whose first proposal was a program that solves the grid. The proposers'
    figures are None for a team without one (N = 1)."""
    last = [r for r in cycle.read_metrics(folder / "metrics.jsonl") if "eval/success_rate" in r][-1]

    def proposers_mean(prefix: str) -> float | None:
        values = [value for key, value in last.items() if key.startswith(prefix)]
        return float(np.mean(values)) if values else None

    return {
        "aggregator_truncated": last["eval/truncated/aggregator_0"],
        "proposer_truncated": proposers_mean("eval/truncated/tool_"),
        "solving_program": proposers_mean("eval/solving_program/tool_"),
    }


def record_formats(rows: list[dict], out: Path) -> list[dict]:
    """`eval_formats` of the run of every trained row of `rows` (its `run`, relative to the repository unless
    absolute), with the row's team, reward, seed, success and run, written to `FORMATS` beside `out`; refuses,
    naming every one, runs whose folder is not on this machine (the folders are not committed)."""
    trained = [r for r in rows if r["method"] == "at-grpo"]
    folders = [ROOT / r["run"] for r in trained]  # an absolute `run` stays as it is
    missing = sorted(str(f) for f in folders if not (f / "metrics.jsonl").is_file())
    if missing:
        raise SystemExit(
            f"--formats reads each trained run's metrics.jsonl; {len(missing)} are not here: "
            + ", ".join(missing)
            + ". Run --formats on the machine that trained them (or retrain them)."
        )
    formats = [
        {
            **{k: r[k] for k in ("num_agents", "reward", "seed", "success_rate", "run")},
            **eval_formats(folder),
        }
        for r, folder in zip(trained, folders, strict=True)
    ]
    out.with_name(FORMATS).write_text(json.dumps(formats, indent=1) + "\n")
    return formats


def read_formats(rows: list[dict], out: Path) -> list[dict]:
    """The entries of `FORMATS` beside `out` that belong to a trained row of `rows` (same team, reward, seed and
    run); [] without the file."""
    path = out.with_name(FORMATS)
    if not path.is_file():
        return []
    key = ("num_agents", "reward", "seed", "run")
    current = {tuple(r[k] for k in key) for r in rows if r["method"] == "at-grpo"}
    return [f for f in json.loads(path.read_text()) if tuple(f[k] for k in key) in current]


def format_lines(formats: list[dict]) -> list[str]:
    """The table of what the trained teams (shaped rewards) wrote on the evaluation suite, per team size: each
    seed's success and the share of its aggregator's steps cut by the token budget, the proposers' share of
    solving first proposals and of cut steps (means over seeds); then, over the teams with proposers, the Pearson
    correlation of success with the aggregator's cut share."""
    shaped = sorted(
        (f for f in formats if f["reward"] == "shaped"), key=lambda f: (f["num_agents"], f["seed"])
    )
    lines = ["| N | per seed: success % / aggregator's steps cut % | proposers' first proposal a solving program, % "
             "| proposers' steps cut, % |", "|---|---|---|---|"]  # fmt: skip
    for size in sorted({f["num_agents"] for f in shaped}):
        runs = [f for f in shaped if f["num_agents"] == size]
        per_seed = ", ".join(
            f"s{f['seed']} {100 * f['success_rate']:.1f} / {100 * f['aggregator_truncated']:.1f}"
            for f in runs
        )
        proposers = [f for f in runs if f["solving_program"] is not None]
        solving, cut = (
            (f"{100 * np.mean([f[k] for f in proposers]):.1f}" if proposers else "— (no proposer)")
            for k in ("solving_program", "proposer_truncated")
        )
        lines.append(f"| {size} | {per_seed} | {solving} | {cut} |")
    teams = [f for f in shaped if f["solving_program"] is not None]
    if len(teams) > 2:
        r = np.corrcoef([f["success_rate"] for f in teams], [f["aggregator_truncated"] for f in teams])[0, 1]
        lines += ["", f"Over the {len(teams)} trained teams with proposers: success against the share of the "
                  f"aggregator's steps cut, Pearson r = {r:+.2f}."]  # fmt: skip
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 2, 3, 5, 7])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(6)))
    parser.add_argument("--rewards", nargs="+", default=["shaped", "outcome"], choices=["shaped", "outcome"],
                        help="shaped: every size of --sizes; outcome: the two-agent team's outcome-only row")  # fmt: skip
    parser.add_argument("--budget", type=int, default=2500, help="sampled completions per run")
    parser.add_argument("--max_steps", type=int, default=200, help="cap on optimizer steps per run")
    parser.add_argument("--agent_instances", type=int, default=16, help="instances x agents per step")
    parser.add_argument("--eval_episodes", type=int, default=300)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "scaling.json")
    parser.add_argument("--runs", type=Path, default=ROOT / "runs" / "scaling", help="folder of the runs")
    parser.add_argument("--results_md", type=Path, default=ROOT / "docs" / "results.md")
    parser.add_argument("--model_name_or_path", default=None,
                        help="the model every run starts from (default: the study's warm start, WARM_START)")  # fmt: skip
    parser.add_argument("--report", action="store_true", help="only rebuild the report from the ledger")
    parser.add_argument("--formats", action="store_true",
                        help=f"with --report: first rebuild {FORMATS} from the trained rows' run folders")  # fmt: skip
    args = parser.parse_args()
    if args.formats and not args.report:
        parser.error("--formats reads finished runs: give it with --report")
    rows = ledger.write_table(args.out, RULE) if args.report else ledger.table_rows(args.out, RULE)
    if args.formats:
        record_formats(rows, args.out)
    if not args.report:
        model = args.model_name_or_path or str(
            cycle.warm_start(
                ENV_ID, {"env_kwargs": SETTING, "log": print, **WARM_START}, keep=args.out.parent
            )
        )
        for seed in args.seeds:  # seed by seed: an interrupted study has every team size for its first seeds
            teams = [*((n, "shaped") for n in args.sizes), (2, "outcome")]
            for size, reward in (team for team in teams if team[1] in args.rewards):
                for row in run_team(args, model, size, reward, seed):
                    rows = cycle.record(args.out, RULE, row, warm_start=Path(model))
                write_report(rows, args)
    write_report(rows, args)
    print(f"wrote {args.out}, {args.out.with_suffix('.png')} and the scaling section of {args.results_md}")
    return 0


def write_report(rows: list[dict], args: argparse.Namespace) -> None:
    """The figure of the current rows (of the superseded ones while there are none) and the section."""
    old = superseded(args.out)
    if rows or old:
        plot(rows or old, args.out.with_suffix(".png"))
        write_section(rows, args, args.results_md, old, read_formats(rows, args.out))


def _rows(size: int, reward: str, seed: int, result: dict) -> list[dict]:
    base = {"env": ENV_ID, "env_kwargs": SETTING, "num_agents": size, "reward": reward, "seed": seed,
            "workflow": "ensemble", "loss": LOSS}  # fmt: skip
    budget = {k: result[k] for k in ("sampled_completions", "steps", "instances_per_step", "run")}
    return [
        {**base, "method": "untrained", "success_rate": result["before"]},
        {**base, "method": "at-grpo", "success_rate": result["after"], **budget},
    ]


def _stats(rows: list[dict], **match) -> tuple[float, float, int]:
    """Mean, sample std (ddof=1; 0 for one seed) and count of the matching rows' success rates (0s for none)."""
    values = [r["success_rate"] for r in rows if all(r.get(k) == v for k, v in match.items())]
    if not values:
        return 0.0, 0.0, 0
    summary = seed_summary(values)
    return summary["mean"], summary["std"] or 0.0, summary["n"]


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ensemble = [r for r in rows if r["reward"] == "shaped"]
    sizes = sorted({r["num_agents"] for r in ensemble})
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for method, marker in (("untrained", "o"), ("at-grpo", "s")):
        stats = [_stats(ensemble, num_agents=n, method=method) for n in sizes]
        left.errorbar(sizes, [100 * m for m, _, _ in stats], yerr=[100 * s for _, s, _ in stats], marker=marker,
                      capsize=3, label="warm start (no RL)" if method == "untrained" else "AT-GRPO")  # fmt: skip
    trained = [r for r in ensemble if r["method"] == "at-grpo"]
    left.scatter([r["num_agents"] + 0.08 for r in trained], [100 * r["success_rate"] for r in trained], s=12,
                 color="#DD8452", alpha=0.5, label="AT-GRPO, each seed")  # fmt: skip
    left.set_xlabel("agents in the team (N - 1 proposers + aggregator)")
    left.set_ylabel("success rate (%), mean ± sample std over seeds")
    left.set_title(f"{ENV_ID}: team size")
    left.set_xticks(sizes)
    left.legend()
    mas = [r for r in rows if r["num_agents"] == 2]
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


def _cell(rows: list[dict], **match) -> str:
    """Mean success ± sample std over seeds, with the seeds' 95% t-interval where there are two or more."""
    return seed_cell(
        [r["success_rate"] for r in rows if all(r.get(k) == v for k, v in match.items())], show_n=False
    )


def _gain(rows: list[dict], **match) -> str:
    """AT-GRPO minus the warm start, mean over the seeds that have both."""
    found = {
        (r["seed"], r["method"]): r["success_rate"]
        for r in rows
        if all(r.get(k) == v for k, v in match.items())
    }
    gains = [
        found[(s, "at-grpo")] - found[(s, "untrained")]
        for s, m in found
        if m == "at-grpo" and (s, "untrained") in found
    ]
    return f"{100 * np.mean(gains):+.1f}" if gains else "—"


def _team(size: int, reward: str = "shaped") -> dict:
    """The match of one side of a comparison: the team of `size` agents under `reward`."""
    return {"num_agents": size, "reward": reward}


COMPARISONS = (
    ("N = 2 minus N = 1", _team(2), _team(1), "gains"),
    ("N = 3 minus N = 2", _team(3), _team(2), "none"),
    ("N = 5 minus N = 3", _team(5), _team(3), "no gain"),
    ("N = 7 minus N = 3", _team(7), _team(3), "no gain"),
    ("outcome minus shaped (N = 2)", _team(2, "outcome"), _team(2), "none"),
)
"""The report's seed-level comparisons of trained teams: (label, one side's match, the other's, the prediction
of docs/results/preregistration_scaling.md: "gains" (the interval above 0), "none" (it holds 0) or "no gain" (it
holds 0 or lies below it))."""
PREDICTION_SEEDS = (0, 1, 2, 3, 4, 5)
"""The seeds the prediction is judged on: a comparison over fewer is shown, not judged."""
UNSEEN_SEEDS = (2, 3, 4, 5)
"""The seeds not yet run when the prediction was committed (seeds 0 and 1 were on the ledger)."""


def as_predicted(predicted: str, shown: str) -> bool:
    """Whether what a comparison shows (`found`) is what `COMPARISONS` predicted for it."""
    return shown in {"gains": {"gains"}, "none": {"none"}, "no gain": {"none", "loses"}}[predicted]


def comparison_lines(
    rows: list[dict], seeds: Sequence[int] | None = None, *, judge: bool = True
) -> list[str]:
    """One table row per comparison of `COMPARISONS` whose sides share seeds (of `seeds`, if given): the AT-GRPO
    rows compared over those seeds, paired (every run starts from the one warm start, so seed s of both sides
    shares its weights and seed), by `seed_comparison`: mean difference in points, the t-interval of the per-seed
    differences, the exact sign-flip p and each seed's difference; with `judge`, a last column: the prediction,
    and what was found once the comparison holds every seed it is judged on (`seeds`, else `PREDICTION_SEEDS`)."""
    judged_on = set(PREDICTION_SEEDS if seeds is None else seeds)
    lines = []
    for label, ours, theirs, predicted in COMPARISONS:
        a, b = ({r["seed"]: r["success_rate"] for r in rows if r["method"] == "at-grpo"
                 and all(r.get(k) == v for k, v in side.items())} for side in (ours, theirs))  # fmt: skip
        shared = sorted(set(a) & set(b) if seeds is None else set(a) & set(b) & set(seeds))
        if not shared:
            continue
        result = seed_comparison([a[s] for s in shared], [b[s] for s in shared], paired=True)
        interval = clipped(result["ci95"])
        shown = "—" if interval is None else f"[{100 * interval[0]:+.1f}, {100 * interval[1]:+.1f}]"
        per_seed = ", ".join(f"{round(100 * (a[s] - b[s])):+d}" for s in shared)
        line = f"| {label} | {100 * result['difference']:+.1f} {shown} | {p_words(result)} | {per_seed} |"
        if judge and judged_on <= set(shared):
            verdict = found(result)
            mark = "**as predicted**" if as_predicted(predicted, verdict) else "**not as predicted**"
            line += f" {predicted} / {verdict}: {mark} |"
        elif judge:
            line += f" {predicted} / judged at {len(judged_on)} seeds |"
        lines.append(line)
    return lines


def size_tables(rows: list[dict], *, predicted: bool) -> list[str]:
    """The team-size table, the two-agent team's shaped against outcome-only rewards, and the seed-level
    comparisons of `COMPARISONS` (those whose sides share seeds); `predicted`: with the prediction judged, on
    every seed and on `UNSEEN_SEEDS` alone (the rerun's rows; the superseded study had no prediction)."""
    shaped = [r for r in rows if r["reward"] == "shaped"]
    lines = [
        "| agents N | warm start (no RL) | AT-GRPO | gain | sampled completions per run | seeds |",
        "|---|---|---|---|---|---|",
    ]
    for size in sorted({r["num_agents"] for r in shaped}):
        trained = [r for r in shaped if r["num_agents"] == size and r["method"] == "at-grpo"]
        lines.append(
            f"| {size} | {_cell(shaped, num_agents=size, method='untrained')} | "
            f"{_cell(shaped, num_agents=size, method='at-grpo')} | {_gain(shaped, num_agents=size)} | "
            f"{np.mean([r['sampled_completions'] for r in trained]):.0f} | {len(trained)} |"
        )
    lines += ["", "The two-agent team (N = 2: one tool agent and the aggregator), shaped against outcome-only "
              "rewards:", "", "| reward | warm start (no RL) | AT-GRPO | gain |", "|---|---|---|---|"]  # fmt: skip
    for reward in ("shaped", "outcome"):
        match = _team(2, reward)
        lines.append(f"| {reward} | {_cell(rows, **match, method='untrained')} | "
                     f"{_cell(rows, **match, method='at-grpo')} | {_gain(rows, **match)} |")  # fmt: skip
    compared = comparison_lines(rows, judge=predicted)
    if not compared:
        return lines
    columns = "| comparison | difference [95% interval] | seed-level p | per seed |"
    lines += ["", "Trained teams compared over seeds, the replicates (every run starts from the one warm start, so "
              "seed s of both sides is paired): the mean of the per-seed differences in points with their 95% "
              "t-interval, the exact sign-flip test's p, and each seed's difference (seeds in order). The rows hold "
              "one success rate per run, so there is no bootstrap over the suite's grids."]  # fmt: skip
    if not predicted:
        return [*lines, "", columns, "|---|---|---|---|", *compared]
    header = [f"{columns} predicted / found |", "|---|---|---|---|---|"]
    lines[-1] += (" The last column sets the prediction (docs/results/preregistration_scaling.md, committed when "
                  "seeds 0 and 1 were in) against what the interval shows: gains (above 0), none (it holds 0), no "
                  "gain (it holds 0 or lies below it); loses (below 0).")  # fmt: skip
    return [*lines, "", *header, *compared, "", f"The same on seeds {', '.join(map(str, UNSEEN_SEEDS))} alone, "
            "the runs not seen when the prediction was written:", "", *header,
            *comparison_lines(rows, UNSEEN_SEEDS)]  # fmt: skip


def write_section(
    rows: list[dict],
    args: argparse.Namespace,
    results_md: Path,
    old: Sequence[dict] = (),
    formats: Sequence[dict] = (),
) -> None:
    """The scaling section of `results_md`: `rows` (the study under `LOSS`) and, below them, the superseded rows
    of the first study (`old`, `superseded`), each with its tables; the figure (`plot`) beside the rows it
    shows, the current ones where there are any; below the figure, what the trained teams wrote (`formats`,
    `read_formats`), where there is any."""
    seeds = sorted({r["seed"] for r in rows})
    figure = ["", "![scaling study](results/scaling.png)"]
    if formats:
        figure += ["", "What the trained teams wrote on the evaluation suite, from each run's last evaluation "
                   f"(`docs/results/{FORMATS}`, rebuilt from the run folders by `--report --formats`): a step "
                   "cut is a completion that ran to the token budget; a solving program is a first proposal "
                   "whose program solves the grid.", "", *format_lines(list(formats))]  # fmt: skip
    lines = [
        START,
        "## Scaling study: team size and outcome-only rewards",
        "",
        f"`{ENV_ID}` with `{json.dumps(SETTING)}` (the miniature's task), the built-in tiny model warm-started with "
        "solver programs in the tool agents' demonstrations, CPU; "
        + (f"seeds {', '.join(map(str, seeds))}; " if seeds else "")
        + f"AT-GRPO with `loss_type: {LOSS}` until {args.budget} sampled completions, K=4, lr 1e-4, "
        f"`scale_rewards: none`; ~{args.agent_instances} instance-agents per step (instances per step = "
        f"round({args.agent_instances} / N)); greedy evaluation on {args.eval_episodes} evaluation-split grids "
        "at step 0 and after training (two probes of one completion per agent and turn, beside the sampled "
        "completions of the budget). "
        "Success rate in %, mean ± sample std (ddof=1) over seeds [the seeds' 95% t-interval, clipped to [0, 100]].",
        "",
        "Regenerate: `.venv/bin/python scripts/scaling_study.py` (resumes; rows in `docs/results/scaling.json`; "
        "`--report` rebuilds this section; `--report --formats` first rereads the run folders).",
        "",
        *(
            [*size_tables(rows, predicted=True), *figure]
            if rows
            else [f"No run under `{LOSS}` yet: the rerun at 6 seeds (issue 59) has not started."]
        ),
    ]
    if old:
        lines += [
            "",
            "### Superseded: the first study (`loss_type: grpo`, 3 seeds, 2026-12-03)",
            "",
            "Its rows name no code commit and no warm start, and seeds of N = 5 and 7 collapsed under `grpo`: "
            "the rerun above replaces it. Its rows stay on the ledger, set aside (docs/ledger.md lists them).",
            "",
            *size_tables(list(old), predicted=False),
            *([] if rows else figure),
        ]
    lines += ["", END]
    replace_section(results_md, START, END, "\n".join(lines))


if __name__ == "__main__":
    raise SystemExit(main())
