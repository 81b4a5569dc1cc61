"""The vLLM worker extension that receives weight updates (`vllm.LLM(worker_extension_cls=...)`).

vLLM mixes this class into its worker, in the engine's process or in its worker processes. The policy sends an
update in chunks, `llm.collective_rpc("pettingllms_receive_weights", args=(payload,))` with safetensors bytes
(bytes cross process boundaries unchanged, where tensors would arrive as lists), then
`llm.collective_rpc("pettingllms_commit_weights")`: the worker keeps the chunks in CPU memory and reloads the
model from all of them at once with vLLM's `reload_weights`, which re-creates every parameter (and re-runs the
platform's weight processing, e.g. the CPU backend's repacking) and so needs the whole model in one call.
"""

from __future__ import annotations


class WeightSync:
    """Methods added to vLLM's worker."""

    def pettingllms_receive_weights(self, payload: bytes) -> int:
        """Keep one chunk of an update (safetensors bytes in checkpoint format); return its number of tensors."""
        from safetensors.torch import load

        weights = load(payload)
        pending = self.__dict__.setdefault("_pettingllms_pending", {})
        pending.update(weights)
        return len(weights)

    def pettingllms_commit_weights(self) -> int:
        """Reload the model from every chunk received since the last commit; return how many tensors it took."""
        pending = self.__dict__.pop("_pettingllms_pending", {})
        tied = getattr(self.model_runner.model_config.hf_config, "tie_word_embeddings", False)
        if tied and "lm_head.weight" not in pending and "model.embed_tokens.weight" in pending:
            # a tied head travels once, as the embeddings; the reload re-creates the head, so give it its tensor
            pending["lm_head.weight"] = pending["model.embed_tokens.weight"]
        self.reload_weights(weights_iterator=list(pending.items()))
        return len(pending)

    def pettingllms_process(self) -> dict:
        """Where this worker runs: its process id and the launcher variables its process sees."""
        import os

        names = ("CUDA_VISIBLE_DEVICES", "LOCAL_RANK", "RANK", "WORLD_SIZE")
        return {"pid": os.getpid(), **{name: os.environ.get(name) for name in names}}
