"""The one factory of generation backends: every policy's sampler, whether its policy lives in this process
(`build`, the LoRA layout included) or in a Ray actor (`ray_actors.RolloutServer`), comes from `generation_backend`.

- `hf` (`HFPolicy`): samples from a model object, the update's own or a copy (`model`), or from a folder (`path`)
  loaded in the compute dtype.
- `vllm` (`VLLMPolicy`): an engine of the folder `path` with `vllm_engine_kwargs` (`engine_options`: on a GPU in the
  compute dtype unless the kwargs name one); an engine that shares its GPU with the update in this process sleeps
  through each update (`sleep`); `lora_adapters` > 0 serves that many LoRA adapters of rank `lora_r`.

`AdapterBackend` is one adapter's view of a sampler shared by the adapters of one PEFT model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pettingllms.backends.base import Generation, SamplingConfig, SeededBackend
from pettingllms.core.errors import ConfigError
from pettingllms.parallel.world import current_world
from pettingllms.trainers.settings.config import ATGRPOConfig


def generation_backend(
    args: ATGRPOConfig,
    *,
    seed: int,
    path: str | None = None,
    model: Any = None,
    tokenizer: Any = None,
    device: Any = None,
    on_gpu: bool = False,
    sleep: bool = False,
    lora_adapters: int = 0,
) -> SeededBackend:
    """The sampler `args.generation_backend` names (module docstring), drawing from `seed`.

    `path`: the folder of the weights (vLLM always; HF when no `model` is given); `model`, `tokenizer`: the model
    object HF samples from; `device`: where it generates (None: the backend's default); `on_gpu`: the policy is on
    a GPU (vLLM's dtype); `sleep`: a vLLM engine sharing its GPU with the update in this process, asleep while it
    runs; `lora_adapters`: a vLLM engine serving that many adapters."""
    if args.generation_backend == "vllm":
        return _vllm_engine(args, path, seed, device, on_gpu, sleep, lora_adapters)
    from pettingllms.backends.hf import HFPolicy

    if model is None:
        return HFPolicy.from_pretrained(
            path, seed=seed, device=device, dtype=args.compute_dtype, max_batch_rows=args.max_generation_rows
        )
    return HFPolicy(model, tokenizer, seed=seed, device=device, max_batch_rows=args.max_generation_rows)


def _vllm_engine(
    args: ATGRPOConfig,
    path: str | None,
    seed: int,
    device: Any,
    on_gpu: bool,
    sleep: bool,
    lora_adapters: int,
) -> SeededBackend:
    """A vLLM engine for `generation_backend` (its arguments, in order)."""
    from pettingllms.backends.vllm_engine import VLLMPolicy, runs_in_process

    if sleep and args.off_policy_steps:
        raise ConfigError(
            "off_policy_steps=1 with generation_backend='vllm' on a GPU is not supported: the engine sleeps through "
            "the update that the next rollout would overlap; use generation_backend='hf' or off_policy_steps=0"
        )
    options = engine_options(args, on_gpu)
    # an engine kept in a torchrun rank's process joins the rank's process group, as vLLM needs there
    if current_world().size > 1 and runs_in_process(options):
        options.setdefault("distributed_executor_backend", "external_launcher")
    lora = (
        {"enable_lora": True, "max_lora_rank": args.lora_r, "max_loras": lora_adapters}
        if lora_adapters
        else {}
    )
    placed = {"device": str(device)} if device is not None else {}
    return VLLMPolicy(path, seed=seed, engine_kwargs=options, sleep_mode=sleep, **lora, **placed)


def engine_options(args: ATGRPOConfig, on_gpu: bool) -> dict[str, Any]:
    """A policy's `vllm.LLM` arguments: `vllm_engine_kwargs`, and on a GPU the compute dtype (vLLM's "auto"
    would take a float32 checkpoint's dtype) unless they name one."""
    options = dict(args.vllm_engine_kwargs)
    if on_gpu:
        options.setdefault("dtype", str(args.compute_dtype).removeprefix("torch."))
    return options


class AdapterBackend:
    """Generation with one LoRA adapter of a shared PEFT model active (a `SeededBackend` sharing the sampler's
    generator)."""

    def __init__(self, backend: SeededBackend, peft_model, adapter: str):
        self.backend, self.peft_model, self.adapter = backend, peft_model, adapter

    def generate(
        self, prompts: Sequence[str], n: int, sampling: SamplingConfig, seeds: Sequence[int] | None = None
    ) -> list[list[Generation]]:
        self.peft_model.set_adapter(self.adapter)
        return self.backend.generate(prompts, n, sampling, seeds)

    @property
    def model_server(self) -> SeededBackend:
        """The sampler of the shared model: the rollout engine serves one adapter of it at a time."""
        return self.backend

    def reseed(self, seed: int) -> None:
        self.backend.reseed(seed)

    def get_rng_state(self) -> Any:
        return self.backend.get_rng_state()

    def set_rng_state(self, state: Any) -> None:
        self.backend.set_rng_state(state)
