"""Building the policies of a run: models, their update workers and their generation backends, per layout.

Devices (`pettingllms.trainers.devices`): each policy's model, update and generation live on one device, by default
spread over the visible GPUs (`policy_devices` to choose); the adapters of `lora_per_role` share their base
model's device.

- `shared`: one model named "shared" serves and is trained by every agent.
- `per_role`: one model per policy (from `model_name_or_path` or `agent_models`); by default one policy per
  agent, named after it; `agent_policies` maps agents (names or fnmatch patterns) onto fewer policies, e.g. the
  proposers of an ensemble onto one policy and its aggregator onto another.
- `lora_per_role`: one frozen base model with one LoRA adapter per policy (by default one per agent, named after
  it; `agent_policies` maps agents onto fewer adapters, as for `per_role`); generation activates the policy's
  adapter, and each update trains only that adapter (the others are frozen meanwhile).

With `distributed="ray"` (layouts `shared` and `per_role`) every policy's generation backend and update worker run
as Ray actors in the policy's own placement group (`pettingllms.trainers.ray_policies`).

Precision: the trained weights and their optimizer states are float32 whatever `bf16` says (an AdamW step at the
paper's lr 1e-6 rounds away on most bfloat16 weights); `bf16` is the compute dtype (`ATGRPOConfig.compute_dtype`):
the update runs under autocast, and generation on a copy of the weights in bfloat16.

Generation backends (`generation_backend`): `hf` samples from the update worker's own model object in float32
(nothing to sync), or, in a lower compute dtype, from a copy in it that the policy's `sync()` refreshes after each
update, one parameter at a time; `vllm` gives every policy its own vLLM engine, in a process of its own on the
policy's device (the LoRA layout: one engine serving one adapter per policy), and the policy's `sync()` pushes its
weights (or adapter) into it after each update; on a GPU a policy's engine sleeps while its update runs
(`LocalPolicy.sleeper`).

Every policy is a `PolicyHandle` (in this process: `LocalPolicy`, `AdapterPolicy`; on Ray: `RayPolicy`), so the
trainer and the checkpointer treat every layout and placement alike.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import torch

from pettingllms.backends.base import Generation, SamplingConfig, SeededBackend
from pettingllms.backends.hf import HFPolicy, load_pretrained
from pettingllms.backends.weights import model_stream
from pettingllms.core.errors import ConfigError
from pettingllms.core.seeding import derive_seed
from pettingllms.parallel.world import current_world
from pettingllms.rollout.samples import Sample
from pettingllms.runs.layout import CheckpointLayout, map_agents
from pettingllms.trainers.config import ATGRPOConfig
from pettingllms.trainers.devices import place_policies
from pettingllms.trainers.model_source import starting_model
from pettingllms.trainers.sharding import full_weights
from pettingllms.trainers.updater import PolicyUpdater

if TYPE_CHECKING:
    from pettingllms.trainers.ray_policies import RayPolicies


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
    different lanes side by side (`pettingllms.trainers.side_by_side`)."""

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
    placement: RayPolicies | None = None
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


def build_policies(
    args: ATGRPOConfig,
    agents: Sequence[str],
    *,
    resume_from: CheckpointLayout | None = None,
    log: Callable[[str], None] = print,
) -> PolicySet:
    """Build the policies of `args.policy_layout` for `agents` (weights from `resume_from` when resuming)."""
    if args.policy_layout == "lora_per_role":
        return _build_lora(args, agents, resume_from, log)
    agent_policy = map_agents(args.policy_layout, args.agent_policies, agents)
    names = list(dict.fromkeys(agent_policy.values()))

    def start(name: str) -> str:
        return starting_model(args.agent_models.get(name, args.model_name_or_path), args, log)

    def resolve() -> tuple[dict[str, str], dict[str, str]]:
        paths = {
            name: str(resume_from.model(name)) if resume_from is not None else start(name) for name in names
        }
        # a resumed run keeps the KL anchor at the weights the run started from, not at its checkpoint
        references = (
            {name: start(name) for name in names} if resume_from is not None and args.beta != 0.0 else {}
        )
        return paths, references

    world = current_world()  # under a launcher rank 0 builds or finds the starting models, once
    paths, references = world.gather(resolve() if world.is_main else None)[0]
    if args.distributed == "ray":
        from pettingllms.trainers.ray_policies import RayPolicies

        placed = RayPolicies(args, paths, references)
        return PolicySet(placed.handles(), agent_policy, placed)
    devices = place_policies(names, args.policy_devices, use_cpu=args.use_cpu)
    if args.generation_backend == "vllm" and any(d.startswith("cuda") for d in devices.values()):
        from pettingllms.backends.vllm_engine import check_sleeping_engines

        check_sleeping_engines(len(names), args.vllm_engine_kwargs)
    handles: dict[str, PolicyHandle] = {}
    for index, (name, path) in enumerate(paths.items()):
        model, tokenizer = load_pretrained(path)  # float32 master weights, whatever the compute dtype
        updater = PolicyUpdater(
            name, model, tokenizer, args, reference=references.get(name), device=devices[name]
        )
        handles[name] = _local_policy(args, name, path, updater, world.seed(args.seed, "policy", index))
    return PolicySet(handles, agent_policy)


def _local_policy(args: ATGRPOConfig, name: str, path: str, updater: PolicyUpdater, seed: int) -> LocalPolicy:
    """Policy `name` in this process: its update worker and its generation backend (`generation_backend`)."""
    if args.generation_backend != "vllm":
        # below float32, sampling runs on a copy in the compute dtype, synced after each update; off-policy, the
        # copy keeps the weights before the update, which the overlapping rollout samples from
        copy = args.compute_dtype != torch.float32 or args.off_policy_steps > 0
        model = load_pretrained(path, args.compute_dtype)[0] if copy else updater.model
        backend = HFPolicy(
            model,
            updater.processing_class,
            seed=seed,
            device=updater.args.device,
            max_batch_rows=args.max_generation_rows,
        )
        syncer = functools.partial(_sync_copy, backend, updater.model) if copy else None
        return LocalPolicy(name, updater, backend, syncer)
    from pettingllms.backends.vllm_engine import VLLMPolicy, runs_in_process

    # the engine's own process runs on its policy's device (its rank's, under torchrun); sharing the GPU's
    # memory with the update, it sleeps through updates
    device = updater.args.device
    on_gpu = device.type == "cuda"
    options = engine_options(args, on_gpu)
    # an engine kept in a torchrun rank's process joins the rank's process group, as vLLM needs there
    if current_world().size > 1 and runs_in_process(options):
        options.setdefault("distributed_executor_backend", "external_launcher")
    if on_gpu and args.off_policy_steps:
        raise ConfigError(
            "off_policy_steps=1 with generation_backend='vllm' on a GPU is not supported: the engine sleeps through "
            "the update that the next rollout would overlap; use generation_backend='hf' or off_policy_steps=0"
        )
    engine = VLLMPolicy(path, seed=seed, engine_kwargs=options, sleep_mode=on_gpu, device=str(device))
    return LocalPolicy(name, updater, engine, functools.partial(_sync_copy, engine, updater.model), engine)


def engine_options(args: ATGRPOConfig, on_gpu: bool) -> dict[str, Any]:
    """A policy's `vllm.LLM` arguments: `vllm_engine_kwargs`, and on a GPU the compute dtype (vLLM's "auto"
    would take a float32 checkpoint's dtype) unless they name one."""
    options = dict(args.vllm_engine_kwargs)
    if on_gpu:
        options.setdefault("dtype", str(args.compute_dtype).removeprefix("torch."))
    return options


def _sync_copy(backend, model) -> None:
    """Load `model`'s weights into the generation `backend` (a vLLM engine, or an HF copy in the compute dtype),
    one parameter at a time (a sharded model gathers each on every rank: `weights.model_stream`)."""
    backend.load_state(model_stream(model))


class AdapterBackend:
    """Generation with one LoRA adapter of a shared PEFT model active (a `SeededBackend` sharing the sampler's
    generator)."""

    def __init__(self, backend: HFPolicy, peft_model, adapter: str):
        self.backend, self.peft_model, self.adapter = backend, peft_model, adapter

    def generate(
        self, prompts: Sequence[str], n: int, sampling: SamplingConfig, seeds: Sequence[int] | None = None
    ) -> list[list[Generation]]:
        self.peft_model.set_adapter(self.adapter)
        return self.backend.generate(prompts, n, sampling, seeds)

    @property
    def model_server(self) -> HFPolicy:
        """The sampler of the shared model: the rollout engine serves one adapter of it at a time."""
        return self.backend

    def reseed(self, seed: int) -> None:
        self.backend.reseed(seed)

    def get_rng_state(self) -> Any:
        return self.backend.get_rng_state()

    def set_rng_state(self, state: Any) -> None:
        self.backend.set_rng_state(state)


class AdapterUpdater(PolicyUpdater):
    """A `PolicyUpdater` that trains only its adapter of a shared PEFT model."""

    def __init__(self, name: str, model, tokenizer, args: ATGRPOConfig, device: str):
        activate_adapter(model, name)  # the optimizer is built over this adapter's parameters only
        super().__init__(name, model, tokenizer, args, device=device)

    def update(self, samples):
        activate_adapter(self.model, self.name)
        return super().update(samples)


def activate_adapter(peft_model, adapter: str) -> None:
    """Make `adapter` the active one and the only trainable parameters."""
    peft_model.set_adapter(adapter)
    for name, parameter in peft_model.named_parameters():
        parameter.requires_grad = "lora_" in name and f".{adapter}." in name


def _peft_model(args: ATGRPOConfig, base, names: Sequence[str], resume_from: CheckpointLayout | None):
    """The run's PEFT model with one adapter per policy: fresh, or loaded from the checkpoint `resume_from`."""
    from peft import LoraConfig, PeftModel, get_peft_model

    if resume_from is not None:
        peft_model = PeftModel.from_pretrained(
            base, resume_from.adapter(names[0]), adapter_name=names[0], is_trainable=True
        )
        for name in names[1:]:
            peft_model.load_adapter(resume_from.adapter(name), adapter_name=name, is_trainable=True)
        return peft_model
    config = LoraConfig(
        r=args.lora_r, lora_alpha=args.lora_alpha, target_modules="all-linear", task_type="CAUSAL_LM"
    )
    # PEFT draws the adapters' initial A matrices from torch's global RNG: seed it from the run's seed, and
    # leave the global state as it was, so that the same seed gives the same adapters
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(derive_seed(args.seed, "lora_init"))
        peft_model = get_peft_model(base, config, adapter_name=names[0])
        for name in names[1:]:
            peft_model.add_adapter(name, config)
    return peft_model


def _build_lora(
    args: ATGRPOConfig,
    agents: Sequence[str],
    resume_from: CheckpointLayout | None,
    log: Callable[[str], None],
) -> PolicySet:
    base_path = starting_model(args.model_name_or_path, args, log)
    base, tokenizer = load_pretrained(base_path, args.compute_dtype)  # frozen: the adapters train in float32
    agent_policy = map_agents(args.policy_layout, args.agent_policies, agents)
    names = list(dict.fromkeys(agent_policy.values()))
    peft_model = _peft_model(args, base, names, resume_from)
    device = place_policies(["base"], {}, use_cpu=args.use_cpu)["base"]  # the adapters share one model
    updaters = {name: AdapterUpdater(name, peft_model, tokenizer, args, device) for name in names}
    if args.generation_backend == "vllm":
        from pettingllms.backends.vllm_engine import VLLMPolicy

        engine = VLLMPolicy(
            base_path,
            seed=derive_seed(args.seed, "policy", 0),
            enable_lora=True,
            max_lora_rank=args.lora_r,
            max_loras=len(names),
            engine_kwargs=args.vllm_engine_kwargs,
        )
        handles = {}
        for name in names:
            handles[name] = AdapterPolicy(
                name,
                updaters[name],
                engine.for_adapter(name),
                functools.partial(engine.sync_adapter, peft_model, name),
            )
            handles[name].sync()
        return PolicySet(handles, agent_policy)
    device = next(iter(updaters.values())).args.device
    sampler = HFPolicy(
        peft_model,
        tokenizer,
        seed=derive_seed(args.seed, "policy", 0),
        device=device,
        max_batch_rows=args.max_generation_rows,
    )
    handles = {
        name: AdapterPolicy(name, updaters[name], AdapterBackend(sampler, peft_model, name)) for name in names
    }
    return PolicySet(handles, agent_policy)
