"""Model weights in transit: from a training process to a generation backend (vLLM engine, Ray rollout server).

A model's weights leave as checkpoint names -> CPU tensors, each parameter once: a tied output embedding
(`lm_head.weight` sharing the input embeddings' tensor) is not sent twice, since every receiver ties it again
(transformers and vLLM both read `tie_word_embeddings`). `weight_chunks` cuts them into buckets of at most
`max_bytes` (a tensor larger than the bound travels alone), in the receiver's dtype, so that no single message
holds the whole model: vLLM's messages refuse objects over 4 GiB, and a 1.7B model is 6.9 GB in float32.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

DEFAULT_CHUNK_BYTES = 256 * 2**20
"""Bytes of one weight message by default: well under vLLM's 4 GiB limit, a few hundred messages for 8B in bf16."""


def _is_tied(model) -> bool:
    output = model.get_output_embeddings()
    return output is not None and output.weight is model.get_input_embeddings().weight


def full_state(model) -> dict[str, Any]:
    """The model's parameters by checkpoint name, detached on CPU, each once (no duplicate of a tied head)."""
    return unique_weights(model, model.state_dict())


def unique_weights(model, state: Mapping[str, Any]) -> dict[str, Any]:
    """`state` (a state dict of `model`, e.g. gathered from shards) detached on CPU, without the duplicate of a
    head tied to the embeddings."""
    weights = {name: tensor.detach().to("cpu").contiguous() for name, tensor in state.items()}
    if _is_tied(model):
        weights.pop("lm_head.weight", None)
    return weights


def weight_chunks(
    weights: Mapping[str, Any], *, dtype=None, max_bytes: int = DEFAULT_CHUNK_BYTES
) -> Iterator[dict[str, Any]]:
    """`weights` in buckets of at most `max_bytes` (in order; a larger tensor alone), floating tensors cast to
    `dtype` when given."""
    bucket: dict[str, Any] = {}
    size = 0
    for name, tensor in weights.items():
        if dtype is not None and tensor.is_floating_point():
            tensor = tensor.to(dtype)
        nbytes = tensor.numel() * tensor.element_size()
        if bucket and size + nbytes > max_bytes:
            yield bucket
            bucket, size = {}, 0
        bucket[name] = tensor
        size += nbytes
    if bucket:
        yield bucket


def serialize(weights: dict[str, Any]) -> bytes:
    """safetensors bytes of `weights` (tied tensors are stored as separate copies)."""
    from safetensors.torch import save

    return save({name: tensor.clone() for name, tensor in weights.items()})
