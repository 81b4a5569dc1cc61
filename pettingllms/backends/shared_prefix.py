"""Run a causal LM over a batch of prompts computing every shared token once.

The rows of one batch share most of their tokens: the K candidates of an AT-GRPO group have one prompt, and the
prompts of one turn share their instructions. `prefill(model, rows)` builds the KV cache of `rows` in two forwards:

1. the longest common prefix of all rows, once, as a single row;
2. each distinct remainder (suffix) once, left-padded behind the prefix and attending to it through the cache;

then expands the cache to one row per input row. The cache holds, for every row, what the row's own unpadded forward
would have put there (up to floating-point rounding): the attention mask hides the padding between prefix and
suffix, and each real token keeps its own position. A caller continues from `Prefilled` exactly as from a
left-padded prefill: append a column of ones to `attention_mask` per new token and feed positions from
`next_positions`.

It works under autograd: the gradient of a loss over many rows flows back through the expanded cache into the one
computation of each shared token, which is the gradient of the rows' separate forwards (a shared activation's
gradient is the sum over the rows that read it). Layers that recompute their forward in the backward pass
(activation checkpointing) drop the cache, so callers must not use this under checkpointing
(`uses_activation_checkpointing`).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Sequence

import torch


@dataclasses.dataclass(frozen=True)
class SharedLayout:
    """How `rows` are computed: `prefix` once, each of `suffixes` once, row i reads `suffixes[row_suffix[i]]`.

    Every suffix has at least `min_suffix` tokens (the prefix is shortened when a row would have fewer), so that a
    caller who needs each row's last-token output (generation) gets it from the suffix forward.
    """

    prefix: tuple[int, ...]
    suffixes: tuple[tuple[int, ...], ...]
    row_suffix: tuple[int, ...]

    @classmethod
    def of(cls, rows: Sequence[Sequence[int]], min_suffix: int) -> SharedLayout:
        """The layout of `rows` (see the class docstring); raises ValueError for an empty batch or a row shorter
        than `min_suffix`."""
        if not rows:
            raise ValueError("no rows to prefill")
        distinct: dict[tuple[int, ...], int] = {}
        row_suffix = tuple(distinct.setdefault(tuple(row), len(distinct)) for row in rows)
        prompts = list(distinct)
        shortest = min(len(prompt) for prompt in prompts)
        if shortest < min_suffix:
            raise ValueError(f"a row of {shortest} tokens is shorter than min_suffix={min_suffix}")
        common = _common_prefix_length(prompts, shortest - min_suffix)
        return cls(prompts[0][:common], tuple(prompt[common:] for prompt in prompts), row_suffix)

    @property
    def computed_tokens(self) -> int:
        """Tokens the model runs on: the prefix once plus every distinct suffix once."""
        return len(self.prefix) + sum(len(suffix) for suffix in self.suffixes)


@dataclasses.dataclass
class Prefilled:
    """The state after `prefill`: `cache` (one row per input row), `attention_mask` (rows, width) with 1 on real
    tokens, `next_positions` (rows, 1) the position of each row's next token, and `last_logits` (rows, vocab) the
    logits at each row's last token (meaningless for a row whose suffix is empty)."""

    cache: object
    attention_mask: torch.Tensor
    next_positions: torch.Tensor
    last_logits: torch.Tensor | None


def prefill(
    model, rows: Sequence[Sequence[int]], *, pad_token_id: int, min_suffix: int = 1, device=None
) -> Prefilled:
    """Build the KV cache of `rows` through `model` (a `transformers` causal LM, PEFT-wrapped or not), computing
    the common prefix and each distinct suffix once (see the module docstring). `min_suffix=1` also returns each
    row's last-token logits; with `min_suffix=0` a row may be entirely in the prefix, and its logits are
    meaningless. Gradients flow when autograd is on."""
    device = torch.device(device) if device is not None else next(model.parameters()).device
    layout = SharedLayout.of(rows, min_suffix)
    keyword = cache_keyword(model)
    cache = new_cache(model)
    prefix_length = len(layout.prefix)
    if prefix_length:
        prefix = torch.tensor([layout.prefix], dtype=torch.long, device=device)
        model(
            input_ids=prefix,
            attention_mask=torch.ones_like(prefix),
            position_ids=torch.arange(prefix_length, device=device)[None],
            use_cache=True,
            logits_to_keep=1,
            **{keyword: cache},
        )
    distinct = len(layout.suffixes)
    lengths = torch.tensor([len(suffix) for suffix in layout.suffixes], device=device)
    width = int(lengths.max())
    suffix_mask = torch.zeros((distinct, width), dtype=torch.long, device=device)
    logits = None
    if width:
        if prefix_length:
            cache.batch_repeat_interleave(distinct)
        ids = torch.full((distinct, width), pad_token_id, dtype=torch.long)
        for index, suffix in enumerate(layout.suffixes):
            if suffix:
                ids[index, width - len(suffix) :] = torch.tensor(suffix, dtype=torch.long)
        ids = ids.to(device)
        suffix_mask = (torch.arange(width, device=device)[None] >= (width - lengths)[:, None]).long()
        mask = torch.cat([torch.ones((distinct, prefix_length), dtype=torch.long, device=device), suffix_mask], 1)
        positions = (prefix_length + suffix_mask.cumsum(-1) - 1).clamp(min=0)
        output = model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=positions,
            use_cache=True,
            logits_to_keep=1,
            **{keyword: cache},
        )
        logits = output.logits[:, -1, :]
    rows_index = torch.tensor(layout.row_suffix, device=device)
    if width or prefix_length:
        cache.batch_select_indices(rows_index if width else torch.zeros_like(rows_index))
    mask = torch.cat(
        [torch.ones((len(rows_index), prefix_length), dtype=torch.long, device=device), suffix_mask[rows_index]], 1
    )
    return Prefilled(
        cache=cache,
        attention_mask=mask,
        next_positions=(prefix_length + lengths[rows_index])[:, None],
        last_logits=None if logits is None else logits[rows_index],
    )


def cache_keyword(model) -> str:
    """transformers renamed `past_key_values` to `cache` in 5.2x; use whichever the model's forward takes.

    A PEFT wrapper forwards keyword arguments, so its base model's signature decides.
    """
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    parameters = inspect.signature(base.forward).parameters
    return "cache" if "cache" in parameters else "past_key_values"


def new_cache(model):
    """An empty dynamic KV cache for `model`."""
    from transformers import DynamicCache

    return DynamicCache(config=model.config)


def uses_activation_checkpointing(model) -> bool:
    """Whether any layer of `model` recomputes its forward in the backward pass (and so drops a KV cache)."""
    return any(getattr(module, "gradient_checkpointing", False) for module in model.modules())


def _common_prefix_length(prompts: Sequence[Sequence[int]], limit: int) -> int:
    """The length of the longest prefix all `prompts` share, at most `limit`."""
    first = prompts[0]
    length = limit
    for prompt in prompts[1:]:
        length = next((i for i in range(length) if prompt[i] != first[i]), length)
        if length == 0:
            break
    return length
