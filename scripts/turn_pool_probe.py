"""What pooling both agents' candidates of a turn in one group (turn-only grouping) does to their advantages.

    .venv/bin/python scripts/turn_pool_probe.py --out docs/results/turn_pool_probe.json  # seeds 0-4
    .venv/bin/python scripts/turn_pool_probe.py --seeds 0 --budget 250 --runs /tmp/probe

The grouping study's turn-only runs find the tool program faster than per-role AT-GRPO, unlike the paper's (52
against 96). With `scale_rewards: none` the two differ in one thing only: a candidate's baseline is the mean reward
of every candidate of its turn (both agents') instead of its own agent's (per-agent statistics inside turn groups,
Dr. MAS, form exactly AT-GRPO's groups). So an agent's candidates of one turn get the advantage AT-GRPO gives them
plus one constant, the shift m_agent - m_pooled: positive for the agent whose candidates earned more that turn,
negative for the other. The shift leaves the order of an agent's candidates as it is but adds that constant times
the sum of their loss-weighted log-probability gradients: in expectation zero under `dr_grpo` (a constant divisor),
and c * grad E[1/L] under `grpo`, which divides each completion's loss by its own length L (a negative shift moves
the agent toward longer completions). In a group where all of an agent's candidates earned the same reward,
AT-GRPO gives them no signal and turn-only grouping gives them the shift alone.

This reads the rollout dumps of the grouping study's `pooling` runs (`scripts/grouping_study.py --parts
pooling`: its task, flags and warm start; a run missing from `--runs` is trained first, to `--budget` sampled
completions) and reports, for turn-only grouping under each loss, per agent and phase of the run
(`pooling_shifts`): the turn groups where both agents have candidates, the mean shift and the share of groups
where it is negative, the share where the agent's candidates all tie and the shift gives them a signal, the mean
|shift| against the mean |AT-GRPO advantage|, the share of advantages whose sign it changes, and the share of
solving programs credited positively per agent and pooled. Each dumped advantage is checked against the pooled one
recomputed here. It also reports the tool agent's mean completion length per seed and phase in every pooling run,
and turn-only's minus per-role AT-GRPO's under each loss (`length_leads`). It records nothing on the ledger (the
study records the runs' evaluations); the figures go to `--out` (JSON) and stdout (markdown).
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from research import cycle

TOLERANCE = 1e-6
"""How far a dumped advantage may lie from the pooled one recomputed here (float32 rewards, float64 means)."""


def pooling_shifts(
    rows: Iterable[dict[str, Any]], *, check_advantages: bool = True
) -> dict[str, dict[str, Any]]:
    """Per agent, the figures of the module docstring over the turn groups of `rows` (rollout dump rows of a
    turn-grouped run with `scale_rewards: none`: `step`, `group_id`, `agent`, `reward`, `advantage`, and `program`
    where the env reports one) in which two agents or more have candidates.

    An agent's shift in a group is m_agent - m_pooled, the pooled advantage minus the per-agent one of each of its
    candidates; it "ties" when all its candidates' rewards are equal. `check_advantages` raises ValueError where a
    row's dumped advantage is not its reward minus its group's mean (the dump is not a turn-grouped run's with
    `scale_rewards: none`). Keys per agent: `groups`, `mean_shift`, `negative_share`, `tied_share`,
    `tied_signal_share` (tied and a nonzero shift), `shift_to_advantage` (mean |shift| over mean |per-agent
    advantage|, None where every candidate tied), `flip_share` (of the candidates with a nonzero per-agent
    advantage, the share whose pooled advantage is zero or of the other sign; None where there are none), and for
    an agent whose candidates' programs solved the instance: `solving` (how many) and `solving_positive`, the
    share of them with a positive advantage per agent (`per_agent`) and pooled (`pooled`)."""
    groups: dict[tuple[Any, str], list[dict]] = defaultdict(list)
    for row in rows:
        groups[(row["step"], row["group_id"])].append(row)
    per_agent: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for key, members in groups.items():
        pooled_mean = statistics.fmean(row["reward"] for row in members)
        if check_advantages:
            for row in members:
                if abs(row["advantage"] - (row["reward"] - pooled_mean)) > TOLERANCE:
                    raise ValueError(
                        f"group {key}: advantage {row['advantage']} is not reward {row['reward']} minus the group "
                        f"mean {pooled_mean}: not a turn-grouped dump with scale_rewards none"
                    )
        by_agent: dict[str, list[dict]] = defaultdict(list)
        for row in members:
            by_agent[row["agent"]].append(row)
        if len(by_agent) < 2:
            continue
        for agent, candidates in by_agent.items():
            rewards = [row["reward"] for row in candidates]
            agent_mean = statistics.fmean(rewards)
            figures = per_agent[agent]
            figures["shift"].append(agent_mean - pooled_mean)
            figures["tied"].append(max(rewards) == min(rewards))
            for row in candidates:
                own, pooled = row["reward"] - agent_mean, row["reward"] - pooled_mean
                figures["advantage"].append(abs(own))
                if own != 0:
                    figures["flipped"].append(own * pooled <= 0)
                if row.get("program") == "solves":
                    figures["solving"].append((own > 0, pooled > 0))
    return {agent: _summary(figures) for agent, figures in sorted(per_agent.items())}


def _summary(figures: dict[str, list]) -> dict[str, Any]:
    shifts, tied, flipped, solving = figures["shift"], figures["tied"], figures["flipped"], figures["solving"]
    mean_advantage = statistics.fmean(figures["advantage"])
    summary = {
        "groups": len(shifts),
        "mean_shift": statistics.fmean(shifts),
        "negative_share": sum(shift < 0 for shift in shifts) / len(shifts),
        "tied_share": sum(tied) / len(shifts),
        "tied_signal_share": sum(t and s != 0 for t, s in zip(tied, shifts, strict=True)) / len(shifts),
        "shift_to_advantage": (
            statistics.fmean(abs(shift) for shift in shifts) / mean_advantage if mean_advantage > 0 else None
        ),
        "flip_share": sum(flipped) / len(flipped) if flipped else None,
    }
    if solving:
        summary["solving"] = len(solving)
        summary["solving_positive"] = {
            "per_agent": sum(own for own, _ in solving) / len(solving),
            "pooled": sum(pooled for _, pooled in solving) / len(solving),
        }
    return summary


def phases(rows: list[dict], bounds: tuple[int, ...]) -> dict[str, list]:
    """`rows` split by `drawn_before` (the sampled completions the run had drawn when the row's step began): one
    list per phase "[lo, hi)" of consecutive `bounds`; rows outside every phase are left out."""
    split: dict[str, list] = {f"[{lo}, {hi})": [] for lo, hi in zip(bounds, bounds[1:])}
    for row in rows:
        for lo, hi in zip(bounds, bounds[1:]):
            if lo <= row["drawn_before"] < hi:
                split[f"[{lo}, {hi})"].append(row)
    return split


def _markdown(report: dict) -> str:
    lines = [
        "| method | phase (completions drawn) | agent | turn groups | mean shift | shift < 0 | all tied | tied, given "
        "a signal | mean abs shift / mean abs AT-GRPO advantage | advantage sign changed | solving programs: "
        "positive per agent / pooled |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for method, figures in report["shifts"].items():
        for phase, agents in figures["phases"].items():
            for agent, s in agents.items():
                ratio = "—" if s["shift_to_advantage"] is None else f"{s['shift_to_advantage']:.2f}"
                flips = "—" if s["flip_share"] is None else f"{100 * s['flip_share']:.0f}%"
                solving = "—"
                if "solving" in s:
                    positive = s["solving_positive"]
                    solving = f"{100 * positive['per_agent']:.0f}% / {100 * positive['pooled']:.0f}% of {s['solving']}"
                lines.append(
                    f"| {method} | {phase} | {agent} | {s['groups']} | {s['mean_shift']:+.3f} "
                    f"| {100 * s['negative_share']:.0f}% | {100 * s['tied_share']:.0f}% "
                    f"| {100 * s['tied_signal_share']:.0f}% | {ratio} | {flips} | {solving} |"
                )
    lines += [
        "",
        "| phase (completions drawn) | loss | tool's mean completion length, turn-only minus per-role, per seed "
        "(characters) |",
        "|---|---|---|",
    ]
    for phase, figures in report["tool_lengths"].items():
        for loss, leads in figures["turn_only_minus_per_role"].items():
            per_seed = ", ".join(f"{lead:+.0f}" for _, lead in sorted(leads.items()))
            lines.append(f"| {phase} | {loss} | {per_seed} |")
    return "\n".join(lines)


def _read_run(folder: Path, seed: int) -> list[dict]:
    """A run's dumped rows, each with `step` made (seed, step) and `drawn_before`: the completions drawn before its
    step (metrics.jsonl's `train/completions_total` of the step before; steps count from 1). Every trained step
    must have its dump (`dump_rollouts`)."""
    from pettingllms.runs.layout import RunLayout

    layout = RunLayout(folder)
    totals = {0: 0}
    for record in cycle.read_metrics(layout.metrics):
        if "train/completions_total" in record:
            totals[record["step"]] = record["train/completions_total"]
    rows = []
    for step in sorted(totals)[1:]:
        dump = layout.rollout_dump(step)
        if not dump.is_file():
            raise FileNotFoundError(f"{dump} is missing: the run was not trained with --dump_rollouts true")
        for line in dump.read_text().splitlines():
            rows.append({**json.loads(line), "step": (seed, step), "drawn_before": totals[step - 1]})
    return rows


def mean_lengths(rows: Iterable[dict[str, Any]], agent: str) -> dict[Any, float]:
    """Per seed (the first element of each row's `step`), the mean length in characters of `agent`'s completions."""
    lengths: dict[Any, list[int]] = defaultdict(list)
    for row in rows:
        if row["agent"] == agent:
            lengths[row["step"][0]].append(len(row["completion"]))
    return {seed: statistics.fmean(values) for seed, values in sorted(lengths.items())}


def length_leads(
    runs: dict[str, list[dict]], bounds: tuple[int, ...], agent: str = "tool"
) -> dict[str, dict]:
    """Per phase: `agent`'s mean completion length per method and seed, and turn-only's minus per-role AT-GRPO's
    per seed under each loss (`grpo`, `dr_grpo`)."""
    split = {method: phases(rows, bounds) for method, rows in runs.items()}
    report = {}
    for phase in split[next(iter(split))]:
        means = {method: mean_lengths(split[method][phase], agent) for method in runs}
        leads = {}
        for loss, suffix in (("grpo", ""), ("dr_grpo", "+dr_grpo")):
            ours, theirs = means[f"turn-only{suffix}"], means[f"at-grpo-per-role{suffix}"]
            leads[loss] = {seed: ours[seed] - theirs[seed] for seed in sorted(ours.keys() & theirs.keys())}
        report[phase] = {"mean_chars": means, "turn_only_minus_per_role": leads}
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--budget", type=int, default=1000, help="sampled completions of a run trained here")
    parser.add_argument("--bounds", type=int, nargs="+", default=[0, 250, 500, 1000],
                        help="phase bounds in completions drawn before a step")  # fmt: skip
    parser.add_argument("--runs", type=Path, default=None, help="the study's runs folder (default: its own)")
    parser.add_argument(
        "--demos_per_role", type=int, default=None, help="the study's warm start (its default)"
    )
    parser.add_argument(
        "--warm_start_steps", type=int, default=None, help="the study's warm start (its default)"
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)

    import grouping_study as study_module  # scripts/ is on sys.path: this file runs as a script

    demos_per_role = args.demos_per_role or study_module.WARM_START["demos_per_role"]
    study = study_module.Study(argparse.Namespace(
        out=study_module.OUT, task=next(iter(study_module.TASKS)), runs=args.runs or study_module.RUNS,
        budget=args.budget, max_steps=200, demos_per_role=demos_per_role, warm_start_steps=args.warm_start_steps,
    ))  # fmt: skip
    runs: dict[str, list[dict]] = {}
    for method in study_module.POOLING:
        runs[method] = [
            row for seed in args.seeds for row in _read_run(study.pooling_run(method, seed), seed)
        ]
    bounds = tuple(args.bounds)
    report = {
        "seeds": args.seeds, "budget": args.budget, "warm_start": study.warm_start(study.env_kwargs).name,
        "shifts": {
            method: {
                "whole_run": pooling_shifts(runs[method]),
                "phases": {phase: pooling_shifts(rows) for phase, rows in phases(runs[method], bounds).items()
                           if rows},
            }
            for method in ("turn-only", "turn-only+dr_grpo")
        },
        "tool_lengths": length_leads(runs, bounds),
    }  # fmt: skip
    print(_markdown(report))
    if args.out:
        args.out.write_text(json.dumps(report, indent=2, allow_nan=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
