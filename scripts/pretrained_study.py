"""A pretrained model under AT-GRPO (issue 56), first part: on which task does it succeed sometimes?

    .venv/bin/python scripts/pretrained_study.py                       # warm starts + the candidates' table
    .venv/bin/python scripts/pretrained_study.py --instances 4 --samples 2 --steps 2 --runs /tmp/pre \
        --out /tmp/pre/pretrained.json --results_md /tmp/pre/results.md     # smoke
    .venv/bin/python scripts/pretrained_study.py --report              # the table again, from the ledger

RL learns only from a reward that fires. SmolLM2-135M-Instruct (the `smollm2` built-in) echoes its prompt on
every env zero-shot, so each candidate task gets a short supervised warm start on its solver demonstrations
(`pettingllms.warmstart.pretrained`, every weight, `--steps` steps of `--batch_size`), and the untrained and
the warm-started model are measured before any RL: greedy success on `--instances` validation-split instances,
and pass@4 / pass@8 from `--samples` sampled episodes per instance at temperature 1.0 (the unbiased estimator
1 - C(n-c, k) / C(n, k) of n episodes with c successes, averaged over instances). The task to train on is the one
whose warm-started pass@8 lies between about 5% and 50%: there RL has a signal and room. Every measurement is a
row of the ledger (`docs/results/ledger.jsonl`, study "pretrained"); the table is rebuilt from it by `RULE` into
`docs/results/pretrained.json` and the "pretrained-candidates" section of `docs/results.md`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from research import cycle, ledger
from research.markdown import replace_section

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "results" / "pretrained.json"
RULE = ledger.Rule("pretrained", ("part", "task", "model"))
"""The candidates' table: one row per task and model (untrained, warm start), the last recorded."""
START, END = "<!-- pretrained-candidates:start -->", "<!-- pretrained-candidates:end -->"
MATH_1 = {"dataset": "generated", "difficulty": 1}


@dataclasses.dataclass(frozen=True)
class Candidate:
    """A task the model might learn: env, workflow, setting, and its warm start's program share."""

    env_id: str
    workflow: str
    env_kwargs: Mapping[str, Any]
    tool_programs: float = 0.0  # the tool agent's share of program demonstrations (the team's)
    program_bugs: float = 0.0


CANDIDATES = {
    "math-v0 difficulty 1, single": Candidate("math-v0", "single", MATH_1),
    "math-v0 difficulty 1, team": Candidate("math-v0", "mas", MATH_1, tool_programs=0.4, program_bugs=0.4),
}


def pass_at(successes: Sequence[int], k: int) -> float:
    """The unbiased pass@k of one instance's n >= k sampled episodes with these 0/1 successes.

    >>> pass_at([0, 0, 1, 0], 2), pass_at([0] * 8, 4), pass_at([1] * 8, 8)
    (0.5, 0.0, 1.0)
    """
    n, c = len(successes), sum(successes)
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} episodes per instance (got {n})")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def mean_pass_at(flags: Sequence[int], samples: int, k: int) -> float:
    """pass@k averaged over instances, from `pettingllms-eval --samples` flags (each instance's episodes in a row)."""
    if len(flags) % samples:
        raise ValueError(f"{len(flags)} episodes do not split into instances of {samples}")
    groups = [flags[i : i + samples] for i in range(0, len(flags), samples)]
    return float(np.mean([pass_at(group, k) for group in groups]))


def eval_argv(
    candidate: Candidate, policy: Path, output: Path, args: argparse.Namespace, samples: int
) -> list[str]:
    """`pettingllms-eval` on the validation split: greedy with one sample, else at temperature 1.0."""
    sampling = ["--temperature", "1.0", "--samples", str(samples)] if samples > 1 else []
    return [
        "--env", candidate.env_id, "--workflow", candidate.workflow, "--env_kwargs",
        json.dumps(dict(candidate.env_kwargs)), "--policy", str(policy), "--split", "val", "--episodes",
        str(args.instances), "--max_new_tokens", str(args.max_new_tokens), "--output", str(output),
        "--no_progress", "--no_transcripts", *sampling,
    ]  # fmt: skip


def warm_start(name: str, candidate: Candidate, base: Path, args: argparse.Namespace) -> Path:
    """The candidate's warm-started model folder under `--runs`, built on first use."""
    from pettingllms.warmstart.pretrained import PretrainedWarmStart, warm_start_pretrained

    folder = args.runs / "warm_starts" / slug(name)
    if not folder.is_dir():
        settings = PretrainedWarmStart(
            candidate.env_id, candidate.workflow, dict(candidate.env_kwargs), demos_per_role=args.demos_per_role,
            steps=args.steps, batch_size=args.batch_size, learning_rate=args.learning_rate,
            tool_programs=candidate.tool_programs, program_bugs=candidate.program_bugs,
        )  # fmt: skip
        manifest = warm_start_pretrained(base, folder, settings)
        print(f"{name}: warm start in {manifest['wall_s'] / 60:.1f} min, loss {manifest['sft']['probe_loss_before']:.3f}"
              f" -> {manifest['sft']['probe_loss_after']:.3f}")  # fmt: skip
    return folder


def slug(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name).strip("_")


def measure(name: str, candidate: Candidate, model: str, policy: Path, args: argparse.Namespace) -> dict:
    """The candidate's row for `model` ("untrained" or "warm start"): greedy success and pass@4 / pass@8."""
    folder = args.runs / "candidates" / slug(name) / slug(model)
    greedy = cycle.evaluate(
        eval_argv(candidate, policy, folder / "greedy.json", args, 1),
        folder / "greedy.json",
        candidate.env_id,
    )
    sampled = cycle.evaluate(
        eval_argv(candidate, policy, folder / "sampled.json", args, args.samples),
        folder / "sampled.json",
        candidate.env_id,
    )
    flags = [int(s) for s in sampled["per_episode"]["success"]]
    manifest = policy / "warmstart.json"
    row = {
        "part": "candidates", "task": name, "model": model, "env": candidate.env_id, "workflow": candidate.workflow,
        "env_kwargs": dict(candidate.env_kwargs), "instances": args.instances, "samples": args.samples,
        "greedy": greedy["success_rate"], "greedy_parse_error_rate": greedy.get("parse_error_rate"),
        "sampled_success": sampled["success_rate"], "sampled_parse_error_rate": sampled.get("parse_error_rate"),
        "episode_success": "".join(str(int(s)) for s in greedy["per_episode"]["success"]),
        "sample_success": "".join(map(str, flags)), "max_new_tokens": args.max_new_tokens,
        "warm_start": json.loads(manifest.read_text())["settings"] if manifest.is_file() else None,
    }  # fmt: skip
    for k in (4, 8):
        if args.samples >= k:
            row[f"pass@{k}"] = mean_pass_at(flags, args.samples, k)
    return row


def table_lines(rows: list[dict]) -> list[str]:
    """The candidates' table: a line per task and model."""
    lines = [
        "| task | model | greedy success % | pass@4 % | pass@8 % | sampled success % | parse errors (greedy, sampled) |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        cells = [
            f"{100 * row[k]:.1f}" if k in row else "—"
            for k in ("greedy", "pass@4", "pass@8", "sampled_success")
        ]
        errors = "; ".join(
            error_words(row.get(k)) for k in ("greedy_parse_error_rate", "sampled_parse_error_rate")
        )
        lines.append(f"| {row['task']} | {row['model']} | " + " | ".join(cells) + f" | {errors} |")
    return lines


def error_words(rates: Mapping[str, float] | None) -> str:
    """Each agent's share of unparseable answers: `reasoner 0.97, tool 0.12`."""
    return "—" if not rates else ", ".join(f"{agent} {rate:.2f}" for agent, rate in rates.items())


def write_report(rows: list[dict], args: argparse.Namespace, results_md: Path) -> None:
    """The candidates' section of `results_md`; its settings are the rows' own where they hold them (a
    `--report` without the run's flags describes what was run), else the invocation's."""
    instances, samples, budget = (
        shared_value(rows, key, getattr(args, key)) for key in ("instances", "samples", "max_new_tokens")
    )
    recipe = next((row["warm_start"] for row in rows if row.get("warm_start")), None) or {
        "demos_per_role": args.demos_per_role, "steps": args.steps, "batch_size": args.batch_size,
        "learning_rate": args.learning_rate,
    }  # fmt: skip
    lines = [
        START,
        "## A pretrained model, before RL: on which task does it succeed sometimes? (issue 56)",
        "",
        "SmolLM2-135M-Instruct (`smollm2`, the package's Q4_1 weights dequantized to float32) as it ships "
        "(`untrained`) and after a short supervised warm start on each task's solver demonstrations (`warm start`: "
        f"{recipe['demos_per_role']} per role, {recipe['steps']} steps of {recipe['batch_size']}, lr "
        f"{recipe['learning_rate']:g}, every weight; `pettingllms.warmstart.pretrained`). {instances} "
        f"validation-split instances per task; greedy success, and pass@4 / pass@8 from {samples} episodes per "
        f"instance sampled at temperature 1.0 (the unbiased estimator); {budget}-token answers. Rows: "
        "`docs/results/pretrained.json`, from the ledger. Regenerate: `.venv/bin/python scripts/pretrained_study.py` "
        "(`--report` rebuilds this table).",
        "",
        *table_lines(rows),
        "",
        END,
    ]
    replace_section(results_md, START, END, "\n".join(lines))


def shared_value(rows: list[dict], key: str, default: Any) -> Any:
    """The value of `key` that every row holding it agrees on; `default` when none holds it or they differ."""
    values = {json.dumps(row[key]) for row in rows if key in row}
    return json.loads(values.pop()) if len(values) == 1 else default


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", nargs="+", default=list(CANDIDATES), choices=list(CANDIDATES))
    parser.add_argument("--instances", type=int, default=32, help="validation instances per task")
    parser.add_argument(
        "--samples", type=int, default=8, help="sampled episodes per instance (pass@k, k <= it)"
    )
    parser.add_argument("--max_new_tokens", type=int, default=128)
    parser.add_argument("--demos_per_role", type=int, default=400)
    parser.add_argument("--steps", type=int, default=60, help="warm-start SFT steps")
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--learning_rate", type=float, default=1e-4)
    parser.add_argument("--runs", type=Path, default=ROOT / "runs" / "pretrained")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--results_md", type=Path, default=ROOT / "docs" / "results.md")
    parser.add_argument("--report", action="store_true", help="only rebuild the table from the ledger")
    args = parser.parse_args()
    if args.instances < 1 or args.samples < 1:
        parser.error(f"--instances={args.instances} and --samples={args.samples} must be >= 1")
    if args.report:
        rows = ledger.write_table(args.out, RULE)
    else:
        from pettingllms.models.smollm2 import ensure_smollm2

        base = ensure_smollm2()
        rows = ledger.table_rows(args.out, RULE)
        for name in args.tasks:
            candidate = CANDIDATES[name]
            for model, policy in (
                ("warm start", warm_start(name, candidate, base, args)),
                ("untrained", base),
            ):
                row = measure(name, candidate, model, policy, args)
                rows = cycle.record(args.out, RULE, row, warm_start=policy)
                print(
                    f"{name}, {model}: greedy {row['greedy']:.3f}, pass@8 {row.get('pass@8', float('nan')):.3f}"
                )
                write_report(rows, args, args.results_md)
    write_report(rows, args, args.results_md)
    print(f"wrote {args.out} and the pretrained-candidates section of {args.results_md}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
