"""`PolicyUpdater`: TRL's `GRPOTrainer` as the update worker of one policy, fed by the rollout engine.

TRL's trainer normally samples its own completions; here `_prepare_inputs` receives batches the AT-GRPO rollout
already built (prompt and completion token ids, advantages), so everything else is TRL's own: the loss family
(`loss_type`, clip epsilons, `beta`), the optimizer and scheduler, accelerate, PEFT, and the loss scaling for
gradient accumulation. One `update(samples)` is one optimizer step over all of this policy's samples.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from datasets import Dataset
from trl import GRPOTrainer

from pettingllms.trainers.config import ATGRPOConfig
from pettingllms.trainers.rollout import Sample

_PLACEHOLDER = Dataset.from_dict({"prompt": ["(prompts come from the environments)"]})


def _no_reward(completions, **kwargs) -> list[float]:
    """TRL requires a reward function; AT-GRPO's rewards come from the environments."""
    return [0.0] * len(completions)


class PolicyUpdater(GRPOTrainer):
    """The update worker of policy `name` (see the module docstring)."""

    def __init__(self, name: str, model, tokenizer, args: ATGRPOConfig):
        super().__init__(
            model=model,
            reward_funcs=_no_reward,
            args=args,
            train_dataset=_PLACEHOLDER,
            processing_class=tokenizer,
        )
        self.name = name
        self.create_optimizer_and_scheduler(num_training_steps=args.max_steps)

    def _prepare_inputs(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return {key: value.to(self.accelerator.device) for key, value in batch.items()}

    def update(self, samples: Sequence[Sample]) -> dict[str, float]:
        """One optimizer step on `samples` (this policy's only); return its metrics."""
        if not samples:
            return {"samples": 0.0}
        size = self.args.per_device_train_batch_size
        chunks = [samples[start : start + size] for start in range(0, len(samples), size)]
        tokens = sum(len(sample.generation.completion_ids) for sample in samples)
        self.current_gradient_accumulation_steps = len(chunks)
        # TRL's token-normalised losses divide by num_items_in_batch * GA / steps_per_generation: make that `tokens`
        num_items = tokens * self.args.steps_per_generation / len(chunks)
        self.model.train()
        loss = 0.0
        for chunk in chunks:
            inputs = collate(chunk, self.processing_class, num_items)
            if self.beta != 0.0:
                inputs["ref_per_token_logps"] = self._reference_logps(inputs)
            loss += float(self.training_step(self.model, inputs, None))
        grad_norm = self.accelerator.clip_grad_norm_(self.model.parameters(), self.args.max_grad_norm)
        self.optimizer.step()
        self.lr_scheduler.step()
        self.optimizer.zero_grad()
        metrics = {
            "loss": loss,
            "grad_norm": float(grad_norm),
            "learning_rate": float(self.lr_scheduler.get_last_lr()[0]),
            "samples": float(len(samples)),
            "completion_tokens": float(tokens),
        }
        for key, values in self._metrics["train"].items():
            if values:
                metrics[key] = float(sum(values) / len(values))
        self._metrics["train"].clear()
        return metrics

    @torch.no_grad()
    def _reference_logps(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        """Per-token log-probabilities of the completions under TRL's reference model (for the KL term)."""
        ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1).to(self.accelerator.device)
        mask = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], dim=1).to(
            self.accelerator.device
        )
        logps, _, _ = self._get_per_token_logps_and_entropies(
            self.ref_model, ids, mask, inputs["completion_ids"].size(1)
        )
        return logps


def collate(samples: Sequence[Sample], tokenizer, num_items: float) -> dict[str, torch.Tensor]:
    """Left-pad prompts, right-pad completions; the completion mask covers exactly each sample's completion."""
    pad = tokenizer.pad_token_id
    prompt_len = max(len(s.generation.prompt_ids) for s in samples)
    completion_len = max(max(len(s.generation.completion_ids) for s in samples), 1)
    prompt_ids = torch.full((len(samples), prompt_len), pad, dtype=torch.long)
    prompt_mask = torch.zeros_like(prompt_ids)
    completion_ids = torch.full((len(samples), completion_len), pad, dtype=torch.long)
    completion_mask = torch.zeros_like(completion_ids)
    for row, sample in enumerate(samples):
        prompt, completion = sample.generation.prompt_ids, sample.generation.completion_ids
        if prompt:
            prompt_ids[row, prompt_len - len(prompt) :] = torch.tensor(prompt)
            prompt_mask[row, prompt_len - len(prompt) :] = 1
        if completion:
            completion_ids[row, : len(completion)] = torch.tensor(completion)
            completion_mask[row, : len(completion)] = 1
    return {
        "prompt_ids": prompt_ids,
        "prompt_mask": prompt_mask,
        "completion_ids": completion_ids,
        "completion_mask": completion_mask,
        "advantages": torch.tensor([s.advantage for s in samples], dtype=torch.float32),
        "num_items_in_batch": torch.tensor(num_items, dtype=torch.float32),
    }
