"""Checkpoints that resume exactly: weights or adapters, optimizers, schedulers, every random generator, the step.

Layout of `output_dir/checkpoints/step_N/`: `policy_<name>/` (a full model and its tokenizer) or `peft/<agent>/`
(one LoRA adapter per agent), `optimizer_<name>.pt`, `scheduler_<name>.pt`, `generator_<name>.pt` (the
sampler's generator state, `pettingllms.policies.base.sampler_state`), `state.json` (the
step, the completions sampled so far and the rollout engine's numpy generator). With Ray, each policy's update
worker and rollout server write and read their own files (same layout). A checkpoint is written to a temporary folder and renamed into place, so a run killed while saving leaves the previous one.
Data positions need no state: a step's instance seeds follow from the step number.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from pettingllms.policies.base import sampler_state, set_sampler_state

if TYPE_CHECKING:
    from pettingllms.trainers.at_grpo import ATGRPOTrainer

_STEP = re.compile(r"^step_(\d+)$")


def latest(output_dir: Path) -> Path | None:
    """The newest complete checkpoint folder, or None."""
    folder = output_dir / "checkpoints"
    steps = (
        [(int(m[1]), p) for p in folder.iterdir() if (m := _STEP.match(p.name))] if folder.is_dir() else []
    )
    return max(steps)[1] if steps else None


def save(output_dir: Path, trainer: ATGRPOTrainer) -> Path:
    """Write the checkpoint of the trainer's current step; return its folder."""
    final = output_dir / "checkpoints" / f"step_{trainer.step}"
    staging = final.with_name(final.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    policies = trainer.policies
    if policies.placement is not None:  # Ray: every worker and server writes its own policy's files
        policies.placement.save(staging)
    else:
        _save_local(staging, trainer)
    state = {
        "step": trainer.step,
        "completions": trainer.completions,
        "engine_rng": trainer.engine.rng.bit_generator.state,
    }
    (staging / "state.json").write_text(json.dumps(state))
    shutil.rmtree(final, ignore_errors=True)
    os.replace(staging, final)
    return final


def load_state(folder: Path, trainer: ATGRPOTrainer) -> int:
    """Restore optimizers, schedulers and generators from `folder` (weights are loaded when the policies are
    built); drop metrics logged after the checkpoint; return the checkpoint's step."""
    if trainer.policies.placement is not None:
        trainer.policies.placement.load(folder)
    else:
        for name, updater in trainer.policies.updaters.items():
            updater.optimizer.load_state_dict(torch.load(folder / f"optimizer_{name}.pt", weights_only=True))
            updater.lr_scheduler.load_state_dict(
                torch.load(folder / f"scheduler_{name}.pt", weights_only=True)
            )
            state = torch.load(folder / f"generator_{name}.pt", weights_only=True)
            set_sampler_state(trainer.policies.backends[name], state)
    state = json.loads((folder / "state.json").read_text())
    trainer.engine.rng.bit_generator.state = state["engine_rng"]
    trainer.completions = int(state.get("completions", 0))
    metrics = trainer.output_dir / "metrics.jsonl"
    if metrics.exists():
        rows = [
            line for line in metrics.read_text().splitlines() if json.loads(line)["step"] <= state["step"]
        ]
        metrics.write_text("".join(row + "\n" for row in rows))
    return int(state["step"])


def _save_local(staging: Path, trainer: ATGRPOTrainer) -> None:
    """Weights (or adapters), optimizers, schedulers and sampler generators of in-process policies."""
    policies = trainer.policies
    if trainer.args.policy_layout == "lora_per_role":
        next(iter(policies.updaters.values())).model.save_pretrained(staging / "peft")
    for name, updater in policies.updaters.items():
        if trainer.args.policy_layout != "lora_per_role":
            updater.model.save_pretrained(staging / f"policy_{name}")
            updater.processing_class.save_pretrained(staging / f"policy_{name}")
        torch.save(updater.optimizer.state_dict(), staging / f"optimizer_{name}.pt")
        torch.save(updater.lr_scheduler.state_dict(), staging / f"scheduler_{name}.pt")
        torch.save(sampler_state(policies.backends[name]), staging / f"generator_{name}.pt")
