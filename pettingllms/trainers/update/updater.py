"""`PolicyUpdater`: TRL's `GRPOTrainer` as the update worker of one policy, fed by the rollout engine.

TRL's trainer normally samples its own completions; here `_prepare_inputs` receives batches the AT-GRPO rollout
already built (prompt and completion token ids, advantages). TRL provides the model (with its fused log-prob head
and its KL reference), the optimizer and scheduler, accelerate and PEFT; the loss is `grpo_loss` (TRL's loss family:
`loss_type`, clip epsilons, `beta`, ...) on the per-token log-probabilities of `completion_logps`. The scaling across
micro-batches is ours (`accumulate_gradients`): every sample weighs what it would in one batch. One
`update(samples)` is one optimizer step over all of this policy's samples. Each updater lives on its policy's
device (`devices`); under a launcher its model is sharded over the ranks with FSDP2 (`sharding`) and one update
is one step over every rank's samples, equal to the one-process step on all of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset

from pettingllms.parallel.devices import pin_device
from pettingllms.parallel.world import current_world
from pettingllms.rollout.samples import Sample
from pettingllms.trainers.settings.config import ATGRPOConfig
from pettingllms.trainers.update.activation_checkpointing import (
    checkpointing_options,
    enable_activation_checkpointing,
)
from pettingllms.trainers.update.completion_logps import completion_logps
from pettingllms.trainers.update.grpo_loss import SEQUENCE_MEAN_LOSSES, grpo_loss
from pettingllms.trainers.update.micro_batches import micro_batches
from pettingllms.trainers.update.sharding import (
    full_model_state,
    full_optimizer_state,
    is_sharded,
    load_full_optimizer_state,
    shard_model,
)
from pettingllms.trainers.update.trl_adapter import GRPOTrainerAdapter, reference_model_from

_PLACEHOLDER = Dataset.from_dict({"prompt": ["(prompts come from the environments)"]})


def _no_reward(completions, **kwargs) -> list[float]:
    """TRL requires a reward function; AT-GRPO's rewards come from the environments."""
    return [0.0] * len(completions)


class PolicyUpdater(GRPOTrainerAdapter):
    """The update worker of policy `name` (see the module docstring)."""

    def __init__(
        self,
        name: str,
        model,
        tokenizer,
        args: ATGRPOConfig,
        *,
        reference: str | None = None,
        device: str | None = None,
    ):
        """`reference`: where the KL term's reference model comes from when `beta != 0` (default: where `model`
        was loaded from). A resumed run passes its starting weights, so that the anchor stays where the run
        began instead of moving to the checkpoint. Log-probabilities are computed at the policy's own training
        temperature (`args.policy_temperature(name)`), the one its samples were drawn at. `device`: where the
        model, its reference and its update live (default: transformers' device, `args.device`); `n_gpu` is 1
        there whatever the process sees (`devices.pin_device`)."""
        args = pin_device(args, device or str(args.device))
        args.temperature = args.policy_temperature(
            name
        )  # TRL bakes it into the log-prob head at construction
        args.report_to = []  # the run's trackers are the AT-GRPO loop's (`trackers.Trackers`), not each updater's
        with reference_model_from(model, reference):
            super().__init__(
                model=model,
                reward_funcs=_no_reward,
                args=args,
                train_dataset=_PLACEHOLDER,
                processing_class=tokenizer,
            )
        if self.ref_model is not None:  # TRL's accelerate puts it on the process's device, not the policy's
            self.ref_model.to(self.args.device)
        if (
            args.activation_checkpointing
        ):  # transformers turns it on in `Trainer.train`, which never runs here
            enable_activation_checkpointing(self.model, checkpointing_options(args))
        self.name = name
        self.world = current_world()
        if self.world.size > 1:  # under a launcher: this policy is sharded over the ranks
            shard_model(self.model)
        self.create_optimizer_and_scheduler(num_training_steps=args.max_steps)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        """`grpo_loss` of one micro-batch (`inputs`, from `collate`), plus the mixture-of-experts load-balancing
        loss when the model has one, times that micro-batch's share of the whole update (`inputs["loss_weight"]`,
        set by `accumulate_gradients`); its metrics go to the training log. (`num_items_in_batch` is the trainer's; the batch carries its own.)"""
        if return_outputs:
            raise ValueError("PolicyUpdater.compute_loss returns the loss only")
        logps, entropies, aux_loss = self._completion_logps(model, inputs, aux_loss=self.aux_loss_enabled)
        loss, metrics = grpo_loss(
            logps,
            inputs.get("old_per_token_logps"),
            inputs.get("ref_per_token_logps"),
            inputs["advantages"],
            inputs["completion_mask"],
            self.args,
            num_items_in_batch=inputs["num_items_in_batch"],
            entropies=entropies,
            gather=self._gather,
        )
        if aux_loss is not None:
            loss = loss + self.router_aux_loss_coef * aux_loss
            metrics["aux_loss"] = self._gather(aux_loss.detach()[None]).mean().item()
        self.record_metrics(metrics)
        return loss * inputs["loss_weight"]

    def update(self, samples: Sequence[Sample]) -> dict[str, float]:
        """One optimizer step on `samples` (this policy's only, this rank's share of them); return its metrics.
        Under a launcher every rank calls it, with or without samples of its own."""
        if self.world.sum([len(samples)])[0] == 0:
            return {"samples": 0.0}
        loss = self.accumulate_gradients(samples)
        grad_norm = self.accelerator.clip_grad_norm_(self.model.parameters(), self.args.max_grad_norm)
        self.optimizer.step()
        self.lr_scheduler.step()
        self.optimizer.zero_grad()
        loss, count, tokens = self.world.sum(  # every rank's share: the figures of the whole batch
            [loss, len(samples), sum(len(s.generation.completion_ids) for s in samples)]
        )
        metrics = {
            "loss": loss,
            "grad_norm": float(getattr(grad_norm, "full_tensor", lambda: grad_norm)()),
            "learning_rate": float(self.lr_scheduler.get_last_lr()[0]),
            "samples": count,
            "completion_tokens": tokens,
        }
        metrics.update(self.drain_metrics())
        return metrics

    def accumulate_gradients(self, samples: Sequence[Sample]) -> float:
        """Add the gradient of the loss of all `samples`, as one batch, to `.grad`; return that loss (this rank's
        share of it under a launcher).

        The samples are cut into micro-batches (`micro_batches`: by count, `per_device_train_batch_size` rows
        each, or packed by a token budget of that many longest rows, `micro_batching`) and each micro-batch's loss
        is weighted by its share of the batch, so that every sample weighs what it would in one batch however the
        cut falls (TRL's accumulation divides each micro-batch's mean by the number of micro-batches, which gives
        a sample of a short last micro-batch up to `per_device_train_batch_size` times the weight of the others).
        The share is the micro-batch's fraction of the samples for the losses that average over sequences (grpo,
        sapo, dr_grpo, luspo) and its fraction of the completion tokens for those that average over tokens (bnpo,
        dapo, cispo, vespo). Under a launcher the batch is every rank's samples: the shares are of the totals
        over the ranks, the sharded model sums the gradients (`sharding`), and a rank with fewer micro-batches
        runs weightless ones until every rank has run as many.
        """
        chunks = micro_batches(samples, self.args.per_device_train_batch_size, self.args.micro_batching)
        total_samples, total_tokens = self.world.sum(
            [len(samples), sum(len(sample.generation.completion_ids) for sample in samples)]
        )
        rounds = self.world.max(len(chunks))
        self.use_exact_accumulation()  # the weights below do the accumulation scaling
        self.model.train()
        loss = 0.0
        for index in range(rounds):
            chunk = chunks[index] if index < len(chunks) else None
            if chunk is None:  # keeps the sharded model's collectives in step with the other ranks
                with self.metrics_discarded():
                    self._micro_step({**_weightless_inputs(self.processing_class), "loss_weight": 0.0})
                continue
            tokens = sum(len(sample.generation.completion_ids) for sample in chunk)
            if self.args.loss_type in SEQUENCE_MEAN_LOSSES:
                weight = len(chunk) / total_samples
            else:
                weight = tokens / max(total_tokens, 1)
            # the token-sum losses divide by this chunk's tokens; the weight makes that the batch's
            inputs = collate(
                chunk, self.processing_class, tokens, sampling_logps=self.args.off_policy_steps > 0
            )
            loss += self._micro_step({**inputs, "loss_weight": weight})
        return loss

    def _micro_step(self, inputs: dict[str, Any]) -> float:
        """Add the gradient of one micro-batch's loss times its `loss_weight` (its share of the batch, carried in
        the batch because TRL's `training_step` owns the backward pass and calls `compute_loss`); return that
        weighted loss."""
        if self.args.beta != 0.0:
            inputs["ref_per_token_logps"] = self._reference_logps(inputs)
        return float(self.training_step(self.model, inputs, None))

    def _completion_logps(self, model, inputs: dict[str, torch.Tensor], aux_loss: bool = False):
        """`completion_logps` of the micro-batch's completions under `model`, in accelerate's autocast."""
        ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1).to(self.args.device)
        mask = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], dim=1).to(self.args.device)
        with self.accelerator.autocast():
            return completion_logps(
                model,
                ids,
                mask,
                inputs["completion_ids"].size(1),
                pad_token_id=self.processing_class.pad_token_id,
                aux_loss=aux_loss,
            )

    def _gather(self, values: torch.Tensor) -> torch.Tensor:
        """`values` (1-D) of every rank, concatenated, shorter ones padded with NaN (`grpo_loss`'s `gather`)."""
        if self.accelerator.num_processes == 1:
            return values
        return self.accelerator.gather(self.accelerator.pad_across_processes(values, pad_index=float("nan")))

    def save_training_state(self, optimizer_path: Path, scheduler_path: Path) -> None:
        """Write the optimizer's and the scheduler's states (the full states, by rank 0, when the model is
        sharded: every rank calls this)."""
        if is_sharded(self.model):
            optimizer = full_optimizer_state(self.model, self.optimizer)
        else:
            optimizer = self.optimizer.state_dict()
        if self.world.is_main:
            torch.save(optimizer, optimizer_path)
            torch.save(self.lr_scheduler.state_dict(), scheduler_path)

    def load_training_state(self, optimizer_path: Path, scheduler_path: Path) -> None:
        """Restore what `save_training_state` wrote (each rank takes its shard of a sharded optimizer)."""
        optimizer = torch.load(optimizer_path, weights_only=True)
        if is_sharded(self.model):
            load_full_optimizer_state(self.model, self.optimizer, optimizer)
        else:
            self.optimizer.load_state_dict(optimizer)
        self.lr_scheduler.load_state_dict(torch.load(scheduler_path, weights_only=True))

    def save_model(self, folder: Path) -> None:
        """Write the model and its tokenizer into `folder` (the full weights, by rank 0, when the model is
        sharded: every rank calls this)."""
        state = full_model_state(self.model) if is_sharded(self.model) else None
        if self.world.is_main:
            self.model.save_pretrained(folder, state_dict=state)
            self.processing_class.save_pretrained(folder)

    @torch.no_grad()
    def _reference_logps(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        """Per-token log-probabilities of the completions under TRL's reference model (for the KL term)."""
        return self._completion_logps(self.ref_model, inputs)[0]


def _weightless_inputs(tokenizer) -> dict[str, torch.Tensor]:
    """A micro-batch of one token of prompt and one of completion, advantage 0 (run with weight 0)."""
    pad = tokenizer.pad_token_id
    one = torch.full((1, 1), pad, dtype=torch.long)
    return {
        "prompt_ids": one,
        "prompt_mask": torch.ones_like(one),
        "completion_ids": one.clone(),
        "completion_mask": torch.ones_like(one),
        "advantages": torch.zeros(1),
        "num_items_in_batch": torch.tensor(1.0),
    }


def collate(
    samples: Sequence[Sample], tokenizer, num_items: float, *, sampling_logps: bool = False
) -> dict[str, torch.Tensor]:
    """Left-pad prompts, right-pad completions; the completion mask covers exactly each sample's completion;
    `num_items` is the token count the token-sum losses divide by (`grpo_loss`'s `num_items_in_batch`). With
    `sampling_logps` (off-policy training), `old_per_token_logps` holds each completion token's log-probability under
    the weights that sampled it (`Generation.logprobs`, 0 on padding): the loss's clipped ratio is then the
    importance ratio of the current weights over those."""
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
    batch = {
        "prompt_ids": prompt_ids,
        "prompt_mask": prompt_mask,
        "completion_ids": completion_ids,
        "completion_mask": completion_mask,
        "advantages": torch.tensor([s.advantage for s in samples], dtype=torch.float32),
        "num_items_in_batch": torch.tensor(num_items, dtype=torch.float32),
    }
    if sampling_logps:
        batch["old_per_token_logps"] = _sampling_logps(samples, completion_len)
    return batch


def _sampling_logps(samples: Sequence[Sample], width: int) -> torch.Tensor:
    """The samples' `Generation.logprobs`, right-padded with 0 to `width`; a sample without them is refused."""
    logps = torch.zeros((len(samples), width), dtype=torch.float32)
    for row, sample in enumerate(samples):
        got = sample.generation.logprobs
        if got is None or len(got) != len(sample.generation.completion_ids):
            raise ValueError(
                f"off-policy training needs every completion token's sampling log-probability; a sample of policy "
                f"{sample.policy!r} has {0 if got is None else len(got)} for {len(sample.generation.completion_ids)} "
                "tokens"
            )
        logps[row, : len(got)] = torch.tensor(got, dtype=torch.float32)
    return logps
