"""Supervised fine-tuning of a causal LM on chat examples with TRL's `SFTTrainer`, hermetically.

`supervised_fine_tune(model, tokenizer, conversations, steps=...)` trains `model` in place on conversational
examples (`[{"role": "user", ...}, {"role": "assistant", ...}]`) with the loss on the assistant turns only
(`assistant_only_loss`, which needs the `{% generation %}` markers of `pettingllms.models.tokenizer`'s
template). Settings for a CPU: float32 (`bf16=False`), no gradient checkpointing, `use_cpu=True`, no reporting,
no checkpoints. The trainer writes only into a temporary folder that is deleted afterwards, and the global
`random`, NumPy and torch RNG states (which the trainer reseeds) are restored on exit, so a caller's randomness
is untouched. The same model, data and seed give the same weights.
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch


@contextlib.contextmanager
def preserved_global_rng() -> Iterator[None]:
    """Restore the global `random`, NumPy and torch (CPU and CUDA) RNG states on exit."""
    python_state, numpy_state = random.getstate(), np.random.get_state()
    with torch.random.fork_rng():
        try:
            yield
        finally:
            random.setstate(python_state)
            np.random.set_state(numpy_state)


def supervised_fine_tune(
    model,
    tokenizer,
    conversations: Sequence[list[dict[str, str]]],
    *,
    steps: int,
    batch_size: int = 32,
    learning_rate: float = 1e-3,
    decay_fraction: float = 0.2,
    seed: int = 0,
    probe_size: int = 64,
    progress: bool = False,
) -> dict[str, Any]:
    """Train `model` for `steps` optimizer steps; return its losses (the model is left in eval mode); `progress`
    shows transformers' progress bar over the steps.

    AdamW without weight decay or warm-up, at a constant `learning_rate` and then a cosine decay to 0 over the
    last `decay_fraction` of the steps. Measured on plan-path (250 steps, batch 32, lr 1e-3, 200 evaluation
    episodes): the tiny model's success jumps between steps ~150 and ~250, and this schedule reached 0.375,
    against 0.165 with a 10-step warm-up then a constant rate; a cosine decay over a whole 150-step run stayed at
    0.0 (a decaying rate delays the jump); lr 2e-3 or batch 16 learned more slowly.

    Returns a dict with `probe_loss_before` / `probe_loss_after` (mean assistant-token loss on the first
    `probe_size` conversations, measured the same way before and after) and `log` (the trainer's
    `(step, loss)` records). With `steps == 0` the model is not trained.
    """
    probe = list(conversations[:probe_size])
    result: dict[str, Any] = {"probe_loss_before": assistant_loss(model, tokenizer, probe), "log": []}
    if steps > 0:
        # importing TRL draws from the global `random` (seen with trl 1.16): import inside the preserved block too
        with tempfile.TemporaryDirectory(prefix="pettingllms-sft-") as scratch, preserved_global_rng():
            from datasets import Dataset
            from transformers import PrinterCallback
            from trl import SFTTrainer

            dataset = Dataset.from_list([{"messages": list(messages)} for messages in conversations])
            config = _sft_config(scratch, steps, batch_size, learning_rate, decay_fraction, seed, progress)
            with _quiet_datasets():
                trainer = SFTTrainer(
                    model=model, args=config, train_dataset=dataset, processing_class=tokenizer
                )
                trainer.remove_callback(PrinterCallback)  # a library stays quiet; losses are returned
                trainer.train()
            result["log"] = [
                (int(entry["step"]), float(entry["loss"]))
                for entry in trainer.state.log_history
                if "loss" in entry
            ]
    model.eval()
    result["probe_loss_after"] = assistant_loss(model, tokenizer, probe)
    return result


def _sft_config(
    scratch: str,
    steps: int,
    batch_size: int,
    learning_rate: float,
    decay_fraction: float,
    seed: int,
    progress: bool,
):
    """TRL's `SFTConfig` for `supervised_fine_tune` (the CPU settings of the module docstring)."""
    from trl import SFTConfig

    checkpointing = {
        name: False
        for name in ("gradient_checkpointing", "activation_checkpointing")
        if name in {field.name for field in dataclasses.fields(SFTConfig)}
    }
    return SFTConfig(
        output_dir=scratch,
        max_steps=steps,
        per_device_train_batch_size=batch_size,
        learning_rate=learning_rate,
        lr_scheduler_type="warmup_stable_decay",
        lr_scheduler_kwargs={"num_decay_steps": max(1, round(steps * decay_fraction))},
        warmup_steps=0,
        weight_decay=0.0,
        assistant_only_loss=True,
        max_length=1024,
        bf16=False,
        fp16=False,
        **checkpointing,
        use_cpu=True,
        report_to=[],
        save_strategy="no",
        eval_strategy="no",
        logging_steps=max(1, steps // 20),
        disable_tqdm=not progress,
        dataloader_num_workers=0,
        dataloader_pin_memory=False,
        seed=seed,
        data_seed=seed,
    )


@contextlib.contextmanager
def _quiet_datasets() -> Iterator[None]:
    """Hide `datasets`' progress bars (dataset preparation) for the duration, then restore the setting."""
    import datasets

    was_disabled = datasets.is_progress_bar_enabled() is False
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if not was_disabled:
            datasets.enable_progress_bars()


def assistant_loss(model, tokenizer, conversations: Sequence[list[dict[str, str]]]) -> float | None:
    """Mean cross-entropy of the assistant tokens (content and `<|im_end|>`) over `conversations`; None if empty."""
    if not conversations:
        return None
    total, count = 0.0, 0
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            for messages in conversations:
                encoded = tokenizer.apply_chat_template(
                    list(messages), tokenize=True, return_dict=True, return_assistant_tokens_mask=True
                )
                ids = torch.tensor([encoded["input_ids"]], device=model.device)
                mask = torch.tensor(encoded["assistant_masks"][1:], dtype=torch.bool, device=model.device)
                logits = model(input_ids=ids).logits[0, :-1].float()
                losses = torch.nn.functional.cross_entropy(logits, ids[0, 1:], reduction="none")
                total += float(losses[mask].sum())
                count += int(mask.sum())
    finally:
        model.train(was_training)
    return total / max(count, 1)


def prompt_token_stats(tokenizer, demos: Sequence[Any], limit: int = 2000) -> dict[str, dict[str, float]]:
    """Per agent: mean and max template token count of the prompts of (up to `limit`) demonstrations."""
    lengths: dict[str, list[int]] = {}
    for demo in demos[:limit]:
        ids = tokenizer.apply_chat_template(
            [{"role": "user", "content": demo.prompt}],
            add_generation_prompt=True,
            tokenize=True,
            return_dict=False,
        )
        lengths.setdefault(demo.agent, []).append(len(ids))
    return {agent: {"mean": round(float(np.mean(v)), 1), "max": int(max(v))} for agent, v in lengths.items()}


def library_versions() -> dict[str, str]:
    """Versions of the libraries that shape a build (for manifests)."""
    import tokenizers
    import transformers
    import trl

    return {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "trl": trl.__version__,
        "tokenizers": tokenizers.__version__,
    }
