"""The built-in tiny model: a small Qwen3 built from a config (no hub download), seeded without global RNG.

`tiny_config(vocab_size)` is hidden 128, 4 layers, 4 attention heads / 2 KV heads of dim 32, FFN 512, tied
input/output embeddings, 2,048 positions: about 0.9M parameters plus `vocab_size * 128` for the embeddings.
`build_model(config, seed)` returns a float32 `Qwen3ForCausalLM` whose initial weights depend only on `seed`.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import PreTrainedTokenizerBase, Qwen3Config, Qwen3ForCausalLM

TINY_DEFAULTS: dict[str, Any] = {
    "hidden_size": 128,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "intermediate_size": 512,
    "tie_word_embeddings": True,
    "max_position_embeddings": 2048,
    "rope_theta": 10_000.0,
    "rms_norm_eps": 1e-6,
    "use_sliding_window": False,
    "attention_dropout": 0.0,
}


def tiny_config(vocab_size: int, **overrides: Any) -> Qwen3Config:
    """A `Qwen3Config` with `TINY_DEFAULTS`, `vocab_size`, and any field replaced by `overrides`.

    Token ids are not set here; `config_for_tokenizer` copies them from a tokenizer.
    """
    if vocab_size < 1:
        raise ValueError(f"vocab_size={vocab_size} must be positive")
    return Qwen3Config(**{**TINY_DEFAULTS, "vocab_size": vocab_size, **overrides})


def config_for_tokenizer(tokenizer: PreTrainedTokenizerBase, **overrides: Any) -> Qwen3Config:
    """`tiny_config(len(tokenizer))` with the tokenizer's pad, eos and bos ids."""
    config = tiny_config(len(tokenizer), **overrides)
    config.pad_token_id = tokenizer.pad_token_id
    config.eos_token_id = tokenizer.eos_token_id
    config.bos_token_id = tokenizer.bos_token_id
    return config


def build_model(config: Qwen3Config, seed: int) -> Qwen3ForCausalLM:
    """A freshly initialised float32 `Qwen3ForCausalLM` for `config`; the same seed gives the same weights.

    The weights are initialised inside `torch.random.fork_rng()`, so the global torch RNG state after the call is
    what it was before (the seed does not leak). The model is returned in training mode on the CPU, with its
    generation config's pad/eos/bos ids taken from `config`.
    """
    with torch.random.fork_rng(devices=[]):
        torch.random.manual_seed(seed)
        model = Qwen3ForCausalLM(config).to(torch.float32)
    for name in ("pad_token_id", "eos_token_id", "bos_token_id"):
        setattr(model.generation_config, name, getattr(config, name, None))
    model.train()
    return model


def count_parameters(model: torch.nn.Module) -> int:
    """Number of distinct parameters (tied weights counted once)."""
    return sum(parameter.numel() for parameter in model.parameters())
