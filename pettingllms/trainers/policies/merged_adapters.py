"""`MergedAdapters`: the LoRA adapters of one PEFT model served in process, each from a copy of the base model with
the adapter merged into its weights, in the compute dtype (`lora_generation="merged"`, the `hf` backend).

Through PEFT, every linear layer of a forward pass runs its base weight and, beside it, the adapter's two low-rank
matrices, their scaling and their sum (with the activations cast to the adapter's float32 when the base computes in
bfloat16): at generation's small batches on a CPU these extra kernels cost about as much as the base model's own.
A merged copy runs one kernel per layer, `W + (alpha / r) B A`, in the compute dtype. The price: one copy of the
model per adapter (`memory_plan` counts them) and a refresh of an adapter's copy after each of its updates
(`sync_adapter`: one rank-r product per adapted layer).

Contract:
- `for_adapter(name)` is a `SeededBackend` that samples with adapter `name`'s copy through one `HFPolicy` shared by
  every adapter (one generator, one lane: the rollout engine serves the adapters as one model, as it serves them
  through PEFT).
- `sync_adapter(peft_model, name)` sets every weight of `name`'s copy that the adapter changes to the PEFT model's
  base weight plus the adapter's delta (`LoraLayer.get_delta_weight`), computed in float32 and cast to the copy's
  dtype; the other weights are the base's, frozen, loaded from the same folder. A copy samples what it was last
  synced to: the trainer syncs a policy after each of its updates and every adapter once at the start.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from pettingllms.backends.base import Generation, SamplingConfig

PEFT_PREFIX = "base_model.model."
"""How PEFT names a module of the model it wraps: this prefix, then the module's own name."""


class MergedAdapters:
    """One `HFPolicy` sampler and, per adapter name, a copy of the base model to sample with (module docstring)."""

    def __init__(self, sampler, copies: Mapping[str, Any]):
        self.sampler = sampler
        self.copies = {name: model.to(sampler.device).eval() for name, model in copies.items()}

    @property
    def lane(self) -> str:
        return self.sampler.lane

    def for_adapter(self, adapter: str) -> MergedAdapterView:
        """A backend that samples with adapter `adapter` merged in."""
        if adapter not in self.copies:
            raise KeyError(f"no copy for adapter {adapter!r}; adapters: {sorted(self.copies)}")
        return MergedAdapterView(self, adapter)

    def sync_adapter(self, peft_model, adapter: str) -> None:
        """Merge `peft_model`'s current adapter `adapter` into its copy (see the module docstring)."""
        from peft.tuners.lora import LoraLayer

        copy = self.copies[adapter]
        merged = 0
        with torch.no_grad():
            for name, module in peft_model.named_modules():
                if not isinstance(module, LoraLayer) or adapter not in module.lora_A:
                    continue
                base = module.get_base_layer().weight
                delta = module.get_delta_weight(adapter).float()
                target = copy.get_submodule(name.removeprefix(PEFT_PREFIX)).weight
                target.copy_((base.float() + delta.to(base.device)).to(target.dtype))
                merged += 1
        if merged == 0:
            raise ValueError(f"the PEFT model has no LoRA layer of adapter {adapter!r}")

    def generate(
        self,
        adapter: str,
        prompts: Sequence[str],
        n: int,
        sampling: SamplingConfig,
        seeds: Sequence[int] | None = None,
    ) -> list[list[Generation]]:
        """`n` samples per prompt with `adapter`'s copy (the sampler's model is that copy for the call)."""
        self.sampler.model = self.copies[adapter]
        return self.sampler.generate(prompts, n, sampling, seeds)


class MergedAdapterView:
    """One adapter of a `MergedAdapters` as a `SeededBackend` (the sampler's generator is shared by every view)."""

    def __init__(self, server: MergedAdapters, adapter: str):
        self.server, self.adapter = server, adapter

    def generate(
        self, prompts: Sequence[str], n: int, sampling: SamplingConfig, seeds: Sequence[int] | None = None
    ) -> list[list[Generation]]:
        return self.server.generate(self.adapter, prompts, n, sampling, seeds)

    @property
    def model_server(self) -> MergedAdapters:
        """What the rollout engine serves as one model: every adapter's view shares it."""
        return self.server

    @property
    def tokenizer(self):
        return self.server.sampler.tokenizer

    def reseed(self, seed: int) -> None:
        self.server.sampler.reseed(seed)

    def get_rng_state(self) -> torch.Tensor:
        return self.server.sampler.get_rng_state()

    def set_rng_state(self, state: torch.Tensor) -> None:
        self.server.sampler.set_rng_state(state)
