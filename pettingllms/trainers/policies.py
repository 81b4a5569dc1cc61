"""Building the policies of a run: models, their update workers and their generation backends, per layout.

- `shared`: one model named "shared" serves and is trained by every agent.
- `per_role`: one model per policy (from `model_name_or_path` or `agent_models`); by default one policy per
  agent, named after it; `agent_policies` maps agents (names or fnmatch patterns) onto fewer policies, e.g. the
  proposers of an ensemble onto one policy and its aggregator onto another.
- `lora_per_role`: one frozen base model with one LoRA adapter per agent, named after the agent; generation
  activates the agent's adapter, and each update trains only that adapter (the others are frozen meanwhile).

With `distributed="ray"` (layouts `shared` and `per_role`) every policy's generation backend and update worker run
as Ray actors in the policy's own placement group (`pettingllms.trainers.ray_policies`).

Generation backends (`generation_backend`): `hf` samples from the update worker's own model object (nothing to
sync); `vllm` gives every policy its own vLLM engine (the LoRA layout: one engine serving one adapter per
policy), and `PolicySet.sync(name)` pushes policy `name`'s weights (or adapter) into it after each update.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pettingllms.errors import ConfigError
from pettingllms.policies.base import Generation, PolicyBackend, SamplingConfig
from pettingllms.trainers.config import ATGRPOConfig
from pettingllms.trainers.updater import PolicyUpdater

if TYPE_CHECKING:
    from pettingllms.trainers.ray_policies import RayPolicies


@dataclasses.dataclass
class PolicySet:
    """The policies of a run: name -> update worker and generation backend; agent -> policy name; name -> how to
    push its updated weights to its backend (absent when the backend samples from the updater's model)."""

    updaters: dict[str, PolicyUpdater]
    backends: dict[str, PolicyBackend]
    agent_policy: dict[str, str]
    syncers: dict[str, Callable[[], None]] = dataclasses.field(default_factory=dict)
    placement: RayPolicies | None = None
    """With `distributed="ray"`: the placement groups whose actors serve and train the policies."""

    def sync(self, name: str) -> None:
        """Make policy `name`'s backend generate with its updater's current weights."""
        if name in self.syncers:
            self.syncers[name]()

    def close(self) -> None:
        """Release what the policies hold outside this process (Ray actors and placement groups)."""
        if self.placement is not None:
            self.placement.close()


def resolve_model(name_or_path: str, args: ATGRPOConfig) -> str:
    """'tiny' -> the built-in model for this env and workflow (built and warm-started once, then cached)."""
    if name_or_path != "tiny":
        return name_or_path
    from pettingllms.models.warmstart import ensure_tiny_model

    # the run evaluates before training anyway: skip the build's own before/after evaluation
    return str(
        ensure_tiny_model(args.env_id, env_kwargs=args.env_kwargs, workflow=args.workflow, eval_episodes=0)
    )


def load_model(path: str):
    """(model, tokenizer) in float32 from a local folder or a Hugging Face id; left padding for generation."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    return model, tokenizer


def build_policies(
    args: ATGRPOConfig, agents: Sequence[str], *, resume_from: Path | None = None
) -> PolicySet:
    """Build the policies of `args.policy_layout` for `agents` (weights from `resume_from` when resuming)."""
    from pettingllms.policies.hf import HFPolicy

    if args.policy_layout == "lora_per_role":
        return _build_lora(args, agents, resume_from)
    agent_policy = map_agents(args.policy_layout, args.agent_policies, agents)
    names = list(dict.fromkeys(agent_policy.values()))

    def start(name: str) -> str:
        return resolve_model(args.agent_models.get(name, args.model_name_or_path), args)

    paths = {
        name: str(resume_from / f"policy_{name}") if resume_from is not None else start(name)
        for name in names
    }
    # a resumed run keeps the KL anchor at the weights the run started from, not at its checkpoint
    references = {name: start(name) for name in names} if resume_from is not None and args.beta != 0.0 else {}
    if args.distributed == "ray":
        from pettingllms.trainers.ray_policies import RayPolicies

        placed = RayPolicies(args, paths, references)
        syncers = {name: functools.partial(placed.sync, name) for name in names}
        return PolicySet(placed.updaters(), placed.backends(), agent_policy, syncers, placed)
    policies = PolicySet({}, {}, agent_policy)
    for index, (name, path) in enumerate(paths.items()):
        model, tokenizer = load_model(path)
        updater = policies.updaters[name] = PolicyUpdater(
            name, model, tokenizer, args, reference=references.get(name)
        )
        seed = args.seed * 1_000 + index
        if args.generation_backend == "vllm":
            from pettingllms.policies.vllm_engine import VLLMPolicy

            engine = VLLMPolicy(path, seed=seed, engine_kwargs=args.vllm_engine_kwargs)
            policies.backends[name] = engine
            policies.syncers[name] = functools.partial(engine.sync_weights, updater.model)
        else:
            policies.backends[name] = HFPolicy(
                updater.model, tokenizer, seed=seed, device=updater.accelerator.device
            )
    return policies


def map_agents(
    policy_layout: str, agent_policies: Mapping[str, str], agents: Sequence[str]
) -> dict[str, str]:
    """agent -> policy name: "shared" for every agent, or `agent_policies` (first matching name or fnmatch
    pattern), or each agent's own name. An agent that no entry matches raises `ConfigError`."""
    if policy_layout == "shared":
        return dict.fromkeys(agents, "shared")
    if not agent_policies:
        return {agent: agent for agent in agents}
    mapping, unmatched = {}, []
    for agent in agents:
        match = next(
            (p for pattern, p in agent_policies.items() if fnmatch.fnmatchcase(agent, pattern)), None
        )
        if match is None:
            unmatched.append(agent)
        else:
            mapping[agent] = str(match)
    if unmatched:
        raise ConfigError(
            f"agent_policies {dict(agent_policies)} maps no policy to agents {unmatched} (agents: {list(agents)})"
        )
    return mapping


class AdapterPolicy:
    """Generation with one LoRA adapter of a shared PEFT model active."""

    def __init__(self, backend: PolicyBackend, peft_model, adapter: str):
        self.backend, self.peft_model, self.adapter = backend, peft_model, adapter

    def generate(self, prompts: Sequence[str], n: int, sampling: SamplingConfig) -> list[list[Generation]]:
        self.peft_model.set_adapter(self.adapter)
        return self.backend.generate(prompts, n, sampling)

    @property
    def generator(self):
        return self.backend.generator


class AdapterUpdater(PolicyUpdater):
    """A `PolicyUpdater` that trains only its adapter of a shared PEFT model."""

    def __init__(self, name: str, model, tokenizer, args: ATGRPOConfig):
        activate_adapter(model, name)  # the optimizer is built over this adapter's parameters only
        super().__init__(name, model, tokenizer, args)

    def update(self, samples):
        activate_adapter(self.model, self.name)
        return super().update(samples)


def activate_adapter(peft_model, adapter: str) -> None:
    """Make `adapter` the active one and the only trainable parameters."""
    peft_model.set_adapter(adapter)
    for name, parameter in peft_model.named_parameters():
        parameter.requires_grad = "lora_" in name and f".{adapter}." in name


def _build_lora(args: ATGRPOConfig, agents: Sequence[str], resume_from: Path | None) -> PolicySet:
    from peft import LoraConfig, PeftModel, get_peft_model

    from pettingllms.policies.hf import HFPolicy

    base_path = resolve_model(args.model_name_or_path, args)
    base, tokenizer = load_model(base_path)
    agent_policy = map_agents(args.policy_layout, args.agent_policies, agents)
    names = list(dict.fromkeys(agent_policy.values()))
    if resume_from is not None:
        peft_model = PeftModel.from_pretrained(
            base, resume_from / "peft" / names[0], adapter_name=names[0], is_trainable=True
        )
        for name in names[1:]:
            peft_model.load_adapter(resume_from / "peft" / name, adapter_name=name, is_trainable=True)
    else:
        config = LoraConfig(
            r=args.lora_r, lora_alpha=args.lora_alpha, target_modules="all-linear", task_type="CAUSAL_LM"
        )
        peft_model = get_peft_model(base, config, adapter_name=names[0])
        for name in names[1:]:
            peft_model.add_adapter(name, config)
    updaters = {name: AdapterUpdater(name, peft_model, tokenizer, args) for name in names}
    if args.generation_backend == "vllm":
        from pettingllms.policies.vllm_engine import VLLMPolicy

        engine = VLLMPolicy(
            base_path,
            seed=args.seed * 1_000,
            enable_lora=True,
            max_lora_rank=args.lora_r,
            max_loras=len(names),
            engine_kwargs=args.vllm_engine_kwargs,
        )
        syncers = {name: functools.partial(engine.sync_adapter, peft_model, name) for name in names}
        for sync in syncers.values():
            sync()
        return PolicySet(updaters, {name: engine.for_adapter(name) for name in names}, agent_policy, syncers)
    device = next(iter(updaters.values())).accelerator.device
    sampler = HFPolicy(peft_model, tokenizer, seed=args.seed * 1_000, device=device)
    backends = {name: AdapterPolicy(sampler, peft_model, name) for name in names}
    return PolicySet(updaters, backends, agent_policy)
