"""The evaluation metrics as local Hugging Face `evaluate` modules, and the summary of a suite's episodes.

Each metric lives in `metrics/<name>/<name>.py` and loads with `evaluate.load(path)` from this folder, never from
the hub: `success_rate` (with a 95% Wilson interval), `turns_to_success`, `parse_error_rate` (per agent),
`tokens_per_episode`, `pass_at_k` (unbiased, for code). `summarize` applies them to a suite's episode records;
math's `accuracy` is the share of problems whose final team answer is correct (its success rate);
`truncated_rate` (per agent) is the share of steps whose completion the length budget cut (the per-agent share
that `parse_error_rate` computes, over those flags); `solving_program_rate` (per tool agent, in the puzzles) is the
share of episodes whose first step of that agent was a program that would solve the instance; `mean_progress` is
the mean progression score (0 to 100, `env.unwrapped.progress()` at each episode's end: partial progress by the
env's own measure), when every episode has one.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

METRICS_DIR = Path(__file__).parent
NAMES = ("success_rate", "turns_to_success", "parse_error_rate", "tokens_per_episode", "pass_at_k")


@functools.cache
def load(name: str):
    """The `evaluate` module `name` (one of `NAMES`), loaded from its local folder."""
    if name not in NAMES:
        raise ValueError(f"unknown metric {name!r}; available: {list(NAMES)}")
    import evaluate

    return evaluate.load(str(METRICS_DIR / name))


def summarize(env_id: str, records: Sequence[Any], *, samples_per_problem: int = 1) -> dict[str, Any]:
    """The metrics of one suite's episode records (`pettingllms.eval.episode_cache.EpisodeRecord`).

    With `samples_per_problem` n > 1 the records hold n consecutive episodes per problem (keys `KEY#j`) and
    code results get pass@1 and pass@n.
    """
    successes = [int(r.success) for r in records]
    result: dict[str, Any] = {}
    rate = load("success_rate").compute(successes=successes)
    result["success_rate"] = rate["success_rate"]
    result["ci95"] = [rate["ci95_low"], rate["ci95_high"]]
    result["episodes"] = rate["episodes"]
    result.update(load("turns_to_success").compute(successes=successes, turns=[r.turns for r in records]))
    agents, errors = [], []  # one entry per agent step: its agent, and 1 for the first `errors` steps
    for r in records:
        for agent, count in r.steps.items():
            bad = r.errors.get(agent, 0)
            agents += [agent] * count
            errors += [1] * bad + [0] * (count - bad)
    result.update(load("parse_error_rate").compute(agents=agents, errors=errors))
    if all(r.truncated is not None for r in records):  # rows cached by earlier versions did not count them
        cut = [
            flag
            for r in records
            for agent, count in r.steps.items()
            for flag in _flags(r.truncated, agent, count)
        ]
        result["truncated_rate"] = load("parse_error_rate").compute(agents=agents, errors=cut)[
            "parse_error_rate"
        ]
    if records and all(r.progress is not None for r in records):  # envs of other packages, older rows: none
        result["mean_progress"] = sum(r.progress for r in records) / len(records)
    rates = solving_program_rates(records)
    if rates:
        result["solving_program_rate"] = rates
    tokens = [r.tokens for r in records]
    counted = [t for t in tokens if t is not None] if all(t is not None for t in tokens) else []
    result.update(load("tokens_per_episode").compute(tokens=counted))
    if env_id.startswith("code"):
        per_problem: dict[str, list[int]] = defaultdict(list)
        for r in records:
            per_problem[r.key.split("#")[0]].append(int(r.success))
        ks = sorted({1, samples_per_problem})
        result.update(
            load("pass_at_k").compute(
                num_samples=[len(v) for v in per_problem.values()],
                num_correct=[sum(v) for v in per_problem.values()],
                k=ks,
            )
        )
    if env_id.startswith("math"):
        result["accuracy"] = result["success_rate"]
    return result


def solving_program_rates(records: Sequence[Any]) -> dict[str, float]:
    """Per agent whose env reports programs (a tool agent), the share of `records` (episodes) whose first step of
    that agent was a program whose proposal would solve the instance; {} for envs without programs, and for rows
    cached before first programs were kept."""
    if not records or any(r.first_programs is None for r in records):
        return {}
    agents = sorted({agent for r in records for agent in r.first_programs})
    return {
        agent: sum(r.first_programs.get(agent) == "solves" for r in records) / len(records)
        for agent in agents
    }


def _flags(counts: dict[str, int], agent: str, steps: int) -> list[int]:
    """`steps` flags for `agent`, the first `counts[agent]` of them 1 (the order of `agents` in `summarize`)."""
    flagged = counts.get(agent, 0)
    return [1] * flagged + [0] * (steps - flagged)


def training_evaluation_metrics(records: Sequence[Any], agents: Sequence[str]) -> dict[str, float]:
    """What a training run logs of one evaluation's episode `records` (each with `success`, per-agent `steps`,
    `returns`, `truncated` and `first_programs`): `eval/success_rate`; `eval/episodes` and `eval/generations`
    (the completions the evaluation generated: one per agent step, so that a study can count every generation
    of a run, its evaluations' included); per agent of `agents`, `eval/reward/<agent>`
    (return per step) and `eval/truncated/<agent>` (share of steps the budget cut); and, in envs whose tool agents
    answer with programs, `eval/solving_program/<agent>` (`solving_program_rates`)."""
    metrics = {
        "eval/success_rate": sum(bool(r.success) for r in records) / len(records) if records else 0.0,
        "eval/episodes": len(records),
        "eval/generations": sum(sum(record.steps.values()) for record in records),
    }
    for agent in agents:
        steps = sum(record.steps.get(agent, 0) for record in records)
        total = sum(record.returns.get(agent, 0.0) for record in records)
        metrics[f"eval/reward/{agent}"] = total / steps if steps else 0.0
        cut = sum((record.truncated or {}).get(agent, 0) for record in records)
        metrics[f"eval/truncated/{agent}"] = cut / steps if steps else 0.0
    for agent, rate in solving_program_rates(records).items():
        metrics[f"eval/solving_program/{agent}"] = rate
    return metrics


def summary_figures(moment: str, metrics: dict[str, Any]) -> dict[str, Any]:
    """The run summary's figures of an evaluation at `moment` ("before" or "after" training), from
    `training_evaluation_metrics`: `eval/success_rate_<moment>` and `eval/solving_program_<moment>/<agent>`."""
    named = {f"eval/success_rate_{moment}": metrics["eval/success_rate"]}
    for key, value in metrics.items():
        if key.startswith("eval/solving_program/"):
            named[f"eval/solving_program_{moment}/{key.rsplit('/', 1)[1]}"] = value
    return named


def summary_lines(summary: dict[str, float]) -> list[str]:
    """One line per agent whose first-turn programs the evaluations counted (`summary_figures`' after/before)."""
    lines = []
    prefix = "eval/solving_program_after/"
    for key in sorted(k for k in summary if k.startswith(prefix)):
        agent = key[len(prefix) :]
        before = summary.get(f"eval/solving_program_before/{agent}")
        since = f"{before:.0%} before training" if before is not None else "before: see metrics.jsonl"
        lines.append(
            f"the {agent} agent's first answer is a program that solves the instance in {summary[key]:.0%} of "
            f"evaluation episodes ({since})"
        )
    return lines
