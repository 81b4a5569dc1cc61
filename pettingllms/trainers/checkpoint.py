"""Checkpoints that resume exactly: weights or adapters, optimizers, schedulers, every random generator, the step.

Where each file goes is `pettingllms.runs.layout.CheckpointLayout`'s; what goes in it is each policy handle's
(`save_weights`, `state_dict`, `pettingllms.trainers.policy_set.PolicyHandle`), so this module knows neither
layouts nor placements. Data positions need no state: a step's instance seeds follow from the step number.

Integrity: a checkpoint is written to `step_N.tmp`, which gets a `manifest.json` (sha256 and size of every file,
`pettingllms.runs.manifest`) last, is flushed to disk and is then renamed to `step_N`; a run killed while saving
leaves the previous checkpoints and a `step_N.tmp` that the next start removes with a message
(`pettingllms.runs.folder.prepare`). `RunLayout.latest_intact` verifies checkpoints newest first against their
manifests; training (`--resume true`) and evaluation (`pettingllms-eval --policy RUN`) both load through it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from collections.abc import Mapping
from typing import Any

import torch

from pettingllms.runs import manifest
from pettingllms.runs.layout import CheckpointLayout, RunLayout
from pettingllms.trainers.policy_set import PolicyHandle


@dataclasses.dataclass(frozen=True)
class LoopState:
    """The trainer's own state in a checkpoint: the step, the completions sampled so far, and the rollout
    engine's generator state (random commits)."""

    step: int
    completions: int
    engine_rng: dict[str, Any]


def save(run: RunLayout, policies: Mapping[str, PolicyHandle], loop: LoopState) -> CheckpointLayout:
    """Write the checkpoint of step `loop.step` (see the module docstring); return it."""
    staging, final = run.staging(loop.step), run.checkpoint(loop.step)
    shutil.rmtree(staging.folder, ignore_errors=True)
    staging.folder.mkdir(parents=True)
    for name, policy in policies.items():
        policy.save_weights(staging)
        state = policy.state_dict()
        torch.save(state["optimizer"], staging.optimizer(name))
        torch.save(state["scheduler"], staging.scheduler(name))
        torch.save(state["generator"], staging.generator(name))
    staging.state.write_text(json.dumps(dataclasses.asdict(loop)))
    manifest.write(staging.folder)
    if (
        final.folder.exists()
    ):  # a corrupt checkpoint of this step, skipped when the run resumed from an older one
        shutil.rmtree(final.folder)
    os.replace(staging.folder, final.folder)
    _fsync_folder(final.folder.parent)
    return final


def load(checkpoint: CheckpointLayout, policies: Mapping[str, PolicyHandle]) -> LoopState:
    """Restore every policy's training state from the verified `checkpoint` (weights are loaded when the policies
    are built from it); return the loop's state."""
    for name, policy in policies.items():
        policy.load_state_dict(
            {
                "optimizer": torch.load(checkpoint.optimizer(name), weights_only=True),
                "scheduler": torch.load(checkpoint.scheduler(name), weights_only=True),
                "generator": torch.load(checkpoint.generator(name), weights_only=True),
            }
        )
    state = checkpoint.read_state()
    return LoopState(int(state["step"]), int(state.get("completions", 0)), state["engine_rng"])


def _fsync_folder(folder) -> None:
    """Flush a folder's entries (the rename) to disk."""
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
