"""Model weights in transit: from a training process to a generation backend (vLLM engine, Ray rollout server)."""

from __future__ import annotations

from typing import Any


def full_state(model) -> dict[str, Any]:
    """The model's parameters by checkpoint name, detached on CPU, with `lm_head.weight` even when tied."""
    state = {name: tensor.detach().to("cpu").contiguous() for name, tensor in model.state_dict().items()}
    if "lm_head.weight" not in state:
        state["lm_head.weight"] = model.get_output_embeddings().weight.detach().to("cpu").contiguous()
    return state


def serialize(weights: dict[str, Any]) -> bytes:
    """safetensors bytes of `weights` (tied tensors are stored as separate copies)."""
    from safetensors.torch import save

    return save({name: tensor.clone() for name, tensor in weights.items()})
