"""A KV cache that does not copy itself every token: room reserved once, new tokens written in place.

transformers' `DynamicLayer` appends each decoding step's keys and values with `torch.cat`, copying the whole cache
of every layer at every new token: O(L^2) memory traffic for a completion of L tokens, which dominates a decoding
step once rows are long. `reserve(cache, tokens)` turns every plain `DynamicLayer` of a prefilled cache into a
`ReservedLayer`: its keys and values move once into buffers with room for `tokens` more positions, and each update
writes into the next free positions; `keys` / `values` stay views of the filled part, so the model's attention reads
what it read before (the same values, in a strided view). A layer that runs out of room doubles it (amortised
O(1) per token). `batch_select_indices` (rows leaving the batch) keeps the chosen rows of the buffers. Other layer
types (sliding windows, static caches) are left as they are.
"""

from __future__ import annotations

import torch
from transformers.cache_utils import DynamicLayer


def reserve(cache, tokens: int) -> int:
    """Reserve room for `tokens` more positions in every plain `DynamicLayer` of `cache` (module docstring);
    return how many layers were converted."""
    converted = 0
    for layer in getattr(cache, "layers", ()):
        if type(layer) is DynamicLayer and layer.is_initialized and layer.keys.numel() > 0:
            layer.__class__ = ReservedLayer  # the same object and attributes, with in-place updates
            layer.make_room(tokens)
            converted += 1
    return converted


class ReservedLayer(DynamicLayer):
    """A `DynamicLayer` whose `keys` / `values` are views of the first `filled` positions of larger buffers. It
    serves a sampling loop: `update` and `batch_select_indices`; cropping or repeating it is not supported."""

    filled: int
    key_buffer: torch.Tensor
    value_buffer: torch.Tensor

    def make_room(self, tokens: int) -> None:
        """Move the cached keys and values into buffers with `tokens` free positions after them."""
        batch, heads, length, dim = self.keys.shape
        self.key_buffer = self.keys.new_empty((batch, heads, length + tokens, dim))
        self.value_buffer = self.values.new_empty(
            (batch, self.values.shape[1], length + tokens, self.values.shape[3])
        )
        self.key_buffer[:, :, :length] = self.keys
        self.value_buffer[:, :, :length] = self.values
        self.filled = length
        self._expose()

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        new = key_states.shape[-2]
        if self.filled + new > self.key_buffer.shape[-2]:
            self.make_room(max(new, self.key_buffer.shape[-2]))  # double: amortised O(1) per token
        self.key_buffer[:, :, self.filled : self.filled + new] = key_states
        self.value_buffer[:, :, self.filled : self.filled + new] = value_states
        self.filled += new
        self._expose()
        return self.keys, self.values

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        self.key_buffer = self.key_buffer[indices, ...]
        self.value_buffer = self.value_buffer[indices, ...]
        self._expose()

    def _expose(self) -> None:
        self.keys = self.key_buffer[:, :, : self.filled]
        self.values = self.value_buffer[:, :, : self.filled]
