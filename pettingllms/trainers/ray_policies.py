"""One Ray placement group per policy, holding its rollout server and its update worker (`distributed="ray"`).

For every policy the trainer reserves a placement group of two bundles, each `ray_policy_resources` (default
`{"CPU": 1}`; `{"GPU": 1}` on GPU machines), packed on one node when possible: bundle 0 hosts `RolloutServer`
(the policy's generation backend, HF or vLLM, as `generation_backend` says), bundle 1 hosts `UpdateWorker` (the
policy's TRL update worker, `PolicyUpdater`). The trainer process only routes: prompts go to each policy's server,
samples to their policy's worker, and after every update the worker's weights (safetensors bytes of the full
state, `lm_head` included) are loaded into the server. Each policy is a `RayPolicy` handle. The workers write
their weights into checkpoints themselves, so `output_dir` must be a folder every node can reach (one machine,
or a shared file system); optimizer, scheduler and generator states travel to the trainer, which writes them.

Lifetime: the actors and placement groups belong to the trainer; `close()` removes exactly those, and shuts Ray
down only if the trainer started it (a cluster joined by address is left running). `lora_per_role` is not
offered here: its adapters share one base model, which one process must hold.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from pettingllms.backends.base import Generation, SamplingConfig
from pettingllms.core.errors import PettingLLMsError
from pettingllms.core.seeding import derive_seed
from pettingllms.pools.ray_cluster import connect
from pettingllms.rollout.samples import Sample
from pettingllms.runs.layout import CheckpointLayout
from pettingllms.trainers.config import ATGRPOConfig


class PlacementError(PettingLLMsError):
    """A policy's placement group could not be reserved on the cluster."""


class UpdateWorker:
    """Ray actor: the update worker of one policy (a `PolicyUpdater` over its own copy of the model)."""

    def __init__(self, name: str, path: str, args: ATGRPOConfig, reference: str | None = None):
        from pettingllms.backends.hf import load_pretrained
        from pettingllms.trainers.updater import PolicyUpdater

        model, tokenizer = load_pretrained(path, args.weights_dtype)
        self.updater = PolicyUpdater(name, model, tokenizer, args, reference=reference)

    def update(self, samples: Sequence[Sample]) -> dict[str, float]:
        return self.updater.update(samples)

    def weights(self) -> bytes:
        """The model's full state as safetensors bytes (what `RolloutServer.load_weights` takes)."""
        from pettingllms.backends.weights import full_state, serialize

        return serialize(full_state(self.updater.model))

    def save_weights(self, folder: str) -> None:
        """Write the model and its tokenizer into `folder` (a path every node of the cluster reaches)."""
        self.updater.model.save_pretrained(folder)
        self.updater.processing_class.save_pretrained(folder)

    def training_state(self) -> dict[str, Any]:
        """The optimizer's and the scheduler's state dicts."""
        return {
            "optimizer": self.updater.optimizer.state_dict(),
            "scheduler": self.updater.lr_scheduler.state_dict(),
        }

    def load_training_state(self, state: dict[str, Any]) -> None:
        self.updater.optimizer.load_state_dict(state["optimizer"])
        self.updater.lr_scheduler.load_state_dict(state["scheduler"])

    def pid(self) -> int:
        import os

        return os.getpid()


class RolloutServer:
    """Ray actor: the generation backend of one policy (HF or vLLM), refreshed from its update worker."""

    def __init__(self, path: str, seed: int, backend: str, engine_kwargs: dict[str, Any]):
        if backend == "vllm":
            from pettingllms.backends.vllm_engine import VLLMPolicy

            self.policy = VLLMPolicy(path, seed=seed, engine_kwargs=engine_kwargs)
        else:
            from pettingllms.backends.hf import HFPolicy

            self.policy = HFPolicy.from_pretrained(path, seed=seed)

    def generate(self, prompts: Sequence[str], n: int, sampling: SamplingConfig) -> list[list[Generation]]:
        return self.policy.generate(prompts, n, sampling)

    def load_weights(self, payload: bytes) -> None:
        """Load an update worker's weights (safetensors bytes of the full state) into the backend."""
        from safetensors.torch import load

        self.policy.load_state(load(payload))

    def reseed(self, seed: int) -> None:
        self.policy.reseed(seed)

    def get_rng_state(self) -> Any:
        return self.policy.get_rng_state()

    def set_rng_state(self, state: Any) -> None:
        self.policy.set_rng_state(state)

    def pid(self) -> int:
        import os

        return os.getpid()


@dataclasses.dataclass
class RemoteBackend:
    """The trainer's handle on a `RolloutServer`: a policy backend and a `SeededBackend`."""

    actor: Any

    def generate(self, prompts: Sequence[str], n: int, sampling: SamplingConfig) -> list[list[Generation]]:
        import ray

        return ray.get(self.actor.generate.remote(list(prompts), n, sampling))

    def reseed(self, seed: int) -> None:
        import ray

        ray.get(self.actor.reseed.remote(seed))

    def get_rng_state(self) -> Any:
        import ray

        return ray.get(self.actor.get_rng_state.remote())

    def set_rng_state(self, state: Any) -> None:
        import ray

        ray.get(self.actor.set_rng_state.remote(state))


@dataclasses.dataclass
class RayPolicy:
    """One policy on Ray (a `PolicyHandle`): its rollout server and update worker."""

    name: str
    backend: RemoteBackend
    worker: Any

    def update(self, samples: Sequence[Sample]) -> dict[str, float]:
        import ray

        return ray.get(self.worker.update.remote(list(samples)))

    def sync(self) -> None:
        """Load the updated weights into the rollout server (through the object store, no file)."""
        import ray

        ray.get(self.backend.actor.load_weights.remote(self.worker.weights.remote()))

    def save_weights(self, checkpoint: CheckpointLayout) -> None:
        import ray

        ray.get(self.worker.save_weights.remote(str(checkpoint.model(self.name))))

    def state_dict(self) -> dict[str, Any]:
        import ray

        return {**ray.get(self.worker.training_state.remote()), "generator": self.backend.get_rng_state()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        import ray

        ray.get(self.worker.load_training_state.remote({k: state[k] for k in ("optimizer", "scheduler")}))
        self.backend.set_rng_state(state["generator"])


class RayPolicies:
    """Placement groups, servers and workers of every policy (see the module docstring).

    Args:
        args: the run's settings (`ray_address`, `ray_policy_resources`, `generation_backend`, ...).
        paths: policy name -> the model folder it starts from.
        references: policy name -> the folder of its KL reference model, where that is not `paths[name]` (a
            resumed run's starting weights).
    """

    def __init__(self, args: ATGRPOConfig, paths: dict[str, str], references: dict[str, str] | None = None):
        references = references or {}
        import ray
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        self._started_ray = connect(args.ray_address)
        resources = dict(args.ray_policy_resources)
        actor_options = {
            "num_cpus": resources.get("CPU", 0),
            "num_gpus": resources.get("GPU", 0),
            "resources": {k: v for k, v in resources.items() if k not in ("CPU", "GPU")},
        }
        self.groups, self.servers, self.workers = {}, {}, {}
        for index, (name, path) in enumerate(paths.items()):
            group = placement_group([resources, resources], strategy="PACK", name=f"pettingllms-{name}")
            self.groups[name] = group
            try:
                ray.get(group.ready(), timeout=args.ray_placement_timeout)
            except ray.exceptions.GetTimeoutError as error:
                self.close()
                raise PlacementError(
                    f"the Ray cluster could not place policy {name!r}: 2 bundles of {resources} were not free "
                    f"within ray_placement_timeout={args.ray_placement_timeout} s (free: "
                    f"{ray.available_resources() if ray.is_initialized() else 'cluster stopped'}); lower "
                    "ray_policy_resources or add nodes"
                ) from error

            def placed(bundle: int, group=group) -> dict[str, Any]:
                strategy = PlacementGroupSchedulingStrategy(
                    placement_group=group, placement_group_bundle_index=bundle
                )
                return {**actor_options, "scheduling_strategy": strategy, "max_restarts": 0}

            seed = derive_seed(args.seed, "policy", index)
            self.servers[name] = (
                ray.remote(RolloutServer)
                .options(**placed(0))
                .remote(path, seed, args.generation_backend, dict(args.vllm_engine_kwargs))
            )
            self.workers[name] = (
                ray.remote(UpdateWorker).options(**placed(1)).remote(name, path, args, references.get(name))
            )
        ray.get([actor.pid.remote() for actor in [*self.servers.values(), *self.workers.values()]])

    def handles(self) -> dict[str, RayPolicy]:
        return {
            name: RayPolicy(name, RemoteBackend(self.servers[name]), self.workers[name])
            for name in self.servers
        }

    def close(self) -> None:
        """Kill this trainer's actors, remove its placement groups; shut Ray down only if it was started here."""
        import ray
        from ray.util.placement_group import remove_placement_group

        for actor in [*self.servers.values(), *self.workers.values()]:
            ray.kill(actor)
        for group in self.groups.values():
            remove_placement_group(group)
        self.servers, self.workers, self.groups = {}, {}, {}
        if self._started_ray:
            ray.shutdown()
