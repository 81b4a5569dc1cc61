"""Building the policies of a run: models, their update workers and their generation backends, per layout.

Devices (`pettingllms.parallel.devices`): each policy's model, update and generation live on one device, by default
spread over the visible GPUs (`policy_devices` to choose); the adapters of `lora_per_role` share their base
model's device.

- `shared`: one model named "shared" serves and is trained by every agent.
- `per_role`: one model per policy (from `model_name_or_path` or `agent_models`); by default one policy per
  agent, named after it; `agent_policies` maps agents (names or fnmatch patterns) onto fewer policies, e.g. the
  proposers of an ensemble onto one policy and its aggregator onto another.
- `lora_per_role`: one frozen base model with one LoRA adapter per policy (by default one per agent, named after
  it; `agent_policies` maps agents onto fewer adapters, as for `per_role`); each update trains only the policy's
  adapter (the others are frozen meanwhile). In process (`hf`), a policy samples from a copy of the base with its
  adapter merged in, in the compute dtype, refreshed after each of its updates (`lora_generation="merged"`,
  `merged_adapters`), or through PEFT with its adapter active (`"adapters"`: no copy, a slower forward).

With `distributed="ray"` (layouts `shared` and `per_role`) every policy's generation backend and update worker run
as Ray actors in the policy's own placement group (`pettingllms.trainers.policies.ray_actors`).

Precision: the trained weights and their optimizer states are float32 whatever `bf16` says (an AdamW step at the
paper's lr 1e-6 rounds away on most bfloat16 weights); `bf16` is the compute dtype (`ATGRPOConfig.compute_dtype`):
the update runs under autocast, and generation on a copy of the weights in bfloat16.

Generation backends (`generation_backend`, built by `generation.generation_backend`): `hf` samples from the update
worker's own model object in float32 (nothing to sync), or, in a lower compute dtype, from a copy in it that the policy's `sync()` refreshes after each
update, one parameter at a time; `vllm` gives every policy its own vLLM engine, in a process of its own on the
policy's device (the LoRA layout: one engine serving one adapter per policy), and the policy's `sync()` pushes its
weights (or adapter) into it after each update; on a GPU a policy's engine sleeps while its update runs
(`LocalPolicy.sleeper`).

Every policy is a `PolicyHandle` (`handles`; in this process: `LocalPolicy`, `AdapterPolicy`; on Ray: `RayPolicy`),
so the trainer and the checkpointer treat every layout and placement alike.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import torch

from pettingllms.backends.hf import load_pretrained
from pettingllms.backends.weights import model_stream
from pettingllms.core.seeding import derive_seed
from pettingllms.parallel.devices import place_policies
from pettingllms.parallel.world import current_world
from pettingllms.runs.layout import CheckpointLayout, map_agents
from pettingllms.trainers.policies.generation import AdapterBackend, generation_backend
from pettingllms.trainers.policies.handles import AdapterPolicy, LocalPolicy, PolicyHandle, PolicySet
from pettingllms.trainers.policies.merged_adapters import MergedAdapters
from pettingllms.trainers.policies.model_source import starting_model
from pettingllms.trainers.policies.ray_actors import RayPolicies
from pettingllms.trainers.settings.config import ATGRPOConfig
from pettingllms.trainers.update.updater import PolicyUpdater


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
    device = updater.args.device
    if args.generation_backend == "vllm":
        # the engine's own process runs on its policy's device (its rank's, under torchrun); sharing the GPU's
        # memory with the update, it sleeps through updates
        on_gpu = device.type == "cuda"
        engine = generation_backend(args, seed=seed, path=path, device=device, on_gpu=on_gpu, sleep=on_gpu)
        return LocalPolicy(
            name, updater, engine, functools.partial(_sync_copy, engine, updater.model), engine
        )
    # below float32, sampling runs on a copy in the compute dtype, synced after each update; off-policy, the copy
    # keeps the weights before the update, which the overlapping rollout samples from
    copy = args.compute_dtype != torch.float32 or args.off_policy_steps > 0
    model = load_pretrained(path, args.compute_dtype)[0] if copy else updater.model
    backend = generation_backend(
        args, seed=seed, model=model, tokenizer=updater.processing_class, device=device
    )
    syncer = functools.partial(_sync_copy, backend, updater.model) if copy else None
    return LocalPolicy(name, updater, backend, syncer)


def _sync_copy(backend, model) -> None:
    """Load `model`'s weights into the generation `backend` (a vLLM engine, or an HF copy in the compute dtype),
    one parameter at a time (a sharded model gathers each on every rank: `weights.model_stream`)."""
    backend.load_state(model_stream(model))


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
    placed = place_policies(["base"], {}, use_cpu=args.use_cpu)["base"]  # the adapters share one model
    updaters = {name: AdapterUpdater(name, peft_model, tokenizer, args, placed) for name in names}
    device = next(iter(updaters.values())).args.device  # `placed` as the torch.device the updaters pinned
    seed, on_gpu = derive_seed(args.seed, "policy", 0), device.type == "cuda"
    if args.generation_backend == "hf" and args.lora_generation == "adapters":
        sampler = generation_backend(args, seed=seed, model=peft_model, tokenizer=tokenizer, device=device)
        handles = {
            name: AdapterPolicy(name, updaters[name], AdapterBackend(sampler, peft_model, name))
            for name in names
        }
        return PolicySet(handles, agent_policy)
    if args.generation_backend == "vllm":
        engine = generation_backend(args, seed=seed, path=base_path, on_gpu=on_gpu, lora_adapters=len(names))
    else:  # merged: a copy of the base per adapter, in the compute dtype
        copies = {name: load_pretrained(base_path, args.compute_dtype)[0] for name in names}
        sampler = generation_backend(
            args, seed=seed, model=next(iter(copies.values())), tokenizer=tokenizer, device=device
        )
        engine = MergedAdapters(sampler, copies)
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
