"""One Ray placement group per policy, holding its rollout server and its update worker (`distributed="ray"`).

For every policy the trainer reserves a placement group of two bundles, each `ray_policy_resources` (default
`{"CPU": 1}`; `{"GPU": 1}` on GPU machines), packed on one node when possible: bundle 0 hosts `RolloutServer`
(the policy's generation backend, HF or vLLM, as `generation_backend` says), bundle 1 hosts `UpdateWorker` (the
policy's TRL update worker, `PolicyUpdater`). The trainer process only routes: prompts go to each policy's server,
samples to their policy's worker, and after every update the worker's weights (safetensors bytes of every parameter
once, a tied head as the embeddings) are loaded into the server. Each policy is a `RayPolicy` handle. Each actor works on
its own bundle's device (a GPU bundle: its GPU, `n_gpu` 1; `pettingllms.parallel.devices`), the server
generating in the run's weight precision. The workers write their weights, optimizer and scheduler states into
checkpoints themselves (the driver never holds a policy's optimizer), so `output_dir` must be a folder every node
can reach (one machine, or a shared file system); only the sampler's generator state travels to the trainer.

Before anything is reserved the layout is checked against the alive nodes' resources (`placement_problem`), and
before any model loads each policy's update-worker bundle writes a marker into `output_dir` that the driver must
read back (`write_marker`, `unshared_folder`): a layout that cannot be placed, or a folder that is not shared, is
refused (`PlacementError`) with the numbers or the node.

Lifetime: the actors and placement groups belong to the trainer; `close()` removes exactly those, and shuts Ray
down only if the trainer started it (a cluster joined by address is left running). `lora_per_role` is not
offered here: its adapters share one base model, which one process must hold.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pettingllms.backends.base import Generation, SamplingConfig
from pettingllms.core.errors import PettingLLMsError
from pettingllms.core.seeding import derive_seed
from pettingllms.parallel.devices import place_policies
from pettingllms.pools.ray_cluster import NodeLostError, connect
from pettingllms.pools.ray_env_pool import WORKER_CPUS, ray_env_workers
from pettingllms.rollout.samples import Sample
from pettingllms.runs.layout import CheckpointLayout
from pettingllms.trainers.policies.generation import generation_backend
from pettingllms.trainers.settings.config import ATGRPOConfig


class PlacementError(PettingLLMsError):
    """A policy's placement group could not be reserved on the cluster."""


class PolicyLostError(NodeLostError):
    """A policy's Ray actor died (its node lost, or the actor crashed): the message names the policy, the actor and
    its node."""


def collect(ref: Any, policy: str, actor: str, node: str) -> Any:
    """`ray.get(ref)`, a call on policy `policy`'s `actor` on `node`; its death is a `PolicyLostError` naming them
    (Ray's own error names an address only)."""
    import ray

    try:
        return ray.get(ref)
    except (ray.exceptions.RayActorError, ray.exceptions.ObjectLostError) as error:
        raise PolicyLostError(
            f"policy {policy!r} lost its {actor} on node {node} ({type(error).__name__}: the node left the "
            "cluster, or the actor's process died)"
        ) from None


def write_marker(output_dir: str, name: str, token: str) -> tuple[str, str]:
    """(In a policy's update-worker bundle.) Write a marker file for policy `name` into `output_dir`; return this
    node's address and the marker's path."""
    import ray

    folder = Path(output_dir)
    folder.mkdir(parents=True, exist_ok=True)
    node = ray.util.get_node_ip_address()
    marker = folder / f".shared-folder-check-{name}-{token}"
    marker.write_text(node)
    return node, str(marker)


def unshared_folder(output_dir: str, name: str, node: str, marker: Path) -> str | None:
    """Why `output_dir` is not shared with policy `name`'s update worker on `node`, whose `marker` this driver
    cannot read; None when it can."""
    if marker.is_file() and marker.read_text() == node:
        return None
    return (
        f"output_dir={output_dir!r} is not shared: policy {name!r}'s update worker on node {node} wrote {marker}, "
        "which this driver cannot read; the update workers write the checkpoints there, so use a folder every node "
        "reaches (a shared file system)"
    )


def placement_problem(
    policies: int, bundle: Mapping[str, float], env_workers: int, nodes: Sequence[Mapping[str, float]]
) -> str | None:
    """Why `policies` placement groups of two `bundle`s each, beside `env_workers` env actors of `WORKER_CPUS`
    CPUs, cannot be placed on a cluster whose alive nodes hold `nodes` (their resources); None when they can.
    The sizing rule (docs/scale.md): the cluster's CPUs >= 2 x policies x the bundle's CPUs + env workers, its
    GPUs (and any other resource) >= 2 x policies x the bundle's, and every bundle fits on one node."""
    asked = {name: 2 * policies * amount for name, amount in bundle.items()}
    asked["CPU"] = asked.get("CPU", 0.0) + env_workers * WORKER_CPUS
    totals: dict[str, float] = {}
    for node in nodes:
        for name in asked:
            totals[name] = totals.get(name, 0.0) + float(node.get(name, 0.0))
    short = sorted(name for name, amount in asked.items() if amount > totals[name] + 1e-9)
    unplaceable = sorted(
        name for name, amount in bundle.items() if all(node.get(name, 0.0) < amount for node in nodes)
    )
    if not short and not unplaceable:
        return None
    held = ", ".join(f"{{{', '.join(f'{n}: {node.get(n, 0.0):g}' for n in asked)}}}" for node in nodes)
    message = (
        f"{policies} polic{'y' if policies == 1 else 'ies'} x 2 bundles of {dict(bundle)} + {env_workers} env workers x {WORKER_CPUS:g} CPU ask "
        f"{ {name: round(amount, 3) for name, amount in asked.items()} }; the cluster's {len(nodes)} alive node(s) "
        f"hold {held}"
    )
    if unplaceable:
        message += f"; no node holds one bundle's {unplaceable}"
    largest = max((float(node.get("CPU", 0.0)) for node in nodes), default=0.0)
    return message + "; " + _fitting_setting(policies, bundle, env_workers, totals, largest)


def _fitting_setting(
    policies: int,
    bundle: Mapping[str, float],
    env_workers: int,
    totals: Mapping[str, float],
    node_cpus: float,
) -> str:
    """A setting that fits the cluster's `totals` (and its largest node's `node_cpus`): smaller CPU bundles, else
    fewer env workers, else more nodes."""
    spare = totals.get("CPU", 0.0) - env_workers * WORKER_CPUS
    quarter = min(
        int(spare / (2 * policies) * 4) / 4, node_cpus
    )  # in quarter CPUs, leaving the env workers theirs
    if set(bundle) <= {"CPU"} and quarter >= 0.25:
        return f"a setting that fits: --ray_policy_resources '{{\"CPU\": {quarter:g}}}'"
    workers = int(totals.get("CPU", 0.0) - 2 * policies * bundle.get("CPU", 0.0))
    if workers >= 1 and all(
        2 * policies * amount <= totals.get(name, 0.0) for name, amount in bundle.items()
    ):
        return f"a setting that fits: --env_workers {workers}"
    return "add nodes that hold these resources, or run fewer policies (policy_layout shared)"


class UpdateWorker:
    """Ray actor: the update worker of one policy (a `PolicyUpdater` over its own copy of the model)."""

    def __init__(self, name: str, path: str, args: ATGRPOConfig, reference: str | None = None):
        from pettingllms.backends.hf import load_pretrained
        from pettingllms.trainers.update.updater import PolicyUpdater

        model, tokenizer = load_pretrained(path)  # float32 master weights, whatever the compute dtype
        device = place_policies([name], {}, use_cpu=args.use_cpu)[
            name
        ]  # the bundle's GPU (Ray sets the visible ones)
        self.updater = PolicyUpdater(name, model, tokenizer, args, reference=reference, device=device)

    def update(self, samples: Sequence[Sample]) -> dict[str, float]:
        return self.updater.update(samples)

    def placement(self) -> dict[str, Any]:
        """Where this worker trains: its device and transformers' `n_gpu` for it."""
        return {"device": str(self.updater.args.device), "n_gpu": self.updater.args.n_gpu}

    def weights(self) -> bytes:
        """The model's full state as safetensors bytes (what `RolloutServer.load_weights` takes)."""
        from pettingllms.backends.weights import full_state, serialize

        return serialize(full_state(self.updater.model))

    def save_weights(self, folder: str) -> None:
        """Write the model and its tokenizer into `folder` (a path every node of the cluster reaches)."""
        self.updater.save_model(Path(folder))

    def save_training_state(self, optimizer_path: str, scheduler_path: str) -> None:
        """Write the optimizer's and the scheduler's states (paths every node of the cluster reaches)."""
        self.updater.save_training_state(Path(optimizer_path), Path(scheduler_path))

    def load_training_state(self, optimizer_path: str, scheduler_path: str) -> None:
        self.updater.load_training_state(Path(optimizer_path), Path(scheduler_path))

    def pid(self) -> int:
        import os

        return os.getpid()

    def node(self) -> str:
        import ray

        return ray.util.get_node_ip_address()


class RolloutServer:
    """Ray actor: the generation backend of one policy (HF or vLLM), refreshed from its update worker."""

    def __init__(self, name: str, path: str, seed: int, args: ATGRPOConfig):
        import torch

        on_vllm = args.generation_backend == "vllm"
        device = None if on_vllm else place_policies([name], {}, use_cpu=args.use_cpu)[name]
        self.policy = generation_backend(
            args, seed=seed, path=path, device=device, on_gpu=torch.cuda.is_available()
        )

    def device(self) -> str:
        """Where the backend generates (`cuda:0` of the bundle's GPUs, or `cpu`)."""
        return str(getattr(self.policy, "device", "vllm"))

    def generate(
        self, prompts: Sequence[str], n: int, sampling: SamplingConfig, seeds: Sequence[int] | None = None
    ) -> list[list[Generation]]:
        return self.policy.generate(prompts, n, sampling, seeds)

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

    def node(self) -> str:
        import ray

        return ray.util.get_node_ip_address()


@dataclasses.dataclass
class RemoteBackend:
    """The trainer's handle on policy `policy`'s `RolloutServer` on `node`: a policy backend and a `SeededBackend`."""

    actor: Any
    policy: str
    node: str

    def generate(
        self, prompts: Sequence[str], n: int, sampling: SamplingConfig, seeds: Sequence[int] | None = None
    ) -> list[list[Generation]]:
        return self._get(self.actor.generate.remote(list(prompts), n, sampling, seeds))

    def reseed(self, seed: int) -> None:
        self._get(self.actor.reseed.remote(seed))

    def get_rng_state(self) -> Any:
        return self._get(self.actor.get_rng_state.remote())

    def set_rng_state(self, state: Any) -> None:
        self._get(self.actor.set_rng_state.remote(state))

    def _get(self, ref: Any) -> Any:
        return collect(ref, self.policy, "rollout server", self.node)


@dataclasses.dataclass
class RayPolicy:
    """One policy on Ray (a `PolicyHandle`): its rollout server and update worker."""

    name: str
    backend: RemoteBackend
    worker: Any
    worker_node: str

    @property
    def lane(self) -> str:
        """Its own: its update worker is an actor with resources of its own."""
        return f"ray:{self.name}"

    def update(self, samples: Sequence[Sample]) -> dict[str, float]:
        return self._get(self.worker.update.remote(list(samples)))

    def sync(self) -> None:
        """Load the updated weights into the rollout server (through the object store, no file)."""
        self.backend._get(self.backend.actor.load_weights.remote(self.worker.weights.remote()))

    def save_weights(self, checkpoint: CheckpointLayout) -> None:
        self._get(self.worker.save_weights.remote(str(checkpoint.model(self.name))))

    def save_training_state(self, checkpoint: CheckpointLayout) -> None:
        """The update worker writes its optimizer's and scheduler's states itself (they never reach the driver)."""
        paths = str(checkpoint.optimizer(self.name)), str(checkpoint.scheduler(self.name))
        self._get(self.worker.save_training_state.remote(*paths))

    def load_training_state(self, checkpoint: CheckpointLayout) -> None:
        paths = str(checkpoint.optimizer(self.name)), str(checkpoint.scheduler(self.name))
        self._get(self.worker.load_training_state.remote(*paths))

    def _get(self, ref: Any) -> Any:
        return collect(ref, self.name, "update worker", self.worker_node)


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
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        self._started_ray = connect(args.ray_address)
        resources = dict(args.ray_policy_resources)
        nodes = [node["Resources"] for node in ray.nodes() if node["Alive"]]
        problem = placement_problem(len(paths), resources, ray_env_workers(args.env_workers), nodes)
        if problem is not None:
            self._close_ray()
            raise PlacementError(f"the Ray cluster cannot place this run: {problem}")
        actor_options = {
            "num_cpus": resources.get("CPU", 0),
            "num_gpus": resources.get("GPU", 0),
            "resources": {k: v for k, v in resources.items() if k not in ("CPU", "GPU")},
        }
        self.groups, self.servers, self.workers = {}, {}, {}
        for name in paths:
            self._reserve(name, resources, args.ray_placement_timeout)

        def placed(name: str, bundle: int) -> dict[str, Any]:
            strategy = PlacementGroupSchedulingStrategy(
                placement_group=self.groups[name], placement_group_bundle_index=bundle
            )
            return {**actor_options, "scheduling_strategy": strategy}

        self._check_shared_folder(args.output_dir, {name: placed(name, 1) for name in paths})
        for index, (name, path) in enumerate(paths.items()):
            seed = derive_seed(args.seed, "policy", index)
            server, worker = ray.remote(RolloutServer), ray.remote(UpdateWorker)
            self.servers[name] = server.options(**placed(name, 0), max_restarts=0).remote(
                name, path, seed, args
            )
            self.workers[name] = worker.options(**placed(name, 1), max_restarts=0).remote(
                name, path, args, references.get(name)
            )
        try:  # policy -> (its server's node, its worker's node), for the message if it is lost
            self.nodes = {
                name: (
                    collect(self.servers[name].node.remote(), name, "rollout server", "(starting)"),
                    collect(self.workers[name].node.remote(), name, "update worker", "(starting)"),
                )
                for name in paths
            }
        except (
            NodeLostError
        ):  # an actor died as it started (its node left meanwhile): nothing of this run stays
            self.close()
            raise

    def _reserve(self, name: str, resources: dict[str, float], timeout: float) -> None:
        """Reserve policy `name`'s placement group of two `resources` bundles (`self.groups[name]`), ready
        (`PlacementError` after `timeout`)."""
        import ray
        from ray.util.placement_group import placement_group

        group = placement_group([resources, resources], strategy="PACK", name=f"pettingllms-{name}")
        self.groups[name] = group
        try:
            ray.get(group.ready(), timeout=timeout)
        except ray.exceptions.GetTimeoutError as error:
            self.close()
            raise PlacementError(
                f"the Ray cluster could not place policy {name!r}: 2 bundles of {resources} were not free "
                f"within ray_placement_timeout={timeout} s (free: "
                f"{ray.available_resources() if ray.is_initialized() else 'cluster stopped'}); lower "
                "ray_policy_resources or add nodes"
            ) from error

    def _check_shared_folder(self, output_dir: str, workers: dict[str, dict[str, Any]]) -> None:
        """Refuse (`PlacementError`) an `output_dir` that a policy's update worker, on its node (`workers`: its
        placement options), writes where this driver cannot read: the workers write the checkpoints there. Each
        writes a marker from its bundle before any model loads; the driver reads each back and removes it."""
        import ray

        token = uuid.uuid4().hex
        marks = {
            name: ray.remote(write_marker).options(**options).remote(output_dir, name, token)
            for name, options in workers.items()
        }
        for name, mark in marks.items():
            node, path = ray.get(mark)
            problem = unshared_folder(output_dir, name, node, Path(path))
            if problem is not None:
                self.close()
                raise PlacementError(problem)
            Path(path).unlink()

    def handles(self) -> dict[str, RayPolicy]:
        return {
            name: RayPolicy(
                name,
                RemoteBackend(self.servers[name], name, self.nodes[name][0]),
                self.workers[name],
                self.nodes[name][1],
            )
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
        self._close_ray()

    def _close_ray(self) -> None:
        """Shut Ray down if this trainer started it (a joined cluster is left running)."""
        import ray

        if self._started_ray:
            ray.shutdown()
