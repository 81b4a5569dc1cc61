"""Checkpoints that resume exactly: weights or adapters, optimizers, schedulers, every random generator, the step.

Where each file goes is `pettingllms.runs.layout.CheckpointLayout`'s; what goes in it is each policy handle's
(`save_weights`, `save_training_state`, `pettingllms.trainers.policies.handles.PolicyHandle`), so this module knows
neither layouts nor placements. Under a launcher a checkpoint is still one set of files, written by rank 0. Data positions need no state: a step's instance seeds follow from the step number.

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

from pettingllms.parallel.world import SINGLE_PROCESS, World
from pettingllms.runs import manifest
from pettingllms.runs.folder import RunFolderError
from pettingllms.runs.layout import CheckpointLayout, RunLayout
from pettingllms.trainers.policies.handles import PolicyHandle


@dataclasses.dataclass(frozen=True)
class LoopState:
    """The trainer's own state in a checkpoint: the step, the completions sampled so far, and the rollout
    engine's generator state (random commits); under a launcher, `engine_rng` is every rank's, in rank order."""

    step: int
    completions: int
    engine_rng: dict[str, Any] | list[dict[str, Any]]


def save(
    run: RunLayout,
    policies: Mapping[str, PolicyHandle],
    loop: LoopState,
    world: World = SINGLE_PROCESS,
    *,
    keep: int | None = None,
) -> CheckpointLayout:
    """Write the checkpoint of step `loop.step` (see the module docstring); return it. Under a launcher every
    rank calls it: rank 0 writes the files once (a sharded policy's full state, every rank's generator states).
    With `keep`, only the `keep` newest checkpoints stay once it is in place (`prune`)."""
    staging, final = run.staging(loop.step), run.checkpoint(loop.step)
    if world.is_main:
        shutil.rmtree(staging.folder, ignore_errors=True)
        staging.folder.mkdir(parents=True)
    world.barrier()
    for name, policy in policies.items():
        policy.save_weights(staging)
        policy.save_training_state(staging)
        generators = world.gather(policy.backend.get_rng_state())
        if world.is_main:
            torch.save(generators[0] if world.size == 1 else generators, staging.generator(name))
    if world.is_main:
        staging.state.write_text(json.dumps(dataclasses.asdict(loop)))
        if run.config.is_file():  # the settings these weights were trained under, covered by the manifest
            shutil.copyfile(run.config, staging.config)
        manifest.write(staging.folder)
        if (
            final.folder.exists()
        ):  # a corrupt checkpoint of this step, skipped when the run resumed from an older one
            shutil.rmtree(final.folder)
        os.replace(staging.folder, final.folder)
        _fsync_folder(final.folder.parent)
        if keep is not None:
            prune(run, keep)
    world.barrier()
    return final


def prune(run: RunLayout, keep: int) -> list[CheckpointLayout]:
    """Delete every `step_N` checkpoint of `run` but the `keep` newest (transformers' `save_total_limit`); return
    the deleted ones. Called right after a checkpoint was written and renamed into place, so the newest is intact
    and a resume still finds it."""
    if keep < 1:
        raise ValueError(f"keep={keep}: at least the newest checkpoint stays")
    deleted = run.step_checkpoints()[keep:]
    for old in deleted:
        shutil.rmtree(old.folder)
    return deleted


def load(
    checkpoint: CheckpointLayout, policies: Mapping[str, PolicyHandle], world: World = SINGLE_PROCESS
) -> LoopState:
    """Restore every policy's training state from the verified `checkpoint` (weights are loaded when the policies
    are built from it); return the loop's state, with this rank's engine generator state. A checkpoint written
    by another number of ranks is refused."""
    state = checkpoint.read_state()
    engine_rng = state["engine_rng"]
    written_by = len(engine_rng) if isinstance(engine_rng, list) else 1
    if written_by != world.size:
        raise RunFolderError(
            f"{checkpoint.folder} was written by {written_by} rank(s) and this run has {world.size}: resume with "
            f"--nproc_per_node {written_by} (the ranks' random generators are in the checkpoint)"
        )
    for name, policy in policies.items():
        policy.load_training_state(checkpoint)
        generators = torch.load(checkpoint.generator(name), weights_only=True)
        policy.backend.set_rng_state(generators[world.rank] if world.size > 1 else generators)
    engine = engine_rng[world.rank] if world.size > 1 else engine_rng
    return LoopState(int(state["step"]), int(state.get("completions", 0)), engine)


def _fsync_folder(folder) -> None:
    """Flush a folder's entries (the rename) to disk."""
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
