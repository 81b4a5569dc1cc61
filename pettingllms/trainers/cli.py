"""`pettingllms-train`: AT-GRPO from the command line, in TRL's style.

    pettingllms-train                                   # the embedded default: tiny model, plan-path, per role
    pettingllms-train --config configs/tiny/plan_path_shared.yaml --max_steps 40 --learning_rate 5e-5

`--config` YAML values replace the defaults; command-line flags override the YAML. Every field of
`ATGRPOConfig` (TRL's `GRPOConfig` included) is a flag; dict fields take JSON, e.g. `--env_kwargs '{"size": 4}'`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

EMBEDDED_DEFAULT = {
    "output_dir": "runs/default",
    "env_id": "plan-path-v0",
    "workflow": "mas",
    "policy_layout": "per_role",
    "model_name_or_path": "tiny",
    "max_steps": 30,
    "instances_per_step": 16,
    "num_generations": 4,
    "per_device_train_batch_size": 32,
    "learning_rate": 1e-4,
    "lr_scheduler_type": "constant",
    "loss_type": "grpo",
    "scale_rewards": "none",
    "temperature": 1.0,
    "max_completion_length": 24,
    "eval_every": 0,
    "eval_episodes": 300,
    "save_steps": 10,
    "use_cpu": True,
    "report_to": [],
    "logging_steps": 1,
    "save_strategy": "no",
}
"""The run that `pettingllms-train` makes with no arguments (and the base every config file overrides)."""


def parse(argv: Sequence[str] | None = None):
    """Parse `argv` (default: sys.argv[1:]) into an `ATGRPOConfig` over `EMBEDDED_DEFAULT`."""
    from trl import TrlParser

    from pettingllms.trainers.config import ATGRPOConfig

    parser = TrlParser((ATGRPOConfig,))
    parser.set_defaults(**EMBEDDED_DEFAULT)
    (args,) = parser.parse_args_and_config(list(sys.argv[1:] if argv is None else argv))
    return args


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
