"""What the trainer and the checkpointer hold of each policy, wherever it lives: `PolicyHandle` (the protocol),
`LocalPolicy` and `AdapterPolicy` (in this process), `PolicySet` (a run's handles and which agent each serves).
The handles of Ray actors are `ray_actors.RayPolicy`; `build.build_policies` makes every kind.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from pettingllms.backends.base import SeededBackend
from pettingllms.rollout.samples import Sample
from pettingllms.runs.layout import CheckpointLayout
from pettingllms.trainers.update.sharding import full_weights
from pettingllms.trainers.update.updater import PolicyUpdater


class Placement(Protocol):
    """What holds a run's policies outside this process (Ray's placement groups and actors)."""

    def close(self) -> None: ...


class PolicyHandle(Protocol):
    """One policy of a run, wherever it lives (this process or Ray actors): what the trainer and the checkpointer
    need of it, so that neither branches on layout or placement.

    `save_training_state(checkpoint)` writes the optimizer's and the scheduler's states into the checkpoint's files
    for this policy, wherever the policy lives (an update worker on Ray writes its own: the trainer never holds
    them); `load_training_state(checkpoint)` restores them. Weights are written by `save_weights(checkpoint)` and
    read when the policy is built from a checkpoint (`build_policies(resume_from=...)`); the sampler's generator
    state is the trainer's to save (`backend.get_rng_state()`). Under a launcher every rank calls each of these.
    """

    backend: SeededBackend
    lane: str
    """What this policy's update must not share in time: policies of one lane update one after another, of
    different lanes side by side (`update_phase`)."""

    def update(self, samples: Sequence[Sample]) -> dict[str, float]: ...

    def sync(self) -> None: ...

    def save_weights(self, checkpoint: CheckpointLayout) -> None: ...

    def save_training_state(self, checkpoint: CheckpointLayout) -> None: ...

    def load_training_state(self, checkpoint: CheckpointLayout) -> None: ...


@dataclasses.dataclass
class LocalPolicy:
    """A policy in this process: its update worker and its generation backend (the worker's own model for
    `hf`; a vLLM engine refreshed by `syncer` after each update for `vllm`)."""

    name: str
    updater: PolicyUpdater
    backend: SeededBackend
    syncer: Callable[[], None] | None = None
    sleeper: Any = None
    """A vLLM engine that sleeps while this policy's update runs (it frees the GPU memory they share) and wakes
    before `sync` loads the new weights into it."""

    @property
    def lane(self) -> str:
        """Its device: two updates on one device compete for its memory and compute."""
        return f"device:{self.updater.args.device}"

    def update(self, samples: Sequence[Sample]) -> dict[str, float]:
        if self.sleeper is None:
            return self.updater.update(samples)
        self.sleeper.sleep()
        try:
            return self.updater.update(samples)
        finally:
            self.sleeper.wake_up()

    def sync(self) -> None:
        if self.syncer is not None:
            self.syncer()

    def save_weights(self, checkpoint: CheckpointLayout) -> None:
        self.updater.save_model(checkpoint.model(self.name))

    def save_training_state(self, checkpoint: CheckpointLayout) -> None:
        self.updater.save_training_state(checkpoint.optimizer(self.name), checkpoint.scheduler(self.name))

    def load_training_state(self, checkpoint: CheckpointLayout) -> None:
        self.updater.load_training_state(checkpoint.optimizer(self.name), checkpoint.scheduler(self.name))


class AdapterPolicy(LocalPolicy):
    """A policy that is one LoRA adapter of a PEFT model shared by every policy of the run."""

    @property
    def lane(self) -> str:
        """The shared PEFT model's: its updates switch that model's active adapter."""
        return "lora-shared-model"

    def save_weights(self, checkpoint: CheckpointLayout) -> None:
        # PEFT writes an adapter not named "default" into a sub-folder named after it: peft/<name>/
        self.updater.model.save_pretrained(checkpoint.adapters, selected_adapters=[self.name])


@dataclasses.dataclass
class PolicySet:
    """The policies of a run: name -> handle, and agent -> policy name."""

    handles: dict[str, PolicyHandle]
    agent_policy: dict[str, str]
    placement: Placement | None = None
    """With `distributed="ray"`: the placement groups and actors that serve and train the policies (released by
    `close`)."""

    @property
    def backends(self) -> dict[str, SeededBackend]:
        return {name: handle.backend for name, handle in self.handles.items()}

    @property
    def updaters(self) -> dict[str, PolicyUpdater]:
        """The update workers of the policies that live in this process (none with Ray: they live in actors)."""
        return {name: h.updater for name, h in self.handles.items() if isinstance(h, LocalPolicy)}

    @contextlib.contextmanager
    def full_weights(self) -> Iterator[None]:
        """While the block runs (a rollout, an evaluation), every policy sharded over the ranks holds its full
        weights on this rank (`sharding.full_weights`); without a launcher nothing changes."""
        in_process = [h for h in self.handles.values() if isinstance(h, LocalPolicy) and h.syncer is None]
        with contextlib.ExitStack() as stack:  # a vLLM engine has its own copy of the weights
            for model in {id(h.updater.model): h.updater.model for h in in_process}.values():
                stack.enter_context(full_weights(model))
            yield

    def close(self) -> None:
        """Release what the policies hold outside this process (Ray actors and placement groups)."""
        if self.placement is not None:
            self.placement.close()
            self.placement = None
