"""`pettingllms-train`: AT-GRPO from the command line, in TRL's style.

    pettingllms-train                                   # configs/tiny/plan_path.yaml: tiny model, per role
    pettingllms-train --config configs/tiny/sokoban.yaml --policy_layout shared --learning_rate 5e-5

`--config` YAML values replace the field defaults; command-line flags override the YAML (`arguments.parse`).
Dict fields take JSON on the command line, e.g. `--env_kwargs '{"size": 4}'`. Every error of a config, a flag or
the run is one line on stderr and exit status 2.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path


def main(argv: Sequence[str] | None = None) -> int:
    from pettingllms.core.errors import DependencyNotInstalled
    from pettingllms.core.extras import require_extra

    try:
        require_extra("train", "pettingllms-train")
    except DependencyNotInstalled as error:
        print(f"pettingllms-train: error: {error}", file=sys.stderr)
        return 2
    from transformers.utils import logging as transformers_logging

    from pettingllms.core.errors import PettingLLMsError
    from pettingllms.trainers.arguments import parse
    from pettingllms.trainers.at_grpo import ATGRPOTrainer
    from pettingllms.trainers.model_source import prepare_starting_models

    transformers_logging.disable_progress_bar()  # keep the one progress bar that matters: the run's
    try:
        args = parse(argv)
        prepare_starting_models(args)  # the first run builds the tiny model: visibly, before the trainer
        summary = ATGRPOTrainer(args).train()
    except PettingLLMsError as error:
        print(f"pettingllms-train: error: {error}", file=sys.stderr)
        return 2
    print(run_summary(summary, args.output_dir))
    return 0


def run_summary(summary: dict[str, float], output_dir: str) -> str:
    """The lines a finished run ends with: success before and after (rounded), and where its files are."""
    before, after = summary.get("eval/success_rate_before"), summary.get("eval/success_rate_after")
    shown = [
        f"{value:.2f}" if value is not None else "(resumed: see metrics.jsonl)" for value in (before, after)
    ]
    folder = Path(output_dir)
    return "\n".join(
        [
            f"evaluation success: {shown[0]} before training -> {shown[1]} after",
            f"run: {folder}  (metrics: {folder / 'metrics.jsonl'}, curve: {folder / 'learning_curve.png'}, "
            f"checkpoints: {folder / 'checkpoints'})",
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
