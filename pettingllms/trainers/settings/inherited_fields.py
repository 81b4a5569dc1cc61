"""What AT-GRPO does with each field `ATGRPOConfig` inherits from TRL's `GRPOConfig` (and transformers'
`TrainingArguments` under it): every one is either honoured or refused.

`HONOURED` maps a field to how it acts here. `REFUSED` maps a field to what to use instead; `refused_settings`
lists the refused fields a config sets away from their default, and `ATGRPOConfig` raises `ConfigError` naming
the first. A TRL upgrade that adds a field fails `tests/test_config_fields.py` until the field is classified
here, so that no flag is ever a silent no-op.
"""

from __future__ import annotations

import dataclasses
from typing import Any

_NO_VLLM_CORRECTION = (
    "no sampler-vs-trainer correction is applied (with either generation backend, the loss's old "
    "log-probabilities are the trained model's own, a ratio of 1 on-policy); --off_policy_steps 1 makes the "
    "sampling log-probabilities the old ones, and the clipped ratio the truncated correction"
)

_RUN: dict[str, str] = {
    "output_dir": "the run folder",
    "max_steps": "number of AT-GRPO steps",
    "seed": "every random stream of the run derives from it",
    "full_determinism": "transformers' deterministic torch algorithms, set when the updaters are built",
    "use_cpu": "train on CPU even where a GPU is visible",
    "bf16": "bfloat16 compute: the update under accelerate's autocast, generation on a bfloat16 copy of the "
    "weights, while the trained weights and optimizer states stay float32: on a GPU, or on CPU with use_cpu. Default False (TRL's None means 'bf16 unless fp16': the default "
    "run is the tiny model in float32 on CPU); None given explicitly resolves as TRL resolves it",
    "fp16": "float16 mixed precision of the update (accelerate); GPU only",
    "tf32": "TF32 matmuls on Ampere+ GPUs",
    "save_strategy": "'steps' (a checkpoint every save_steps and at the end) or 'no' (only at the end)",
    "save_steps": "checkpoint period in AT-GRPO steps",
    "save_total_limit": "the most checkpoints kept: after each save the oldest step_N folders beyond it are deleted "
    "(the newest, just written and verified, always stays); None keeps every one",
    "logging_steps": "period of the rows sent to report_to trackers (metrics.jsonl gets every step)",
    "report_to": "trackers fed every logging_steps: 'none', 'tensorboard', 'wandb' (WANDB_MODE=offline works), "
    "a list or names separated by commas; held as a list, 'none' as [] (as transformers holds it)",
    "run_name": "the tracker run's name",
    "log_level": "transformers' log level",
    "log_level_replica": "transformers' log level on replicas",
    "disable_tqdm": "hide the step progress bar",
}
_SAMPLING: dict[str, str] = {
    "num_generations": "K, the candidates sampled per (instance, turn, agent)",
    "max_completion_length": "token budget of one completion",
    "temperature": "training sampling temperature (policy_sampling overrides it per policy)",
    "top_p": "training nucleus sampling",
    "top_k": "training top-k sampling",
}
_UPDATE: dict[str, str] = {
    "per_device_train_batch_size": "micro-batch of one policy's update (one update = all its samples)",
    "learning_rate": "optimizer learning rate",
    "lr_scheduler_type": "transformers' scheduler",
    "lr_scheduler_kwargs": "transformers' scheduler arguments",
    "warmup_steps": "scheduler warmup, in AT-GRPO steps (or a fraction of max_steps when < 1)",
    "optim": "transformers' optimizer",
    "optim_args": "transformers' optimizer arguments",
    "optim_target_modules": "transformers' optimizer target modules (GaLore and the like)",
    "weight_decay": "optimizer weight decay",
    "adam_beta1": "AdamW beta1",
    "adam_beta2": "AdamW beta2",
    "adam_epsilon": "AdamW epsilon",
    "max_grad_norm": "gradient clipping of each update",
    "activation_checkpointing": "recompute activations in the backward pass",
    "activation_checkpointing_kwargs": "options of activation checkpointing",
    "gradient_checkpointing": "deprecated alias of activation_checkpointing",
    "gradient_checkpointing_kwargs": "deprecated alias of activation_checkpointing_kwargs",
    "loss_type": "the GRPO loss (grpo_loss.LOSS_TYPES: TRL's loss family)",
    "beta": "KL coefficient against the run's starting model",
    "epsilon": "clip range (low)",
    "epsilon_high": "clip range (high)",
    "delta": "two-sided clipping bound",
    "importance_sampling_level": "'token' or 'sequence' ratios in the loss",
    "sapo_temperature_neg": "SAPO loss",
    "sapo_temperature_pos": "SAPO loss",
    "vespo_k_pos": "VESPO loss",
    "vespo_lambda_pos": "VESPO loss",
    "vespo_k_neg": "VESPO loss",
    "vespo_lambda_neg": "VESPO loss",
    "top_entropy_quantile": "policy gradient restricted to the highest-entropy tokens",
    "entropy_coef": "entropy bonus (token-averaging loss types only)",
    "use_bias_correction_kl": "TRL's importance-corrected KL",
    "scale_rewards": "'group', 'batch' or 'none' advantage scaling; True and False are TRL's documented aliases of "
    "'group' and 'none', held as those names",
    "num_iterations": "must be 1: one on-policy update per step",
    "disable_dropout": "dropout off in the trained model and its reference",
    "cast_lm_head_to_fp32": "the LM head computed in float32",
    "router_aux_loss_coef": "mixture-of-experts load-balancing loss",
}
HONOURED_THEMES: tuple[tuple[str, dict[str, str]], ...] = (
    ("the run", _RUN),
    ("sampling", _SAMPLING),
    (
        "the update: TRL's loss family (pettingllms.trainers.update.grpo_loss), TRL's optimizer and scheduler",
        _UPDATE,
    ),
)
"""The honoured fields by theme (`pettingllms-train --help` groups them so)."""
HONOURED: dict[str, str] = {name: text for _, fields in HONOURED_THEMES for name, text in fields.items()}
"""Inherited field -> what it does in an AT-GRPO run."""

_EVALUATION = "evaluations are AT-GRPO's own: use eval_every, eval_episodes, eval_split, eval_temperature"
_DATA = "AT-GRPO has no dataset: instances come from the environment (env_id, env_kwargs, instances_per_step)"
_DISTRIBUTED = (
    "for data parallelism launch pettingllms-train with torchrun (every policy is sharded over the ranks with "
    "FSDP2); in one process policy_devices places the policies on GPUs; distributed='ray' with "
    "ray_policy_resources places them on a cluster"
)
_HUB = "AT-GRPO does not push to the Hub: upload output_dir/checkpoints/step_N yourself"
_VLLM = "use generation_backend='vllm' and vllm_engine_kwargs (vllm.LLM arguments)"
_LOGGING = "AT-GRPO logs every step to metrics.jsonl and every logging_steps to report_to"

REFUSED: dict[str, str] = {
    "model_init_kwargs": "models are loaded by AT-GRPO: use model_name_or_path / agent_models",
    "trust_remote_code": "models are loaded by AT-GRPO without remote code",
    "num_generations_eval": _EVALUATION,
    "ds3_gather_for_generation": _DISTRIBUTED,
    "shuffle_dataset": _DATA,
    "pad_to_multiple_of": "the rollout pads each micro-batch to its longest sequence",
    "generation_batch_size": "a step samples K candidates for each of instances_per_step instances",
    "steps_per_generation": "one update per step: use instances_per_step and per_device_train_batch_size",
    "min_p": "the AT-GRPO samplers take temperature, top_p and top_k (policy_sampling per policy)",
    "generation_kwargs": "use temperature, top_p, top_k, stop_strings or policy_sampling",
    "chat_template_kwargs": "prompts come from the environment's observation text",
    "repetition_penalty": "the AT-GRPO samplers take temperature, top_p and top_k (policy_sampling per policy)",
    "cache_implementation": "the HF backend keeps its own KV cache",
    "use_vllm": _VLLM,
    "vllm_mode": _VLLM,
    "vllm_model_impl": _VLLM,
    "vllm_enable_sleep_mode": _VLLM,
    "vllm_structured_outputs_regex": _VLLM,
    "vllm_server_base_url": _VLLM,
    "vllm_server_host": _VLLM,
    "vllm_server_port": _VLLM,
    "vllm_server_timeout": _VLLM,
    "vllm_group_port": _VLLM,
    "vllm_gpu_memory_utilization": _VLLM + ", e.g. {gpu_memory_utilization: 0.3}",
    "vllm_max_model_length": _VLLM + ", e.g. {max_model_len: 4096}",
    "vllm_tensor_parallel_size": _VLLM + ", e.g. {tensor_parallel_size: 2}",
    "vllm_importance_sampling_correction": _NO_VLLM_CORRECTION,
    "vllm_importance_sampling_mode": _NO_VLLM_CORRECTION,
    "vllm_importance_sampling_clip_max": _NO_VLLM_CORRECTION,
    "vllm_importance_sampling_clip_min": _NO_VLLM_CORRECTION,
    "vllm_importance_sampling_cap": _NO_VLLM_CORRECTION,
    "off_policy_mask_threshold": "updates are on-policy (num_iterations=1): there is nothing off-policy to mask",
    "reward_weights": "rewards come from the environment: alpha mixes the team reward into each agent's own",
    "multi_objective_aggregation": "rewards come from the environment: alpha mixes team and local rewards",
    "mask_truncated_completions": "a truncated completion is scored by the environment (a format penalty)",
    "sync_ref_model": "the KL reference is the run's starting model (beta)",
    "ref_model_mixup_alpha": "the KL reference is the run's starting model (beta)",
    "ref_model_sync_steps": "the KL reference is the run's starting model (beta)",
    "use_adaptive_entropy": "use a fixed entropy_coef (its adaptive state is not checkpointed)",
    "entropy_coef_min": "use a fixed entropy_coef",
    "entropy_coef_max": "use a fixed entropy_coef",
    "entropy_coef_delta": "use a fixed entropy_coef",
    "entropy_target": "use a fixed entropy_coef",
    "max_tool_calling_iterations": "agents act through the environment's turns (max_turns)",
    "log_completions": "use dump_rollouts (every sample, with rewards and groups, in rollouts/step_N.jsonl)",
    "log_multimodal": "use dump_rollouts",
    "num_completions_to_print": "use dump_rollouts",
    "log_unique_prompts": "use dump_rollouts",
    "log_completions_hub_repo": _HUB,
    "use_transformers_continuous_batching": "generation_backend is 'hf' or 'vllm'",
    "transformers_continuous_batching_config": "generation_backend is 'hf' or 'vllm'",
    "use_transformers_paged": "generation_backend is 'hf' or 'vllm'",
    "num_train_epochs": "use max_steps (AT-GRPO steps) or max_completions (a sample budget)",
    "gradient_accumulation_steps": (
        "one update is one optimizer step over all of a policy's samples, cut into micro-batches of "
        "per_device_train_batch_size"
    ),
    "average_tokens_across_devices": _DISTRIBUTED,
    "label_smoothing_factor": "the GRPO losses have no labels to smooth",
    "bf16_full_eval": _EVALUATION,
    "fp16_full_eval": _EVALUATION,
    "torch_compile": "not applied outside transformers' Trainer.train loop",
    "torch_compile_backend": "not applied outside transformers' Trainer.train loop",
    "torch_compile_mode": "not applied outside transformers' Trainer.train loop",
    "use_liger_kernel": "the update uses TRL's standard loss path",
    "liger_kernel_config": "the update uses TRL's standard loss path",
    "use_cache": "the HF backend keeps its own KV cache",
    "neftune_noise_alpha": "not applied outside transformers' Trainer.train loop",
    "torch_empty_cache_steps": "not applied outside transformers' Trainer.train loop",
    "auto_find_batch_size": "set per_device_train_batch_size",
    "logging_strategy": _LOGGING,
    "logging_first_step": _LOGGING,
    "log_on_each_node": _LOGGING,
    "logging_nan_inf_filter": _LOGGING,
    "include_num_input_tokens_seen": _LOGGING + " (policy/<name>/completion_tokens counts tokens)",
    "project": "report_to supports 'tensorboard' and 'wandb' (set WANDB_PROJECT for wandb)",
    "trackio_space_id": "report_to supports 'tensorboard' and 'wandb'",
    "trackio_bucket_id": "report_to supports 'tensorboard' and 'wandb'",
    "trackio_static_space_id": "report_to supports 'tensorboard' and 'wandb'",
    "eval_strategy": _EVALUATION,
    "eval_steps": _EVALUATION,
    "eval_delay": _EVALUATION,
    "per_device_eval_batch_size": _EVALUATION,
    "prediction_loss_only": _EVALUATION,
    "eval_on_start": _EVALUATION + " (a run always evaluates before its first step)",
    "eval_do_concat_batches": _EVALUATION,
    "eval_use_gather_object": _EVALUATION,
    "eval_accumulation_steps": _EVALUATION,
    "include_for_metrics": _EVALUATION,
    "batch_eval_metrics": _EVALUATION,
    "save_only_model": "checkpoints always hold optimizer, scheduler and generator states (exact resume)",
    "save_on_each_node": _DISTRIBUTED,
    "enable_jit_checkpoint": "checkpoints are written every save_steps and at the end",
    "push_to_hub": _HUB,
    "hub_token": _HUB,
    "hub_private_repo": _HUB,
    "hub_model_id": _HUB,
    "hub_strategy": _HUB,
    "hub_always_push": _HUB,
    "hub_revision": _HUB,
    "load_best_model_at_end": "the run ends on its last step; pick a checkpoint with pettingllms-eval",
    "metric_for_best_model": "the run ends on its last step; pick a checkpoint with pettingllms-eval",
    "greater_is_better": "the run ends on its last step; pick a checkpoint with pettingllms-eval",
    "ignore_data_skip": "a resumed run's instances follow from its step (nothing to skip)",
    "restore_callback_states_from_checkpoint": "use resume=True",
    "data_seed": "instances follow from seed and the step number",
    "accelerator_config": _DISTRIBUTED,
    "parallelism_config": _DISTRIBUTED,
    "dataloader_drop_last": _DATA,
    "dataloader_num_workers": "use env_workers (processes that step the environments)",
    "dataloader_pin_memory": _DATA,
    "dataloader_persistent_workers": _DATA,
    "dataloader_prefetch_factor": _DATA,
    "dataloader_multiprocessing_context": _DATA,
    "dataloader_in_order": _DATA,
    "remove_unused_columns": _DATA,
    "label_names": _DATA,
    "train_sampling_strategy": _DATA,
    "length_column_name": _DATA,
    "ddp_find_unused_parameters": _DISTRIBUTED,
    "ddp_bucket_cap_mb": _DISTRIBUTED,
    "ddp_broadcast_buffers": _DISTRIBUTED,
    "ddp_static_graph": _DISTRIBUTED,
    "ddp_backend": _DISTRIBUTED,
    "ddp_timeout": _DISTRIBUTED,
    "fsdp": _DISTRIBUTED,
    "fsdp_config": _DISTRIBUTED,
    "deepspeed": _DISTRIBUTED,
    "debug": "not applied outside transformers' Trainer.train loop",
    "skip_memory_metrics": "not applied outside transformers' Trainer.train loop",
    "do_train": "pettingllms-train always trains; evaluate with pettingllms-eval",
    "do_eval": _EVALUATION,
    "do_predict": _EVALUATION,
    "resume_from_checkpoint": "use resume=True (the newest intact checkpoint of output_dir)",
    "local_rank": _DISTRIBUTED,
}
"""Inherited field -> what to use instead; setting it away from its default is a `ConfigError`."""


NEWER_TRANSFORMERS_ONLY = ("activation_checkpointing", "activation_checkpointing_kwargs")
"""Fields classified above that transformers 5.17 lacks (it has their deprecated aliases `gradient_checkpointing*`,
which `pettingllms.trainers.update.activation_checkpointing` reads there)."""


def field_default(field: dataclasses.Field) -> Any:
    """The value a dataclass field takes when it is not given."""
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default


def refused_settings(config: Any, base: type) -> list[tuple[str, Any, str]]:
    """(field, value, what to use instead) for every `REFUSED` field that `config` sets away from its default in
    `base` (the inherited dataclass), in declaration order."""
    found = []
    for field in dataclasses.fields(base):
        if field.name in REFUSED:
            value = getattr(config, field.name)
            if value != field_default(field):
                found.append((field.name, value, REFUSED[field.name]))
    return found
