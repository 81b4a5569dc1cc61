"""The shapes of a policy's model that its memory depends on, read from a config before any weight loads.

`ModelShape.of(config)` counts the parameters exactly by building the model on PyTorch's meta device (no memory,
no weights), and keeps the dimensions that size the KV cache and the activations. `shape_of(source, args)` finds
the config: Qwen3-1.7B and Qwen3-8B from `KNOWN_CONFIGS` (their `config.json` fields, so that their runs are
planned on a machine that cannot reach the Hub), any other model from its folder (built-in models are built
first, hub ids read from the local cache).
"""

from __future__ import annotations

import dataclasses
from typing import Any

_QWEN3 = {
    "model_type": "qwen3",
    "vocab_size": 151_936,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "max_position_embeddings": 40_960,
    "rms_norm_eps": 1e-6,
    "hidden_act": "silu",
}
KNOWN_CONFIGS: dict[str, dict[str, Any]] = {
    "Qwen/Qwen3-1.7B": {
        **_QWEN3,
        "hidden_size": 2048,
        "intermediate_size": 6144,
        "num_hidden_layers": 28,
        "num_attention_heads": 16,
        "tie_word_embeddings": True,
    },
    "Qwen/Qwen3-8B": {
        **_QWEN3,
        "hidden_size": 4096,
        "intermediate_size": 12288,
        "num_hidden_layers": 36,
        "num_attention_heads": 32,
        "tie_word_embeddings": False,
    },
}
"""The `config.json` fields of the paper's models that set their memory (from their Hugging Face model cards)."""


@dataclasses.dataclass(frozen=True)
class ModelShape:
    """What sizes a causal LM's memory: parameters (exact), their tensors, and its dimensions."""

    parameters: int
    tensors: int
    layers: int
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    qk_norm: bool
    """Whether queries and keys are RMS-normalised per head (Qwen3), which saves float32 activations."""
    largest_tensor: int
    """Parameters of the largest tensor (the embedding table): a sharded model gathers it whole."""
    linear_shapes: tuple[tuple[int, int], ...]
    """(in, out) features of every linear layer of the decoder layers (what LoRA 'all-linear' adapts)."""

    @classmethod
    def of(cls, config) -> ModelShape:
        """The shape of the model `config` describes (a transformers `PretrainedConfig`)."""
        import torch
        from transformers import AutoModelForCausalLM

        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config)
        parameters = list(model.parameters())  # tied parameters once
        text = config.get_text_config()
        linears = tuple(
            (module.in_features, module.out_features)
            for name, module in model.named_modules()
            if isinstance(module, torch.nn.Linear) and ".layers." in name
        )
        return cls(
            parameters=sum(p.numel() for p in parameters),
            tensors=len(parameters),
            layers=text.num_hidden_layers,
            hidden=text.hidden_size,
            intermediate=text.intermediate_size,
            heads=text.num_attention_heads,
            kv_heads=getattr(text, "num_key_value_heads", None) or text.num_attention_heads,
            head_dim=getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads,
            vocab=text.vocab_size,
            qk_norm=any(name.endswith("q_norm") for name, _ in model.named_modules()),
            largest_tensor=max(p.numel() for p in parameters),
            linear_shapes=linears,
        )

    def lora_parameters(self, rank: int) -> int:
        """Parameters of one LoRA adapter of rank `rank` on every linear layer of the decoder ('all-linear')."""
        return sum(rank * (inputs + outputs) for inputs, outputs in self.linear_shapes)

    def kv_bytes_per_token(self, dtype_bytes: int) -> int:
        """KV-cache bytes of one token of one row: keys and values of every layer."""
        return 2 * self.layers * self.kv_heads * self.head_dim * dtype_bytes


def shape_of(source: str, args) -> ModelShape:
    """The shape of the model `source` names (a `KNOWN_CONFIGS` id, a built-in, a folder or a cached hub id)."""
    from transformers import AutoConfig

    if source in KNOWN_CONFIGS:
        fields = dict(KNOWN_CONFIGS[source])
        return ModelShape.of(AutoConfig.for_model(fields.pop("model_type"), **fields))
    from pettingllms.trainers.policies.model_source import starting_model

    return ModelShape.of(AutoConfig.from_pretrained(starting_model(source, args, log=lambda _: None)))
