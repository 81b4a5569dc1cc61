"""The vLLM worker extension that receives weight updates (`vllm.LLM(worker_extension_cls=...)`).

vLLM mixes this class into its worker, in the engine's process or in its worker processes; the policy calls
`llm.collective_rpc("pettingllms_load_weights", args=(payload,))` with safetensors bytes (bytes cross process
boundaries unchanged, where tensors would arrive as lists).
"""

from __future__ import annotations


class WeightSync:
    """Methods added to vLLM's worker."""

    def pettingllms_load_weights(self, payload: bytes) -> int:
        """Reload the model from safetensors bytes in checkpoint format; return how many tensors were loaded."""
        from safetensors.torch import load

        weights = load(payload)
        self.reload_weights(weights_iterator=list(weights.items()))
        return len(weights)
