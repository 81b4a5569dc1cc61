"""Checkpoints that resume exactly: weights or adapters, optimizers, schedulers, every random generator, the step.

Layout of `output_dir/checkpoints/step_N/`: `policy_<name>/` (a full model and its tokenizer) or `peft/<agent>/`
(one LoRA adapter per agent), `optimizer_<name>.pt`, `scheduler_<name>.pt`, `generator_<name>.pt` (the
sampler's generator state, `pettingllms.policies.base.sampler_state`), `state.json` (the
step, the completions sampled so far and the rollout engine's numpy generator). With Ray, each policy's update
worker and rollout server write and read their own files (same layout). Data positions need no state: a step's
instance seeds follow from the step number.

Integrity: a checkpoint is written to `step_N.tmp`, which gets a `manifest.json` (sha256 and size of every file,
`pettingllms.trainers.manifest`) last, is flushed to disk and is then renamed to `step_N`; a run killed while
saving leaves the previous checkpoints and a `step_N.tmp` that the next start removes with a message
(`run_folder.prepare`). `latest` verifies checkpoints newest first against their manifests and returns the newest
intact one, naming every folder it skips and its bad file (truncated, changed or missing files, a missing
manifest, an empty folder). Training (`--resume true`) and evaluation (`pettingllms-eval --policy RUN`) both load
through it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from pettingllms.errors import PettingLLMsError
from pettingllms.policies.base import sampler_state, set_sampler_state
from pettingllms.trainers import manifest, metrics_log

if TYPE_CHECKING:
    from pettingllms.trainers.at_grpo import ATGRPOTrainer

_STEP = re.compile(r"^step_(\d+)$")


class CheckpointError(PettingLLMsError):
    """A checkpoint that was asked for is missing or fails its manifest (the message names the file)."""


def step_folders(output_dir: Path) -> list[Path]:
    """The `checkpoints/step_N` folders of a run, newest first (intact or not)."""
    folder = output_dir / "checkpoints"
    steps = (
        [(int(m[1]), p) for p in folder.iterdir() if (m := _STEP.match(p.name))] if folder.is_dir() else []
    )
    return [path for _, path in sorted(steps, reverse=True)]


def latest(output_dir: Path, log: Callable[[str], None] = print) -> Path | None:
    """The newest intact checkpoint folder of the run in `output_dir`, or None when it has none; each newer
    folder that fails its manifest is skipped with a message to `log` naming the folder and the bad file."""
    for folder in step_folders(output_dir):
        found = manifest.problem(folder)
        if found is None:
            return folder
        log(f"skipping checkpoint {folder}: {found}")
    return None


def verify(folder: Path) -> None:
    """Raise `CheckpointError` naming the bad file unless the checkpoint `folder` is intact."""
    found = manifest.problem(folder)
    if found is not None:
        raise CheckpointError(
            f"checkpoint {folder} is not intact: {found}; use another checkpoint (or the run folder, which "
            "picks the newest intact one)"
        )


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
    manifest.write(staging)
    if final.exists():  # a corrupt checkpoint of this step, skipped when the run resumed from an older one
        shutil.rmtree(final)
    os.replace(staging, final)
    _fsync_folder(final.parent)
    return final


def _fsync_folder(folder: Path) -> None:
    """Flush a folder's entries (the rename) to disk."""
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def load_state(folder: Path, trainer: ATGRPOTrainer) -> int:
    """Restore optimizers, schedulers and generators from the verified checkpoint `folder` (weights are loaded
    when the policies are built); drop metrics logged after the checkpoint (and a half-written last line); return
    the checkpoint's step."""
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
    metrics_log.truncate_after(trainer.output_dir / "metrics.jsonl", int(state["step"]), trainer.log)
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
