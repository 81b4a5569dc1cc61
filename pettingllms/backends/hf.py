"""`HFPolicy`: the in-process Hugging Face backend (a `transformers` causal LM and its tokenizer).

Contract of `generate(prompts, n, sampling)` (see `pettingllms.backends.base`):

- Each prompt becomes one user message rendered with the tokenizer's chat template (`add_generation_prompt=True`,
  `enable_thinking` from the sampling config when set; special-token strings inside the prompt are encoded as
  plain text where transformers supports it). The rows
  (each prompt repeated `n` times, contiguously) form one batch whose prompts are prefilled by
  `shared_prefix.prefill`: each token of the prompts' prefix tree is computed once, so the `n` samples of a group
  share one prompt computation and prompts that begin alike share their beginning; `max_batch_rows` may split a
  call into several batches, never inside a group.
- Sampling is this module's own loop over that KV cache (room for the completion reserved once and each token
  written in place, `kv_reserve`, unless `reserve_cache=False`), with an `attention_mask` and `position_ids` that
  make the padding invisible: under greedy decoding a prompt gets the same completion alone or in a batch (up to
  floating-point ties). Random draws come from the policy's `torch.Generator`, seeded at construction, so two
  policies built with the same seed and called the same way return the same completions; with `seeds` (one per
  prompt), the j-th completion of prompt i draws from a generator of its own seeded `seeds[i] + j` (vLLM seeds the
  j-th of `n` the same way), so a prompt's completions do not depend on what else the call holds (up to the
  floating-point effects of batching on the logits). Global RNGs are neither read nor changed.
- `temperature == 0` is greedy (argmax); otherwise logits are divided by the temperature, then `top_k`
  (0 = off) and `top_p` (nucleus) filter them. A row ends at an eos token (the tokenizer's and the model's
  generation config's `eos_token_id`s, e.g. `<|im_end|>`), when a stop string fires in its decoded completion
  (the stop rule of `pettingllms.backends.base.cut_at_stop`: never inside a ``` fenced block or a
  `<think>` block; a prompt that ends by opening one, `base.opens_thinking`, starts the completion inside it),
  after `max_new_tokens` tokens, or when prompt and completion fill the model's context
  (`config.max_position_embeddings`; vLLM caps a request at `max_model_len` the same way, and a prompt that fills
  the context by itself is an error in both); an ended row leaves the batch and its cache, so each
  decoding step costs what the rows still generating need. Stop strings are looked for incrementally
  (`base.StopDetector`: each step decodes the row's last few tokens, not its whole completion), with the
  result re-decoding the whole completion every step would give.
- `Generation.text` is the decoded completion without special tokens (a `<think>` block included: `action` is
  the text without it). `Generation.truncated` is True for a row that ended at `max_new_tokens` or at the
  context. With a stop string the text is cut right
  AFTER the stop string that fired, which stays in the text (`...</answer>`, unlike vLLM's default).
- `Generation.prompt_ids` are the unpadded template ids; `completion_ids` are every sampled token up to and
  including the eos token or the token that completed a stop string: exactly the tokens a loss trains on.
  `decode(completion_ids, skip_special_tokens=True)` starts with `text` (it can run past the cut when the token
  that completed the stop string holds more characters).
- `Generation.logprobs[i]` is `log_softmax(raw logits)[completion_ids[i]]` as a float: the model's own
  log-probability, independent of temperature, top-k and top-p.
- The model runs under `torch.inference_mode()` in eval mode; its previous training mode is restored afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from pettingllms.backends.base import (
    CALLING_THREAD,
    Generation,
    SamplingConfig,
    StopDetector,
    prompt_ids_open_thinking,
)
from pettingllms.backends.chat import chat_prompt_ids
from pettingllms.backends.kv_reserve import reserve
from pettingllms.backends.shared_prefix import cache_keyword, prefill
from pettingllms.backends.weights import WeightStream, mapping_stream


def load_pretrained(path: str | Path, dtype: torch.dtype = torch.float32):
    """(model, tokenizer) in `dtype` from a local folder or a Hugging Face id; left padding for generation."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
    return model, tokenizer


class HFPolicy:
    """Sample completions from an in-process causal LM (see the module docstring for the contract).

    Args:
        model: a `transformers` causal LM (moved to `device`).
        tokenizer: its tokenizer, with a chat template and a pad or eos token.
        seed: seed of the policy's own `torch.Generator`.
        device: where the model runs and the generator lives.
        max_batch_rows: the most rows (prompts x n) in one forward batch; None puts a whole call in one batch. A
            call cut into several batches fills them with its prompts shortest first (bucketed by length).
        reserve_cache: decode into a KV cache with room reserved for the completion (`kv_reserve`), written in place;
            False grows transformers' dynamic cache by concatenation (the whole cache copied every token).
    """

    def __init__(
        self,
        model,
        tokenizer,
        seed: int = 0,
        device: str | torch.device = "cpu",
        *,
        max_batch_rows: int | None = None,
        reserve_cache: bool = True,
    ):
        if tokenizer.chat_template is None:
            raise ValueError("the tokenizer has no chat template; HFPolicy renders prompts as chat messages")
        if max_batch_rows is not None and max_batch_rows < 1:
            raise ValueError(f"max_batch_rows={max_batch_rows} must be positive or None")
        self.device = torch.device(device)
        self.model = model.to(self.device)
        self.tokenizer = tokenizer
        self.seed = seed
        self.max_batch_rows = max_batch_rows
        self.reserve_cache = reserve_cache
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(seed)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        if pad is None:
            raise ValueError("the tokenizer has neither a pad token nor an eos token")
        self.pad_token_id = int(pad)
        self.eos_token_ids = _eos_ids(tokenizer, model)
        self._cache_keyword = cache_keyword(model)
        self.forward_passes = 0
        """Decoding forward passes run so far (one per new token of a batch; prefills not counted)."""

    @classmethod
    def from_pretrained(
        cls,
        path: str | Path,
        seed: int = 0,
        device: str | torch.device = "cpu",
        dtype: torch.dtype = torch.float32,
        **kwargs: Any,
    ) -> HFPolicy:
        """Load a model and tokenizer saved with `save_pretrained` in the local folder `path`, or of the Hugging
        Face id `path` (`resolve_model`: its cached snapshot, downloaded once)."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from pettingllms.models.reference import resolve_model

        folder = resolve_model(path)
        tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, dtype=dtype)
        return cls(model, tokenizer, seed=seed, device=device, **kwargs)

    @property
    def lane(self) -> str:
        """Where the rollout engine runs its calls (`rollout.scheduler`): on the CPU in the engine's own thread,
        else on one thread per device, in turn with the other HF backends of that device (they would only compete
        for it)."""
        return CALLING_THREAD if self.device.type == "cpu" else f"device:{self.device}"

    def reseed(self, seed: int) -> None:
        """Start the policy's generator afresh from `seed` (`SeededBackend`)."""
        self.generator.manual_seed(seed)

    def get_rng_state(self) -> torch.Tensor:
        return self.generator.get_state()

    def set_rng_state(self, state: torch.Tensor) -> None:
        self.generator.set_state(state)

    def load_state(self, weights: WeightStream | Mapping[str, torch.Tensor]) -> None:
        """Replace the model's parameters by `weights` (checkpoint names, every parameter; `lm_head.weight` may
        be absent when it is tied to the embeddings), e.g. an update worker's new weights, copied one tensor at a
        time into the model's own (cast to its dtype: a bfloat16 generation copy of float32 master weights)."""
        stream = weights if isinstance(weights, WeightStream) else mapping_stream(weights)
        own = self.model.state_dict()
        missing = [name for name in own if name not in stream.shapes and name != "lm_head.weight"]
        unexpected = [name for name in stream.shapes if name not in own]
        mismatched = [
            name for name, shape in stream.shapes.items() if name in own and tuple(own[name].shape) != shape
        ]
        if missing or unexpected or mismatched:
            raise ValueError(
                f"weights do not fit the model: missing {missing[:5]}, unexpected {unexpected[:5]}, "
                f"mismatched shapes {mismatched[:5]}"
            )
        with torch.no_grad():
            for name, tensor in stream.tensors():
                own[name].copy_(tensor)

    def prompt_ids(self, prompt: str, enable_thinking: bool | None = None) -> list[int]:
        """The token ids of `prompt` as one user message with the generation prompt (what the model is fed)."""
        return chat_prompt_ids(self.tokenizer, prompt, enable_thinking=enable_thinking)

    def generate(
        self, prompts: Sequence[str], n: int, sampling: SamplingConfig, seeds: Sequence[int] | None = None
    ) -> list[list[Generation]]:
        """For each prompt, `n` sampled `Generation`s (see the module docstring)."""
        encoded = [self.prompt_ids(prompt, sampling.enable_thinking) for prompt in prompts]
        return self.generate_from_ids(encoded, n, sampling, seeds)

    def generate_from_ids(
        self,
        encoded: Sequence[Sequence[int]],
        n: int,
        sampling: SamplingConfig,
        seeds: Sequence[int] | None = None,
    ) -> list[list[Generation]]:
        """`generate` for prompts given as token ids (already rendered: a multi-turn context, for instance)."""
        if n < 1:
            raise ValueError(f"n={n} must be positive")
        if seeds is not None and len(seeds) != len(encoded):
            raise ValueError(f"{len(seeds)} seeds for {len(encoded)} prompts")
        encoded = [list(ids) for ids in encoded]
        limit = getattr(self.model.config, "max_position_embeddings", None)
        longest = max((len(ids) for ids in encoded), default=0)
        if limit is not None and longest >= limit:
            raise ValueError(
                f"a prompt of {longest} tokens leaves no room for a completion in the model's context "
                f"(max_position_embeddings={limit}): shorten what the env shows (fewer max_turns, a shorter "
                "max_completion_length) or use a model with a longer context"
            )
        per_batch = max(1, len(encoded) if self.max_batch_rows is None else self.max_batch_rows // n)
        # a call cut into several batches takes its prompts shortest first (bucketed by length), so that a batch
        # pads to prompts like its own; with request seeds a prompt's samples do not depend on its batch
        order = list(range(len(encoded)))
        if per_batch < len(encoded):
            order.sort(key=lambda i: len(encoded[i]))
        results: list[list[Generation]] = [[] for _ in encoded]
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.inference_mode():
                for start in range(0, len(order), per_batch):
                    chunk = order[start : start + per_batch]
                    rows = [encoded[i] for i in chunk for _ in range(n)]
                    row_seeds = (
                        None if seeds is None else [int(seeds[i]) + j for i in chunk for j in range(n)]
                    )
                    generations = self._sample(rows, sampling, row_seeds, limit)
                    for position, i in enumerate(chunk):
                        results[i] = generations[position * n : (position + 1) * n]
        finally:
            self.model.train(was_training)
        return results

    # ----------------------------------------------------------------- the sampling loop
    # long function: one decoding loop over a KV cache shared by the batch, whose state (cache, masks, positions,
    # the rows still going, their budgets and stop detectors) changes together at every step.
    def _sample(
        self,
        rows: list[list[int]],
        sampling: SamplingConfig,
        row_seeds: list[int] | None,
        context: int | None,
    ) -> list[Generation]:
        """Sample every row to its end (eos, a stop string, `max_new_tokens`, or `context` tokens with its prompt)."""
        batch = len(rows)
        budgets = completion_budgets(rows, sampling.max_new_tokens, context)
        generators = None if row_seeds is None else [self._generator(seed) for seed in row_seeds]
        start = prefill(self.model, rows, pad_token_id=self.pad_token_id, device=self.device)
        cache, attention, next_position = start.cache, start.attention_mask, start.next_positions
        if self.reserve_cache:
            reserve(cache, max(budgets))
        logits = start.last_logits

        completions: list[list[int]] = [[] for _ in rows]
        logprobs: list[list[float]] = [[] for _ in rows]
        texts: list[str | None] = [None] * batch  # set when a row ends at a stop string
        thinking = [prompt_ids_open_thinking(self.tokenizer, ids) for ids in rows]
        stops = (
            [StopDetector(self._decode, sampling.stop, thinking_open=opened) for opened in thinking]
            if sampling.stop
            else None
        )
        active = list(range(batch))  # the rows still generating, in the order of the batch's tensors
        for _ in range(max(budgets)):
            tokens = self._sample_next(
                logits, sampling, None if generators is None else [generators[row] for row in active]
            )
            chosen = torch.log_softmax(logits.float(), dim=-1).gather(-1, tokens[:, None])[:, 0]
            going = []
            for position, (row, token, logprob) in enumerate(zip(active, tokens.tolist(), chosen.tolist())):
                completions[row].append(token)
                logprobs[row].append(float(logprob))
                if token in self.eos_token_ids:
                    continue
                if stops is not None and stops[row].push(token):
                    texts[row] = stops[row].text
                    continue
                if len(completions[row]) < budgets[row]:
                    going.append(position)
            if not going:
                break
            if len(going) < len(active):  # finished rows leave the batch and its cache
                keep = torch.tensor(going, device=self.device)
                cache.batch_select_indices(keep)
                attention, next_position, tokens = attention[keep], next_position[keep], tokens[keep]
                active = [active[position] for position in going]
            attention = torch.cat(
                [attention, torch.ones((len(active), 1), dtype=torch.long, device=self.device)], -1
            )
            logits = self._forward(tokens[:, None], attention, next_position, cache)
            next_position = next_position + 1
        return [
            Generation(
                text=texts[i] if texts[i] is not None else self._decode(completions[i]),
                prompt_ids=tuple(rows[i]),
                completion_ids=tuple(completions[i]),
                logprobs=tuple(logprobs[i]),
                truncated=texts[i] is None and completions[i][-1] not in self.eos_token_ids,
                thinking_open=thinking[i],
            )
            for i in range(batch)
        ]

    def _forward(self, input_ids, attention, positions, cache) -> torch.Tensor:
        """Run the model on new tokens, extending `cache`; return the last position's logits, (batch, vocab)."""
        self.forward_passes += 1
        output = self.model(
            input_ids=input_ids,
            attention_mask=attention,
            position_ids=positions,
            use_cache=True,
            logits_to_keep=1,
            **{self._cache_keyword: cache},
        )
        return output.logits[:, -1, :]

    def _generator(self, seed: int) -> torch.Generator:
        generator = torch.Generator(device=self.device)
        generator.manual_seed(seed)
        return generator

    def _sample_next(
        self, logits: torch.Tensor, sampling: SamplingConfig, generators: list[torch.Generator] | None
    ) -> torch.Tensor:
        """The next token of every row: argmax at temperature 0, else a draw from the filtered distribution (from
        the policy's generator, or row i's from `generators[i]`)."""
        if sampling.temperature == 0:
            return logits.argmax(dim=-1)
        scores = logits.float() / sampling.temperature
        if 0 < sampling.top_k < scores.shape[-1]:
            kth = torch.topk(scores, sampling.top_k, dim=-1).values[:, -1:]
            scores = scores.masked_fill(scores < kth, float("-inf"))
        if sampling.top_p < 1.0:
            ordered, order = torch.sort(scores, dim=-1, descending=True)
            probs = torch.softmax(ordered, dim=-1)
            mass_before = probs.cumsum(dim=-1) - probs  # probability of the tokens ranked above each one
            drop = (mass_before >= sampling.top_p).scatter(-1, order, mass_before >= sampling.top_p)
            scores = scores.masked_fill(drop, float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        if generators is None:
            return torch.multinomial(probs, 1, generator=self.generator)[:, 0]
        return torch.cat(
            [
                torch.multinomial(row[None], 1, generator=g)[:, 0]
                for row, g in zip(probs, generators, strict=True)
            ]
        )

    def _decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)


def _eos_ids(tokenizer, model) -> frozenset[int]:
    """The tokenizer's eos id together with the model generation config's eos id(s)."""
    ids = {tokenizer.eos_token_id}
    config = getattr(model, "generation_config", None)
    configured = getattr(config, "eos_token_id", None)
    ids.update(configured if isinstance(configured, (list, tuple)) else [configured])
    return frozenset(int(token) for token in ids if token is not None)


def completion_budgets(rows: Sequence[Sequence[int]], max_new_tokens: int, context: int | None) -> list[int]:
    """How many tokens each prompt row may generate: `max_new_tokens`, or fewer where prompt and completion would
    overrun a `context` of that many tokens (None: no limit).

    >>> completion_budgets([[1] * 5, [1] * 9], 4, 12)
    [4, 3]
    """
    return [max_new_tokens if context is None else min(max_new_tokens, context - len(row)) for row in rows]
