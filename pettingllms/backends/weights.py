"""Model weights in transit: from a training process to a generation backend (vLLM engine, HF copy, Ray server).

A model's weights leave as checkpoint names -> tensors, each parameter once: a tied output embedding
(`lm_head.weight` sharing the input embeddings' tensor) is not sent twice, since every receiver ties it again
(transformers and vLLM both read `tie_word_embeddings`).

`model_stream(model)` is a `WeightStream`: the names and shapes first (known without materialising anything), then
the tensors one at a time. A model sharded over ranks (FSDP2: its parameters are DTensors) gathers each parameter
when the stream reaches it (a collective: every rank iterates in the same order) and drops it before the next, so
a sync never holds more than one full parameter beyond the shards, where gathering the whole state dict would
hold the whole model on every rank. `weight_chunks` cuts a stream into CPU buckets of at most `max_bytes` (a
tensor larger than the bound travels alone), in the receiver's dtype (cast on the sender's device, before the
copy to the host), so that no single message holds the whole model: vLLM's messages refuse objects over 4 GiB,
and a 1.7B model is 6.9 GB in float32.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from typing import Any

DEFAULT_CHUNK_BYTES = 256 * 2**20
"""Bytes of one weight message by default: well under vLLM's 4 GiB limit, a few hundred messages for 8B in bf16."""


@dataclasses.dataclass(frozen=True)
class WeightStream:
    """A model's weights to send: `shapes` (checkpoint name -> full shape, in sending order) and `tensors()`,
    which yields (name, full tensor) in that order, one at a time (see the module docstring)."""

    shapes: dict[str, tuple[int, ...]]
    tensors: Callable[[], Iterator[tuple[str, Any]]]


def _is_tied(model) -> bool:
    output = model.get_output_embeddings()
    return output is not None and output.weight is model.get_input_embeddings().weight


def model_stream(model) -> WeightStream:
    """The weights of `model` (a transformers model, sharded over ranks or not), each parameter once, on the
    model's device, detached (module docstring)."""
    state = model.state_dict()
    if _is_tied(model):
        state.pop("lm_head.weight", None)

    def tensors() -> Iterator[tuple[str, Any]]:
        for name, tensor in state.items():
            full = tensor.full_tensor() if hasattr(tensor, "full_tensor") else tensor
            yield name, full.detach()

    return WeightStream({name: tuple(tensor.shape) for name, tensor in state.items()}, tensors)


def mapping_stream(weights: Mapping[str, Any]) -> WeightStream:
    """A stream over weights already in memory (checkpoint names -> tensors)."""
    return WeightStream({name: tuple(t.shape) for name, t in weights.items()}, lambda: iter(weights.items()))


def full_state(model) -> dict[str, Any]:
    """The model's parameters by checkpoint name, detached on CPU, each once (no duplicate of a tied head)."""
    return {name: tensor.to("cpu").contiguous() for name, tensor in model_stream(model).tensors()}


def weight_chunks(
    weights: WeightStream | Mapping[str, Any], *, dtype=None, max_bytes: int = DEFAULT_CHUNK_BYTES
) -> Iterator[dict[str, Any]]:
    """`weights` in CPU buckets of at most `max_bytes` (in order; a larger tensor alone), floating tensors cast to
    `dtype` when given (before they leave their device)."""
    stream = weights if isinstance(weights, WeightStream) else mapping_stream(weights)
    bucket: dict[str, Any] = {}
    size = 0
    for name, tensor in stream.tensors():
        if dtype is not None and tensor.is_floating_point():
            tensor = tensor.to(dtype)
        tensor = tensor.to("cpu").contiguous()
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
