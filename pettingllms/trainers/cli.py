"""`pettingllms-train`: AT-GRPO from the command line, in TRL's style.

    pettingllms-train                                   # configs/tiny/plan_path.yaml: tiny model, per role
    pettingllms-train --config configs/tiny/sokoban.yaml --policy_layout shared --learning_rate 5e-5
    pettingllms-train --config configs/paper/qwen3-8b/plan_path.yaml --plan --plan_gpus 8 --plan_gpu_gib 80 \
        --plan_ranks 8                                  # the memory plan of 8 ranks of torchrun on 8 x 80 GiB
    torchrun --nproc_per_node 8 --no-python pettingllms-train --config ...   # data parallel, FSDP2 per policy

`--plan` prints the memory plan (`pettingllms.trainers.policies.memory_plan`) and exits: for this machine's GPUs, or for
`--plan_gpus` GPUs of `--plan_gpu_gib` GiB under `--plan_ranks` torchrun ranks (default 1: one process). Its exit
status is 0 when every device fits and 1 when any does not (`PLAN_DOES_NOT_FIT`), so a launch script can check.

`--config` YAML values replace the field defaults; command-line flags override the YAML (`arguments.parse`).
Dict fields take JSON on the command line, e.g. `--env_kwargs '{"size": 4}'`. Every error of a config, a flag or
the run is one line on stderr and exit status 2, but a Ray policy lost during the run (its node left the cluster,
or its actor died) and not recovered within `ray_recover_s` (`pettingllms.trainers.recovery`): one line naming the
policy, its node, the step, the newest intact checkpoint and the command that resumes the run, and exit status 3
(`POLICY_LOST`).
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

PLAN_DOES_NOT_FIT = 1
"""The exit status of `--plan` when some device does not fit (a config or flag error is 2, as for a run)."""
POLICY_LOST = 3
"""The exit status of a run that lost a Ray policy (module docstring)."""


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
    from pettingllms.parallel.world import current_world, leave_process_group
    from pettingllms.pools.ray_cluster import NodeLostError
    from pettingllms.trainers.policies.model_source import prepare_starting_models
    from pettingllms.trainers.recovery import train_with_recovery
    from pettingllms.trainers.settings.arguments import parse

    transformers_logging.disable_progress_bar()  # keep the one progress bar that matters: the run's
    argv, planning = _plan_flags(list(sys.argv[1:] if argv is None else argv))
    try:
        if planning is not None and not _has_gpu():  # a GPU config planned on a laptop: skip its device check
            argv = [*argv, "--use_cpu", "true"]
        args = parse(argv)
        if planning is not None:
            plan = _memory_plan(args, planning)
            print(plan.render())
            return 0 if plan.fits else PLAN_DOES_NOT_FIT
        args.check_before_work()  # before the warm start is built: a bad env_kwargs or output_dir fails here
        world = current_world()
        if world.is_main:  # the first run builds the tiny model: visibly, before the trainer, once
            prepare_starting_models(args)
        world.barrier()
        summary = train_with_recovery(args)
        leave_process_group()
    except NodeLostError as lost:
        print(f"pettingllms-train: error: {lost}; resume with: {resume_command(argv)}", file=sys.stderr)
        return POLICY_LOST
    except PettingLLMsError as error:
        print(f"pettingllms-train: error: {error}", file=sys.stderr)
        return 2
    print(run_summary(summary, args.output_dir))
    return 0


def resume_command(argv: list[str]) -> str:
    """The command that resumes the run `argv` started: the same flags, `--resume true` instead of any resume flag
    the run had (`--resume VALUE` or `--resume=VALUE`)."""
    kept, skip = [], False
    for flag in argv:
        if skip:
            skip = False
        elif flag in ("--resume", "--overwrite_output_dir", "--overwrite-output-dir"):
            skip = True
        elif not flag.startswith(("--resume=", "--overwrite_output_dir=", "--overwrite-output-dir=")):
            kept.append(flag)
    return shlex.join(["pettingllms-train", *kept, "--resume", "true"])


def _has_gpu() -> bool:
    import torch

    return torch.cuda.is_available()


def _plan_flags(argv: list[str]):
    """`argv` without the planner's flags, and those flags (None without `--plan`)."""
    import argparse

    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--plan", action="store_true")
    parser.add_argument("--plan_gpus", type=int)
    parser.add_argument("--plan_gpu_gib", type=float)
    parser.add_argument("--plan_ranks", type=int, default=1)
    planning, rest = parser.parse_known_args(argv)
    return rest, planning if planning.plan else None


def _memory_plan(args, planning):
    """The memory plan of `args` on the GPUs `planning` names (this machine's by default)."""
    import pettingllms
    from pettingllms.core.errors import ConfigError
    from pettingllms.trainers.policies.memory_plan import GIB, Hardware, plan_run

    hardware = Hardware.visible()
    if planning.plan_gpus is not None or planning.plan_gpu_gib is not None:
        if planning.plan_gpus is None or planning.plan_gpu_gib is None:
            raise ConfigError(
                "--plan_gpus and --plan_gpu_gib go together, e.g. --plan_gpus 8 --plan_gpu_gib 80"
            )
        hardware = Hardware(planning.plan_gpus, int(planning.plan_gpu_gib * GIB), planning.plan_ranks)
    if hardware.gpus == 0:
        raise ConfigError(
            "--plan: this machine has no GPU; say which to plan for: --plan_gpus N --plan_gpu_gib G"
        )
    if planning.plan_ranks > hardware.gpus:
        raise ConfigError(f"--plan_ranks {planning.plan_ranks}: one rank per GPU, at most --plan_gpus")
    agents = list(pettingllms.make(args.env_id, workflow=args.workflow).possible_agents)
    return plan_run(args, agents, hardware)


def run_summary(summary: dict[str, float], output_dir: str) -> str:
    """The lines a finished run ends with: success before and after (rounded), what each tool agent's first
    programs did before and after (where the env runs programs), and where the run's files are."""
    from pettingllms.eval.metrics import summary_lines

    before, after = summary.get("eval/success_rate_before"), summary.get("eval/success_rate_after")
    shown = [
        f"{value:.2f}" if value is not None else "(resumed: see metrics.jsonl)" for value in (before, after)
    ]
    folder = Path(output_dir)
    return "\n".join(
        [
            f"evaluation success: {shown[0]} before training -> {shown[1]} after",
            *summary_lines(summary),
            f"run: {folder}  (metrics: {folder / 'metrics.jsonl'}, curve: {folder / 'learning_curve.png'}, "
            f"checkpoints: {folder / 'checkpoints'})",
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
